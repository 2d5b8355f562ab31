/*
 * dt_large_args.c - the MPI-4 large-count (_c) datatype constructors with arguments beyond
 * INT_MAX (MPI-4.0 sections 5.1.2-5.1.6), and MPI_Pack_c/MPI_Unpack_c/MPI_Pack_size_c with
 * positions and sizes beyond it.
 *
 * Block lengths, strides, displacements and array sizes are MPI_Count in the _c forms; an
 * implementation must not narrow them to int. Types too large to touch (a vector of 3e9-byte
 * blocks, a 4e9-element darray) are checked through their size, extent and true extent. Types
 * whose displacement is beyond INT_MAX but whose data is small move real data: the displacement
 * is the address of a buffer (heap addresses on 64-bit Linux are far above INT_MAX) and the
 * communication buffer is MPI_BOTTOM, or the buffer argument is the address minus a large start
 * offset. Each such type is sent to this rank itself and received as plain bytes, which then
 * come back through a type at another buffer. Runs with any number of ranks (each works alone).
 */
#include <stdint.h>
#include <limits.h>
#include "mtest.h"

#define BIG ((MPI_Count)3000000000LL)  /* beyond INT_MAX */
#define FAR ((MPI_Count)4000000000LL)  /* beyond INT_MAX */
#define N 64

/* Checks the size, extent and true extent of t. */
static void shape(const char *what, MPI_Datatype t, MPI_Count size, MPI_Count lb, MPI_Count extent,
                  MPI_Count true_lb, MPI_Count true_extent)
{
    MPI_Count s = -1, l = -1, e = -1, tl = -1, te = -1;
    CALL(MPI_Type_size_c(t, &s));
    CALL(MPI_Type_get_extent_c(t, &l, &e));
    CALL(MPI_Type_get_true_extent_c(t, &tl, &te));
    CHECK(s == size && l == lb && e == extent && tl == true_lb && te == true_extent,
          "%s: size %lld lb %lld extent %lld true lb %lld true extent %lld, expected %lld %lld "
          "%lld %lld %lld",
          what, (long long)s, (long long)l, (long long)e, (long long)tl, (long long)te,
          (long long)size, (long long)lb, (long long)extent, (long long)true_lb,
          (long long)true_extent);
}

/* The large counts t was made from, as MPI_Type_get_contents_c returns them. */
static void counts(const char *what, MPI_Datatype t, int n, const MPI_Count *want)
{
    MPI_Count ni, na, nc, nd, got[8];
    int combiner, ints[8];
    MPI_Datatype types[2];
    CALL(MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner));
    CHECK(nc == n && na == 0, "%s: %lld large counts, %lld addresses", what, (long long)nc,
          (long long)na);
    if (nc != n || na != 0 || ni > 8 || nd > 2)
        return;
    CALL(MPI_Type_get_contents_c(t, ni, 0, nc, nd, ints, NULL, got, types));
    for (int i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s: large count %d is %lld, not %lld", what, i,
              (long long)got[i], (long long)want[i]);
    for (MPI_Count i = 0; i < nd; i++) {
        int c;
        MPI_Count a, b, d, e;
        CALL(MPI_Type_get_envelope_c(types[i], &a, &b, &d, &e, &c));
        if (c != MPI_COMBINER_NAMED)
            CALL(MPI_Type_free(&types[i]));
    }
}

typedef int (*maker)(MPI_Count at, MPI_Datatype *t);

static int indexed(MPI_Count at, MPI_Datatype *t)
{
    MPI_Count len = N;
    return MPI_Type_indexed_c(1, &len, &at, MPI_BYTE, t);
}

static int hindexed(MPI_Count at, MPI_Datatype *t)
{
    MPI_Count len = N;
    return MPI_Type_create_hindexed_c(1, &len, &at, MPI_BYTE, t);
}

static int indexed_block(MPI_Count at, MPI_Datatype *t)
{
    return MPI_Type_create_indexed_block_c(1, N, &at, MPI_BYTE, t);
}

static int hindexed_block(MPI_Count at, MPI_Datatype *t)
{
    return MPI_Type_create_hindexed_block_c(1, N, &at, MPI_BYTE, t);
}

static int structure(MPI_Count at, MPI_Datatype *t)
{
    MPI_Count len = N;
    MPI_Datatype byte = MPI_BYTE;
    return MPI_Type_create_struct_c(1, &len, &at, &byte, t);
}

/* Sends N bytes at src from MPI_BOTTOM through a type made by make at src's address, to this
 * rank, as plain bytes; then receives them through a type at dst's address. */
static void bottom_trip(const char *what, maker make, const unsigned char *src, unsigned char *dst)
{
    MPI_Aint s, d;
    MPI_Get_address(src, &s);
    MPI_Get_address(dst, &d);
    MPI_Datatype ts, td;
    CALL(make(s, &ts));
    CALL(make(d, &td));
    CALL(MPI_Type_commit(&ts));
    CALL(MPI_Type_commit(&td));
    unsigned char got[N];
    memset(got, 0, N);
    int me = mtest_rank;
    CALL(MPI_Sendrecv(MPI_BOTTOM, 1, ts, me, 1, got, N, MPI_BYTE, me, 1, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE));
    CHECK(memcmp(got, src, N) == 0, "%s: the bytes sent through the type differ", what);
    memset(dst, 0, N);
    CALL(MPI_Sendrecv(got, N, MPI_BYTE, me, 2, MPI_BOTTOM, 1, td, me, 2, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE));
    CHECK(memcmp(dst, src, N) == 0, "%s: the bytes received through the type differ", what);
    CALL(MPI_Type_free(&ts));
    CALL(MPI_Type_free(&td));
}

/* Types too large to use: their shapes and recorded arguments. */
static void large_shapes(void)
{
    MPI_Datatype t;
    CALL(MPI_Type_vector_c(2, BIG, FAR, MPI_BYTE, &t));
    shape("vector_c", t, 2 * BIG, 0, FAR + BIG, 0, FAR + BIG);
    counts("vector_c", t, 3, (MPI_Count[]){2, BIG, FAR});
    CALL(MPI_Type_free(&t));

    CALL(MPI_Type_create_hvector_c(2, BIG, FAR, MPI_BYTE, &t));
    shape("hvector_c", t, 2 * BIG, 0, FAR + BIG, 0, FAR + BIG);
    CALL(MPI_Type_free(&t));

    MPI_Count lens[2] = {BIG, 1}, disps[2] = {0, FAR};
    CALL(MPI_Type_indexed_c(2, lens, disps, MPI_SHORT, &t));
    shape("indexed_c", t, 2 * (BIG + 1), 0, 2 * (FAR + 1), 0, 2 * (FAR + 1));
    counts("indexed_c", t, 5, (MPI_Count[]){2, BIG, 1, 0, FAR});
    CALL(MPI_Type_free(&t));

    CALL(MPI_Type_create_hindexed_c(2, lens, disps, MPI_BYTE, &t));
    shape("hindexed_c", t, BIG + 1, 0, FAR + 1, 0, FAR + 1);
    CALL(MPI_Type_free(&t));

    CALL(MPI_Type_create_indexed_block_c(2, BIG, disps, MPI_BYTE, &t));
    shape("indexed_block_c", t, 2 * BIG, 0, FAR + BIG, 0, FAR + BIG);
    counts("indexed_block_c", t, 4, (MPI_Count[]){2, BIG, 0, FAR});
    CALL(MPI_Type_free(&t));

    MPI_Datatype types[2] = {MPI_BYTE, MPI_BYTE};
    CALL(MPI_Type_create_struct_c(2, lens, disps, types, &t));
    shape("struct_c", t, BIG + 1, 0, FAR + 1, 0, FAR + 1);
    CALL(MPI_Type_free(&t));

    MPI_Count gsize = FAR;
    int distrib = MPI_DISTRIBUTE_BLOCK, darg = MPI_DISTRIBUTE_DFLT_DARG, psize = 1;
    CALL(MPI_Type_create_darray_c(1, 0, 1, &gsize, &distrib, &darg, &psize, MPI_ORDER_C, MPI_BYTE,
                                  &t));
    shape("darray_c", t, FAR, 0, FAR, 0, FAR);
    CALL(MPI_Type_free(&t));

    CALL(MPI_Type_create_resized_c(MPI_INT, -BIG, FAR, &t));
    shape("resized_c", t, 4, -BIG, FAR, 0, 4);
    CALL(MPI_Type_free(&t));

    /* A negative block length is an error, however it is spelled. */
    MPI_Count bad[1] = {-1}, zero[1] = {0};
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Type_indexed_c(1, bad, zero, MPI_BYTE, &t);
    CHECK(rc != MPI_SUCCESS, "indexed_c with block length -1 succeeded");
}

/* Types whose displacements (or sizes and starts) pass INT_MAX but whose data is N bytes. */
static void far_data(void)
{
    unsigned char *src = malloc(N), *dst = malloc(N), got[N];
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(7 * i + mtest_rank);
    bottom_trip("indexed_c", indexed, src, dst);
    bottom_trip("hindexed_c", hindexed, src, dst);
    bottom_trip("indexed_block_c", indexed_block, src, dst);
    bottom_trip("hindexed_block_c", hindexed_block, src, dst);
    bottom_trip("struct_c", structure, src, dst);

    /* A subarray of an array of BIG bytes: the last N, the buffer argument BIG - N bytes before
     * the data. */
    MPI_Datatype t;
    MPI_Count size = BIG, sub = N, start = BIG - N;
    CALL(MPI_Type_create_subarray_c(1, &size, &sub, &start, MPI_ORDER_C, MPI_BYTE, &t));
    shape("subarray_c", t, N, 0, BIG, BIG - N, N);
    counts("subarray_c", t, 3, (MPI_Count[]){BIG, N, BIG - N});
    void *base = (void *)((uintptr_t)src - (uintptr_t)(BIG - N));
    memset(got, 0, N);
    CALL(MPI_Type_commit(&t));
    CALL(MPI_Sendrecv(base, 1, t, mtest_rank, 4, got, N, MPI_BYTE, mtest_rank, 4, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE));
    CHECK(memcmp(got, src, N) == 0, "subarray_c: the bytes differ");
    CALL(MPI_Type_free(&t));
    free(src);
    free(dst);
}

/* Packing at a position beyond INT_MAX: the output buffer argument lies FAR bytes before the
 * real buffer, whose bytes are [FAR, FAR + N) of it. */
static void far_positions(void)
{
    unsigned char data[N], out[N], again[N];
    for (int i = 0; i < N; i++)
        data[i] = (unsigned char)(3 * i + 1);
    void *fake = (void *)((uintptr_t)out - (uintptr_t)FAR);
    MPI_Count pos = FAR;
    CALL(MPI_Pack_c(data, N, MPI_BYTE, fake, FAR + N, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, FAR + N);
    CHECK(memcmp(out, data, N) == 0, "MPI_Pack_c at position %lld: the bytes differ",
          (long long)FAR);
    pos = FAR;
    memset(again, 0, N);
    CALL(MPI_Unpack_c(fake, FAR + N, &pos, again, N, MPI_BYTE, MPI_COMM_WORLD));
    CHECK_EQ(pos, FAR + N);
    CHECK(memcmp(again, data, N) == 0, "MPI_Unpack_c at position %lld: the bytes differ",
          (long long)FAR);
    MPI_Datatype t;
    MPI_Count bytes = 0;
    CALL(MPI_Type_contiguous_c(BIG, MPI_BYTE, &t));
    CALL(MPI_Type_commit(&t));
    CALL(MPI_Pack_size_c(1, t, MPI_COMM_WORLD, &bytes));
    CHECK(bytes >= BIG, "MPI_Pack_size_c of %lld bytes: %lld", (long long)BIG, (long long)bytes);
    CALL(MPI_Type_free(&t));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    large_shapes();
    far_data();
    far_positions();
    return MTest_Finalize();
}
