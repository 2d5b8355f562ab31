/*
 * coll_fast.c - blocking Barrier, Bcast, Reduce, Allreduce, Allgather and Alltoall of
 * predefined types: on Reflex these take a fast path straight to the shared-memory board once a
 * communicator has one, and fall back to the general path for anything else. The test mixes
 * both on the same communicators and checks every result against a serial reference:
 *  - element counts across the size of a board slot (32 KiB), so consecutive calls alternate
 *    between the board and point-to-point schedules;
 *  - operations x types (MAX, MIN, SUM, PROD on int, double, float, long, short, unsigned
 *    char; BAND, BOR, BXOR, LAND, LOR on int; MAXLOC on MPI_2INT), roots moving round;
 *  - MPI_IN_PLACE in Allreduce, at the root of Reduce, in Allgather and Alltoall; NULL receive
 *    buffers at the non-roots of Reduce;
 *  - the same data through a derived type (general path) between fast calls;
 *  - MPI_COMM_WORLD, a duplicate and a split communicator;
 *  - errors once the board is set up: an operation undefined on the type (MPI_ERR_OP on every
 *    rank) and a Bcast whose root sends more than the others receive (MPI_ERR_TRUNCATE where
 *    the root's data land, at least at one rank), after which the communicator still works.
 * Runs with any number of ranks.
 */
#include "mtest.h"

static int P, me;

/* The value rank r contributes at index i in round t (small, so products stay exact). */
static int val(int r, int i, int t)
{
    return (r * 7 + i * 3 + t) % 5 + 1;
}

#define REFERENCE(T, OP, n, t, out)                                                                  \
    do {                                                                                             \
        for (int i_ = 0; i_ < (n); i_++) {                                                           \
            T acc_ = (T)val(0, i_, t);                                                               \
            for (int r_ = 1; r_ < P; r_++) {                                                         \
                T x_ = (T)val(r_, i_, t);                                                            \
                acc_ = OP(acc_, x_);                                                                 \
            }                                                                                        \
            (out)[i_] = acc_;                                                                        \
        }                                                                                            \
    } while (0)
#define MAXF(a, b) ((a) > (b) ? (a) : (b))
#define MINF(a, b) ((a) < (b) ? (a) : (b))
#define SUMF(a, b) ((a) + (b))
#define PRODF(a, b) ((a) * (b))
#define BANDF(a, b) ((a) & (b))
#define BORF(a, b) ((a) | (b))
#define BXORF(a, b) ((a) ^ (b))
#define LANDF(a, b) ((a) && (b))
#define LORF(a, b) ((a) || (b))

/* Reduce (root >= 0) or Allreduce (root < 0) of n elements of T with op, in place or not. */
#define REDUCE_CASE(T, DT, OP, OPF, n, t, root, inplace, comm)                                       \
    do {                                                                                             \
        T *in_ = mtest_malloc(sizeof(T) * (n) + 1), *out_ = mtest_malloc(sizeof(T) * (n) + 1);       \
        T *want_ = mtest_malloc(sizeof(T) * (n) + 1);                                                \
        int reads_ = (root) < 0 || (root) == me;                                                     \
        for (int i_ = 0; i_ < (n); i_++)                                                             \
            in_[i_] = (T)val(me, i_, t), out_[i_] = (inplace) ? in_[i_] : (T)-1;                     \
        const void *send_ = (inplace) && reads_ ? MPI_IN_PLACE : (const void *)in_;                  \
        void *recv_ = reads_ ? (void *)out_ : NULL;                                                  \
        if ((root) < 0)                                                                              \
            CALL(MPI_Allreduce(send_, recv_, n, DT, OP, comm));                                      \
        else                                                                                         \
            CALL(MPI_Reduce(send_, recv_, n, DT, OP, root, comm));                                   \
        REFERENCE(T, OPF, n, t, want_);                                                              \
        for (int i_ = 0; reads_ && i_ < (n); i_++)                                                   \
            CHECK(out_[i_] == want_[i_], "%s %s n=%d root=%d inplace=%d: element %d", #OP, #DT,      \
                  (int)(n), root, inplace, i_);                                                      \
        free(in_);                                                                                   \
        free(out_);                                                                                  \
        free(want_);                                                                                 \
    } while (0)

static void reductions(MPI_Comm comm, int t)
{
    static const int counts[] = {1, 3, 1000, 4000, 4100, 9000};
    for (int k = 0; k < (int)(sizeof counts / sizeof counts[0]); k++) {
        int n = counts[k], root = (t + k) % P, inplace = k % 2;
        REDUCE_CASE(double, MPI_DOUBLE, MPI_SUM, SUMF, n, t, -1, inplace, comm);
        REDUCE_CASE(int, MPI_INT, MPI_MAX, MAXF, n, t, root, inplace, comm);
        REDUCE_CASE(float, MPI_FLOAT, MPI_MIN, MINF, n, t, -1, !inplace, comm);
        REDUCE_CASE(long, MPI_LONG, MPI_PROD, PRODF, n, t, root, !inplace, comm);
    }
    REDUCE_CASE(short, MPI_SHORT, MPI_SUM, SUMF, 17, t, -1, 0, comm);
    REDUCE_CASE(unsigned char, MPI_UNSIGNED_CHAR, MPI_MAX, MAXF, 33, t, 0, 0, comm);
    REDUCE_CASE(int, MPI_INT, MPI_BAND, BANDF, 5, t, -1, 0, comm);
    REDUCE_CASE(int, MPI_INT, MPI_BOR, BORF, 5, t, P - 1, 1, comm);
    REDUCE_CASE(int, MPI_INT, MPI_BXOR, BXORF, 5, t, -1, 1, comm);
    REDUCE_CASE(int, MPI_INT, MPI_LAND, LANDF, 5, t, 0, 0, comm);
    REDUCE_CASE(int, MPI_INT, MPI_LOR, LORF, 5, t, -1, 0, comm);

    struct { int v, i; } loc = {val(me, 0, t), me}, best = {-1, -1};
    CALL(MPI_Allreduce(&loc, &best, 1, MPI_2INT, MPI_MAXLOC, comm));
    int bv = -1, bi = -1;
    for (int r = 0; r < P; r++)
        if (val(r, 0, t) > bv)
            bv = val(r, 0, t), bi = r;
    CHECK(best.v == bv && best.i == bi, "MAXLOC gave (%d, %d), want (%d, %d)", best.v, best.i, bv, bi);
}

/* Bcast of n ints from root, through MPI_INT (fast) and through a derived type (general). */
static void broadcasts(MPI_Comm comm, MPI_Datatype derived_int, int t)
{
    static const int counts[] = {1, 2, 8000, 8300, 64};
    for (int k = 0; k < (int)(sizeof counts / sizeof counts[0]); k++) {
        int n = counts[k], root = (t + k) % P;
        int *b = mtest_malloc(sizeof(int) * n + 1);
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < n; i++)
                b[i] = me == root ? val(root, i, t + pass) : -1;
            CALL(MPI_Bcast(b, n, pass ? derived_int : MPI_INT, root, comm));
            for (int i = 0; i < n; i++)
                CHECK(b[i] == val(root, i, t + pass), "bcast n=%d root=%d pass=%d: element %d", n,
                      root, pass, i);
        }
        free(b);
    }
}

/* Allgather and Alltoall of blocks of n doubles, in place on odd rounds. */
static void exchanges(MPI_Comm comm, int t)
{
    static const int blocks[] = {1, 5, 4000 / 8, 5000};
    int size;
    MPI_Comm_size(comm, &size);
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (int k = 0; k < (int)(sizeof blocks / sizeof blocks[0]); k++) {
        int n = blocks[k], inplace = (t + k) % 2;
        double *mine = mtest_malloc(sizeof(double) * n + 1);
        double *all = mtest_malloc(sizeof(double) * n * size), *back = mtest_malloc(sizeof(double) * n * size);
        for (int i = 0; i < n; i++)
            mine[i] = rank * 1000 + i + t, all[rank * n + i] = mine[i];
        CALL(MPI_Allgather(inplace ? MPI_IN_PLACE : mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, comm));
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                CHECK(all[r * n + i] == r * 1000 + i + t, "allgather n=%d inplace=%d: block %d", n, inplace, r);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                all[r * n + i] = rank * 100000 + r * 100 + i % 100 + t, back[r * n + i] = -1;
        double *into = inplace ? all : back;
        CALL(MPI_Alltoall(inplace ? MPI_IN_PLACE : all, n, MPI_DOUBLE, into, n, MPI_DOUBLE, comm));
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                CHECK(into[r * n + i] == r * 100000 + rank * 100 + i % 100 + t, "alltoall n=%d inplace=%d: block %d",
                      n, inplace, r);
        free(mine);
        free(all);
        free(back);
    }
}

/* Errors after the board is set up; every rank stays in step. */
static void errors(MPI_Comm comm)
{
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    CALL(MPI_Barrier(comm));
    double d = 1, out = 0;
    CHECK_CLASS(MPI_Allreduce(&d, &out, 1, MPI_DOUBLE, MPI_BAND, comm), MPI_ERR_OP);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int b[4] = {7, 7, 7, 7};
    int rc = MPI_Bcast(b, rank == 0 ? 4 : 2, MPI_INT, 0, comm);
    /* Where the root's 4 ints land the block is truncated: every rank on the board, the root's
     * children in a tree (between nodes); ranks fed by a non-root get 2 ints and may succeed,
     * or hear that their sender failed (MPI_ERR_OTHER). */
    int cls = MPI_SUCCESS, truncated, any = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (rank == 0)
        CHECK(rc == MPI_SUCCESS, "the root of the mismatched bcast failed: %s", mtest_errstr(rc));
    else
        CHECK(cls == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_OTHER,
              "mismatched bcast: class %d", cls);
    truncated = cls == MPI_ERR_TRUNCATE;
    CALL(MPI_Allreduce(&truncated, &any, 1, MPI_INT, MPI_MAX, comm));
    CHECK(any == (size > 1), "%s rank reported MPI_ERR_TRUNCATE for the mismatched bcast",
          any ? "a" : "no");
    CALL(MPI_Barrier(comm));
    int v = rank == 0 ? 42 : 0;
    CALL(MPI_Bcast(&v, 1, MPI_INT, 0, comm));
    CHECK(v == 42, "bcast after the errors gave %d", v);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    P = mtest_size;
    me = mtest_rank;
    MPI_Datatype derived_int;
    CALL(MPI_Type_contiguous(1, MPI_INT, &derived_int));
    CALL(MPI_Type_commit(&derived_int));
    MPI_Comm dup, half;
    CALL(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CALL(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half));
    for (int t = 0; t < 4; t++) {
        CALL(MPI_Barrier(MPI_COMM_WORLD));
        reductions(MPI_COMM_WORLD, t);
        broadcasts(dup, derived_int, t);
        exchanges(half, t);
        exchanges(MPI_COMM_WORLD, t);
        broadcasts(MPI_COMM_WORLD, derived_int, t);
    }
    errors(dup);
    CALL(MPI_Comm_free(&half));
    CALL(MPI_Comm_free(&dup));
    CALL(MPI_Type_free(&derived_int));
    return MTest_Finalize();
}
