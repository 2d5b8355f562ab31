//! The cluster key: a 256-bit secret shared by every host, which authenticates discovery
//! announcements (HMAC-SHA256, [`crate::discovery::announce`]).
//!
//! REXEC trusts its multicast channel; Reflex does not: anyone on the network can send a
//! datagram, so a selector believes only announcements sealed with this key. `reflex-ca init`
//! creates it next to the CA (`cluster.key`, mode 0600, 64 hex digits) and `reflex-ca host`
//! copies it into every host's certificate directory; `reflexd` reads it from there. The key
//! gives no access to jobs (that takes a certificate): whoever holds it can only announce hosts.

use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::ca::write_file;

/// Name of the key file in a CA or certificate directory.
pub const FILE: &str = "cluster.key";
/// Bytes of the key (the output size of SHA-256, as RFC 2104 recommends for HMAC).
pub const LEN: usize = 32;

/// The shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterKey([u8; LEN]);

impl fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterKey(..)") // never print the secret
    }
}

fn invalid(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    )
}

impl ClusterKey {
    /// A fresh random key from the operating system.
    pub fn generate() -> io::Result<ClusterKey> {
        let mut bytes = [0u8; LEN];
        getrandom::getrandom(&mut bytes)
            .map_err(|e| io::Error::other(format!("no randomness for the cluster key: {e}")))?;
        Ok(ClusterKey(bytes))
    }

    /// A key with these bytes (tests, tools).
    pub fn from_bytes(bytes: [u8; LEN]) -> ClusterKey {
        ClusterKey(bytes)
    }

    /// The secret bytes.
    pub fn bytes(&self) -> &[u8; LEN] {
        &self.0
    }

    /// Parses the file's text: 64 hex digits, surrounding white space ignored.
    pub fn from_hex(text: &str) -> Option<ClusterKey> {
        let text = text.trim();
        if text.len() != 2 * LEN || !text.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; LEN];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(ClusterKey(bytes))
    }

    fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads `path`; refuses a file that others than its owner may read.
    pub fn load(path: &Path) -> io::Result<ClusterKey> {
        let meta = std::fs::metadata(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
        })?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(invalid(path, "readable by others (chmod 600 it)"));
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
        })?;
        Self::from_hex(&text).ok_or_else(|| invalid(path, "not 64 hexadecimal digits"))
    }

    /// Writes the key to `path` (mode 0600).
    pub fn save(&self, path: &Path) -> io::Result<()> {
        write_file(path, format!("{}\n", self.to_hex()).as_bytes(), 0o600)
    }
}

/// Creates `dir/cluster.key` unless it exists (`reflex-ca init`).
pub fn ensure(dir: &Path) -> io::Result<()> {
    let path = dir.join(FILE);
    if path.exists() {
        return ClusterKey::load(&path).map(|_| ());
    }
    ClusterKey::generate()?.save(&path)
}

/// Copies the CA's `cluster.key` into a host's certificate directory (`reflex-ca host`);
/// nothing happens for a CA made before cluster keys existed.
pub fn copy_to(ca_dir: &Path, out_dir: &Path) -> io::Result<()> {
    let path = ca_dir.join(FILE);
    if !path.exists() {
        return Ok(());
    }
    ClusterKey::load(&path)?.save(&out_dir.join(FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_saved_private_and_read_back() {
        let dir = std::env::temp_dir().join(format!("reflex-key-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        ensure(&dir).unwrap();
        let key = ClusterKey::load(&dir.join(FILE)).unwrap();
        ensure(&dir).unwrap(); // kept, not replaced
        assert_eq!(ClusterKey::load(&dir.join(FILE)).unwrap(), key);
        let out = dir.join("host");
        std::fs::create_dir_all(&out).unwrap();
        copy_to(&dir, &out).unwrap();
        assert_eq!(ClusterKey::load(&out.join(FILE)).unwrap(), key);
        std::fs::set_permissions(dir.join(FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = ClusterKey::load(&dir.join(FILE)).unwrap_err().to_string();
        assert!(err.contains("readable by others"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_ne!(ClusterKey::generate().unwrap(), key);
        assert!(ClusterKey::from_hex("00").is_none());
        assert!(ClusterKey::from_hex(&"zz".repeat(32)).is_none());
        assert_eq!(format!("{key:?}"), "ClusterKey(..)");
    }
}
