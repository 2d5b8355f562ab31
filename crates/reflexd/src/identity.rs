//! Who a client certificate names, and whether that user may run jobs here.
//!
//! The user's identity is the certificate's subject common name (REXEC's model: one trusted CA
//! signs user certificates whose identity is the user name; `seed000a.md` §1.2 "Security").
//! rustls has already verified the chain when this runs; this module only reads the name, with
//! a small bounds-checked DER reader (X.509 `Certificate → tbsCertificate → subject`), and
//! checks it against the local account database: the name must exist on this host and its uid
//! must be the uid the client says it runs as.

use std::fmt;

/// A certificate that could not be read, or a user that may not run jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityError(pub String);

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for IdentityError {}

fn bad(why: &str) -> IdentityError {
    IdentityError(format!("unreadable client certificate: {why}"))
}

/// One DER element: tag and contents.
struct Tlv<'a> {
    tag: u8,
    body: &'a [u8],
}

/// Splits the first DER element off `input`.
fn next_tlv(input: &[u8]) -> Result<(Tlv<'_>, &[u8]), IdentityError> {
    let (&tag, rest) = input
        .split_first()
        .ok_or_else(|| bad("truncated element"))?;
    let (&first, rest) = rest.split_first().ok_or_else(|| bad("truncated length"))?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return Err(bad("bad length"));
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | b as usize);
        (len, &rest[n..])
    };
    if len > rest.len() {
        return Err(bad("element longer than its container"));
    }
    Ok((
        Tlv {
            tag,
            body: &rest[..len],
        },
        &rest[len..],
    ))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// 2.5.4.3, commonName.
const CN_OID: [u8; 3] = [0x55, 0x04, 0x03];
/// UTF8String, PrintableString, IA5String.
const STRING_TAGS: [u8; 3] = [0x0c, 0x13, 0x16];

/// The subject common name of a DER certificate.
pub fn subject_common_name(der: &[u8]) -> Result<String, IdentityError> {
    let (cert, _) = next_tlv(der)?;
    let (tbs, _) = next_tlv(cert.body)?;
    if cert.tag != SEQUENCE || tbs.tag != SEQUENCE {
        return Err(bad("not a certificate"));
    }
    let mut fields = tbs.body;
    let mut seen = Vec::new();
    while !fields.is_empty() && seen.len() < 6 {
        let (field, rest) = next_tlv(fields)?;
        if !(seen.is_empty() && field.tag == 0xa0) {
            seen.push(field.tag);
            if seen.len() == 5 {
                // serial, signature algorithm, issuer, validity, subject
                return common_name_of(field.body);
            }
        }
        fields = rest;
    }
    Err(bad("no subject"))
}

/// The first commonName in a `Name` (`SEQUENCE OF SET OF {OID, value}`).
fn common_name_of(mut rdns: &[u8]) -> Result<String, IdentityError> {
    while !rdns.is_empty() {
        let (set, rest) = next_tlv(rdns)?;
        rdns = rest;
        if set.tag != SET {
            return Err(bad("name is not a sequence of sets"));
        }
        let mut atvs = set.body;
        while !atvs.is_empty() {
            let (atv, rest) = next_tlv(atvs)?;
            atvs = rest;
            let (oid, value) = next_tlv(atv.body)?;
            let (value, _) = next_tlv(value)?;
            if oid.tag == OID && oid.body == CN_OID && STRING_TAGS.contains(&value.tag) {
                return String::from_utf8(value.body.to_vec())
                    .map_err(|_| bad("common name is not utf-8"));
            }
        }
    }
    Err(bad("the subject has no common name"))
}

/// Checks that `cert_user` (from the certificate) may run as `claimed_uid` on this host, given
/// the local uid of a user name (`lookup`). Returns the uid.
pub fn authorize(
    cert_user: &str,
    claimed_user: &str,
    claimed_uid: u32,
    lookup: impl Fn(&str) -> Option<u32>,
) -> Result<u32, IdentityError> {
    if cert_user != claimed_user {
        return Err(IdentityError(format!(
            "the certificate is for user {cert_user:?}, the client says {claimed_user:?}"
        )));
    }
    match lookup(cert_user) {
        None => Err(IdentityError(format!(
            "user {cert_user:?} has no account on this host"
        ))),
        Some(uid) if uid != claimed_uid => Err(IdentityError(format!(
            "user {cert_user:?} has uid {uid} here, the client runs as uid {claimed_uid}"
        ))),
        Some(uid) => Ok(uid),
    }
}

/// The uid of a local user name (`getpwnam`).
pub fn local_uid(name: &str) -> Option<u32> {
    nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .map(|u| u.uid.as_raw())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_the_subject_not_the_issuer() {
        let ca = crate::ca::Authority::create("Reflex CA test").unwrap();
        let user = ca.issue_user("alice").unwrap();
        let der = crate::tls::certs_from_pem(user.cert_pem.as_bytes()).unwrap();
        assert_eq!(subject_common_name(der[0].as_ref()).unwrap(), "alice");
        let own = crate::tls::certs_from_pem(ca.cert_pem().as_bytes()).unwrap();
        assert_eq!(
            subject_common_name(own[0].as_ref()).unwrap(),
            "Reflex CA test"
        );
    }

    #[test]
    fn authorizes_only_matching_local_users() {
        let db = |name: &str| (name == "alice").then_some(1000);
        assert_eq!(authorize("alice", "alice", 1000, db), Ok(1000));
        assert!(authorize("alice", "bob", 1000, db)
            .unwrap_err()
            .0
            .contains("client says"));
        assert!(authorize("alice", "alice", 0, db)
            .unwrap_err()
            .0
            .contains("uid 1000 here"));
        assert!(authorize("carol", "carol", 5, db)
            .unwrap_err()
            .0
            .contains("no account"));
        assert_eq!(local_uid("root"), Some(0));
        assert_eq!(local_uid("no-such-user-reflex"), None);
    }

    proptest! {
        #[test]
        fn reader_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = subject_common_name(&bytes);
        }

        #[test]
        fn corrupted_certificates_never_panic(i in 0usize..2000, byte in any::<u8>()) {
            let ca = crate::ca::Authority::create("x").unwrap();
            let mut der = crate::tls::certs_from_pem(ca.cert_pem().as_bytes()).unwrap()[0].to_vec();
            let i = i % der.len();
            der[i] = byte;
            let _ = subject_common_name(&der);
        }
    }
}
