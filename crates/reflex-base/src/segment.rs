//! Shared-memory segments: files in `/dev/shm` (tmpfs) mapped `MAP_SHARED` by every rank of a node.
//!
//! One segment per node per job (DESIGN.md, "Shared memory"). The leader [`Segment::create`]s it
//! (`O_CREAT|O_EXCL`, mode 0600, `ftruncate`, `mmap`), the others [`Segment::open`] it, and once all
//! have mapped it the leader [`unlink`]s the name, so that nothing is left behind even if the job
//! dies. As a second line of defence, the launcher calls [`remove_job_segments`] when a job ends,
//! whatever happened. tmpfs allocates pages only when first touched, so a large, mostly idle segment
//! costs little memory.
//!
//! Names: [`segment_name`] gives `reflex-<job>-<node>`, where `<job>` is the job id reduced to
//! `[A-Za-z0-9_.-]` (with a hash of the raw id appended when that changed it, so that two ids never
//! share a name by accident). Other segments of a job may add `.<kind>` (`[A-Za-z0-9_]`) after the
//! node number. The node part never holds `-`, so the job part of a name is unambiguous and
//! [`remove_job_segments`] removes exactly the files of one job.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::ptr::NonNull;

/// The tmpfs directory holding POSIX shared memory on Linux.
pub const SHM_DIR: &str = "/dev/shm";

/// Longest job part kept verbatim in a segment name (the rest is replaced by a hash).
const MAX_JOB_CHARS: usize = 96;

/// A mapped shared file. Dropping it unmaps it (the file stays until [`unlink`]).
#[derive(Debug)]
pub struct Segment {
    ptr: NonNull<u8>,
    len: usize,
    name: String,
}

// SAFETY: the mapping belongs to the whole process, so the owner may move between threads.
unsafe impl Send for Segment {}
// SAFETY: `&Segment` only hands out the base address and length; accesses through them are the
// caller's business (and are `unsafe` there).
unsafe impl Sync for Segment {}

impl Segment {
    /// Creates `/dev/shm/<name>` (which must not exist yet) of `size` bytes, zero-filled, and maps it.
    pub fn create(name: &str, size: usize) -> io::Result<Segment> {
        check_name(name)?;
        if size == 0 {
            return Err(invalid(format!(
                "cannot create shared segment {name}: size is zero"
            )));
        }
        check_free_space(name, size)?;
        let path = segment_path(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| context(e, "cannot create shared segment", &path))?;
        let mapped = file
            .set_len(size as u64)
            .map_err(|e| context(e, "cannot size shared segment", &path))
            .and_then(|()| Segment::map(&file, name, size));
        if mapped.is_err() {
            // Best effort: the creation failed half-way, leave nothing behind.
            let _ = fs::remove_file(&path);
        }
        mapped
    }

    /// Maps the existing `/dev/shm/<name>`, which must belong to this user.
    pub fn open(name: &str) -> io::Result<Segment> {
        check_name(name)?;
        let path = segment_path(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| context(e, "cannot open shared segment", &path))?;
        let meta = file
            .metadata()
            .map_err(|e| context(e, "cannot stat shared segment", &path))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "shared segment {} belongs to uid {}, not to us ({me})",
                    path.display(),
                    meta.uid()
                ),
            ));
        }
        let size = usize::try_from(meta.len())
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                invalid(format!(
                    "shared segment {} has unusable size {}",
                    path.display(),
                    meta.len()
                ))
            })?;
        Segment::map(&file, name, size)
    }

    fn map(file: &File, name: &str, size: usize) -> io::Result<Segment> {
        // SAFETY: a fresh shared mapping chosen by the kernel (addr = null) of a file we hold open;
        // it aliases no Rust object. The result is checked against MAP_FAILED below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(context(e, "cannot map shared segment", &segment_path(name)));
        }
        let ptr =
            NonNull::new(addr.cast::<u8>()).ok_or_else(|| invalid("mmap returned null".into()))?;
        Ok(Segment {
            ptr,
            len: size,
            name: name.to_owned(),
        })
    }

    /// The first byte of the mapping (page-aligned).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The size of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: segments are never empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The segment's name (without the `/dev/shm/` directory).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `map`, unmapped only here, once. Any
        // raw pointers derived from it are the owners' responsibility not to use after the drop
        // (types built on a Segment own it and drop it last).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Removes the name `/dev/shm/<name>`; mappings stay valid until unmapped.
pub fn unlink(name: &str) -> io::Result<()> {
    check_name(name)?;
    let path = segment_path(name);
    fs::remove_file(&path).map_err(|e| context(e, "cannot remove shared segment", &path))
}

/// The name of the shared segment of node `node` of job `job_id`: `reflex-<job>-<node>`.
pub fn segment_name(job_id: &str, node: usize) -> String {
    format!("{}{node}", job_prefix(job_id))
}

/// The prefix shared by every segment name of job `job_id`: `reflex-<job>-`.
pub fn job_prefix(job_id: &str) -> String {
    format!("reflex-{}-", sanitize_job_id(job_id))
}

/// Deletes every file of job `job_id` in `/dev/shm`; returns how many it removed.
///
/// Files removed concurrently by someone else are not an error. Other failures do not stop the
/// sweep; the first one is returned once it is over.
pub fn remove_job_segments(job_id: &str) -> io::Result<usize> {
    let prefix = job_prefix(job_id);
    let dir =
        fs::read_dir(SHM_DIR).map_err(|e| context(e, "cannot list", &PathBuf::from(SHM_DIR)))?;
    let mut removed = 0;
    let mut first_err = None;
    for entry in dir.flatten() {
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str() else {
            continue;
        };
        if !belongs_to_job(name, &prefix) {
            continue;
        }
        match fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                first_err.get_or_insert_with(|| {
                    context(e, "cannot remove shared segment", &entry.path())
                });
            }
        }
    }
    first_err.map_or(Ok(removed), Err)
}

/// Whether `name` is `<prefix><digits>` or `<prefix><digits>.<[A-Za-z0-9_]*>`.
fn belongs_to_job(name: &str, prefix: &str) -> bool {
    let Some(rest) = name.strip_prefix(prefix) else {
        return false;
    };
    let (node, kind) = rest.split_once('.').unwrap_or((rest, ""));
    !node.is_empty()
        && node.bytes().all(|b| b.is_ascii_digit())
        && kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The job id reduced to `[A-Za-z0-9_.-]` and at most [`MAX_JOB_CHARS`] characters; when that
/// changed anything, `_<hash>` of the raw id is appended so distinct ids stay distinct.
fn sanitize_job_id(job_id: &str) -> String {
    let mut out: String = job_id
        .chars()
        .take(MAX_JOB_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out != job_id || out.is_empty() {
        out.push_str(&format!("_{:016x}", fnv1a64(job_id.as_bytes())));
    }
    out
}

/// FNV-1a, 64-bit (Fowler, Noll, Vo): a stable hash, so every process names a job's files alike.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn check_name(name: &str) -> io::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "invalid shared segment name {name:?}: want 1-255 characters of [A-Za-z0-9_.-]"
        )))
    }
}

/// Refuses a segment larger than the free space of `/dev/shm`: touching its pages later would
/// kill the job with SIGBUS instead of failing here with a message.
fn check_free_space(name: &str, size: usize) -> io::Result<()> {
    let free = shm_free_bytes()?;
    if size as u64 > free {
        return Err(io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "cannot create shared segment {name}: {} MiB needed, {} MiB free in {SHM_DIR}",
                size >> 20,
                free >> 20
            ),
        ));
    }
    Ok(())
}

/// Bytes free for this user in `/dev/shm` (tmpfs: what new segments may still take).
pub fn shm_free_bytes() -> io::Result<u64> {
    let dir = std::ffi::CString::new(SHM_DIR).map_err(|_| invalid("bad shm dir".into()))?;
    // SAFETY: statvfs is plain old data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is a NUL-terminated string and `st` a valid out-pointer, both alive for the call.
    if unsafe { libc::statvfs(dir.as_ptr(), &mut st) } != 0 {
        let e = io::Error::last_os_error();
        return Err(context(
            e,
            "cannot query free space of",
            &PathBuf::from(SHM_DIR),
        ));
    }
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

fn segment_path(name: &str) -> PathBuf {
    PathBuf::from(SHM_DIR).join(name)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn context(e: io::Error, what: &str, path: &std::path::Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job id unique to this test process and `tag`, so parallel tests never collide.
    fn test_job(tag: &str) -> String {
        format!("test{}-{tag}", std::process::id())
    }

    #[test]
    fn create_open_share_bytes_and_unlink() {
        let name = segment_name(&test_job("share"), 0);
        let a = Segment::create(&name, 10_000).unwrap();
        let b = Segment::open(&name).unwrap();
        assert_eq!(b.len(), 10_000);
        assert_eq!(b.name(), name);
        // SAFETY: both mappings are 10_000 bytes long and alive; one thread touches them.
        unsafe {
            assert_eq!(*b.as_ptr().add(9_999), 0, "fresh segments are zero-filled");
            *a.as_ptr().add(1234) = 42;
            assert_eq!(*b.as_ptr().add(1234), 42);
        }
        unlink(&name).unwrap();
        assert!(Segment::open(&name).is_err());
        // SAFETY: as above; unlinking keeps existing mappings.
        unsafe { assert_eq!(*b.as_ptr().add(1234), 42) };
    }

    #[test]
    fn create_refuses_existing_names_and_bad_input() {
        let name = segment_name(&test_job("excl"), 3);
        let _a = Segment::create(&name, 4096).unwrap();
        let err = Segment::create(&name, 4096).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains(&name), "{err}");
        unlink(&name).unwrap();
        assert!(Segment::create("a/b", 4096).is_err());
        assert!(Segment::create("..", 4096).is_err());
        assert!(Segment::create(&segment_name(&test_job("zero"), 0), 0).is_err());
        let huge =
            Segment::create(&segment_name(&test_job("huge"), 0), usize::MAX / 2).unwrap_err();
        assert!(huge.to_string().contains("MiB free"), "{huge}");
        assert!(Segment::open(&segment_name(&test_job("missing"), 0)).is_err());
    }

    #[test]
    fn names_are_sanitized_and_unambiguous() {
        assert_eq!(segment_name("1234.5", 2), "reflex-1234.5-2");
        let odd = segment_name("a/b c", 0);
        assert!(
            odd.starts_with("reflex-a_b_c_") && odd.ends_with("-0"),
            "{odd}"
        );
        assert_ne!(segment_name("a/b", 0), segment_name("a_b", 0));
        assert_ne!(job_prefix(""), "reflex--");
        let long = segment_name(&"x".repeat(1000), 7);
        assert!(long.len() < 200 && check_name(&long).is_ok(), "{long}");
        let p = job_prefix("a");
        assert!(belongs_to_job("reflex-a-0", &p));
        assert!(belongs_to_job("reflex-a-12.coll", &p));
        assert!(!belongs_to_job("reflex-a-1-0", &p), "segment of job a-1");
        assert!(
            !belongs_to_job("reflex-a-0.x-3", &p),
            "segment of job a-0.x"
        );
        assert!(!belongs_to_job("reflex-a-", &p));
        assert!(!belongs_to_job("reflex-ab-0", &p));
    }

    #[test]
    fn remove_job_segments_removes_exactly_one_job() {
        let job = test_job("sweep");
        let other = format!("{job}-0");
        let names = [
            segment_name(&job, 0),
            segment_name(&job, 1),
            format!("{}5.coll", job_prefix(&job)),
        ];
        let kept = segment_name(&other, 0);
        let _maps: Vec<_> = names
            .iter()
            .chain([&kept])
            .map(|n| Segment::create(n, 4096).unwrap())
            .collect();
        assert_eq!(remove_job_segments(&job).unwrap(), 3);
        assert_eq!(remove_job_segments(&job).unwrap(), 0);
        assert!(Segment::open(&kept).is_ok());
        assert_eq!(remove_job_segments(&other).unwrap(), 1);
    }
}
