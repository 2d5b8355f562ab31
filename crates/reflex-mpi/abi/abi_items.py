#!/usr/bin/env python3
"""List the ABI facts a C header defines, for check_abi.c.

Runs the C preprocessor on a header (once with -dM for the macros, once
normally for enums, typedefs and extern objects) and prints one line per
fact as a call of one of the ITEM_* macros that check_abi.c defines:

  ITEM_VALUE(X)         an object-like macro or enumerator with a value
  ITEM_TYPE(T)          a typedef (or a macro naming a type)
  ITEM_FTYPE(T)         a typedef of a function type
  ITEM_FIELD(T, f)      a field of a struct typedef
  ITEM_OBJECT(x)        an extern object (size and type only)
  ITEM_CALL(F)          a function-like macro, applied to 7
  ITEM_ALIAS(X)         a macro that names a function
  ITEM_SYMBOL(s)        a function from extra_symbols.txt (listed first)

Usage: abi_items.py HEADER EXTRA_SYMBOLS [--names] [-- CPPFLAGS...]
With --names it prints only the names, one per line (for the check that
nothing MPICH defines was forgotten).
"""

import re
import subprocess
import sys

# Names that are deliberately not compared: the MPI version macros (Reflex
# claims MPI-3.1, MPICH 4.0 claims MPI-4.0) and the include guard.
NOT_COMPARED = {"MPI_INCLUDED", "MPI_VERSION", "MPI_SUBVERSION"}

# Only these name spaces belong to the MPI interface.
PREFIX = re.compile(r"^(P?MPIO?_|MPIR_)")


def preprocess(header, flags, extra):
    """Return the output of `cc -E` (plus `extra` options) on `header`."""
    src = '#include "%s"\n' % header
    cmd = ["cc", "-E", "-P", "-x", "c", "-"] + extra + flags
    out = subprocess.run(cmd, input=src, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("abi_items: preprocessing %s failed:\n%s" % (header, out.stderr))
    return out.stdout


def macros(header, flags):
    """Object-like and function-like macros: {name: (params or None, body)}."""
    found = {}
    for line in preprocess(header, flags, ["-dM"]).splitlines():
        m = re.match(r"#define (\w+)(\([^)]*\))? ?(.*)$", line)
        if m and PREFIX.match(m.group(1)):
            found[m.group(1)] = (m.group(2), m.group(3).strip())
    return found


def declarations(header, flags):
    """Enumerators, typedefs (split by kind), struct fields, extern objects."""
    text = re.sub(r"\s+", " ", preprocess(header, flags, []))
    enumerators = []
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", text):
        for item in body.split(","):
            name = item.split("=")[0].strip()
            if PREFIX.match(name):
                enumerators.append(name)
    structs = {}
    for m in re.finditer(r"\btypedef struct (\w+ )?\{([^}]*)\} (\w+);", text):
        fields = [f.strip().split()[-1] for f in m.group(2).split(";") if f.strip()]
        structs[m.group(3)] = fields
    flat = re.sub(r"\{[^{}]*\}", "{}", text)
    types, ftypes = [], []
    for decl in re.findall(r"\btypedef\b([^;]*);", flat):
        fn = re.search(r"\(\s*(\w+)\s*\)\s*\(", decl)
        if fn:
            ftypes.append(fn.group(1))
            continue
        words = re.findall(r"\w+", decl)
        if len(words) == 2 and words[0] in ftypes:
            ftypes.append(words[1])
        else:
            types.append(words[-1])
    objects = []
    for decl in re.findall(r"\bextern\b([^;(]*);", flat):
        objects.append(re.search(r"(\w+)\s*(\[\d*\])?\s*$", decl.strip()).group(1))
    keep = lambda names: [n for n in names if PREFIX.match(n)]
    return enumerators, keep(types), keep(ftypes), structs, keep(objects)


def extra_functions(path):
    """Function names listed in extra_symbols.txt."""
    names = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields and not fields[0].startswith("#") and fields[1] == "function":
                names.append(fields[0])
    return names


def items(header, extra_path, flags):
    macro_map = macros(header, flags)
    enumerators, types, ftypes, structs, objects = declarations(header, flags)
    extras = extra_functions(extra_path)
    known_values = set(macro_map) | set(enumerators)
    out = [("ITEM_SYMBOL", s) for s in extras]
    for name, (params, body) in sorted(macro_map.items()):
        if name in NOT_COMPARED or not body:
            continue
        if params:
            out.append(("ITEM_CALL", name))
        elif body in types or body in ftypes:
            out.append(("ITEM_TYPE", name))
        elif re.fullmatch(r"\w+", body) and body not in known_values and not body[0].isdigit():
            out.append(("ITEM_ALIAS", name))
        else:
            out.append(("ITEM_VALUE", name))
    out += [("ITEM_VALUE", e) for e in enumerators if e not in NOT_COMPARED]
    out += [("ITEM_TYPE", t) for t in types]
    out += [("ITEM_FTYPE", t) for t in ftypes]
    for struct, fields in sorted(structs.items()):
        out += [("ITEM_FIELD", "%s, %s" % (struct, f)) for f in fields]
    out += [("ITEM_OBJECT", o) for o in objects]
    return out


def main(argv):
    names_only = "--names" in argv
    args = [a for a in argv if a != "--names"]
    flags = []
    if "--" in args:
        flags = args[args.index("--") + 1:]
        args = args[: args.index("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    for kind, arg in items(args[0], args[1], flags):
        if names_only:
            if kind not in ("ITEM_FIELD", "ITEM_SYMBOL"):
                print(arg)
        else:
            print("%s(%s)" % (kind, arg))


if __name__ == "__main__":
    main(sys.argv[1:])
