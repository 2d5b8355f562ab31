#!/usr/bin/env python3
"""Check functions.txt against MPICH's prototypes.

Reads every MPI_ function that MPICH's mpi.h declares (mpi_proto.h and
mpio.h, after the C preprocessor has resolved MPICH's conditionals and
macros such as MPIO_Request) and every line of functions.txt, then reports:

  * functions in both whose return type, parameter count, parameter C types
    or parameter names differ;
  * MPICH functions missing from functions.txt (MPIX_ extensions and the
    attribute callback MPI_DUP_FN, which mpi_base.h.in declares itself as
    MPIR_Dup_fn, are not expected);
  * functions.txt lines that do not parse, unknown kinds, kinds used on a C
    type they do not describe, functions listed twice, functions outside
    every chapter.

A type is compared in a canonical spelling: tokens separated by one space,
the parameter name removed and `[]` read as `*` (they are the same type for
a parameter), so `const int recvcounts[]` is `const int *`; likewise a
parameter of a callback function type reads as a pointer to it.

Usage: check_functions.py [FUNCTIONS_TXT] [MPICH_INCLUDE_DIR]
       check_functions.py --declarations [FUNCTIONS_TXT]
The second form prints MPICH's own declarations (MPI_ and PMPI_) of the
listed functions, which check_abi.sh compiles after the generated mpi.h so
that the C compiler itself confirms every prototype is compatible.
Exit status: 0 clean, 1 differences, 77 MPICH not installed.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MPICH = "/usr/include/x86_64-linux-gnu/mpich"

# MPICH declarations that functions.txt leaves out on purpose.
NOT_EXPECTED = re.compile(r"^(MPIX_|MPI_DUP_FN$)")

FN_TYPE = re.compile(r"^MPI_\w*(_function|_fn)(_c)? \*$")
T_HANDLES = ["MPI_T_enum", "MPI_T_cvar_handle", "MPI_T_pvar_handle", "MPI_T_pvar_session",
             "MPI_T_event_registration", "MPI_T_event_instance"]


def handle_kinds(handle, base):
    """KIND, KIND_OUT and KIND_INOUT for one handle type."""
    return {base: {handle}, base + "_OUT": {handle + " *"}, base + "_INOUT": {handle + " *"}}


# Kind -> the canonical C types it may annotate.  Kinds named *_ARRAY* and
# the MPI-1 functions accept a non-const spelling too (MPI-1 had no const).
KINDS = {}
for _handle, _base in [("MPI_Comm", "COMM"), ("MPI_Group", "GROUP"), ("MPI_Datatype", "DATATYPE"),
                       ("MPI_Op", "OP"), ("MPI_Request", "REQUEST"), ("MPI_Message", "MESSAGE"),
                       ("MPI_Info", "INFO"), ("MPI_Errhandler", "ERRHANDLER"), ("MPI_Win", "WIN"),
                       ("MPI_File", "FILE"), ("MPI_Session", "SESSION")]:
    KINDS.update(handle_kinds(_handle, _base))
KINDS.update({
    "KEYVAL": {"int"}, "KEYVAL_OUT": {"int *"}, "KEYVAL_INOUT": {"int *"},
    "DATATYPE_ANY": {"MPI_Datatype"},
    "DATATYPE_OPT": {"MPI_Datatype"},
    "DATATYPE_ARG": {"MPI_Datatype"},
    "COMM_OPT": {"MPI_Comm"},
    "FILE_OPT": {"MPI_File"},
    "DATATYPE_ARRAY": {"const MPI_Datatype *", "MPI_Datatype *"},
    "DATATYPE_ARRAY_OUT": {"MPI_Datatype *"},
    "REQUEST_ARRAY": {"MPI_Request *"},
    "INFO_ARRAY": {"const MPI_Info *"},
    "T_HANDLE": set(T_HANDLES),
    "T_HANDLE_OUT": {h + " *" for h in T_HANDLES},
    "T_HANDLE_INOUT": {h + " *" for h in T_HANDLES},
    "ENUM_IN": {"MPI_T_cb_safety"},
    "ENUM_OUT": {"MPI_T_source_order *", "MPI_T_cb_safety *"},
    "BUF_IN": {"const void *"}, "BUF_OUT": {"void *"}, "BUF_INOUT": {"void *"},
    "BUF_INPLACE_IN": {"const void *"}, "BUF_INPLACE_OUT": {"void *"},
    "BUF_ROOT_IN": {"const void *"}, "BUF_ROOT_OUT": {"void *"}, "BUF_ACC_IN": {"const void *"},
    "COUNT": {"int", "MPI_Count", "MPI_Aint"},
    "COUNT_ARRAY": {"const int *", "const MPI_Count *", "int *"},
    "DISPL_ARRAY": {"const int *", "const MPI_Aint *", "const MPI_Count *", "MPI_Aint *"},
    "STRIDE": {"int", "MPI_Aint", "MPI_Count"},
    "RANK": {"int"}, "RANK_STRICT": {"int"}, "SOURCE": {"int"}, "ROOT": {"int"},
    "TAG": {"int"}, "RECV_TAG": {"int"},
    "STATUS_IN": {"const MPI_Status *"}, "STATUS_OUT": {"MPI_Status *"},
    "STATUS_INOUT": {"MPI_Status *"}, "STATUS_ARRAY_OUT": {"MPI_Status *"},
    "F_STATUS_IN": {"const MPI_Fint *"}, "F_STATUS_OUT": {"MPI_Fint *"},
    "F08_STATUS_IN": {"const MPI_F08_status *"}, "F08_STATUS_OUT": {"MPI_F08_status *"},
    "FINT_IN": {"MPI_Fint"},
    "INT_IN": {"int", "const int", "MPI_Count"},
    "INT_OUT": {"int *"}, "INT_INOUT": {"int *"},
    "INT_ARRAY_IN": {"const int *", "const MPI_Count *", "int * [3]", "int *"},
    "INT_ARRAY_OUT": {"int *"}, "INT_ARRAY_INOUT": {"int *"},
    "WEIGHTS_IN": {"const int *"}, "WEIGHTS_OUT": {"int *"},
    "FLAG_OUT": {"int *"}, "INDEX_OUT": {"int *"}, "INDEX_ARRAY_OUT": {"int *"},
    "ERRCODE": {"int"}, "ERRCODES_OUT": {"int *"}, "THREAD_LEVEL": {"int"},
    "AINT_IN": {"MPI_Aint", "MPI_Count"}, "AINT_OUT": {"MPI_Aint *"},
    "AINT_INOUT": {"MPI_Aint *"}, "AINT_ARRAY_OUT": {"MPI_Aint *"},
    "COUNT_OUT": {"MPI_Count *"}, "COUNT_INOUT": {"MPI_Count *"}, "COUNT_ARRAY_OUT": {"MPI_Count *"},
    "OFFSET_IN": {"MPI_Offset"}, "OFFSET_OUT": {"MPI_Offset *"},
    "STRING_IN": {"const char *"}, "STRING_OUT": {"char *"},
    "STRING_LEN_OUT": {"int *"}, "STRING_LEN_INOUT": {"int *"},
    "STRING_ARRAY_IN": {"char * *"},
    "ARGC_INOUT": {"int *"}, "ARGV_INOUT": {"char * * *"},
    "ARGV": {"char * *"}, "ARGV_ARRAY": {"char * * *"},
    "PTR_IN": {"void *", "const void *"}, "PTR_OUT": {"void *"},
    "DOUBLE_IN": {"double"},
    "FN": set(),  # any pointer to an MPI_*_function / MPI_*_fn typedef
    "OTHER": set(),  # anything
})


def canonical(decl):
    """(canonical type, name) of one parameter declaration."""
    tokens = re.findall(r"\.\.\.|\w+|\*|\[\d*\]", decl)
    if tokens == ["..."]:
        return "...", ""
    words = [i for i, t in enumerate(tokens) if re.fullmatch(r"\w+", t)]
    if len(words) < 2:
        return " ".join(tokens), ""
    name = tokens[words[-1]]
    rest = tokens[: words[-1]] + tokens[words[-1] + 1:]
    ctype = " ".join("*" if t == "[]" else t for t in rest)
    if FN_TYPE.match(ctype + " *"):
        ctype += " *"  # a parameter of function type is a function pointer
    return ctype, name


def split_params(text):
    text = text.strip()
    if text in ("", "void"):
        return []
    return [p.strip() for p in text.split(",")]


def mpich_declarations(include_dir):
    """{name: C declaration text} of every function MPICH's mpi.h declares."""
    cmd = ["cc", "-E", "-P", "-DMPICH_SKIP_MPICXX", "-I", include_dir, "-x", "c", "-"]
    out = subprocess.run(cmd, input="#include <mpi.h>\n", capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("check_functions: cannot preprocess MPICH's mpi.h:\n" + out.stderr)
    text = re.sub(r"\s+", " ", out.stdout)
    found = {}
    for chunk in text.split(";"):
        chunk = re.split(r"[{}]", chunk)[-1].strip()
        if chunk.startswith("typedef"):
            continue
        m = re.fullmatch(r"(?:extern )?([A-Za-z_][\w ]*?[\s*]+)(P?MPIX?_\w+)\s*\((.*)\)", chunk)
        if m:
            found[m.group(2)] = chunk
    return found


def mpich_functions(include_dir):
    """{name: (return type, [(type, name)])} of MPICH's MPI_ functions."""
    found = {}
    for name, decl in mpich_declarations(include_dir).items():
        m = re.fullmatch(r"(?:extern )?([A-Za-z_][\w ]*?[\s*]+)(\w+)\s*\((.*)\)", decl)
        if name.startswith("MPI_"):
            params = [canonical(p) for p in split_params(m.group(3))]
            found[name] = (canonical(m.group(1) + " x")[0], params)
    return found


def parse_spec(path):
    """Parse functions.txt: ({name: (ret, [(type, name, kind)], line)}, [errors])."""
    functions, errors, chapter = {}, [], None
    with open(path) as f:
        lines = f.read().splitlines()
    for no, line in enumerate(lines, 1):
        text = line.strip()
        if text.startswith("# chapter:"):
            chapter = text.split(":", 1)[1].strip()
            continue
        if not text or text.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z_][\w ]*?[\s*]+)(MPI_\w+)\((.*)\)", text)
        if not m:
            errors.append("line %d: not a prototype: %s" % (no, text))
            continue
        name = m.group(2)
        if chapter is None:
            errors.append("line %d: %s comes before any `# chapter:` line" % (no, name))
        params = []
        for p in split_params(m.group(3)):
            if p == "...":
                params.append(("...", "", "VARARGS"))
                continue
            if ":" not in p:
                errors.append("line %d: %s: parameter `%s` has no :KIND" % (no, name, p))
                continue
            decl, kind = p.rsplit(":", 1)
            ctype, pname = canonical(decl)
            params.append((ctype, pname, kind.strip()))
        if name in functions:
            errors.append("line %d: %s is listed twice" % (no, name))
        functions[name] = (canonical(m.group(1) + " x")[0], params, no)
    return functions, errors


def kind_errors(name, params, no):
    errors = []
    for ctype, pname, kind in params:
        if kind == "VARARGS":
            continue
        if kind not in KINDS:
            errors.append("line %d: %s: unknown kind %s for %s" % (no, name, kind, pname))
        elif kind == "FN":
            if not FN_TYPE.match(ctype):
                errors.append("line %d: %s: FN on `%s %s`" % (no, name, ctype, pname))
        elif kind != "OTHER" and ctype not in KINDS[kind]:
            errors.append("line %d: %s: kind %s does not fit `%s %s`" % (no, name, kind, ctype, pname))
    return errors


def compare(spec, mpich):
    errors = []
    for name, (ret, params, no) in sorted(spec.items(), key=lambda kv: kv[1][2]):
        errors += kind_errors(name, params, no)
        if name not in mpich:
            errors.append("line %d: %s is not declared by MPICH" % (no, name))
            continue
        mret, mparams = mpich[name]
        if ret != mret:
            errors.append("line %d: %s returns `%s`, MPICH `%s`" % (no, name, ret, mret))
        if len(params) != len(mparams):
            errors.append("line %d: %s has %d parameters, MPICH %d" % (no, name, len(params), len(mparams)))
            continue
        for i, ((ctype, pname, _), (mtype, mname)) in enumerate(zip(params, mparams), 1):
            if ctype != mtype:
                errors.append("line %d: %s parameter %d: `%s`, MPICH `%s`" % (no, name, i, ctype, mtype))
            if pname != mname:
                errors.append("line %d: %s parameter %d is named %s, MPICH %s" % (no, name, i, pname, mname))
    missing = sorted(n for n in mpich if n not in spec and not NOT_EXPECTED.match(n))
    errors += ["missing: %s (declared by MPICH)" % n for n in missing]
    return errors


def print_declarations(include_dir, spec_path):
    """Print MPICH's declarations of the MPI_ and PMPI_ functions listed in
    functions.txt, as C, for a compiler to compare with another header."""
    spec, _ = parse_spec(spec_path)
    for name, decl in sorted(mpich_declarations(include_dir).items()):
        if name.split("_", 1)[0] in ("MPI", "PMPI") and "MPI_" + name.split("_", 1)[1] in spec:
            print(decl + ";")
    return 0


def main(argv):
    if argv and argv[0] == "--declarations":
        include_dir = os.environ.get("MPICH_INCLUDE", DEFAULT_MPICH)
        return print_declarations(include_dir, argv[1] if len(argv) > 1 else os.path.join(HERE, "functions.txt"))
    spec_path = argv[0] if argv else os.path.join(HERE, "functions.txt")
    include_dir = argv[1] if len(argv) > 1 else os.environ.get("MPICH_INCLUDE", DEFAULT_MPICH)
    if not os.path.isfile(os.path.join(include_dir, "mpi.h")):
        print("check_functions: MPICH's mpi.h not found in %s; skipped" % include_dir, file=sys.stderr)
        return 77
    mpich = {n: f for n, f in mpich_functions(include_dir).items() if n.startswith("MPI_")}
    spec, errors = parse_spec(spec_path)
    errors += compare(spec, mpich)
    for e in errors:
        print("check_functions: " + e)
    shared = len(set(spec) & set(mpich))
    print("check_functions: %d functions listed, %d shared with MPICH's %d, %d problems"
          % (len(spec), shared, len(mpich), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
