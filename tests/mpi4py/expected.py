"""The expected-failures list of the mpi4py stage: parse it, match results against it, rewrite it.

Format of tests/mpi4py/expected-failures.txt, one entry a line, `#` starts a comment:

    ID-PATTERN [n=R1,R2,...] [skip]   # area (owner) and why

ID-PATTERN is a unittest id (`test_module.Class.method`, `test_module.<import>` for a module that
fails to import) or an fnmatch pattern over them. `n=` limits the entry to some rank counts
(default: every rank count). `skip` means the tests are not run at all: for those that hang or take
minutes to time out (each such line must say why). Lines that hold only a comment are kept as they
are by `--update`; the comment of an entry is kept as long as the entry still fails.
"""

import fnmatch
import re
from dataclasses import dataclass, field

FAILING = ("fail", "error", "crash", "timeout")
PLACEHOLDER = "# TODO: name the area / issue that owns this failure"


# Areas guessed by --update from a failure's cause (its message's last line) or, for hangs and
# crashes, from the test module: (regex, comment). First match wins; edit the result if wrong.
COLL = r"(Barrier|Bcast|Gatherv?|Scatterv?|Allgatherv?|Alltoall[vw]?|Reduce|Allreduce|" \
    r"Reduce_scatter(_block)?|Scan|Exscan)"
AREAS = [
    (r"MPI_(Psend_init|Precv_init|Pready|Parrived)", "MPI-4 partitioned communication"),
    (r"MPI_I?neighbor_|MPI_Neighbor_", "neighbourhood collectives (issue 5)"),
    (rf"MPI_{COLL}_init(_c)?\b", "persistent collectives (issue 5)"),
    (rf"MPI_I{COLL.lower()}(_c)?\b", "nonblocking collectives (issue 5)"),
    (rf"MPI_{COLL}(_c)?\b", "collectives (issue 5)"),
    (r"MPI_(Win_\w+|Put|Get|Accumulate|Get_accumulate|Rput|Rget|Raccumulate|Rget_accumulate|"
     r"Fetch_and_op|Compare_and_swap)(_c)?\b", "one-sided (issue 8)"),  # fmt: skip
    (r"MPI_File_|MPI_Register_datarep", "MPI-IO (no issue yet)"),
    (r"MPI_(Comm_spawn|Comm_get_parent|Open_port|Close_port|Comm_accept|Comm_connect|"
     r"Comm_disconnect|Comm_join|Publish_name|Lookup_name|Unpublish_name)",
     "dynamic processes (no issue yet)"),  # fmt: skip
    (r"MPI_Intercomm_", "intercommunicators (issue 3)"),
    (r"MPI_Session_", "MPI-4 sessions (no issue yet)"),
    (r"MPI_Isendrecv", "MPI-4 point-to-point: Isendrecv (issue 3)"),
    (r"MPI_(Alloc_mem|Free_mem)", "memory allocation: Alloc_mem (issue 3 item 5)"),
    (r"MPI_Grequest_", "generalized requests (issue 3)"),
    (r"MPI_\w+_(c2f|f2c)", "Fortran handle/status conversion (issue 3)"),
    (r"MPI_Op_create_c|overflows the address space", "large counts beyond INT_MAX"),
    (r"^timeout|^crash", None),  # by module, below
]
MODULE_AREAS = [
    (r"test_cco_", "collectives (issue 5)"),
    (r"test_comm_inter", "intercommunicators (issue 3)"),
    (r"test_dynproc|test_spawn|test_util_pool", "dynamic processes (no issue yet)"),
    (r"test_rma|test_win|test_util_sync", "one-sided (issue 8)"),
    (r"test_io|test_file", "MPI-IO (no issue yet)"),
    (r"test_threads", "MPI_THREAD_MULTIPLE (issue 3 item 6)"),
]


def placeholder(test_id, cause):
    """The comment --update gives a new failure: a guessed area, else the TODO placeholder; both
    quote the cause."""
    area = None
    for pattern, name in AREAS:
        if re.search(pattern, cause):
            area = name
            break
    if area is None and re.match(r"^(timeout|crash)", cause):
        module = test_id.split(".")[0]
        area = next((name for pattern, name in MODULE_AREAS if re.match(pattern, module)), None)
    if area is None:
        return f"{PLACEHOLDER} ({cause})" if cause else PLACEHOLDER
    return f"# {area}: {cause}"


@dataclass
class Entry:
    """One line of the list."""

    pattern: str
    ranks: frozenset | None  # None: every rank count
    skip: bool
    comment: str
    line: int
    matched: dict = field(default_factory=dict)  # n -> {"failed": set(ids), "passed": set(ids)}

    def applies(self, test_id, n):
        if self.ranks is not None and n not in self.ranks:
            return False
        return fnmatch.fnmatchcase(test_id, self.pattern)

    def text(self):
        words = [self.pattern]
        if self.ranks is not None:
            words.append("n=" + ",".join(str(r) for r in sorted(self.ranks)))
        if self.skip:
            words.append("skip")
        return " ".join(words)


class ListError(ValueError):
    """A malformed line in the expected-failures list."""


def parse_line(raw, number):
    body, _, comment = raw.partition("#")
    words = body.split()
    if not words:
        return None
    pattern, ranks, skip = words[0], None, False
    for word in words[1:]:
        if word == "skip":
            skip = True
        elif re.fullmatch(r"n=\d+(,\d+)*", word):
            ranks = frozenset(int(r) for r in word[2:].split(","))
        else:
            raise ListError(f"line {number}: unknown word '{word}' (expected n=R,.. or skip)")
    comment = comment.strip()
    return Entry(pattern, ranks, skip, f"# {comment}" if comment else "", number)


def load(path):
    """Entries and the raw lines (to keep header comments on --update)."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except FileNotFoundError:
        return [], []
    entries = []
    for number, raw in enumerate(lines, 1):
        entry = parse_line(raw, number)
        if entry is not None:
            entries.append(entry)
    return entries, lines


def skip_patterns(entries, n):
    return [e.pattern for e in entries if e.skip and (e.ranks is None or n in e.ranks)]


def classify(entries, n, outcomes):
    """Split the failing tests of one rank count into expected and unexpected; note in each entry
    which tests it matched (failed or passed) so that stale entries can be reported."""
    expected, unexpected = {}, {}
    for test_id, outcome in sorted(outcomes.items()):
        owners = [e for e in entries if not e.skip and e.applies(test_id, n)]
        for entry in owners:
            kind = "failed" if outcome in FAILING else "passed"
            entry.matched.setdefault(n, {"failed": set(), "passed": set()})[kind].add(test_id)
        if outcome in FAILING:
            (expected if owners else unexpected)[test_id] = outcome
    return expected, unexpected


def stale(entries, ranks):
    """Entries (not skip) that matched no failing test at some rank count they apply to:
    [(entry, [(n, passed ids)])]. An entry that matched nothing at all is reported too."""
    report = []
    for entry in entries:
        if entry.skip:
            continue
        gone = []
        for n in ranks:
            if entry.ranks is not None and n not in entry.ranks:
                continue
            seen = entry.matched.get(n, {"failed": set(), "passed": set()})
            if not seen["failed"]:
                gone.append((n, sorted(seen["passed"])))
        if gone:
            report.append((entry, gone))
    return report


def rewrite(path, entries, header, failures, ranks, modules, causes):
    """Write the list anew from the failures of this run ({n: {id: outcome}}): skip entries stay,
    entries of modules not run stay, every failing id gets a line (with n= when it failed at only
    some of the rank counts run) keeping the comment of the entry that matched it before, else the
    area guessed from its cause ({id: text}) or a TODO placeholder to edit."""
    by_id = {}
    for n, failed in failures.items():
        for test_id in failed:
            by_id.setdefault(test_id, set()).add(n)
    first_entry = min((e.line for e in entries), default=len(header) + 1)
    out = list(header[: first_entry - 1])
    if out and out[-1].strip():
        out.append("")
    for entry in entries:
        if entry.skip or entry.pattern.split(".")[0] not in modules:
            out.append(f"{entry.text()}  {entry.comment}".rstrip())
    for test_id in sorted(by_id):
        failed_at = by_id[test_id]
        comment = next(
            (
                e.comment
                for e in entries
                if not e.skip and e.comment and fnmatch.fnmatchcase(test_id, e.pattern)
            ),
            placeholder(test_id, causes.get(test_id, "")),
        )
        wide = failed_at == set(ranks)
        entry = Entry(test_id, None if wide else frozenset(failed_at), False, comment, 0)
        out.append(f"{entry.text()}  {comment}")
    with open(path, "w", encoding="utf-8") as file:
        file.write("\n".join(out) + "\n")
