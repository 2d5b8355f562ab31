//! Layouts, constants and decoding of the PMIx bindings; against the installed `pmix.h` when
//! there is one (a C probe compiled with `pkg-config --cflags pmix`), else against the numbers
//! the const assertions already pin down.

use super::*;
use std::process::Command;

/// What the Rust side says: (name the probe prints, value).
fn rust_facts() -> Vec<(&'static str, String)> {
    let n = |v: usize| v.to_string();
    vec![
        ("sizeof_proc", n(size_of::<RawProc>())),
        ("offsetof_proc_rank", n(offset_of!(RawProc, rank))),
        ("sizeof_value", n(size_of::<RawValue>())),
        ("offsetof_value_data", n(offset_of!(RawValue, data))),
        ("sizeof_info", n(size_of::<RawInfo>())),
        ("offsetof_info_flags", n(offset_of!(RawInfo, flags))),
        ("offsetof_info_value", n(offset_of!(RawInfo, value))),
        ("alignof_value", n(std::mem::align_of::<RawValue>())),
        ("nspace_bytes", n(NSPACE_BYTES)),
        ("key_bytes", n(KEY_BYTES)),
        ("rank_wildcard", RANK_WILDCARD.to_string()),
        ("err_not_found", ERR_NOT_FOUND.to_string()),
        ("scope_global", SCOPE_GLOBAL.to_string()),
        ("bool", types::BOOL.to_string()),
        ("string", types::STRING.to_string()),
        ("size", types::SIZE.to_string()),
        ("int", types::INT.to_string()),
        ("int32", types::INT32.to_string()),
        ("uint", types::UINT.to_string()),
        ("uint8", types::UINT8.to_string()),
        ("uint16", types::UINT16.to_string()),
        ("uint32", types::UINT32.to_string()),
        ("uint64", types::UINT64.to_string()),
        ("proc_rank", types::PROC_RANK.to_string()),
        ("job_size", keys::JOB_SIZE.to_owned()),
        ("univ_size", keys::UNIV_SIZE.to_owned()),
        ("appnum", keys::APPNUM.to_owned()),
        ("nodeid", keys::NODEID.to_owned()),
        ("local_peers", keys::LOCAL_PEERS.to_owned()),
        ("collect_data", keys::COLLECT_DATA.to_owned()),
        ("optional", keys::OPTIONAL.to_owned()),
    ]
}

/// The same facts from the C header.
const PROBE: &str = r#"
#include <pmix.h>
#include <stdio.h>
#include <stddef.h>
#define N(name, v) printf("%s %lld\n", name, (long long)(v))
#define S(name, v) printf("%s %s\n", name, v)
int main(void) {
    N("sizeof_proc", sizeof(pmix_proc_t)); N("offsetof_proc_rank", offsetof(pmix_proc_t, rank));
    N("sizeof_value", sizeof(pmix_value_t)); N("offsetof_value_data", offsetof(pmix_value_t, data));
    N("sizeof_info", sizeof(pmix_info_t)); N("offsetof_info_flags", offsetof(pmix_info_t, flags));
    N("offsetof_info_value", offsetof(pmix_info_t, value));
    N("alignof_value", _Alignof(pmix_value_t));
    N("nspace_bytes", sizeof(pmix_nspace_t)); N("key_bytes", sizeof(pmix_key_t));
    N("rank_wildcard", PMIX_RANK_WILDCARD); N("err_not_found", PMIX_ERR_NOT_FOUND);
    N("scope_global", PMIX_GLOBAL);
    N("bool", PMIX_BOOL); N("string", PMIX_STRING); N("size", PMIX_SIZE); N("int", PMIX_INT);
    N("int32", PMIX_INT32); N("uint", PMIX_UINT); N("uint8", PMIX_UINT8);
    N("uint16", PMIX_UINT16); N("uint32", PMIX_UINT32); N("uint64", PMIX_UINT64);
    N("proc_rank", PMIX_PROC_RANK);
    S("job_size", PMIX_JOB_SIZE); S("univ_size", PMIX_UNIV_SIZE); S("appnum", PMIX_APPNUM);
    S("nodeid", PMIX_NODEID); S("local_peers", PMIX_LOCAL_PEERS);
    S("collect_data", PMIX_COLLECT_DATA); S("optional", PMIX_OPTIONAL);
    return 0;
}
"#;

/// Compiles and runs the probe; `None` (test skipped) without `pkg-config pmix` or a C compiler.
fn header_facts() -> Option<Vec<(String, String)>> {
    let cflags = Command::new("pkg-config")
        .args(["--cflags", "pmix"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let dir = std::env::temp_dir().join(format!("reflex-pmix-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let (src, exe) = (dir.join("probe.c"), dir.join("probe"));
    std::fs::write(&src, PROBE).ok()?;
    let flags = String::from_utf8_lossy(&cflags.stdout).into_owned();
    let built = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()))
        .args(flags.split_whitespace())
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .ok()?;
    let out = built
        .success()
        .then(|| Command::new(&exe).output().ok())
        .flatten();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    )
}

#[test]
fn layouts_and_constants_match_the_installed_header() {
    let Some(header) = header_facts() else {
        eprintln!("skipped: no pmix.h (libpmix-dev) or no C compiler; const assertions only");
        return;
    };
    let rust = rust_facts();
    assert_eq!(header.len(), rust.len(), "probe printed {header:?}");
    for ((hname, hvalue), (rname, rvalue)) in header.iter().zip(&rust) {
        assert_eq!(hname, rname);
        assert_eq!(
            hvalue, rvalue,
            "{rname}: pmix.h says {hvalue}, Rust {rvalue}"
        );
    }
}

fn value(kind: u16, data: RawData) -> RawValue {
    RawValue { kind, data }
}

#[test]
fn decodes_the_types_the_launchers_send() {
    let text = CString::new("0,1,2").unwrap();
    let cases = [
        (value(types::UINT32, RawData { uint32: 7 }), Value::Uint(7)),
        (value(types::UINT16, RawData { uint16: 3 }), Value::Uint(3)),
        (
            value(types::PROC_RANK, RawData { uint32: 5 }),
            Value::Uint(5),
        ),
        (
            value(types::UINT64, RawData { uint64: 1 << 40 }),
            Value::Uint(1 << 40),
        ),
        (value(types::SIZE, RawData { size: 9 }), Value::Uint(9)),
        (value(types::INT, RawData { int32: -1 }), Value::Int(-1)),
        (
            value(types::BOOL, RawData { flag: true }),
            Value::Bool(true),
        ),
        (
            value(
                types::STRING,
                RawData {
                    string: text.as_ptr().cast_mut(),
                },
            ),
            Value::Str("0,1,2".to_owned()),
        ),
        (
            value(
                types::STRING,
                RawData {
                    string: std::ptr::null_mut(),
                },
            ),
            Value::Str(String::new()),
        ),
        (value(22, RawData { whole: [0; 3] }), Value::Other(22)),
    ];
    for (raw, want) in cases {
        // SAFETY: each value was built with the member its type code names.
        assert_eq!(unsafe { decode(&raw) }, want);
    }
    assert_eq!(Value::Int(-1).as_u32(), None);
    assert_eq!(Value::Uint(1 << 40).as_u32(), None);
    assert_eq!(Value::Str("1".into()).as_u32(), None);
    assert_eq!(Value::Uint(4).as_u32(), Some(4));
}

#[test]
fn builds_procs_and_infos_as_the_macros_do() {
    let proc = raw_proc("slurm.pmix.6.0", 3);
    assert_eq!(read_chars(&proc.nspace), "slurm.pmix.6.0");
    assert_eq!(proc.rank, 3);
    let long = "n".repeat(400);
    let proc = raw_proc(&long, 0);
    assert_eq!(
        read_chars(&proc.nspace),
        "n".repeat(255),
        "cut, NUL-terminated"
    );
    let info = flag_info(keys::COLLECT_DATA);
    assert_eq!(read_chars(&info.key), "pmix.collect");
    assert_eq!(info.flags, 0);
    // SAFETY: flag_info writes a BOOL value.
    assert_eq!(unsafe { decode(&info.value) }, Value::Bool(true));
}

#[test]
fn a_missing_library_is_a_clear_error() {
    let err = Pmix::load("libreflex-no-such-pmix.so.2").unwrap_err();
    assert!(err.contains("libreflex-no-such-pmix.so.2"), "{err}");
}
