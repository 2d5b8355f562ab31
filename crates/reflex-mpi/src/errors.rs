//! Error codes: an MPI class plus a slot holding the precise message.
//!
//! As in MPICH, an error code's low 7 bits are its class (`MPI_Error_class` masks them) and the
//! bits above index a ring of recent messages, so `MPI_Error_string` prints exactly what went wrong
//! ("invalid rank: destination rank 5 is out of range for a communicator of size 4"), not just the
//! class. A bare class is a valid code too; a code whose slot was reused prints its class text.

use reflex_engine::{ErrorClass, MpiError};
use std::sync::Mutex;

const SLOTS: usize = 1024;
const CLASS_BITS: u32 = 7;

struct Ring {
    messages: Vec<Option<(i32, String)>>,
    next: usize,
}

static RING: Mutex<Ring> = Mutex::new(Ring {
    messages: Vec::new(),
    next: 1,
});

/// Stores `e` (raised in function `func`) and returns its error code.
#[cold]
pub fn register(func: &str, e: &MpiError) -> i32 {
    let mut ring = RING.lock().unwrap_or_else(|p| p.into_inner());
    if ring.messages.is_empty() {
        ring.messages.resize(SLOTS, None);
    }
    let slot = ring.next;
    ring.next = if slot + 1 == SLOTS { 1 } else { slot + 1 };
    let code = (e.class as i32) | ((slot as i32) << CLASS_BITS);
    ring.messages[slot] = Some((code, format!("{func}: {}", e)));
    code
}

/// The class of `code`, if it is a code Reflex could have produced.
pub fn class_of(code: i32) -> Option<ErrorClass> {
    if code < 0 {
        return None;
    }
    ErrorClass::from_i32(code & ((1 << CLASS_BITS) - 1))
        .filter(|_| (code >> CLASS_BITS) < SLOTS as i32)
}

/// The text of `code`.
pub fn string_of(code: i32) -> Option<String> {
    let class = class_of(code)?;
    let slot = (code >> CLASS_BITS) as usize;
    if slot != 0 {
        let ring = RING.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(Some((c, text))) = ring.messages.get(slot) {
            if *c == code {
                return Some(text.clone());
            }
        }
    }
    Some(class.description().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_carry_class_and_message() {
        let e = MpiError::new(ErrorClass::Rank, "destination rank 5 is out of range");
        let code = register("MPI_Send", &e);
        assert_eq!(class_of(code), Some(ErrorClass::Rank));
        assert_eq!(
            string_of(code).unwrap(),
            "MPI_Send: invalid rank: destination rank 5 is out of range"
        );
        assert_eq!(string_of(ErrorClass::Tag as i32).unwrap(), "invalid tag");
        assert_eq!(class_of(-3), None);
        assert_eq!(class_of(99), None);
    }
}
