//! Emitting the two generated files: the prototype block of `mpi.h` and the Rust shims.
//!
//! Every function gets a `PMPI_X` that does the work and an `MPI_X` that calls `PMPI_X`, so a
//! profiling library that defines `MPI_X` intercepts the call. A shim contains no logic: the panic
//! boundary and error-handler dispatch (`crate::call`), the checks and handle conversions that
//! follow from the parameter kinds (`crate::kinds`), and one call of `crate::imp::<name>`.
//! Functions Reflex does not implement yet return `MPI_ERR_UNSUPPORTED_OPERATION` naming themselves.

use crate::ctype::rust_type;
use crate::spec::{CallStyle, Function, Param};
use std::collections::BTreeMap;
use std::fmt::Write;

/// `MPI_Comm_rank` → `comm_rank`.
pub fn imp_name(f: &Function) -> String {
    f.name.trim_start_matches("MPI_").to_ascii_lowercase()
}

/// The C prototypes, MPI and PMPI, for `mpi.h`.
pub fn header_prototypes(functions: &[Function]) -> String {
    let mut out = String::new();
    for f in functions {
        let params = if f.params.is_empty() {
            "void".to_string()
        } else {
            f.params.iter().map(c_param).collect::<Vec<_>>().join(", ")
        };
        let _ = writeln!(out, "{} {}({});", f.ret, f.name, params);
        let _ = writeln!(out, "{} P{}({});", f.ret, f.name, params);
    }
    out
}

fn c_param(p: &Param) -> String {
    if p.kind == "VARARGS" {
        return "...".into();
    }
    match p.c_type.find('[') {
        Some(i) => format!(
            "{} {}{}",
            p.c_type[..i].trim(),
            p.name,
            &p.c_type[i..].replace(' ', "")
        ),
        None if p.c_type.ends_with('*') => format!("{}{}", p.c_type, p.name),
        None => format!("{} {}", p.c_type, p.name),
    }
}

/// Converts or checks one argument by kind; `None` passes it through unchanged.
fn conversion(p: &Param, f: &Function) -> Option<String> {
    let n = &p.name;
    let comm = f
        .params
        .iter()
        .find(|q| q.kind == "COMM")
        .map(|q| q.name.clone());
    // A buffer's count is the first COUNT parameter after it (Sendrecv has two of each).
    let at = f.params.iter().position(|q| q.name == p.name).unwrap_or(0);
    let count = f.params[at..]
        .iter()
        .find(|q| q.kind == "COUNT")
        .map(|q| q.name.clone());
    let with_comm = |func: &str| {
        comm.as_ref()
            .map(|c| format!("let {n} = crate::kinds::{func}(w, {c}, {n})?;"))
    };
    Some(match p.kind.as_str() {
        "COMM" => format!("let {n} = crate::kinds::comm(w, {n})?;"),
        "WIN" => format!("let {n} = crate::kinds::win(w, {n})?;"),
        "FILE" => format!("let {n} = crate::kinds::file(w, {n})?;"),
        "FILE_OPT" => format!("let {n} = crate::kinds::file_opt(w, {n})?;"),
        "SESSION" => format!("let {n} = crate::kinds::session(w, {n})?;"),
        // Communication needs a committed type; constructors and queries take any valid one.
        "DATATYPE" => format!("let {n} = crate::kinds::datatype(w, {n})?;"),
        "DATATYPE_ANY" => format!("let {n} = crate::kinds::datatype_any(w, {n})?;"),
        // Committed, and the handle kept (MPI-IO hands it to conversion functions).
        "DATATYPE_ARG" => format!("let {n} = crate::kinds::datatype_arg(w, {n})?;"),
        // Not significant on every rank (root-only, or beside MPI_IN_PLACE): NULL allowed.
        "DATATYPE_OPT" => match datatype_significance(p, f, comm.as_deref()) {
            Some(when) => format!("let {n} = crate::kinds::datatype_if({when}, w, {n})?;"),
            None => format!("let {n} = crate::kinds::datatype_opt(w, {n})?;"),
        },
        "GROUP" => format!("let {n} = crate::kinds::group({n})?;"),
        "OP" => format!("let {n} = crate::kinds::op(w, {n})?;"),
        "COUNT" => match count_significance(p, f, comm.as_deref()) {
            Some(when) => format!("let {n} = crate::kinds::count_if({when}, {n}, \"{n}\")?;"),
            None => format!("let {n} = crate::kinds::count({n}, \"{n}\")?;"),
        },
        "TAG" => format!("let {n} = crate::kinds::tag({n})?;"),
        "RECV_TAG" => format!("let {n} = crate::kinds::recv_tag({n})?;"),
        "INFO" => format!("let {n} = crate::kinds::info(w, {n})?;"),
        "RANK" => return with_comm("rank"),
        "RANK_STRICT" => return with_comm("rank_strict"),
        "SOURCE" => return with_comm("source"),
        "ROOT" => return with_comm("root"),
        "BUF_IN" | "BUF_OUT" | "BUF_INPLACE_IN" | "BUF_INOUT" | "BUF_ACC_IN" => {
            let c = count.clone()?;
            // A buffer described by a datatype (the parameter right after its count) may be
            // MPI_BOTTOM when that type is derived (absolute addresses); the check sees the
            // handle, which is converted later.
            let c_at = f.params.iter().position(|q| q.name == c)?;
            let check = match f.params.get(c_at + 1) {
                Some(t) if t.kind.starts_with("DATATYPE") && !t.kind.ends_with("ARRAY") => format!(
                    "crate::kinds::typed_buffer({n}, {c}, {t}, \"{n}\")?;",
                    t = t.name
                ),
                _ => format!("crate::kinds::buffer({n}, {c}, \"{n}\")?;"),
            };
            // On an intercommunicator, the root's group sends nothing (MPI_ROOT) or takes no
            // part at all (MPI_PROC_NULL): its send buffers may be anything.
            let root = f.params.iter().find(|q| q.kind == "ROOT");
            if p.kind == "BUF_ACC_IN" {
                return Some(format!("if {} {{ {check} }}", no_op_test(f)?));
            }
            match (root, comm.as_ref(), p.kind.as_str()) {
                (Some(r), Some(cm), "BUF_INPLACE_IN" | "BUF_INOUT") => format!(
                    "if crate::kinds::buffer_significant(w, {cm}, {r}, {inout})? {{ {check} }}",
                    r = r.name,
                    inout = p.kind == "BUF_INOUT"
                ),
                _ => check,
            }
        }
        // Arrays may be NULL when their length is 0; statuses may be MPI_STATUS(ES)_IGNORE.
        // Buffers significant at the root only (or replaced by MPI_IN_PLACE) may be anything
        // elsewhere, NULL included; the implementation checks them where they matter.
        // A new communicator is MPI_COMM_NULL unless the call makes one (whatever error stops
        // it), as MPICH leaves it; inputs were read by value before.
        "COMM_OUT" => {
            format!("crate::kinds::out_ptr({n}, \"{n}\")?; crate::kinds::comm_out_null({n});")
        }
        k if k.ends_with("_OUT")
            && !k.starts_with("BUF_")
            && !k.contains("ARRAY")
            && !matches!(k, "STATUS_OUT" | "STRING_OUT" | "ERRCODES_OUT" | "PTR_OUT") =>
        {
            format!("crate::kinds::out_ptr({n}, \"{n}\")?;")
        }
        _ => return None,
    })
}

/// The first count (or count array) after buffer `buf`: the one that describes it.
fn count_of<'f>(buf: &Param, f: &'f Function) -> Option<&'f Param> {
    let at = f.params.iter().position(|q| q.name == buf.name)?;
    f.params[at..]
        .iter()
        .find(|c| c.kind == "COUNT" || c.kind == "COUNT_ARRAY")
}

/// When count `p` is significant, as a Rust expression, if it is not always: the count of one
/// buffer alone (not shared, as `MPI_Reduce`'s) that only some ranks use. Elsewhere the standard
/// ignores the count, so `-1` must pass (MPI-3.1 section 5.5: "significant only at root").
fn count_significance(p: &Param, f: &Function, comm: Option<&str>) -> Option<String> {
    let owners: Vec<&Param> = (f.params.iter())
        .filter(|q| q.kind.starts_with("BUF_") && count_of(q, f).map(|c| &c.name) == Some(&p.name))
        .collect();
    let [buf] = owners.as_slice() else {
        return None;
    };
    buffer_significance(buf, f, comm)
}

/// When buffer `buf` is significant, if not always: a root-only buffer at the root, a send or
/// receive buffer that `MPI_IN_PLACE` may replace when it is not, a get-accumulate's origin
/// buffer unless the operation is `MPI_NO_OP`.
fn buffer_significance(buf: &Param, f: &Function, comm: Option<&str>) -> Option<String> {
    if buf.kind == "BUF_ACC_IN" {
        return no_op_test(f);
    }
    let cm = comm?;
    let root = f
        .params
        .iter()
        .find(|q| q.kind == "ROOT")
        .map(|r| r.name.as_str());
    let b = &buf.name;
    let inter = |root: Option<&str>| {
        root.map_or(String::new(), |r| {
            format!(" && crate::kinds::buffer_significant(w, {cm}, {r}, false)?")
        })
    };
    match buf.kind.as_str() {
        "BUF_INPLACE_IN" | "BUF_INPLACE_OUT" => {
            Some(format!("!crate::kinds::is_in_place({b}){}", inter(root)))
        }
        "BUF_ROOT_IN" | "BUF_ROOT_OUT" => {
            Some(format!("crate::kinds::at_root(w, {cm}, {})?", root?))
        }
        _ => None,
    }
}

/// A collective's send and receive buffers must not be the same memory where both are used
/// (MPI-3.1 section 2.3; `MPI_IN_PLACE` is the way to say so): MPI_ERR_BUFFER, as MPICH.
fn alias_check(f: &Function, comm: Option<&str>) -> Option<String> {
    let send =
        (f.params.iter()).find(|q| matches!(q.kind.as_str(), "BUF_INPLACE_IN" | "BUF_ROOT_IN"))?;
    let recv = (f.params.iter()).find(|q| {
        matches!(
            q.kind.as_str(),
            "BUF_OUT" | "BUF_ROOT_OUT" | "BUF_INPLACE_OUT"
        )
    })?;
    let mut used: Vec<String> = [send, recv]
        .iter()
        .filter_map(|b| buffer_significance(b, f, comm))
        .collect();
    // Only where both buffers have one count, and a buffer of no elements is not used: the
    // v-variants take arrays of counts, and programs pass one buffer for blocks that do not
    // overlap (mpi4py's tests do), which only a check of every block's bytes could tell.
    let (sc, rc) = (count_of(send, f)?, count_of(recv, f)?);
    if sc.kind != "COUNT" || rc.kind != "COUNT" {
        return None;
    }
    used.push(format!("{} > 0", sc.name));
    if rc.name != sc.name {
        used.push(format!("{} > 0", rc.name));
    }
    let used = if used.is_empty() {
        "true".to_string()
    } else {
        used.join(" && ")
    };
    Some(format!(
        "crate::kinds::not_aliased({}, {}, {used})?;",
        send.name, recv.name
    ))
}

/// When the datatype `p` (right after a count) is significant, if that count is not always.
fn datatype_significance(p: &Param, f: &Function, comm: Option<&str>) -> Option<String> {
    let at = f.params.iter().position(|q| q.name == p.name)?;
    let count = f.params[..at].last().filter(|c| c.kind == "COUNT")?;
    count_significance(count, f, comm)
}

/// Whether the origin buffer of a get-accumulate is used: not with `MPI_NO_OP`.
fn no_op_test(f: &Function) -> Option<String> {
    let op = f.params.iter().find(|q| q.kind == "OP")?;
    Some(format!("!crate::kinds::is_no_op({})", op.name))
}

/// Orders conversions the way MPICH checks: the communicator first, then parameter order.
fn ordered_conversions(f: &Function) -> Vec<String> {
    let comm = f.params.iter().find(|q| q.kind == "COMM");
    let comm_first = f.params.iter().filter(|p| p.kind == "COMM");
    let rest = f.params.iter().filter(|p| p.kind != "COMM");
    let mut all: Vec<String> = comm_first.filter_map(|p| conversion(p, f)).collect();
    // Before the other conversions: it reads the raw counts and root.
    all.extend(alias_check(f, comm.map(|c| c.name.as_str())));
    all.extend(rest.filter_map(|p| conversion(p, f)));
    all
}

fn rust_params(f: &Function) -> String {
    f.params
        .iter()
        .filter(|p| p.kind != "VARARGS")
        .map(|p| format!("{}: {}", p.name, rust_type(&p.c_type)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn arg_names(f: &Function) -> String {
    f.params
        .iter()
        .filter(|p| p.kind != "VARARGS")
        .map(|p| p.name.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The body of `PMPI_X`.
fn shim_body(f: &Function, style: Option<CallStyle>) -> String {
    let name = &f.name;
    let args = arg_names(f);
    let imp = imp_name(f);
    // Errors go to the handler of the communicator, window or session the call names (the one
    // its argument points to, read before the call, for the calls that free it: MPI_Comm_free,
    // MPI_Win_free, ...); those of the file calls to the file's (MPI_FILE_NULL's when there is
    // none yet, as for MPI_File_open).
    let named = |kind: &str| f.params.iter().find(|p| p.kind == kind);
    let errh = named("COMM")
        .or_else(|| named("WIN"))
        .or_else(|| named("SESSION"))
        .map(|p| format!("Some({})", p.name))
        .or_else(|| {
            let freed = named("COMM_INOUT")
                .or_else(|| named("WIN_INOUT"))
                .or_else(|| named("SESSION_INOUT"));
            freed.map(|p| format!("Some(crate::handles::target_at({}))", p.name))
        })
        .unwrap_or_else(|| "None".to_string());
    let errh = if name.starts_with("MPI_File_") {
        file_target(f)
    } else {
        errh
    };
    match style {
        None if f.ret == "int" => format!("crate::call::unsupported(\"{name}\")"),
        None => format!("crate::call::unsupported_value(\"{name}\")"),
        Some(CallStyle::Direct) => format!("crate::imp::{imp}({args})"),
        Some(CallStyle::Tool) if args.is_empty() => {
            format!("crate::mpit::frame(\"{name}\", crate::imp::{imp})")
        }
        Some(CallStyle::Tool) => {
            format!("crate::mpit::frame(\"{name}\", || crate::imp::{imp}({args}))")
        }
        Some(CallStyle::Anytime) if args.is_empty() => {
            format!("crate::call::anytime(\"{name}\", crate::imp::{imp})")
        }
        Some(CallStyle::Anytime) => {
            format!("crate::call::anytime(\"{name}\", || crate::imp::{imp}({args}))")
        }
        // The world path in a function of its own, so that the fast path does not pay for
        // setting it up (saved registers, arguments spilled for the closure); with the C
        // convention of the shim itself, so that declining is a jump to it with the arguments
        // where they came (a sibling call), not a call that keeps them across the fast path.
        Some(CallStyle::Fast) => format!(
            "if let Some(code) = crate::fast::{imp}({args}) {{\n        return code;\n    }}\n    \
             #[cold]\n    #[inline(never)]\n    extern \"C\" fn world({params}) -> c_int {{\n        {}\n    }}\n    \
             world({args})",
            shim_body(f, Some(CallStyle::World)),
            params = rust_params(f),
        ),
        Some(CallStyle::World) => {
            let mut body = String::new();
            for c in ordered_conversions(f) {
                let _ = write!(body, "\n            {c}");
            }
            let w = if args.is_empty() {
                "w".to_string()
            } else {
                format!("w, {args}")
            };
            format!("crate::call::world(\"{name}\", {errh}, |w| {{{body}\n            crate::imp::{imp}({w})\n        }})")
        }
    }
}

/// The error-dispatch target of an `MPI_File_*` call.
fn file_target(f: &Function) -> String {
    let file = f.params.iter().find(|p| p.kind.starts_with("FILE"));
    match file {
        Some(p) if p.kind == "FILE" || p.kind == "FILE_OPT" => {
            format!("Some(crate::handles::file_target({}))", p.name)
        }
        Some(p) if p.kind == "FILE_INOUT" => {
            format!("Some(crate::handles::file_target_at({}))", p.name)
        }
        _ => "Some(crate::handles::FILE_NULL_TARGET)".into(),
    }
}

/// The Rust shims for every function.
pub fn rust_shims(functions: &[Function], implemented: &BTreeMap<String, CallStyle>) -> String {
    let mut out = String::from(
        "// @generated by reflex-abigen from abi/functions.txt and abi/implemented.txt; do not edit.\n\
         //! The exported `MPI_*`/`PMPI_*` symbols (generated; see `reflex-abigen`).\n\
         #![allow(non_snake_case, unused_variables, clippy::too_many_arguments)]\n\
         // Reason for the allow: names and parameter lists are those of the MPI standard.\n\n\
         use crate::ffi;\nuse std::ffi::{c_char, c_int, c_void};\n\n",
    );
    for f in functions {
        let style = implemented.get(&f.name).copied();
        let ret = rust_type(&f.ret);
        let params = rust_params(f);
        let body = shim_body(f, style);
        let _ = write!(
            out,
            "/// `P{name}`: the implementation (MPI-3.1).\n\
             ///\n\
             /// # Safety\n\
             /// The caller upholds the MPI standard's preconditions for `{name}` (valid buffers and\n\
             /// pointers); the kind checks reject what can be detected (NULL outputs, bad handles).\n\
             #[no_mangle]\n\
             pub unsafe extern \"C\" fn P{name}({params}) -> {ret} {{\n    \
             {body}\n}}\n\n\
             /// `{name}`: forwards to `P{name}` (profiling tools interpose this symbol).\n\
             ///\n\
             /// # Safety\n\
             /// As for `P{name}`.\n\
             #[no_mangle]\n\
             pub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n    \
             // SAFETY: same contract as P{name}.\n    \
             unsafe {{ P{name}({args}) }}\n}}\n\n",
            name = f.name,
            args = arg_names(f),
        );
    }
    out
}
