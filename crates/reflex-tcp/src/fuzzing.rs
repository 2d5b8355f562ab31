//! The fuzz body of the TCP wire formats, shared by the `cargo fuzz` target (`fuzz/`) and the
//! stable corpus test below, so that every `cargo test` runs a deterministic share of the fuzzing.
//!
//! [`wire`] feeds one input to the parsers (frame header, the stripe header of a split packet's
//! piece, hello, business card): none may panic, and whatever parses must encode back to the
//! same bytes; a piece's header is also checked against the cuts of its packet
//! ([`crate::stripe::piece`]), as a receiver does. [`seeds`] holds every valid
//! message kind encoded; the test mutates them with [`reflex_base::mutate`].

use std::net::Ipv4Addr;

use crate::card::IfAddr;
use crate::frame::{
    encode_header, parse_header, Hello, Kind, Stripe, HEADER_LEN, HELLO_LEN, MAX_STREAMS,
    STRIPE_LEN,
};
use crate::stripe::{check_head, check_part};
use crate::Card;

/// `DATA` limit given to the header parser (small, so that length edits cross it).
const FUZZ_MAX_DATA: usize = 1 << 18;

/// Runs the parsers on `data`; panics if one panics or a parsed value does not round-trip.
pub fn wire(data: &[u8]) {
    if let Some(head) = data.first_chunk::<HEADER_LEN>() {
        if let Ok(h) = parse_header(head, FUZZ_MAX_DATA) {
            let mut again = [0u8; HEADER_LEN];
            encode_header(&mut again, h.kind, h.len);
            assert_eq!(&again, head, "a header that does not round-trip");
            let striped = matches!(h.kind, Kind::Head | Kind::Part);
            if let Some(stripe) = data[HEADER_LEN..].first_chunk::<STRIPE_LEN>() {
                if striped {
                    check_stripe(h.kind, h.len, stripe);
                }
            }
        }
    }
    let hello_body = data.get(HEADER_LEN.min(data.len())..).unwrap_or_default();
    for body in [data, hello_body] {
        if let Ok(h) = Hello::parse(body) {
            assert_eq!(
                &h.encode()[HEADER_LEN..],
                body,
                "a hello that does not round-trip"
            );
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(card) = Card::parse(text) {
            assert_eq!(Card::parse(&card.to_string()), Ok(card.clone()));
            let mine = [IfAddr {
                ip: Ipv4Addr::new(10, 0, 0, 1),
                prefix: 24,
            }];
            let _ = card.choose(&mine);
        }
    }
}

/// Parses the stripe header of a `HEAD` or `PART` frame of `frame_len` payload bytes and judges
/// it with the receiver's checks for every stream count: they may refuse it but never panic, and
/// what they accept lies within its packet.
fn check_stripe(kind: Kind, frame_len: usize, bytes: &[u8; STRIPE_LEN]) {
    let stripe = Stripe::parse(bytes);
    assert_eq!(
        &stripe.encode(),
        bytes,
        "a stripe header that does not round-trip"
    );
    // `parse_header` refuses `HEAD` and `PART` frames without payload after the stripe header.
    let body = frame_len - STRIPE_LEN;
    for n in 2..=MAX_STREAMS {
        match kind {
            Kind::Head => {
                if let Ok(len) = check_head(stripe, body, n, stripe.seq, FUZZ_MAX_DATA) {
                    assert!(body < len && len <= FUZZ_MAX_DATA, "{stripe:?} {body}");
                }
            }
            Kind::Part => {
                for k in 1..n {
                    let len = (stripe.value as usize).saturating_mul(2).min(FUZZ_MAX_DATA);
                    if let Ok(range) = check_part(stripe, body, n, k, len) {
                        assert!(range.end <= len && range.len() == body, "{stripe:?} {body}");
                    }
                }
            }
            _ => return,
        }
    }
}

/// Every valid message of the wire formats, encoded: one header of each kind, a hello (header and
/// payload), a stream of frames, and business cards.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (kind, len) in [
        (Kind::Data, 0),
        (Kind::Data, 5),
        (Kind::Data, FUZZ_MAX_DATA),
        (Kind::Hello, HELLO_LEN),
        (Kind::Accept, 0),
        (Kind::Reject, 0),
    ] {
        let mut h = vec![0u8; HEADER_LEN];
        encode_header(&mut h, kind, len);
        out.push(h);
    }
    // A packet of 100 000 bytes in two pieces: the HEAD and the PART, with their stripe headers.
    for (kind, value, len) in [(Kind::Head, 100_000, 50_000), (Kind::Part, 50_000, 50_000)] {
        let mut f = vec![0u8; HEADER_LEN];
        encode_header(&mut f, kind, STRIPE_LEN + len);
        f.extend_from_slice(&Stripe { seq: 3, value }.encode());
        f.extend_from_slice(&[0x5a; 16]);
        out.push(f);
    }
    let hello = Hello {
        from: 3,
        to: 9,
        cookie: 0x0123_4567_89ab_cdef,
        stream: 1,
        streams: 4,
        job: 0,
    }
    .encode();
    out.push(hello.to_vec());
    out.push(hello[HEADER_LEN..].to_vec());
    let mut stream = hello.to_vec();
    let mut data = [0u8; HEADER_LEN + 5];
    encode_header(&mut data, Kind::Data, 5);
    data[HEADER_LEN..].copy_from_slice(b"hello");
    stream.extend_from_slice(&data);
    out.push(stream);
    for card in [
        "tcp1;port=7000;cookie=00000000deadbeef;addrs=10.0.0.1/24,127.0.0.1/8",
        "tcp1;port=1;cookie=ffffffffffffffff;addrs=192.168.1.20/16",
        "tcp1;port=65535;cookie=0000000000000000;addrs=172.16.0.9/32",
    ] {
        out.push(card.as_bytes().to_vec());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_base::mutate;

    #[test]
    fn the_seeds_are_valid() {
        for s in seeds() {
            let ok = s
                .first_chunk::<HEADER_LEN>()
                .is_some_and(|h| parse_header(h, FUZZ_MAX_DATA).is_ok())
                || Hello::parse(&s).is_ok()
                || std::str::from_utf8(&s).is_ok_and(|t| Card::parse(t).is_ok());
            assert!(ok, "seed {s:?} parses as nothing");
        }
    }

    /// libFuzzer's find (CI, 2026-11-26): a `DATA` header of length 0 followed by eight more
    /// bytes, which the harness took for a stripe header.
    #[test]
    fn a_short_data_frame_is_not_read_as_striped() {
        let mut input = vec![0u8, 0, 0, 0, 1, 0, 0, 0];
        input.extend_from_slice(&[0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x50]);
        wire(&input);
    }

    #[test]
    fn wire_parsers_survive_100k_mutants() {
        mutate::run(&seeds(), 100_000, 0x7c9_f00d, wire);
    }
}
