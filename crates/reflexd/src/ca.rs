//! The cluster's certificate authority (`reflex-ca`): one CA signs user and host certificates.
//!
//! As in REXEC, a single well-known CA is trusted by every `reflexd`; a user certificate names
//! the user in its subject common name (client authentication), a host certificate names the
//! host's DNS names and addresses (server authentication), so `mpiexec` also checks that it
//! talks to the real daemon. Keys are ECDSA P-256 (rcgen's default), written with mode 0600.
//! The CA is rebuilt from its key and its fixed subject whenever it signs, so only `ca.key`
//! and `ca.pem` need to be kept. User certificates are valid for a year and host certificates
//! for five from the moment they are issued (less an hour of clock skew); [`Validity`] sets
//! another period (`reflex-ca --days`, `--valid-from`, `--not-after`), e.g. an already expired
//! one to test that daemons and `mpiexec` refuse it.

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use time::{Date, Duration, Month, OffsetDateTime};

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

/// How long a user certificate is valid by default.
pub const USER_DAYS: u32 = 365;
/// How long a host certificate is valid by default.
pub const HOST_DAYS: u32 = 5 * 365;
/// A new certificate is valid from this long before it was issued, so that a host whose clock
/// is a little behind the CA's accepts it at once.
const CLOCK_SKEW: Duration = Duration::hours(1);

/// When a certificate is valid: from `not_before` to `not_after` (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
}

/// What the user asked for (`reflex-ca --valid-from DATE --not-after DATE --days N`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidityRequest {
    pub valid_from: Option<String>,
    pub not_after: Option<String>,
    pub days: Option<u32>,
}

impl Validity {
    /// From now (less [`CLOCK_SKEW`]) for `days` days.
    pub fn days_from_now(days: u32) -> Validity {
        let now = now_utc();
        Validity {
            not_before: now - CLOCK_SKEW,
            not_after: now + Duration::days(days.into()),
        }
    }

    /// The period `request` describes; `default_days` when it gives neither an end nor a
    /// length. Dates are `YYYY-MM-DD` (midnight UTC); the end must come after the start.
    pub fn from_request(request: &ValidityRequest, default_days: u32) -> Result<Validity, String> {
        let not_before = match &request.valid_from {
            Some(date) => parse_date(date)?,
            None => now_utc() - CLOCK_SKEW,
        };
        let not_after = match (&request.not_after, request.days) {
            (Some(_), Some(_)) => return Err("give --not-after or --days, not both".into()),
            (Some(date), None) => parse_date(date)?,
            (None, days) => {
                let start = request
                    .valid_from
                    .as_ref()
                    .map_or(now_utc(), |_| not_before);
                start + Duration::days(days.unwrap_or(default_days).into())
            }
        };
        if not_after <= not_before {
            return Err(format!(
                "the certificate would never be valid (from {} to {})",
                show_date(not_before),
                show_date(not_after)
            ));
        }
        Ok(Validity {
            not_before,
            not_after,
        })
    }

    /// `valid from DATE to DATE`, with a warning when that is not now.
    pub fn describe(&self) -> String {
        let now = now_utc();
        let when = if self.not_after < now {
            " (already expired)"
        } else if self.not_before > now {
            " (not valid yet)"
        } else {
            ""
        };
        format!(
            "valid from {} to {}{when}",
            show_date(self.not_before),
            show_date(self.not_after)
        )
    }
}

fn now_utc() -> OffsetDateTime {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    OffsetDateTime::from_unix_timestamp(secs as i64).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// `YYYY-MM-DD` as midnight UTC of that day.
fn parse_date(text: &str) -> Result<OffsetDateTime, String> {
    let bad = || format!("{text:?} is not a date (YYYY-MM-DD)");
    let fields: Vec<&str> = text.split('-').collect();
    let [y, m, d] = fields[..] else {
        return Err(bad());
    };
    let number = |f: &str, digits: usize| match f.len() == digits {
        true => f.parse::<u16>().map_err(|_| bad()),
        false => Err(bad()),
    };
    let month = Month::try_from(number(m, 2)? as u8).map_err(|_| bad())?;
    let date = Date::from_calendar_date(number(y, 4)?.into(), month, number(d, 2)? as u8)
        .map_err(|_| bad())?;
    Ok(date.midnight().assume_utc())
}

fn show_date(t: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}

/// A TLS failure in words: the dates of a certificate that is expired or not valid yet, and
/// what a certificate refused by the peer means (rustls gives UNIX times and alert names).
pub fn explain_tls_failure(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as Alert, CertificateError as Cert, Error};
    let at = |t: &rustls::pki_types::UnixTime| {
        OffsetDateTime::from_unix_timestamp(t.as_secs() as i64)
            .map_or(t.as_secs().to_string(), show_date)
    };
    match e {
        Error::InvalidCertificate(Cert::ExpiredContext { time, not_after }) => format!(
            "the peer's certificate expired on {} ({} ago); the cluster CA must issue a new one \
             (reflex-ca)",
            at(not_after),
            span(time.as_secs().saturating_sub(not_after.as_secs()))
        ),
        Error::InvalidCertificate(Cert::NotValidYetContext { time, not_before }) => format!(
            "the peer's certificate is not valid before {} (in {}; is a clock wrong?)",
            at(not_before),
            span(not_before.as_secs().saturating_sub(time.as_secs()))
        ),
        Error::AlertReceived(Alert::CertificateExpired) => {
            "the peer refused our certificate as expired or not yet valid (see reflex-ca \
             --days, and the clocks)"
                .into()
        }
        Error::AlertReceived(Alert::UnknownCA | Alert::BadCertificate) => {
            "the peer refused our certificate (not signed by the CA it trusts?)".into()
        }
        other => other.to_string(),
    }
}

/// A duration in days, hours or seconds, whichever reads best.
fn span(secs: u64) -> String {
    match secs {
        s if s >= 2 * 86_400 => format!("{} days", s / 86_400),
        s if s >= 2 * 3_600 => format!("{} hours", s / 3_600),
        s => format!("{s} seconds"),
    }
}

/// Parameters for a certificate with this subject common name, valid during `validity`.
fn params_for(
    names: Vec<String>,
    common_name: &str,
    validity: Validity,
) -> io::Result<CertificateParams> {
    let mut params = CertificateParams::new(names).map_err(ca_error)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.not_before = validity.not_before;
    params.not_after = validity.not_after;
    Ok(params)
}

fn ca_params(name: &str) -> io::Result<CertificateParams> {
    // Fixed, so that the CA certificate rebuilt from its key names the same period (trust
    // anchors are not checked for expiry; the certificates they sign are).
    let validity = Validity {
        not_before: rcgen::date_time_ymd(2020, 1, 1),
        not_after: rcgen::date_time_ymd(2060, 1, 1),
    };
    let mut params = params_for(Vec::new(), name, validity)?;
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

    /// A certificate for user `name` (client authentication), valid for [`USER_DAYS`].
    pub fn issue_user(&self, name: &str) -> io::Result<Issued> {
        self.issue_user_for(name, Validity::days_from_now(USER_DAYS))
    }

    /// A certificate for user `name`, valid during `validity`.
    pub fn issue_user_for(&self, name: &str, validity: Validity) -> io::Result<Issued> {
        if name.is_empty() || name.chars().any(|c| c.is_control() || c == '/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a user name"),
            ));
        }
        let mut params = params_for(Vec::new(), name, validity)?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        self.sign(params)
    }

    /// A certificate for a host reachable as `names` (DNS names or IP addresses), valid for
    /// [`HOST_DAYS`].
    pub fn issue_host(&self, names: &[String]) -> io::Result<Issued> {
        self.issue_host_for(names, Validity::days_from_now(HOST_DAYS))
    }

    /// A certificate for a host reachable as `names`, valid during `validity`.
    pub fn issue_host_for(&self, names: &[String], validity: Validity) -> io::Result<Issued> {
        let first = names.first().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a host certificate needs a name",
            )
        })?;
        let mut params = params_for(names.to_vec(), first, validity)?;
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

    fn request(from: Option<&str>, to: Option<&str>, days: Option<u32>) -> ValidityRequest {
        ValidityRequest {
            valid_from: from.map(Into::into),
            not_after: to.map(Into::into),
            days,
        }
    }

    #[test]
    fn validity_requests() {
        let v = Validity::from_request(&request(Some("2020-02-29"), None, Some(2)), 9).unwrap();
        assert_eq!(v.not_before, rcgen::date_time_ymd(2020, 2, 29));
        assert_eq!(v.not_after, rcgen::date_time_ymd(2020, 3, 2));
        assert!(v
            .describe()
            .ends_with("to 2020-03-02 00:00 UTC (already expired)"));
        let v = Validity::from_request(&request(Some("2999-01-01"), None, None), 1).unwrap();
        assert!(
            v.describe().ends_with("(not valid yet)"),
            "{}",
            v.describe()
        );
        let v = Validity::from_request(&request(None, None, Some(30)), 1).unwrap();
        assert_eq!((v.not_after - v.not_before).whole_hours(), 30 * 24 + 1);
        for (req, want) in [
            (request(Some("2020-02-30"), None, None), "not a date"),
            (request(Some("20-01-01"), None, None), "not a date"),
            (request(None, Some("2020-1-01"), None), "not a date"),
            (request(None, Some("2021-01-01"), Some(3)), "not both"),
            (
                request(Some("2021-01-01"), Some("2021-01-01"), None),
                "never be valid",
            ),
        ] {
            let err = Validity::from_request(&req, 1).unwrap_err();
            assert!(err.contains(want), "{req:?}: {err}");
        }
    }

    #[test]
    fn expired_and_future_certificates_are_refused() {
        let ca = Authority::create("Reflex CA validity").unwrap();
        let roots = crate::tls::roots_from_pem(ca.cert_pem().as_bytes()).unwrap();
        let verify = |from: &str, to: &str| {
            let period = Validity::from_request(&request(Some(from), Some(to), None), 1).unwrap();
            let user = ca.issue_user_for("alice", period).unwrap();
            let cert = crate::tls::certs_from_pem(user.cert_pem.as_bytes()).unwrap();
            crate::tls::verify_client_cert(&roots, &cert[0])
        };
        let expired = verify("2020-01-01", "2020-12-31").unwrap_err().to_string();
        assert!(
            expired.contains("expired on 2020-12-31 00:00 UTC ("),
            "{expired}"
        );
        let early = verify("2999-01-01", "2999-12-31").unwrap_err().to_string();
        assert!(early.contains("not valid before 2999-01-01"), "{early}");
        verify("2020-01-01", "2999-12-31").unwrap();
    }
}
