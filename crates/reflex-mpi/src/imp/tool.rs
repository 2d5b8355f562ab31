//! `MPI_T_*` (MPI-4.0 chapter 15), first part: initialisation, control variables, their
//! enumerations, and categories. The tables and semantics are in `crate::mpit`; these
//! functions take the C arguments apart (call style `tool`: raw arguments, no kind checks, so
//! NULL pointers are checked here as the chapter says).

use crate::ffi::{MPI_Datatype, MPI_T_handle};
use crate::mpit::handle::{self, Kind};
use crate::mpit::text::{name_arg, put, put_indices, put_string, required};
use crate::mpit::{category, cvar, error, null_argument, with_tool};
use reflex_engine::{ErrorClass, Result};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_T_init_thread`.
pub fn t_init_thread(required_level: c_int, provided: *mut c_int) -> Result<()> {
    if provided.is_null() {
        return Err(null_argument("provided"));
    }
    let level = crate::mpit::init(required_level)?;
    put(provided, level);
    Ok(())
}

/// `MPI_T_finalize`.
pub fn t_finalize() -> Result<()> {
    crate::mpit::finalize()
}

/// `MPI_T_cvar_get_num`.
pub fn t_cvar_get_num(num_cvar: *mut c_int) -> Result<()> {
    with_tool(|_| required(num_cvar, "num_cvar", cvar::table().len() as c_int))
}

/// `MPI_T_cvar_get_info`.
pub fn t_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_handle,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> Result<()> {
    with_tool(|_| {
        let v = cvar::get(cvar_index)?;
        put_string(v.name, name, name_len);
        put(verbosity, v.verbosity);
        put(datatype, v.datatype);
        let enum_handle = match v.choices().is_empty() {
            true => std::ptr::null_mut(),
            false => handle::make(Kind::Enum, cvar_index as u32 + 1),
        };
        put(enumtype, enum_handle);
        put_string(&v.desc, desc, desc_len);
        put(bind, cvar::BIND_NO_OBJECT);
        put(scope, v.scope);
        Ok(())
    })
}

/// `MPI_T_cvar_get_index`.
pub fn t_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> Result<()> {
    with_tool(|_| {
        let name = name_arg(name)?;
        let found = cvar::index_of(&name).ok_or_else(|| {
            error(
                ErrorClass::TInvalidName,
                format!("no control variable is named {name:?}"),
            )
        })?;
        required(cvar_index, "cvar_index", found as c_int)
    })
}

/// `MPI_T_cvar_handle_alloc` (every variable is bound to no object: `obj_handle` is ignored).
pub fn t_cvar_handle_alloc(
    cvar_index: c_int,
    _obj_handle: *mut c_void,
    handle_out: *mut MPI_T_handle,
    count: *mut c_int,
) -> Result<()> {
    with_tool(|t| {
        let v = cvar::get(cvar_index)?;
        if handle_out.is_null() || count.is_null() {
            return Err(null_argument("handle or count"));
        }
        let id = t.new_handle(ErrorClass::TOutOfHandles)?;
        t.cvar_handles.insert(id, cvar_index as usize);
        put(handle_out, handle::make(Kind::Cvar, id));
        put(count, cvar::count(v));
        Ok(())
    })
}

/// The variable behind a control-variable handle.
fn cvar_of(t: &crate::mpit::Tool, h: MPI_T_handle) -> Result<(u32, &'static cvar::Cvar)> {
    handle::number(h, Kind::Cvar)
        .and_then(|id| t.cvar_handles.get(&id).map(|&i| (id, &cvar::table()[i])))
        .ok_or_else(|| {
            error(
                ErrorClass::TInvalidHandle,
                "not a control-variable handle (freed, or never allocated)",
            )
        })
}

/// `MPI_T_cvar_handle_free`.
pub fn t_cvar_handle_free(handle_inout: *mut MPI_T_handle) -> Result<()> {
    with_tool(|t| {
        if handle_inout.is_null() {
            return Err(null_argument("handle"));
        }
        // SAFETY: a non-NULL `MPI_T_cvar_handle *` (MPI's contract).
        let h = unsafe { *handle_inout };
        let (id, _) = cvar_of(t, h)?;
        t.cvar_handles.remove(&id);
        put(handle_inout, std::ptr::null_mut());
        Ok(())
    })
}

/// `MPI_T_cvar_read`: the value in the variable's datatype.
pub fn t_cvar_read(h: MPI_T_handle, buf: *mut c_void) -> Result<()> {
    with_tool(|t| {
        let (_, v) = cvar_of(t, h)?;
        if buf.is_null() {
            return Err(null_argument("buf"));
        }
        match cvar::read(v) {
            cvar::Value::Bytes(n) => put(buf.cast::<u64>(), n),
            cvar::Value::Number(n) => put(buf.cast::<u32>(), n),
            cvar::Value::Choice(i) => put(buf.cast::<i32>(), i),
            cvar::Value::Text(s) => {
                let bytes = s.as_bytes();
                // SAFETY: the buffer holds the handle's count (the text and its NUL) chars.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len());
                    *buf.cast::<u8>().add(bytes.len()) = 0;
                }
            }
        }
        Ok(())
    })
}

/// `MPI_T_cvar_write`: the value in the variable's datatype.
pub fn t_cvar_write(h: MPI_T_handle, buf: *const c_void) -> Result<()> {
    with_tool(|t| {
        let (_, v) = cvar_of(t, h)?;
        if buf.is_null() {
            return Err(null_argument("buf"));
        }
        let value = match v.datatype {
            cvar::MPI_UNSIGNED_LONG => cvar::Value::Bytes(element(buf)),
            cvar::MPI_UNSIGNED => cvar::Value::Number(element(buf)),
            cvar::MPI_INT => cvar::Value::Choice(element(buf)),
            _ => cvar::Value::Text(String::new()),
        };
        cvar::write(v, &value)
    })
}

/// The element of type `T` at the start of the caller's buffer (the variable's datatype).
fn element<T: Copy>(buf: *const c_void) -> T {
    // SAFETY: a non-NULL buffer holding one element of the variable's datatype, which `T`
    // matches (MPI's contract for MPI_T_cvar_write); unaligned reads tolerate any address.
    unsafe { buf.cast::<T>().read_unaligned() }
}

/// The control variable behind an enumeration handle.
fn enum_of(h: MPI_T_handle) -> Result<&'static cvar::Cvar> {
    handle::number(h, Kind::Enum)
        .and_then(|n| cvar::table().get(n as usize - 1))
        .filter(|v| !v.choices().is_empty())
        .ok_or_else(|| error(ErrorClass::TInvalidHandle, "not an MPI_T_enum handle"))
}

/// `MPI_T_enum_get_info`: the number of words and the enumeration's name (its variable's,
/// lowercase, without the prefix: `coll_bcast`).
pub fn t_enum_get_info(
    enumtype: MPI_T_handle,
    num: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> Result<()> {
    with_tool(|_| {
        let v = enum_of(enumtype)?;
        put(num, v.choices().len() as c_int);
        let short = v.name.trim_start_matches("REFLEX_").to_ascii_lowercase();
        put_string(&short, name, name_len);
        Ok(())
    })
}

/// `MPI_T_enum_get_item`: word `indx`, whose value is `indx`.
pub fn t_enum_get_item(
    enumtype: MPI_T_handle,
    indx: c_int,
    value: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> Result<()> {
    with_tool(|_| {
        let words = enum_of(enumtype)?.choices();
        let word = usize::try_from(indx)
            .ok()
            .and_then(|i| words.get(i))
            .ok_or_else(|| {
                error(
                    ErrorClass::TInvalidItem,
                    format!(
                        "{indx} is not an item of this enumeration (0 to {})",
                        words.len() - 1
                    ),
                )
            })?;
        put(value, indx);
        put_string(word, name, name_len);
        Ok(())
    })
}

/// `MPI_T_category_get_num`.
pub fn t_category_get_num(num_cat: *mut c_int) -> Result<()> {
    with_tool(|_| required(num_cat, "num_cat", category::CATEGORIES.len() as c_int))
}

/// `MPI_T_category_get_info`.
pub fn t_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> Result<()> {
    with_tool(|_| {
        let cat = category::get(cat_index)?;
        let c = &category::CATEGORIES[cat];
        put_string(c.name, name, name_len);
        put_string(c.desc, desc, desc_len);
        put(num_cvars, category::cvars(cat).len() as c_int);
        put(num_pvars, category::pvars(cat).len() as c_int);
        put(num_categories, category::subcategories(cat).len() as c_int);
        Ok(())
    })
}

/// `MPI_T_category_get_index`.
pub fn t_category_get_index(name: *const c_char, cat_index: *mut c_int) -> Result<()> {
    with_tool(|_| {
        let name = name_arg(name)?;
        let found = category::index_of(&name).ok_or_else(|| {
            error(
                ErrorClass::TInvalidName,
                format!("no category is named {name:?}"),
            )
        })?;
        required(cat_index, "cat_index", found as c_int)
    })
}

/// The members of category `cat_index` chosen by `members`, into `indices`.
fn category_members(
    cat_index: c_int,
    len: c_int,
    indices: *mut c_int,
    members: fn(usize) -> Vec<usize>,
) -> Result<()> {
    with_tool(|_| {
        let cat = category::get(cat_index)?;
        put_indices(&members(cat), len, indices)
    })
}

/// `MPI_T_category_get_cvars`.
pub fn t_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> Result<()> {
    category_members(cat_index, len, indices, category::cvars)
}

/// `MPI_T_category_get_pvars`.
pub fn t_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> Result<()> {
    category_members(cat_index, len, indices, category::pvars)
}

/// `MPI_T_category_get_categories`.
pub fn t_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> Result<()> {
    category_members(cat_index, len, indices, category::subcategories)
}

/// `MPI_T_category_get_events`: no category holds events.
pub fn t_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> Result<()> {
    category_members(cat_index, len, indices, |_| Vec::new())
}

/// `MPI_T_category_get_num_events`.
pub fn t_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> Result<()> {
    with_tool(|_| {
        category::get(cat_index)?;
        required(num_events, "num_events", 0)
    })
}

/// `MPI_T_category_changed`.
pub fn t_category_changed(update_number: *mut c_int) -> Result<()> {
    with_tool(|_| required(update_number, "update_number", category::STAMP))
}
