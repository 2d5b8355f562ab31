//! Fuzzes the frame header, hello and business-card parsers: none may panic, and whatever
//! parses must encode back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reflex_tcp::frame::{encode_header, parse_header, Hello, HEADER_LEN};
use reflex_tcp::Card;

fuzz_target!(|data: &[u8]| {
    if let Some(head) = data.first_chunk::<HEADER_LEN>() {
        if let Ok(h) = parse_header(head, 1 << 18) {
            let mut again = [0u8; HEADER_LEN];
            encode_header(&mut again, h.kind, h.len);
            assert_eq!(&again, head);
        }
    }
    if let Ok(h) = Hello::parse(data) {
        assert_eq!(&h.encode()[HEADER_LEN..], data);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(card) = Card::parse(text) {
            assert_eq!(Card::parse(&card.to_string()), Ok(card));
        }
    }
});
