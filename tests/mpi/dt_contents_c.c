/*
 * dt_contents_c.c - decoding the types made by the MPI-4 large-count (_c) constructors
 * (MPI-4.0 section 5.1.13): MPI_Type_get_envelope_c and MPI_Type_get_contents_c return every
 * MPI_Count argument among the large counts and the int ones among the integers, in the
 * standard's order; the MPI-3 MPI_Type_get_envelope and MPI_Type_get_contents refuse such a type;
 * types made by the MPI-3 constructors report no large counts; too small
 * max_large_counts is an error. Each type is also committed and used (a send to self), so the
 * recorded arguments describe a working type. Runs with any number of ranks.
 */
#include "mtest.h"

#define MAXV 32

struct want {
    const char *name;
    int combiner, ni, nc, nd;
    int ints[MAXV];
    MPI_Count counts[MAXV];
};

/* Checks the envelope and contents of t against w (the datatypes must all be MPI_INT). */
static void decode(MPI_Datatype t, const struct want *w)
{
    MPI_Count ni = -1, na = -1, nc = -1, nd = -1;
    int combiner = -1;
    CALL(MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner));
    CHECK(combiner == w->combiner && ni == w->ni && na == 0 && nc == w->nc && nd == w->nd,
          "%s: combiner %d, %lld ints, %lld addresses, %lld counts, %lld types", w->name, combiner,
          (long long)ni, (long long)na, (long long)nc, (long long)nd);
    if (ni != w->ni || na != 0 || nc != w->nc || nd != w->nd)
        return;
    int ints[MAXV];
    MPI_Aint addrs[1];
    MPI_Count counts[MAXV];
    MPI_Datatype types[MAXV];
    CALL(MPI_Type_get_contents_c(t, ni, na, nc, nd, ints, addrs, counts, types));
    for (int i = 0; i < w->ni; i++)
        CHECK(ints[i] == w->ints[i], "%s: integer %d is %d, not %d", w->name, i, ints[i], w->ints[i]);
    for (int i = 0; i < w->nc; i++)
        CHECK(counts[i] == w->counts[i], "%s: large count %d is %lld, not %lld", w->name, i,
              (long long)counts[i], (long long)w->counts[i]);
    for (int i = 0; i < w->nd; i++)
        CHECK(types[i] == MPI_INT, "%s: datatype %d is not MPI_INT", w->name, i);
    if (nc > 0) {
        int rc = MPI_Type_get_contents_c(t, ni, na, nc - 1, nd, ints, addrs, counts, types);
        CHECK(rc != MPI_SUCCESS, "%s: max_large_counts %lld too small was accepted", w->name,
              (long long)nc - 1);
    }
}

/* The MPI-3 decoding calls refuse a type with large counts (Reflex: MPI_ERR_TYPE; MPICH 4.0:
 * MPI_ERR_OTHER). */
static void refuse_mpi3(MPI_Datatype t, const char *name)
{
    int ni, na, nd, combiner, ints[MAXV];
    MPI_Aint addrs[MAXV];
    MPI_Datatype types[MAXV];
    int rc = MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
    CHECK(rc != MPI_SUCCESS, "%s: MPI_Type_get_envelope accepted a type with large counts", name);
    rc = MPI_Type_get_contents(t, MAXV, MAXV, MAXV, ints, addrs, types);
    CHECK(rc != MPI_SUCCESS, "%s: MPI_Type_get_contents accepted a type with large counts", name);
}

/* Sends one element of t to this rank and checks the `n` ints at the byte offsets `at`. */
static void use(MPI_Datatype t, const char *name, int n, const MPI_Aint *at)
{
    int src[256], dst[256];
    for (int i = 0; i < 256; i++)
        src[i] = 1000 + i, dst[i] = -1;
    CALL(MPI_Type_commit(&t));
    CALL(MPI_Sendrecv(src, 1, t, mtest_rank, 3, dst, 1, t, mtest_rank, 3, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++) {
        int k = (int)(at[i] / (MPI_Aint)sizeof(int));
        CHECK(dst[k] == src[k], "%s: int at %d not moved", name, k);
    }
}

static void check(MPI_Datatype t, const struct want *w, int n, const MPI_Aint *at)
{
    decode(t, w);
    refuse_mpi3(t, w->name);
    use(t, w->name, n, at);
    CALL(MPI_Type_free(&t));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype t;
    const int I = (int)sizeof(int);

    CALL(MPI_Type_contiguous_c(5, MPI_INT, &t));
    struct want contig = {"contiguous_c", MPI_COMBINER_CONTIGUOUS, 0, 1, 1, {0}, {5}};
    check(t, &contig, 2, (MPI_Aint[]){0, 4 * I});

    CALL(MPI_Type_vector_c(3, 2, 4, MPI_INT, &t));
    struct want vector = {"vector_c", MPI_COMBINER_VECTOR, 0, 3, 1, {0}, {3, 2, 4}};
    check(t, &vector, 3, (MPI_Aint[]){0, 5 * I, 9 * I});

    CALL(MPI_Type_create_hvector_c(2, 3, 40, MPI_INT, &t));
    struct want hvector = {"hvector_c", MPI_COMBINER_HVECTOR, 0, 3, 1, {0}, {2, 3, 40}};
    check(t, &hvector, 2, (MPI_Aint[]){8, 48});

    MPI_Count lens[3] = {1, 3, 2}, disps[3] = {7, 0, 20};
    CALL(MPI_Type_indexed_c(3, lens, disps, MPI_INT, &t));
    struct want indexed = {"indexed_c", MPI_COMBINER_INDEXED, 0, 7, 1, {0}, {3, 1, 3, 2, 7, 0, 20}};
    check(t, &indexed, 3, (MPI_Aint[]){7 * I, 2 * I, 21 * I});

    MPI_Count bdisps[3] = {28, 0, 80};
    CALL(MPI_Type_create_hindexed_c(3, lens, bdisps, MPI_INT, &t));
    struct want hindexed = {"hindexed_c", MPI_COMBINER_HINDEXED, 0, 7, 1, {0}, {3, 1, 3, 2, 28, 0, 80}};
    check(t, &hindexed, 2, (MPI_Aint[]){28, 84});

    CALL(MPI_Type_create_indexed_block_c(3, 2, disps, MPI_INT, &t));
    struct want iblock = {"indexed_block_c", MPI_COMBINER_INDEXED_BLOCK, 0, 5, 1, {0}, {3, 2, 7, 0, 20}};
    check(t, &iblock, 3, (MPI_Aint[]){8 * I, I, 21 * I});

    CALL(MPI_Type_create_hindexed_block_c(3, 2, bdisps, MPI_INT, &t));
    struct want hblock = {"hindexed_block_c", MPI_COMBINER_HINDEXED_BLOCK, 0, 5, 1, {0}, {3, 2, 28, 0, 80}};
    check(t, &hblock, 2, (MPI_Aint[]){32, 84});

    MPI_Datatype ints3[3] = {MPI_INT, MPI_INT, MPI_INT};
    CALL(MPI_Type_create_struct_c(3, lens, bdisps, ints3, &t));
    struct want strct = {"struct_c", MPI_COMBINER_STRUCT, 0, 7, 3, {0}, {3, 1, 3, 2, 28, 0, 80}};
    check(t, &strct, 2, (MPI_Aint[]){0, 84});

    MPI_Count sizes[2] = {8, 10}, subsizes[2] = {3, 4}, starts[2] = {1, 2};
    CALL(MPI_Type_create_subarray_c(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t));
    struct want sub = {"subarray_c", MPI_COMBINER_SUBARRAY, 2, 6, 1, {2, MPI_ORDER_C},
                       {8, 10, 3, 4, 1, 2}};
    check(t, &sub, 2, (MPI_Aint[]){12 * I, 35 * I});

    MPI_Count gsizes[2] = {4, 6};
    int distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, psizes[2] = {2, 1};
    CALL(MPI_Type_create_darray_c(2, 1, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t));
    struct want darray = {"darray_c", MPI_COMBINER_DARRAY, 10, 2, 1,
                          {2, 1, 2, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC,
                           MPI_DISTRIBUTE_DFLT_DARG, 2, 2, 1, MPI_ORDER_C},
                          {4, 6}};
    check(t, &darray, 2, (MPI_Aint[]){12 * I, 23 * I});

    CALL(MPI_Type_create_resized_c(MPI_INT, -8, 24, &t));
    struct want resized = {"resized_c", MPI_COMBINER_RESIZED, 0, 2, 1, {0}, {-8, 24}};
    check(t, &resized, 1, (MPI_Aint[]){0});

    /* A type made by an MPI-3 constructor has no large counts, and the MPI-3 calls decode it. */
    CALL(MPI_Type_vector(3, 2, 4, MPI_INT, &t));
    MPI_Count ni, na, nc, nd;
    int combiner, nint, naddr, ntype;
    CALL(MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner));
    CHECK(combiner == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nc == 0 && nd == 1,
          "MPI-3 vector: %lld ints, %lld counts", (long long)ni, (long long)nc);
    CALL(MPI_Type_get_envelope(t, &nint, &naddr, &ntype, &combiner));
    CHECK(nint == 3 && naddr == 0 && ntype == 1, "MPI-3 vector through MPI_Type_get_envelope");
    CALL(MPI_Type_free(&t));

    int version = 0, subversion = -1;
    CALL(MPI_Get_version(&version, &subversion));
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION,
          "MPI_Get_version says %d.%d, mpi.h %d.%d", version, subversion, MPI_VERSION, MPI_SUBVERSION);
    return MTest_Finalize();
}
