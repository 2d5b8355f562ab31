/*
 * mtest.h - tiny shared helpers for Reflex's MPI test programs.
 *
 * Every test program checks its own results, prints one diagnostic line per failed
 * check (rank, file:line, condition, detail) on stderr, and ends through MTest_Finalize,
 * which sums the error counts over MPI_COMM_WORLD and has rank 0 print " No Errors"
 * (the MPICH test-suite convention that tests/mpi/run.py looks for) or " Found N errors".
 *
 * Header-only on purpose: each program is one .c file plus this header, so the runner can
 * build any program with nothing but `mpicc prog.c`.
 */
#ifndef MTEST_H
#define MTEST_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Stop printing after this many failed checks per rank; later failures are only counted. */
#define MTEST_MAX_REPORTS 25

static int mtest_errs = 0;   /* failed checks on this rank */
static int mtest_rank = -1;  /* rank in MPI_COMM_WORLD, -1 before MTest_Init */
static int mtest_size = 0;   /* size of MPI_COMM_WORLD */

static inline void mtest_report(const char *file, int line, const char *what, const char *fmt, ...)
{
    mtest_errs++;
    if (mtest_errs > MTEST_MAX_REPORTS)
        return;
    fprintf(stderr, "[%d] %s:%d: check failed: %s", mtest_rank, file, line, what);
    if (fmt && *fmt) {
        va_list ap;
        fputs(": ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    fflush(stderr);
}

/* CHECK(cond, "printf format", args...): count and report a failed condition. */
#define CHECK(cond, ...) \
    do { if (!(cond)) mtest_report(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)

/* FAIL("printf format", args...): report a failure found by the program's own logic. */
#define FAIL(...) mtest_report(__FILE__, __LINE__, "wrong result", __VA_ARGS__)

/* CHECK_EQ(a, b): integer equality with both values printed. */
#define CHECK_EQ(a, b) \
    do { long long a_ = (long long)(a), b_ = (long long)(b); \
         if (a_ != b_) mtest_report(__FILE__, __LINE__, #a " == " #b, "%lld != %lld", a_, b_); \
    } while (0)

/* Text of an MPI error code, for diagnostics. */
static inline const char *mtest_errstr(int code)
{
    static char buf[MPI_MAX_ERROR_STRING + 32];
    int len = 0;
    if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS)
        snprintf(buf, sizeof buf, "(unknown error code %d)", code);
    return buf;
}

/* CALL(MPI_X(...)): the call must return MPI_SUCCESS (only meaningful under ERRORS_RETURN). */
#define CALL(call) \
    do { int rc_ = (call); \
         if (rc_ != MPI_SUCCESS) mtest_report(__FILE__, __LINE__, #call, "returned %d: %s", rc_, mtest_errstr(rc_)); \
    } while (0)

/* CHECK_CLASS(rc, MPI_ERR_X): rc must be an error code of class MPI_ERR_X with a non-empty text. */
#define CHECK_CLASS(rc, cls) \
    do { int c_ = -1, rc2_ = (rc), len_ = 0; char s_[MPI_MAX_ERROR_STRING]; \
         s_[0] = 0; \
         if (rc2_ == MPI_SUCCESS) { mtest_report(__FILE__, __LINE__, #rc " is " #cls, "returned MPI_SUCCESS"); break; } \
         MPI_Error_class(rc2_, &c_); \
         if (c_ != (cls)) mtest_report(__FILE__, __LINE__, #rc " is " #cls, "class %d (%s), want %d", c_, mtest_errstr(rc2_), (int)(cls)); \
         MPI_Error_string(rc2_, s_, &len_); \
         if (len_ <= 0 || s_[0] == 0) mtest_report(__FILE__, __LINE__, "error string of " #rc " non-empty", "len %d", len_); \
    } while (0)

/* rc must be an error of class a or b (where implementations, or the standard, allow either) */
#define CHECK_CLASS2(rc, a, b)                                                                              \
    do {                                                                                                    \
        int r_ = (rc), c_ = -1;                                                                             \
        if (r_ == MPI_SUCCESS) {                                                                            \
            mtest_report(__FILE__, __LINE__, #rc, "returned MPI_SUCCESS, want " #a " or " #b);              \
            break;                                                                                          \
        }                                                                                                   \
        MPI_Error_class(r_, &c_);                                                                           \
        if (c_ != (a) && c_ != (b))                                                                         \
            mtest_report(__FILE__, __LINE__, #rc, "class %d (%s), want " #a " or " #b, c_, mtest_errstr(r_)); \
    } while (0)

static inline void MTest_Init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mtest_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mtest_size);
}

/* Fail (but keep going, so the job ends cleanly) when run with too few ranks. */
static inline int MTest_NeedRanks(int min)
{
    if (mtest_size >= min)
        return 1;
    if (mtest_rank == 0)
        fprintf(stderr, "this test needs at least %d ranks, got %d\n", min, mtest_size);
    mtest_errs++;
    return 0;
}

/* Sum the errors over all ranks, print the verdict on rank 0, finalize; returns the exit code. */
static inline int MTest_Finalize(void)
{
    int total = 0;
    MPI_Allreduce(&mtest_errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mtest_rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
        fflush(stdout);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}

/* The rank this rank exchanges with: its pair (0-1, 2-3, ...), or itself when unpaired. */
static inline int mtest_partner(void)
{
    int p = mtest_rank ^ 1;
    return p < mtest_size ? p : mtest_rank;
}

/* Ranks per node, when the launcher says (MPI_LOCALNRANKS: Reflex's mpiexec, Hydra, both of which
 * place consecutive ranks on a node, also on emulated nodes); else every rank is on one node. */
static inline int mtest_node_size(void)
{
    const char *v = getenv("MPI_LOCALNRANKS");
    int k = v ? atoi(v) : 0;
    return k > 0 && k <= mtest_size ? k : mtest_size;
}

/* Byte pattern that depends on the sender, a per-message seed and the position. */
static inline unsigned char mtest_byte(int sender, int seed, size_t i)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)sender * 131u + (uint64_t)seed * 7919u;
    x ^= x >> 29;
    return (unsigned char)(x ^ (x >> 8));
}

static inline void mtest_fill(void *buf, size_t n, int sender, int seed)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = mtest_byte(sender, seed, i);
}

/* Index of the first wrong byte, or -1 when all n bytes match the pattern. */
static inline long long mtest_verify(const void *buf, size_t n, int sender, int seed)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        if (p[i] != mtest_byte(sender, seed, i))
            return (long long)i;
    return -1;
}

/* CHECK_DATA(buf, n, sender, seed, "what"): buffer must hold the pattern. */
#define CHECK_DATA(buf, n, sender, seed, what) \
    do { long long bad_ = mtest_verify((buf), (n), (sender), (seed)); \
         if (bad_ >= 0) mtest_report(__FILE__, __LINE__, "data of " what, \
             "%zu bytes from %d (seed %d): first wrong byte at %lld", (size_t)(n), (int)(sender), (int)(seed), bad_); \
    } while (0)

/* malloc that ends the job with a message when memory runs out. */
static inline void *mtest_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "[%d] out of memory allocating %zu bytes\n", mtest_rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Status of a request that completed on MPI_PROC_NULL, or of an empty (null/inactive) request. */
#define CHECK_PROC_NULL_STATUS(st, dtype) \
    do { int cnt_ = -1; MPI_Get_count(&(st), (dtype), &cnt_); \
         CHECK_EQ((st).MPI_SOURCE, MPI_PROC_NULL); CHECK_EQ((st).MPI_TAG, MPI_ANY_TAG); CHECK_EQ(cnt_, 0); \
    } while (0)

#define CHECK_EMPTY_STATUS(st, dtype) \
    do { int cnt_ = -1; MPI_Get_count(&(st), (dtype), &cnt_); \
         CHECK_EQ((st).MPI_SOURCE, MPI_ANY_SOURCE); CHECK_EQ((st).MPI_TAG, MPI_ANY_TAG); CHECK_EQ(cnt_, 0); \
    } while (0)

/* A scratch directory for the files of one test: rank 0 of `comm` creates it (mkdtemp under
 * $TMPDIR or /tmp) and every rank gets its name in `dir` (256 bytes) and DIR/NAME in `path`
 * (300 bytes). */
static inline void mtest_tmpdir(MPI_Comm comm, char *dir, char *path, const char *name)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, 256, "%s/mtest-io-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) {
            fprintf(stderr, "cannot create a scratch directory under %s\n", dir);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Bcast(dir, 256, MPI_CHAR, 0, comm);
    snprintf(path, 300, "%s/%s", dir, name);
}

/* Removes the (by then empty) scratch directory; a leftover file is a failed check. */
static inline void mtest_rmtmpdir(MPI_Comm comm, const char *dir)
{
    int rank;
    MPI_Barrier(comm);
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && rmdir(dir) != 0)
        mtest_report(__FILE__, __LINE__, "rmdir(scratch dir)", "%s: a test file was left behind", dir);
}

/* Opens `path` on `comm` for reading and writing, created if missing and deleted at close. */
#define MTEST_OPEN_SCRATCH(comm, path, fh) \
    CALL(MPI_File_open((comm), (path), MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, \
                       MPI_INFO_NULL, (fh)))

#endif /* MTEST_H */
