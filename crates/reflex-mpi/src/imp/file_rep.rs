//! Data representations at work (MPI-4.0 §14.5): `MPI_Register_datarep`, the check a view's
//! types pass, file extents, and the conversion of each access's data between memory and file.
//!
//! An access is coded by a [`Coder`] made from the file's representation and the memory
//! datatype: "native" data moves as it is (straight from or into the application's memory when
//! the type is dense); "external32" data is packed natively and converted run by run of one
//! predefined type (`pack::convert`); a registered representation calls the application's
//! conversion function once for the whole access (position 0), or moves native bytes where it
//! gave `MPI_CONVERSION_FN_NULL`.
//!
//! Reflex places data in the file by the view's native layout. A representation whose file
//! extent of some predefined type of the view differs from its native extent (external32's
//! `long`, `unsigned long`, `wchar_t` and the padded pair types on this platform) would need
//! the view rebuilt in file extents: such views are refused with `MPI_ERR_UNSUPPORTED_DATAREP`.

use super::pack::{convert, dense_in, dense_out, external_len, leaves, pack_native, unpack_native};
use super::util::{c_string, write};
use crate::datarep::{Conversion, Rep, UserRep};
use crate::external32;
use crate::ffi::*;
use crate::files::FileId;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use crate::typetable::TypeRef;
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_void};

/// How one access's data is coded in the file.
#[derive(Debug)]
pub(super) enum Coder {
    /// The bytes as they are in memory.
    Native,
    /// external32, converted leaf by leaf of the memory type.
    External32(TypeRef),
    /// A registered representation, with the memory type's handle for its functions.
    User(UserRep, MPI_Datatype),
}

/// The coder of an access of file `fh` with memory type `t`.
pub(super) fn coder(w: &Mpi, fh: FileId, t: &TypeArg) -> Result<Coder> {
    Ok(match w.objects.files.get(fh)?.rep {
        Rep::Native | Rep::Internal => Coder::Native,
        Rep::External32 => Coder::External32(w.objects.types.type_ref(t.handle)?),
        Rep::User(i) => Coder::User(w.objects.datareps.user(i).clone(), t.handle),
    })
}

fn conversion_failed(rep: &UserRep, which: &str, rc: i32) -> MpiError {
    MpiError::new(
        ErrorClass::Conversion,
        format!(
            "the {which} conversion function of data representation \"{}\" returned error {rc}",
            rep.name
        ),
    )
}

impl Coder {
    /// The file bytes of `count` elements of `dt` at `buf`: the memory itself when it needs no
    /// coding and is dense, else coded into `staging` (of the packed length).
    pub(super) fn outgoing<'a>(
        &self,
        buf: *const c_void,
        count: usize,
        dt: &Datatype,
        staging: &'a mut [u8],
    ) -> Result<&'a [u8]> {
        match self {
            Coder::Native | Coder::User(UserRep { write: None, .. }, _) => {
                match dense_in(buf, count, dt)? {
                    Some(bytes) => Ok(bytes),
                    None => {
                        pack_native(buf, count, dt, staging)?;
                        Ok(staging)
                    }
                }
            }
            Coder::External32(t) => {
                let mut native = vec![0u8; staging.len()];
                pack_native(buf, count, dt, &mut native)?;
                convert(t, count, &mut native, staging, true)?;
                Ok(staging)
            }
            Coder::User(rep @ UserRep { write: Some(f), .. }, h) => {
                // SAFETY: `buf` holds `count` elements of the type of handle `h` (MPI's contract
                // for the access) and `staging` their file length (sizes agree, see above).
                let rc = unsafe {
                    f.call(
                        buf.cast_mut(),
                        *h,
                        count,
                        staging.as_mut_ptr().cast(),
                        rep.extra,
                    )
                }?;
                match rc {
                    0 => Ok(staging),
                    _ => Err(conversion_failed(rep, "write", rc)),
                }
            }
        }
    }

    /// Reads `count` elements of `dt` into `buf` with `read` (which fills a buffer with file
    /// bytes and returns how many it read): straight into memory when no coding is needed and
    /// the type is dense, else through `staging`. Returns the bytes read.
    pub(super) fn incoming(
        &self,
        buf: *mut c_void,
        count: usize,
        dt: &Datatype,
        staging: &mut [u8],
        read: impl FnOnce(&mut [u8]) -> Result<usize>,
    ) -> Result<usize> {
        let native = matches!(
            self,
            Coder::Native | Coder::User(UserRep { read: None, .. }, _)
        );
        if native {
            if let Some(out) = dense_out(buf, count, dt)? {
                return read(out);
            }
        }
        let n = read(staging)?;
        match self {
            Coder::Native | Coder::User(UserRep { read: None, .. }, _) => {
                unpack_native(buf, count, dt, &staging[..n])?
            }
            Coder::External32(t) => {
                // Sizes are equal (see the module documentation): convert everything, keep `n`.
                let mut native = vec![0u8; staging.len()];
                convert(t, count, &mut native, staging, false)?;
                unpack_native(buf, count, dt, &native[..n])?
            }
            Coder::User(rep @ UserRep { read: Some(f), .. }, h) => {
                let whole = n.checked_div(dt.size()).unwrap_or(0);
                // SAFETY: `buf` receives `count` >= `whole` elements of the type of handle `h`
                // and `staging` holds the file bytes of `whole` of them.
                let rc = unsafe { f.call(buf, *h, whole, staging.as_mut_ptr().cast(), rep.extra) }?;
                if rc != 0 {
                    return Err(conversion_failed(rep, "read", rc));
                }
            }
        }
        Ok(n)
    }
}

/// The extent in files of `rep` of predefined type `h` (`None` for "native" and "internal").
fn file_extent_of(w: &Mpi, rep: Rep, h: MPI_Datatype) -> Result<Option<usize>> {
    match rep {
        Rep::Native | Rep::Internal => Ok(None),
        Rep::External32 => external32::ext_size(h).map(Some),
        Rep::User(i) => w.objects.datareps.user(i).file_extent(h).map(Some),
    }
}

/// Checks that every predefined type inside `t` has the same extent in files of `rep` as in
/// memory (the layouts Reflex can place: see the module documentation).
pub(super) fn check_layout(w: &Mpi, rep: Rep, t: &TypeArg, role: &str) -> Result<()> {
    if matches!(rep, Rep::Native | Rep::Internal) {
        return Ok(());
    }
    let tref = w.objects.types.type_ref(t.handle)?;
    let mut seen = Vec::new();
    leaves(&tref, 1, &mut |h, _| {
        if seen.contains(&h) {
            return Ok(());
        }
        seen.push(h);
        let native = crate::datatypes::builtin(h).map_or(0, |b| b.extent as usize);
        match file_extent_of(w, rep, h)? {
            Some(file) if file != native => Err(MpiError::new(
                ErrorClass::UnsupportedDatarep,
                format!(
                    "the {role} contains {name}, which takes {native} bytes in memory but {file} in data representation \"{rep_name}\": Reflex places view data by the native layout, so views of such types are not supported in this representation",
                    name = crate::datatypes::name(h).unwrap_or("a predefined type"),
                    rep_name = w.objects.datareps.name(rep),
                ),
            )),
            _ => Ok(()),
        }
    })
}

/// `MPI_File_get_type_extent` (`MPI_Aint`) and `_c` (`MPI_Count`): the extent of `datatype`
/// in the file's representation.
pub fn file_get_type_extent<T: TryFrom<usize>>(
    w: &mut Mpi,
    fh: FileId,
    datatype: TypeArg,
    extent: *mut T,
) -> Result<()> {
    let rep = w.objects.files.get(fh)?.rep;
    let e = match crate::datatypes::builtin(datatype.handle) {
        Some(_) => file_extent_of(w, rep, datatype.handle)?,
        None => None,
    };
    let e = match e {
        Some(e) => e,
        None => {
            check_layout(w, rep, &datatype, "datatype")?;
            datatype.dt.extent().max(0) as usize
        }
    };
    let e = T::try_from(e).map_err(|_| {
        MpiError::new(
            ErrorClass::Count,
            format!("extent {e} does not fit the argument"),
        )
    })?;
    write(extent, e);
    Ok(())
}

/// `MPI_Register_datarep` and `_c`.
fn register(
    w: &mut Mpi,
    datarep: *const c_char,
    read: Option<Conversion>,
    write: Option<Conversion>,
    extent: *const c_void,
    extra_state: *mut c_void,
) -> Result<()> {
    let name = c_string(datarep, "datarep")?;
    if extent.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "dtype_file_extent_fn is NULL (a data representation needs an extent function)",
        ));
    }
    // SAFETY: a non-NULL `MPI_Datarep_extent_function *` from C.
    let extent = unsafe { std::mem::transmute::<*const c_void, crate::datarep::ExtentFn>(extent) };
    w.objects.datareps.register(UserRep {
        name,
        read,
        write,
        extent,
        extra: extra_state,
    })
}

/// A conversion function argument (`None` for `MPI_CONVERSION_FN_NULL`).
fn conversion(f: *const c_void, large: bool) -> Option<Conversion> {
    if f.is_null() {
        return None;
    }
    // SAFETY: a non-NULL conversion function pointer of the binding the caller used.
    Some(unsafe {
        match large {
            false => Conversion::Int(std::mem::transmute::<
                *const c_void,
                crate::datarep::ConversionFn,
            >(f)),
            true => Conversion::Count(std::mem::transmute::<
                *const c_void,
                crate::datarep::ConversionFnC,
            >(f)),
        }
    })
}

/// `MPI_Register_datarep`.
pub fn register_datarep(
    w: &mut Mpi,
    datarep: *const c_char,
    read_conversion_fn: *const c_void,
    write_conversion_fn: *const c_void,
    dtype_file_extent_fn: *const c_void,
    extra_state: *mut c_void,
) -> Result<()> {
    let (r, wr) = (
        conversion(read_conversion_fn, false),
        conversion(write_conversion_fn, false),
    );
    register(w, datarep, r, wr, dtype_file_extent_fn, extra_state)
}

/// `MPI_Register_datarep_c`.
pub fn register_datarep_c(
    w: &mut Mpi,
    datarep: *const c_char,
    read_conversion_fn: *const c_void,
    write_conversion_fn: *const c_void,
    dtype_file_extent_fn: *const c_void,
    extra_state: *mut c_void,
) -> Result<()> {
    let (r, wr) = (
        conversion(read_conversion_fn, true),
        conversion(write_conversion_fn, true),
    );
    register(w, datarep, r, wr, dtype_file_extent_fn, extra_state)
}

/// Checks that the file length of `count` elements in external32 is their packed length (the
/// equal-size views [`check_layout`] admits guarantee it for the etype; the memory type must
/// match the etype's signature).
pub(super) fn check_external_len(coder: &Coder, count: usize, dt: &Datatype) -> Result<()> {
    if let Coder::External32(t) = coder {
        let (file, native) = (external_len(t, count)?, dt.packed_len(count)?);
        if file != native {
            return Err(MpiError::new(
                ErrorClass::UnsupportedDatarep,
                format!("the data takes {native} bytes in memory but {file} in external32; Reflex supports external32 accesses only of types whose sizes agree"),
            ));
        }
    }
    Ok(())
}
