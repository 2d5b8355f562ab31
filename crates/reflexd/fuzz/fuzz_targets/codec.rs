//! Fuzzes the launcher protocol's stream decoder and the certificate name reader: no input may
//! panic, and a decoded message must encode back to the bytes it came from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reflexd::proto::codec::{encode, FrameBuffer};

fuzz_target!(|data: &[u8]| {
    let mut frames = FrameBuffer::default();
    frames.extend(data);
    let mut consumed = 0;
    while let Ok(Some(msg)) = frames.next_msg() {
        let bytes = encode(&msg);
        assert_eq!(&data[consumed..consumed + bytes.len()], &bytes[..]);
        consumed += bytes.len();
    }
    let _ = reflexd::identity::subject_common_name(data);
});
