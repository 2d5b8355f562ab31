/*
 * io_datarep.c - MPI-IO data representations: "external32" and one registered with
 * MPI_Register_datarep. Each rank writes its ints (and doubles) collectively through a strided
 * view in the representation; rank 0 reads the raw bytes back through a native view and checks
 * that they are big-endian (external32) or encoded by the registered functions; every rank
 * reads its data back through the representation. Also: MPI_File_get_view names the
 * representation, MPI_File_get_type_extent gives the file extent, a name registered twice is
 * MPI_ERR_DUP_DATAREP, an unknown name MPI_ERR_UNSUPPORTED_DATAREP, and a conversion function
 * that fails makes the access fail.
 */
#include "mtest.h"

#define N 96 /* ints per rank */
#define KEY 0x5a

static int conversions; /* calls of the registered conversion functions on this rank */

/* The registered representation stores each int's bytes XORed with KEY. */
static int xor_ints(void *to, const void *from, MPI_Datatype t, int count)
{
    if (t != MPI_INT)
        return MPI_ERR_TYPE;
    const unsigned char *f = from;
    unsigned char *o = to;
    for (size_t i = 0; i < (size_t)count * sizeof(int); i++)
        o[i] = f[i] ^ KEY;
    return MPI_SUCCESS;
}

static int write_fn(void *userbuf, MPI_Datatype t, int count, void *filebuf,
                    MPI_Offset position, void *extra)
{
    ++*(int *)extra;
    return xor_ints(filebuf, (int *)userbuf + position, t, count);
}

static int read_fn(void *userbuf, MPI_Datatype t, int count, void *filebuf,
                   MPI_Offset position, void *extra)
{
    ++*(int *)extra;
    return xor_ints((int *)userbuf + position, filebuf, t, count);
}

static int failing_fn(void *userbuf, MPI_Datatype t, int count, void *filebuf,
                      MPI_Offset position, void *extra)
{
    (void)userbuf, (void)t, (void)count, (void)filebuf, (void)position, (void)extra;
    return MPI_ERR_OTHER;
}

static int extent_fn(MPI_Datatype t, MPI_Aint *extent, void *extra)
{
    MPI_Aint lb;
    (void)extra;
    return MPI_Type_get_extent(t, &lb, extent);
}

static int value(int rank, int i)
{
    return rank * 100003 + i * 7 - 50;
}

/* Ints r, r + size, ...: every rank owns every size-th int of the file. */
static MPI_Datatype strided(MPI_Datatype base)
{
    MPI_Datatype v, t;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(base, &lb, &ext);
    MPI_Type_vector(1, 1, mtest_size, base, &v);
    MPI_Type_create_resized(v, 0, ext * mtest_size, &t);
    MPI_Type_free(&v);
    MPI_Type_commit(&t);
    return t;
}

static void free_if_derived(MPI_Datatype t)
{
    int ni, na, nt, combiner;
    MPI_Type_get_envelope(t, &ni, &na, &nt, &combiner);
    if (combiner != MPI_COMBINER_NAMED)
        MPI_Type_free(&t);
}

/* The file's bytes, as rank 0 reads them through a native byte view. */
static void raw(MPI_File fh, unsigned char *out, int n)
{
    MPI_Status st;
    CALL(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    if (mtest_rank == 0)
        CALL(MPI_File_read_at(fh, 0, out, n, MPI_BYTE, &st));
}

/* Writes this rank's ints through a strided view in `rep`, reads them back, and returns the
 * whole file's bytes at rank 0 in `file`. */
static void round_trip(MPI_File fh, const char *rep, unsigned char *file, const char *label)
{
    int mine[N], back[N];
    MPI_Status st;
    MPI_Datatype view = strided(MPI_INT);
    for (int i = 0; i < N; i++)
        mine[i] = value(mtest_rank, i);
    CALL(MPI_File_set_view(fh, mtest_rank * sizeof(int), MPI_INT, view, rep, MPI_INFO_NULL));
    char got[MPI_MAX_DATAREP_STRING];
    MPI_Offset disp;
    MPI_Datatype e, f;
    CALL(MPI_File_get_view(fh, &disp, &e, &f, got));
    CHECK(strcmp(got, rep) == 0, "%s: MPI_File_get_view names \"%s\"", label, got);
    free_if_derived(e);
    free_if_derived(f);
    CALL(MPI_File_write_all(fh, mine, N, MPI_INT, &st));
    CALL(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    memset(back, 0, sizeof back);
    CALL(MPI_File_read_all(fh, back, N, MPI_INT, &st));
    int count;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == N, "%s: read_all count %d", label, count);
    for (int i = 0, bad = 0; i < N && bad < 3; i++)
        if (back[i] != mine[i] && ++bad)
            FAIL("%s: int %d read back as %d, expected %d", label, i, back[i], mine[i]);
    /* Independent access too: the last int through the representation. */
    int last = 0;
    CALL(MPI_File_read_at(fh, N - 1, &last, 1, MPI_INT, &st));
    CHECK(last == mine[N - 1], "%s: read_at gave %d, expected %d", label, last, mine[N - 1]);
    MPI_Type_free(&view);
    raw(fh, file, N * mtest_size * (int)sizeof(int));
}

static void check_external32(MPI_File fh)
{
    int n = N * mtest_size * sizeof(int);
    unsigned char *file = mtest_malloc(n);
    round_trip(fh, "external32", file, "external32");
    for (int k = 0, bad = 0; mtest_rank == 0 && k < N * mtest_size && bad < 3; k++) {
        unsigned v = (unsigned)value(k % mtest_size, k / mtest_size);
        unsigned char *b = file + 4 * k;
        unsigned big = (unsigned)b[0] << 24 | (unsigned)b[1] << 16 | (unsigned)b[2] << 8 | b[3];
        if (big != v && ++bad)
            FAIL("external32: file int %d is %#x, expected big-endian %#x", k, big, v);
    }
    free(file);
    /* Doubles: big-endian IEEE in the file. */
    double d = 1.5 + mtest_rank, d2 = 0;
    MPI_Status st;
    MPI_Datatype view = strided(MPI_DOUBLE);
    CALL(MPI_File_set_view(fh, mtest_rank * sizeof(double), MPI_DOUBLE, view, "external32",
                           MPI_INFO_NULL));
    CALL(MPI_File_write_at_all(fh, 0, &d, 1, MPI_DOUBLE, &st));
    CALL(MPI_File_read_at_all(fh, 0, &d2, 1, MPI_DOUBLE, &st));
    CHECK(d2 == d, "external32: double read back as %g, expected %g", d2, d);
    MPI_Type_free(&view);
    unsigned char b[8];
    raw(fh, b, 8);
    CHECK(mtest_rank != 0 || (b[0] == 0x3f && b[1] == 0xf8 && b[7] == 0),
          "external32: 1.5 is stored as %02x %02x .. %02x, expected 3f f8 .. 00", b[0], b[1], b[7]);
    /* Extents in the file: long is 4 bytes in external32. */
    MPI_Aint ext;
    CALL(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
    CALL(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
    CHECK(ext == 4, "external32: file extent of MPI_LONG %ld, expected 4", (long)ext);
    CALL(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
    CHECK(ext == 8, "external32: file extent of MPI_DOUBLE %ld, expected 8", (long)ext);
    CALL(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CALL(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
    CHECK(ext == sizeof(long), "native: file extent of MPI_LONG %ld", (long)ext);
}

static void check_registered(MPI_File fh)
{
    int n = N * mtest_size * sizeof(int);
    unsigned char *file = mtest_malloc(n);
    round_trip(fh, "reflex-test-xor", file, "registered");
    CHECK(conversions >= 3, "registered: conversion functions called %d times", conversions);
    for (int k = 0, bad = 0; mtest_rank == 0 && k < N * mtest_size && bad < 3; k++) {
        int v = value(k % mtest_size, k / mtest_size), stored;
        unsigned char x[4];
        for (int j = 0; j < 4; j++)
            x[j] = file[4 * k + j] ^ KEY;
        memcpy(&stored, x, 4);
        if (stored != v && ++bad)
            FAIL("registered: file int %d decodes to %d, expected %d", k, stored, v);
    }
    MPI_Aint ext;
    CALL(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK(ext == sizeof(int), "registered: file extent of MPI_INT %ld", (long)ext);
    free(file);
}

static void check_errors(MPI_File fh)
{
    int dummy;
    /* Register_datarep names no object: its errors go to the initial error handler. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK_CLASS(MPI_Register_datarep("reflex-test-xor", read_fn, write_fn, extent_fn, &dummy),
                 MPI_ERR_DUP_DATAREP);
    CHECK_CLASS(MPI_Register_datarep("external32", read_fn, write_fn, extent_fn, &dummy),
                 MPI_ERR_DUP_DATAREP);
    CHECK_CLASS(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-representation",
                                   MPI_INFO_NULL),
                 MPI_ERR_UNSUPPORTED_DATAREP);
    /* A conversion function that fails fails the access. */
    CALL(MPI_Register_datarep("reflex-test-failing", MPI_CONVERSION_FN_NULL, failing_fn,
                              extent_fn, NULL));
    CALL(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "reflex-test-failing", MPI_INFO_NULL));
    int v = 1;
    MPI_Status st;
    int rc = MPI_File_write_at(fh, mtest_rank, &v, 1, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS, "a failing write conversion returned MPI_SUCCESS");
    CALL(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
}

int main(int argc, char **argv)
{
    char dir[256], path[320];
    MTest_Init(&argc, &argv);
    CALL(MPI_Register_datarep("reflex-test-xor", read_fn, write_fn, extent_fn, &conversions));
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "datarep");
    MPI_File fh;
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                       &fh));
    check_external32(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    check_registered(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    check_errors(fh);
    CALL(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0)
        CALL(MPI_File_delete(path, MPI_INFO_NULL));
    mtest_rmtmpdir(MPI_COMM_WORLD, dir);
    return MTest_Finalize();
}
