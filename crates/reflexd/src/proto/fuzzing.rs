//! The fuzz body of the launcher protocol, shared by the `cargo fuzz` target (`fuzz/`) and the
//! stable corpus test below, so that every `cargo test` runs a deterministic share of the fuzzing.
//!
//! [`codec`] feeds one input to the stream decoder ([`FrameBuffer`]) and to the certificate name
//! reader: no input may panic, and every decoded message must encode back to the bytes it came
//! from. [`seeds`] holds every message type encoded (alone and as one stream); the test mutates
//! them with `reflex_base::mutate`.

use super::codec::{encode, FrameBuffer, LaunchSpec, Msg, SelectedHost, VERSION};

/// Decodes `data` as a stream; panics if the decoder panics or a message does not round-trip.
pub fn codec(data: &[u8]) {
    let mut frames = FrameBuffer::default();
    frames.extend(data);
    let mut consumed = 0;
    while let Ok(Some(msg)) = frames.next_msg() {
        let bytes = encode(&msg);
        assert_eq!(
            &data[consumed..consumed + bytes.len()],
            &bytes[..],
            "{msg:?} does not round-trip"
        );
        consumed += bytes.len();
    }
    let _ = crate::identity::subject_common_name(data);
}

/// One message of every type.
pub fn messages() -> Vec<Msg> {
    vec![
        Msg::Hello {
            version: VERSION,
            uid: 1000,
            user: "alice".into(),
        },
        Msg::Welcome { host: "n1".into() },
        Msg::Launch(LaunchSpec {
            kvsname: "reflex-1-abc".into(),
            size: 4,
            ranks: vec![2, 3],
            node: 1,
            argv: vec![b"./a.out".to_vec(), vec![0xff, 0]],
            env: vec![(b"PATH".to_vec(), b"/bin".to_vec())],
            cwd: b"/tmp".to_vec(),
        }),
        Msg::Started { pids: vec![10, 11] },
        Msg::Stdin(b"input".to_vec()),
        Msg::StdinEof,
        Msg::Signal(15),
        Msg::Kill,
        Msg::Output {
            rank: 3,
            err: true,
            bytes: b"oops\n".to_vec(),
        },
        Msg::PmiRequest {
            rank: 1,
            line: b"cmd=barrier_in\n".to_vec(),
        },
        Msg::PmiReply {
            rank: 1,
            line: b"cmd=barrier_out\n".to_vec(),
        },
        Msg::Exit {
            rank: 2,
            status: 137,
            how: "was killed by signal 9".into(),
        },
        Msg::Done,
        Msg::Heartbeat,
        Msg::Error("no such user".into()),
        Msg::Stop,
        Msg::Continue,
        Msg::Select {
            slots: 8,
            policy: "least-load".into(),
        },
        Msg::Selected {
            hosts: vec![SelectedHost {
                name: "n2".into(),
                port: 7290,
                slots: 2,
            }],
        },
    ]
}

/// Every message encoded alone, then all of them as one stream, then a user certificate (DER)
/// for the name reader.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = messages().iter().map(encode).collect();
    out.push(out.concat());
    let ca = crate::ca::Authority::create("Reflex fuzz CA").expect("a test CA");
    let user = ca.issue_user("alice").expect("a test certificate");
    let der = crate::tls::certs_from_pem(user.cert_pem.as_bytes()).expect("its DER");
    out.push(der[0].to_vec());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_cover_every_message_type() {
        let all = seeds();
        let (cert, frames) = all.split_last().unwrap();
        assert_eq!(
            crate::identity::subject_common_name(cert).as_deref(),
            Ok("alice")
        );
        let types: std::collections::HashSet<u16> = frames
            .iter()
            .map(|s| u16::from_le_bytes([s[4], s[5]]))
            .collect();
        assert_eq!(types.len(), messages().len());
        for s in frames {
            codec(s);
        }
    }

    #[test]
    fn the_codec_survives_100k_mutants() {
        reflex_base::mutate::run(&seeds(), 100_000, 0x5eed_c0de, codec);
    }
}
