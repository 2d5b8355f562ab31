//! Translating the C parameter types of the MPI prototypes into Rust FFI types.
//!
//! Every MPICH-ABI handle is an `int` (aliases in `reflex_mpi::ffi`), `MPI_File` and the `MPI_T`
//! handles are pointers, callbacks travel as opaque function pointers (`*const c_void`; the
//! implementation casts them back to their exact signature), pointers and `[]` arrays become raw
//! pointers, and `int [][3]` a pointer to `[c_int; 3]`.

/// The Rust spelling of one C parameter or return type.
pub fn rust_type(c_type: &str) -> String {
    let is_const = c_type.contains("const");
    let cleaned = c_type.replace("const", " ");
    let fixed_dims: Vec<&str> = cleaned.match_indices("][").map(|_| "").collect();
    let stars = cleaned.matches('*').count() + cleaned.matches("[]").count();
    let base = cleaned
        .split(['*', '[', ' '])
        .map(str::trim)
        .find(|w| !w.is_empty())
        .unwrap_or("void");
    let mut ty = base_type(base, stars > 0);
    let mut stars = stars;
    if is_function_typedef(base) && stars > 0 {
        // `MPI_User_function *` is one opaque function pointer.
        stars -= 1;
        ty = "*const c_void".into();
    }
    if !fixed_dims.is_empty() {
        if let Some(n) = cleaned
            .rsplit('[')
            .next()
            .and_then(|t| t.trim_end_matches(']').trim().parse::<usize>().ok())
        {
            ty = format!("[{ty}; {n}]");
        }
    }
    for level in 0..stars {
        let outermost = level + 1 == stars;
        ty = if is_const && outermost {
            format!("*const {ty}")
        } else {
            format!("*mut {ty}")
        };
    }
    ty
}

fn is_function_typedef(base: &str) -> bool {
    base.contains("_function") || base.ends_with("_fn") || base.starts_with("MPI_Datarep_")
}

fn base_type(base: &str, _pointer: bool) -> String {
    let simple = match base {
        "int" => "c_int",
        "double" => "f64",
        "char" => "c_char",
        "void" => "c_void",
        "MPI_Aint" | "MPI_Offset" | "MPI_Count" | "MPI_Fint" | "MPI_Status" | "MPI_Comm"
        | "MPI_Group" | "MPI_Datatype" | "MPI_Request" | "MPI_Op" | "MPI_Errhandler"
        | "MPI_Info" | "MPI_Win" | "MPI_Message" | "MPI_File" | "MPI_Session"
        | "MPI_F08_status" => return format!("ffi::{base}"),
        _ if is_function_typedef(base) => "c_void",
        // The two enums of the tool interface travel as ints; its other types are handles.
        "MPI_T_cb_safety" | "MPI_T_source_order" => "c_int",
        _ if base.starts_with("MPI_T_") => return "ffi::MPI_T_handle".into(),
        "unsigned" => "u32",
        "long" => "i64",
        _ => "c_void",
    };
    simple.to_string()
}

#[cfg(test)]
mod tests {
    use super::rust_type;

    #[test]
    fn common_shapes() {
        assert_eq!(rust_type("const void *"), "*const c_void");
        assert_eq!(rust_type("int"), "c_int");
        assert_eq!(rust_type("int *"), "*mut c_int");
        assert_eq!(rust_type("const int []"), "*const c_int");
        assert_eq!(rust_type("MPI_Request []"), "*mut ffi::MPI_Request");
        assert_eq!(rust_type("MPI_User_function *"), "*const c_void");
        assert_eq!(rust_type("char ***"), "*mut *mut *mut c_char");
        assert_eq!(rust_type("int [][3]"), "*mut [c_int; 3]");
        assert_eq!(rust_type("MPI_Aint"), "ffi::MPI_Aint");
    }
}
