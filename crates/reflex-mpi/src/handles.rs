//! Handle values of MPICH's ABI: predefined constants and how Reflex numbers user objects.
//!
//! MPICH handles are 32-bit: two bits of kind (builtin `0x4`, direct `0x8` in the top nibble),
//! four bits of object type, and an index. Predefined objects keep MPICH's exact values (programs
//! compiled against MPICH's `mpi.h` pass them); objects Reflex creates get the "direct" kind with
//! the engine's table index, so they never collide with a predefined value or a null handle.

use crate::ffi::*;
use reflex_engine::{CommId, GroupId, RequestId};

/// `MPI_COMM_NULL`.
pub const COMM_NULL: MPI_Comm = 0x0400_0000;
/// `MPI_COMM_WORLD`.
pub const COMM_WORLD: MPI_Comm = 0x4400_0000;
/// `MPI_COMM_SELF`.
pub const COMM_SELF: MPI_Comm = 0x4400_0001;
const COMM_USER: u32 = 0x8400_0000;

/// `MPI_GROUP_NULL`.
pub const GROUP_NULL: MPI_Group = 0x0800_0000;
/// `MPI_GROUP_EMPTY`.
pub const GROUP_EMPTY: MPI_Group = 0x4800_0000;
const GROUP_USER: u32 = 0x8800_0000;

/// `MPI_REQUEST_NULL` (also `MPI_MESSAGE_NULL`).
pub const REQUEST_NULL: MPI_Request = 0x2c00_0000;
const REQUEST_USER: u32 = 0xac00_0000;
/// `MPI_MESSAGE_NO_PROC`.
pub const MESSAGE_NO_PROC: MPI_Message = 0x6c00_0000;
const MESSAGE_USER: u32 = 0xac80_0000;

/// `MPI_WIN_NULL`.
pub const WIN_NULL: MPI_Win = 0x2000_0000;
const WIN_USER: u32 = 0xa000_0000;

/// `MPI_ERRHANDLER_NULL`.
pub const ERRHANDLER_NULL: MPI_Errhandler = 0x1400_0000;
/// `MPI_ERRORS_ARE_FATAL`.
pub const ERRORS_ARE_FATAL: MPI_Errhandler = 0x5400_0000;
/// `MPI_ERRORS_RETURN`.
pub const ERRORS_RETURN: MPI_Errhandler = 0x5400_0001;
/// `MPI_ERRORS_ABORT` (MPI-4).
pub const ERRORS_ABORT: MPI_Errhandler = 0x5400_0003;
const ERRHANDLER_USER: u32 = 0x9400_0000;

/// `MPI_SESSION_NULL` (MPICH 4.0.2: object type 14).
pub const SESSION_NULL: MPI_Session = 0x3800_0000;
const SESSION_USER: u32 = 0xb800_0000;

/// `MPI_OP_NULL`.
pub const OP_NULL: MPI_Op = 0x1800_0000;
/// `MPI_BYTE` (the etype and filetype of the default file view).
pub const BYTE: MPI_Datatype = 0x4c00_010d;
/// `MPI_DATATYPE_NULL`.
pub const DATATYPE_NULL: MPI_Datatype = 0x0c00_0000;

fn user(base: u32, index: u32) -> i32 {
    (base | index) as i32
}

fn user_index(base: u32, handle: i32, limit: u32) -> Option<u32> {
    let h = handle as u32;
    (h & 0xff80_0000 == base & 0xff80_0000 && (h & 0x007f_ffff) < limit).then_some(h & 0x007f_ffff)
}

/// The C handle of communicator `id`.
pub fn comm_handle(id: CommId) -> MPI_Comm {
    match id {
        reflex_engine::COMM_WORLD => COMM_WORLD,
        reflex_engine::COMM_SELF => COMM_SELF,
        CommId(i) => user(COMM_USER, i),
    }
}

/// The communicator a C handle names (not checked against the engine's table).
pub fn comm_id(h: MPI_Comm) -> Option<CommId> {
    match h {
        COMM_WORLD => Some(reflex_engine::COMM_WORLD),
        COMM_SELF => Some(reflex_engine::COMM_SELF),
        // The library's own communicators (below FIRST_USER_COMM) have no C handle.
        _ => user_index(COMM_USER, h, 1 << 23)
            .filter(|&i| i >= reflex_engine::FIRST_USER_COMM)
            .map(CommId),
    }
}

/// The C handle of group `id`.
pub fn group_handle(id: GroupId) -> MPI_Group {
    if id == reflex_engine::comm::GROUP_EMPTY {
        GROUP_EMPTY
    } else {
        user(GROUP_USER, id.0)
    }
}

/// The group a C handle names.
pub fn group_id(h: MPI_Group) -> Option<GroupId> {
    if h == GROUP_EMPTY {
        return Some(reflex_engine::comm::GROUP_EMPTY);
    }
    user_index(GROUP_USER, h, 1 << 23)
        .filter(|&i| i >= 1)
        .map(GroupId)
}

/// The C handle of request `id`.
pub fn request_handle(id: RequestId) -> MPI_Request {
    user(REQUEST_USER, id.0)
}

/// The request a C handle names (`None` for `MPI_REQUEST_NULL` and garbage alike; callers
/// distinguish the null handle first).
pub fn request_id(h: MPI_Request) -> Option<RequestId> {
    user_index(REQUEST_USER, h, 1 << 23).map(RequestId)
}

/// The C handle of a matched-probe message.
pub fn message_handle(m: reflex_engine::Message) -> MPI_Message {
    match m {
        reflex_engine::Message::NoProc => MESSAGE_NO_PROC,
        reflex_engine::Message::Id(i) => user(MESSAGE_USER, i),
    }
}

/// The message a C handle names.
pub fn message_id(h: MPI_Message) -> Option<reflex_engine::Message> {
    if h == MESSAGE_NO_PROC {
        return Some(reflex_engine::Message::NoProc);
    }
    user_index(MESSAGE_USER, h, 1 << 23).map(reflex_engine::Message::Id)
}

/// The C handle of user error handler number `index`.
pub fn errhandler_handle(index: u32) -> MPI_Errhandler {
    user(ERRHANDLER_USER, index)
}

/// The C handle of window `id`.
pub fn win_handle(id: reflex_engine::WinId) -> MPI_Win {
    user(WIN_USER, id.0)
}

/// The window a C handle names, if it is a window handle.
pub fn win_id(h: MPI_Win) -> Option<reflex_engine::WinId> {
    user_index(WIN_USER, h, 1 << 23).map(reflex_engine::WinId)
}

/// The C handle of session number `index` (MPICH's "direct" session kind, as its own).
pub fn session_handle(index: u32) -> MPI_Session {
    user(SESSION_USER, index)
}

/// The session number a C handle names, if it is a session handle (also the error-dispatch
/// target of `MPI_Session_*` calls: session handles never collide with communicator or window
/// handles).
pub fn session_index(h: MPI_Session) -> Option<u32> {
    user_index(SESSION_USER, h, 1 << 23)
}

/// `MPI_File` handles are pointers in MPICH's ABI; Reflex's are never dereferenced: this tag in
/// the high bits plus the file's table index (`MPI_FILE_NULL` is the null pointer).
const FILE_POINTER: usize = 0x7e11_0000_0000;
/// Errors of `MPI_File_*` calls name their file to the dispatch as an `int` in this range
/// (the table index, or [`FILE_NULL_TARGET`] for `MPI_FILE_NULL` and calls without a file).
const FILE_TARGET: u32 = 0xb000_0000;
/// The dispatch target of `MPI_FILE_NULL` (whose handler is the default for new files).
pub const FILE_NULL_TARGET: i32 = (FILE_TARGET | 0x007f_ffff) as i32;

/// The C handle of file number `index`.
pub fn file_handle(index: u32) -> MPI_File {
    (FILE_POINTER | index as usize) as MPI_File
}

/// The file number a C handle names, if it is a file handle.
pub fn file_index(h: MPI_File) -> Option<u32> {
    let v = h as usize;
    (v & !0x007f_ffff == FILE_POINTER).then_some((v & 0x007f_ffff) as u32)
}

/// The error-dispatch target of a file handle (any pointer; not checked against the table).
pub fn file_target(h: MPI_File) -> i32 {
    file_index(h).map_or(FILE_NULL_TARGET, |i| user(FILE_TARGET, i))
}

/// The error-dispatch target `MPI_File_close` names: the handle its argument points to.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // reason: called by the generated shim only, under its `# Safety` contract
pub fn file_target_at(h: *const MPI_File) -> i32 {
    if h.is_null() {
        return FILE_NULL_TARGET;
    }
    // SAFETY: a non-NULL `MPI_File *` argument points to a handle (MPI contract).
    file_target(unsafe { *h })
}

/// The error-dispatch target a call that frees a communicator, window or session names: the
/// handle its argument points to (`MPI_COMM_NULL`, hence the world's handler, when it is NULL).
#[allow(clippy::not_unsafe_ptr_arg_deref)] // reason: called by the generated shim only, under its `# Safety` contract
pub fn target_at(h: *const std::ffi::c_int) -> std::ffi::c_int {
    if h.is_null() {
        return COMM_NULL;
    }
    // SAFETY: a non-NULL `MPI_Comm *`, `MPI_Win *` or `MPI_Session *` argument points to a
    // handle (MPI contract); all three are `int` in this ABI.
    unsafe { *h }
}

/// The file number behind an error-dispatch target: `Some(None)` for `MPI_FILE_NULL`.
pub fn file_of_target(t: i32) -> Option<Option<u32>> {
    if t == FILE_NULL_TARGET {
        return Some(None);
    }
    user_index(FILE_TARGET, t, 0x007f_ffff).map(Some)
}

/// The user error handler number of a C handle.
pub fn errhandler_index(h: MPI_Errhandler) -> Option<u32> {
    user_index(ERRHANDLER_USER, h, 1 << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_handles_round_trip_and_never_hit_predefined_values() {
        for i in [3u32, 4, 1000, (1 << 23) - 1] {
            let h = comm_handle(CommId(i));
            assert_eq!(comm_id(h), Some(CommId(i)));
            assert!(![COMM_NULL, COMM_WORLD, COMM_SELF].contains(&h));
        }
        assert_eq!(comm_id(COMM_NULL), None);
        assert_eq!(comm_id(0x1234), None);
        assert_eq!(comm_id(comm_handle(reflex_engine::COMM_SESSIONS)), None);
        assert_eq!(session_index(session_handle(9)), Some(9));
        assert_eq!(session_index(SESSION_NULL), None);
        assert_eq!(session_index(comm_handle(CommId(9))), None);
        assert_eq!(win_id(session_handle(9)), None);
        assert_eq!(request_id(REQUEST_NULL), None);
        assert_eq!(
            request_id(request_handle(RequestId(77))),
            Some(RequestId(77))
        );
        assert_eq!(message_id(REQUEST_NULL), None);
        assert_eq!(
            request_id(message_handle(reflex_engine::Message::Id(5))),
            None
        );
    }
}
