//! The cluster's certificate authority (`reflex-ca`): one CA signs user and host certificates.
//!
//! As in REXEC, a single well-known CA is trusted by every `reflexd`; a user certificate names
//! the user in its subject common name (client authentication), a host certificate names the
//! host's DNS names and addresses (server authentication), so `mpiexec` also checks that it
//! talks to the real daemon. Keys are ECDSA P-256 (rcgen's default), written with mode 0600.
//! The CA is rebuilt from its key and its fixed subject whenever it signs, so only `ca.key`
//! and `ca.pem` need to be kept.

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone)]
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

/// A CA that can sign (its key is loaded).
pub struct Authority {
    name: String,
    key: KeyPair,
    cert: rcgen::Certificate,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("name", &self.name)
            .finish()
    }
}

fn ca_error(e: rcgen::Error) -> io::Error {
    io::Error::other(format!("certificate generation failed: {e}"))
}

/// The current year (for validity periods; precise dates do not matter here).
fn this_year() -> i32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    1970 + (secs / 31_556_952) as i32
}

/// Parameters valid from the start of this year for `years` years.
fn params_for(names: Vec<String>, common_name: &str, years: i32) -> io::Result<CertificateParams> {
    let mut params = CertificateParams::new(names).map_err(ca_error)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    let year = this_year();
    params.not_before = rcgen::date_time_ymd(year, 1, 1);
    params.not_after = rcgen::date_time_ymd(year + years, 1, 1);
    Ok(params)
}

fn ca_params(name: &str) -> io::Result<CertificateParams> {
    let mut params = params_for(Vec::new(), name, 20)?;
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(params)
}

impl Authority {
    /// A new CA named `name`.
    pub fn create(name: &str) -> io::Result<Authority> {
        let key = KeyPair::generate().map_err(ca_error)?;
        Self::from_key(name, key)
    }

    /// The CA named `name` with this key (as written by [`Authority::save`]).
    pub fn from_key(name: &str, key: KeyPair) -> io::Result<Authority> {
        let cert = ca_params(name)?.self_signed(&key).map_err(ca_error)?;
        Ok(Authority {
            name: name.to_owned(),
            key,
            cert,
        })
    }

    /// The CA certificate (PEM) that daemons and clients trust.
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// A certificate for user `name` (client authentication).
    pub fn issue_user(&self, name: &str) -> io::Result<Issued> {
        if name.is_empty() || name.chars().any(|c| c.is_control() || c == '/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a user name"),
            ));
        }
        let mut params = params_for(Vec::new(), name, 1)?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        self.sign(params)
    }

    /// A certificate for a host reachable as `names` (DNS names or IP addresses).
    pub fn issue_host(&self, names: &[String]) -> io::Result<Issued> {
        let first = names.first().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a host certificate needs a name",
            )
        })?;
        let mut params = params_for(names.to_vec(), first, 5)?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> io::Result<Issued> {
        let key = KeyPair::generate().map_err(ca_error)?;
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .map_err(ca_error)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Writes `ca.pem`, `ca.key` (0600) and `ca.name` into `dir`.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        write_file(&dir.join("ca.pem"), self.cert_pem().as_bytes(), 0o644)?;
        write_file(&dir.join("ca.name"), self.name.as_bytes(), 0o644)?;
        write_file(
            &dir.join("ca.key"),
            self.key.serialize_pem().as_bytes(),
            0o600,
        )
    }

    /// Loads the CA written by [`Authority::save`].
    pub fn load(dir: &Path) -> io::Result<Authority> {
        let read = |f: &str| {
            fs::read_to_string(dir.join(f)).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot read {}: {e}", dir.join(f).display()),
                )
            })
        };
        let key = KeyPair::from_pem(&read("ca.key")?).map_err(ca_error)?;
        let authority = Self::from_key(read("ca.name")?.trim(), key)?;
        if authority.cert_pem().is_empty() {
            return Err(io::Error::other("empty ca certificate"));
        }
        Ok(authority)
    }
}

/// Writes `bytes` to `path` with `mode` (created or truncated).
pub fn write_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
    f.write_all(bytes)
}

/// Writes an issued certificate as `<stem>.pem` and `<stem>.key` (0600) into `dir`, with a copy
/// of the CA certificate as `ca.pem`.
pub fn save_issued(dir: &Path, stem: &str, issued: &Issued, ca_pem: &str) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    write_file(
        &dir.join(format!("{stem}.pem")),
        issued.cert_pem.as_bytes(),
        0o644,
    )?;
    write_file(
        &dir.join(format!("{stem}.key")),
        issued.key_pem.as_bytes(),
        0o600,
    )?;
    write_file(&dir.join("ca.pem"), ca_pem.as_bytes(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reloaded_ca_signs_certificates_the_original_verifies() {
        let dir = std::env::temp_dir().join(format!("reflex-ca-test-{}", std::process::id()));
        let ca = Authority::create("Reflex CA unit").unwrap();
        ca.save(&dir).unwrap();
        let again = Authority::load(&dir).unwrap();
        let user = again.issue_user("alice").unwrap();
        // The original CA certificate is the trust anchor; the new one was never written.
        let roots = crate::tls::roots_from_pem(ca.cert_pem().as_bytes()).unwrap();
        let cert = crate::tls::certs_from_pem(user.cert_pem.as_bytes()).unwrap();
        crate::tls::verify_client_cert(&roots, &cert[0]).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &fs::metadata(dir.join("ca.key")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        fs::remove_dir_all(&dir).unwrap();
        assert!(ca.issue_user("").is_err());
        assert!(ca.issue_host(&[]).is_err());
    }
}
