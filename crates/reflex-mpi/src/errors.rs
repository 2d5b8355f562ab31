//! Error codes: an MPI class plus a slot holding the precise message.
//!
//! As in MPICH, an error code's low 7 bits are its class (`MPI_Error_class` masks them) and the
//! bits above index a ring of recent messages, so `MPI_Error_string` prints exactly what went wrong
//! ("invalid rank: destination rank 5 is out of range for a communicator of size 4"), not just the
//! class. A bare class is a valid code too; a code whose slot was reused prints its class text.
//!
//! User-defined classes and codes (`MPI_Add_error_class`, `MPI_Add_error_code`) are numbered
//! above `MPI_ERR_LASTCODE` (`0x3fffffff`), from `0x40000001` on, as in MPICH, in one sequence,
//! so `MPI_LASTUSEDCODE` is simply the last number handed out. A code that must reach the
//! application unchanged (one a callback returned, one passed to `MPI_Comm_call_errhandler`)
//! travels as an [`existing`] error, which [`register`] hands back as it is. MPICH's
//! `MPIX_Delete_error_class`/`_code`/`_string` (MPI-4.1's `MPI_Remove_error_*`) retire a
//! user-defined entry; its number is not handed out again.

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

/// `MPI_ERR_LASTCODE`: the largest predefined code.
pub const LASTCODE: i32 = 0x3fff_ffff;
/// Marks the message of an [`existing`] error.
const EXISTING_MARK: char = '\u{1}';

/// One user-defined class or code: its class (itself for a class), its string, whether it was
/// removed, and for a class the number of its codes not removed (so that removing a class does
/// not scan the table, which only grows).
struct UserDefined {
    class: i32,
    text: String,
    removed: bool,
    codes: usize,
}

static USER_DEFINED: Mutex<Vec<UserDefined>> = Mutex::new(Vec::new());

fn user_defined() -> std::sync::MutexGuard<'static, Vec<UserDefined>> {
    USER_DEFINED.lock().unwrap_or_else(|p| p.into_inner())
}

/// The user-defined entry behind `code`, if it is one.
fn user_index(code: i32) -> Option<usize> {
    usize::try_from(code.checked_sub(LASTCODE + 2)?).ok()
}

/// `MPI_Add_error_class`: a new class.
pub fn add_class() -> i32 {
    let mut table = user_defined();
    let value = LASTCODE + 2 + table.len() as i32;
    table.push(UserDefined {
        class: value,
        text: String::new(),
        removed: false,
        codes: 0,
    });
    value
}

/// `MPI_Add_error_code`: a new code of `class` (predefined or user-defined).
pub fn add_code(class: i32) -> reflex_engine::Result<i32> {
    let is_class =
        ErrorClass::from_i32(class).is_some() || user_class(&user_defined(), class).is_ok();
    if !is_class {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("{class} is not an error class"),
        ));
    }
    let mut table = user_defined();
    if let Some(i) = user_index(class) {
        table[i].codes += 1;
    }
    table.push(UserDefined {
        class,
        text: String::new(),
        removed: false,
        codes: 0,
    });
    Ok(LASTCODE + 1 + table.len() as i32)
}

/// `MPI_Add_error_string`: the text of a user-defined class or code.
pub fn set_string(code: i32, text: &str) -> reflex_engine::Result<()> {
    let mut table = user_defined();
    let i = user_entry(&table, code)?;
    table[i].text = text.to_string();
    Ok(())
}

/// The index of the live user-defined class or code `code`.
fn user_entry(table: &[UserDefined], code: i32) -> reflex_engine::Result<usize> {
    user_index(code)
        .filter(|&i| table.get(i).is_some_and(|u| !u.removed))
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Arg,
                format!("{code} is not a user-defined error class or code"),
            )
        })
}

/// The index of the live user-defined class `class`.
fn user_class(table: &[UserDefined], class: i32) -> reflex_engine::Result<usize> {
    let i = user_entry(table, class)?;
    match table[i].class == class {
        true => Ok(i),
        false => Err(MpiError::new(
            ErrorClass::Arg,
            format!("{class} is a user-defined error code, not a class"),
        )),
    }
}

/// `MPIX_Delete_error_class`: removes a user-defined class that has no codes left.
pub fn remove_class(class: i32) -> reflex_engine::Result<()> {
    let mut table = user_defined();
    let i = user_class(&table, class)?;
    let codes = table[i].codes;
    if codes > 0 {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("error class {class} still has {codes} error code(s): remove them first"),
        ));
    }
    table[i].removed = true;
    Ok(())
}

/// `MPIX_Delete_error_code`: removes a user-defined code (not a class).
pub fn remove_code(code: i32) -> reflex_engine::Result<()> {
    let mut table = user_defined();
    let i = user_entry(&table, code)?;
    if table[i].class == code {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("{code} is a user-defined error class, not a code"),
        ));
    }
    table[i].removed = true;
    if let Some(c) = user_index(table[i].class) {
        table[c].codes -= 1;
    }
    Ok(())
}

/// `MPIX_Delete_error_string`: the string of a user-defined class or code becomes empty again.
pub fn remove_string(code: i32) -> reflex_engine::Result<()> {
    set_string(code, "")
}

/// `MPI_LASTUSEDCODE`: the largest class or code defined so far.
pub fn last_used() -> i32 {
    LASTCODE + 1 + user_defined().len() as i32
}

/// The class of any code (predefined or user-defined), as `MPI_Error_class` reports it.
pub fn class_value(code: i32) -> Option<i32> {
    match user_index(code) {
        Some(i) => user_defined()
            .get(i)
            .filter(|u| !u.removed)
            .map(|u| u.class),
        None => class_of(code).map(|c| c as i32),
    }
}

/// The text of any code, as `MPI_Error_string` reports it.
pub fn string_value(code: i32) -> Option<String> {
    match user_index(code) {
        Some(i) => user_defined()
            .get(i)
            .filter(|u| !u.removed)
            .map(|u| u.text.clone()),
        None => string_of(code),
    }
}

/// An error that reaches the application as exactly `code` (see the module documentation).
pub fn existing(code: i32) -> MpiError {
    let class = match class_value(code).and_then(ErrorClass::from_i32) {
        Some(c) if c != ErrorClass::Success => c,
        _ => ErrorClass::Other,
    };
    let text = string_value(code).unwrap_or_default();
    MpiError::new(class, format!("{EXISTING_MARK}{code}{EXISTING_MARK}{text}"))
}

/// Stores `e` (raised in function `func`) and returns its error code.
#[cold]
pub fn register(func: &str, e: &MpiError) -> i32 {
    if let Some(code) = e
        .message
        .strip_prefix(EXISTING_MARK)
        .and_then(|rest| rest.split(EXISTING_MARK).next())
        .and_then(|n| n.parse().ok())
    {
        return code;
    }
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

    #[test]
    fn user_defined_classes_and_codes() {
        let class = add_class();
        assert!(class > LASTCODE);
        let code = add_code(class).unwrap();
        let on_predefined = add_code(ErrorClass::Rank as i32).unwrap();
        assert!(add_code(code).is_err(), "a code is not a class");
        assert_eq!(class_value(code), Some(class));
        assert_eq!(class_value(on_predefined), Some(ErrorClass::Rank as i32));
        set_string(code, "my error").unwrap();
        assert_eq!(string_value(code).as_deref(), Some("my error"));
        assert!(set_string(ErrorClass::Rank as i32, "no").is_err());
        assert!(last_used() >= on_predefined);
        assert_eq!(register("MPI_X", &existing(code)), code);
        assert_eq!(existing(on_predefined).class, ErrorClass::Rank);
    }

    #[test]
    fn user_defined_entries_are_removed() {
        let class = add_class();
        let code = add_code(class).unwrap();
        set_string(code, "gone soon").unwrap();
        assert!(remove_class(class).is_err(), "the class still has a code");
        assert!(remove_code(class).is_err(), "a class is not a code");
        assert!(remove_class(code).is_err(), "a code is not a class");
        remove_string(code).unwrap();
        assert_eq!(string_value(code).as_deref(), Some(""));
        remove_code(code).unwrap();
        assert_eq!(class_value(code), None);
        assert!(remove_code(code).is_err(), "removed twice");
        remove_class(class).unwrap();
        assert!(add_code(class).is_err(), "a removed class takes no codes");
        assert!(set_string(class, "x").is_err());
        assert!(remove_class(ErrorClass::Rank as i32).is_err(), "predefined");
    }
}
