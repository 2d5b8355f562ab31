/*
 * rma_direct.c - one-sided atomics, locks and flushes on a shared-memory window
 * (MPI_Win_allocate_shared), which an implementation may do with hardware atomics on the target's
 * memory, checked against the same operations on an MPI_Win_create window (request messages);
 * all targets are rank 0, windows have disp_unit 1:
 *  - every predefined op on int, long, float and double (MAX MIN SUM PROD REPLACE NO_OP, and the
 *    logical and bitwise ops on the integers): Accumulate of 3 elements, Get_accumulate of 3 and
 *    Fetch_and_op, each rank in turn, at aligned elements and at elements 2 bytes off alignment;
 *    the fetched values and the target's bytes must be the same on both windows;
 *  - an op undefined on the type (BAND on double, LOR on float): MPI_ERR_OP on both, target kept;
 *  - contention in one Lock_all epoch, K times per rank: Fetch_and_op(SUM, 1) on a long (the
 *    fetched values of all ranks are exactly 0 .. pK-1), Accumulate(SUM) on a double and an int,
 *    a counter incremented by a Compare_and_swap loop; and K exclusive-lock epochs doing a Get +
 *    Put increment (lock and unlock exclude each other): exact totals;
 *  - Compare_and_swap on int and long: an unequal compare keeps the target, an equal one swaps;
 *  - error classes: RMA_SYNC outside any epoch (each atomic, flush, flush_all, unlock,
 *    unlock_all) and for a second lock; RMA_RANGE past the end and before the start; RANK,
 *    LOCKTYPE, ASSERT; OP for NO_OP in Accumulate and a user op; the window works afterwards.
 * Runs with any number of ranks.
 */
#include "mtest.h"

#define K 300
#define WSIZE 256
enum { ACC = 8, ACC_OFF = 34, GACC = 64, GACC_OFF = 98, FOP = 128, FOP_OFF = 138 }; /* slots */
enum { C_FOP = 160, C_DBL = 168, C_INT = 176, C_CASI = 180, C_CASL = 184, C_CNT = 192, C_LOCK = 200 };

static MPI_Win win[2]; /* 0: shared (the direct path), 1: created (the general path) */
static char *base[2];

typedef struct {
    MPI_Datatype t;
    const char *name;
    int size, integer;
} type_t;

static const type_t types[] = {
    {MPI_INT, "int", sizeof(int), 1},
    {MPI_LONG, "long", sizeof(long), 1},
    {MPI_FLOAT, "float", sizeof(float), 0},
    {MPI_DOUBLE, "double", sizeof(double), 0},
};
static const MPI_Op ops[] = {MPI_MAX, MPI_MIN,  MPI_SUM, MPI_PROD, MPI_REPLACE, MPI_NO_OP,
                             MPI_LAND, MPI_BAND, MPI_LOR, MPI_BOR,  MPI_LXOR,    MPI_BXOR};
static const char *op_names[] = {"MAX", "MIN", "SUM", "PROD", "REPLACE", "NO_OP",
                                 "LAND", "BAND", "LOR", "BOR", "LXOR", "BXOR"};
#define FLOAT_OPS 6 /* the first six apply to floating point */

/* Element i of type t at p set to v. */
static void put_value(void *p, const type_t *t, int i, double v)
{
    if (t->t == MPI_INT)
        ((int *)p)[i] = (int)v;
    else if (t->t == MPI_LONG)
        ((long *)p)[i] = (long)v;
    else if (t->t == MPI_FLOAT)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

/* Rank 0 stores n elements of t starting with `first` at offset `at` of its memory in window w. */
static void init_slot(int w, int at, const type_t *t, int n, double first)
{
    char tmp[64];
    for (int i = 0; i < n; i++)
        put_value(tmp, t, i, first + 3 * i - (i == 2 ? 7.5 : 0));
    CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win[w]));
    memcpy(base[w] + at, tmp, (size_t)n * t->size);
    CALL(MPI_Win_unlock(0, win[w]));
}

/* Rank r's operations of `op` on t into window w; fetched values into `got`. */
static void operate(int w, const type_t *t, MPI_Op op, char *got)
{
    char in[64];
    double v = mtest_rank + 2.5;
    for (int i = 0; i < 3; i++)
        put_value(in, t, i, i == 1 ? -v : v + i);
    CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win[w]));
    for (int off = 0; off < 2; off++) {
        MPI_Aint acc = off ? ACC_OFF : ACC, gacc = off ? GACC_OFF : GACC, fop = off ? FOP_OFF : FOP;
        char *g = got + off * 4 * sizeof(double);
        if (op != MPI_NO_OP)
            CALL(MPI_Accumulate(in, 3, t->t, 0, acc, 3, t->t, op, win[w]));
        CALL(MPI_Get_accumulate(in, 3, t->t, g, 3, t->t, 0, gacc, 3, t->t, op, win[w]));
        CALL(MPI_Win_flush(0, win[w]));
        CALL(MPI_Fetch_and_op(in + t->size, g + 3 * t->size, t->t, 0, fop, op, win[w]));
    }
    CALL(MPI_Win_unlock(0, win[w]));
}

static void every_op(void)
{
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const type_t *t = &types[ti];
        int nops = t->integer ? (int)(sizeof ops / sizeof ops[0]) : FLOAT_OPS;
        for (int oi = 0; oi < nops; oi++) {
            if (mtest_rank == 0)
                for (int w = 0; w < 2; w++) {
                    int at[] = {ACC, ACC_OFF, GACC, GACC_OFF, FOP, FOP_OFF};
                    for (int s = 0; s < 6; s++)
                        init_slot(w, at[s], t, s < 4 ? 3 : 1, 1.5 + s);
                }
            for (int r = 0; r < mtest_size; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (r != mtest_rank)
                    continue;
                char got[2][8 * sizeof(double)];
                memset(got, 0, sizeof got);
                for (int w = 0; w < 2; w++)
                    operate(w, t, ops[oi], got[w]);
                if (memcmp(got[0], got[1], sizeof got[0]))
                    FAIL("%s on %s: fetched values differ between the shared and the created window",
                         op_names[oi], t->name);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (mtest_rank == 0) {
                char mem[2][WSIZE];
                for (int w = 0; w < 2; w++) {
                    CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win[w]));
                    memcpy(mem[w], base[w], C_FOP);
                    CALL(MPI_Win_unlock(0, win[w]));
                }
                for (int b = 0; b < C_FOP; b++)
                    if (mem[0][b] != mem[1][b]) {
                        FAIL("%s on %s: target byte %d is %d on the shared window, %d on the created",
                             op_names[oi], t->name, b, mem[0][b], mem[1][b]);
                        break;
                    }
            }
        }
    }
}

/* Ops that are not defined on the type fail with MPI_ERR_OP on both windows, changing nothing. */
static void undefined_ops(void)
{
    double d = 2.0, r = 0;
    float f = 2.0f, fr = 0;
    for (int w = 0; w < 2; w++) {
        if (mtest_rank == 0)
            init_slot(w, ACC, &types[3], 1, 6.0);
        MPI_Barrier(MPI_COMM_WORLD);
        CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win[w]));
        CHECK_CLASS(MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, ACC, 1, MPI_DOUBLE, MPI_BAND, win[w]), MPI_ERR_OP);
        CHECK_CLASS(MPI_Fetch_and_op(&f, &fr, MPI_FLOAT, 0, FOP, MPI_LOR, win[w]), MPI_ERR_OP);
        CALL(MPI_Fetch_and_op(&d, &r, MPI_DOUBLE, 0, ACC, MPI_NO_OP, win[w]));
        CALL(MPI_Win_unlock(0, win[w]));
        CHECK(r == 6.0, "window %d: the target is %g after a refused op, want 6", w, r);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Every rank K times on rank 0's counters in one Lock_all epoch of the shared window. */
static void contention(void)
{
    long one = 1, *fetched = malloc(K * sizeof(long)), *all = NULL;
    double dz = 1.0;
    int iz = 3;
    if (mtest_rank == 0) {
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win[0]));
        memset(base[0] + C_FOP, 0, WSIZE - C_FOP);
        CALL(MPI_Win_unlock(0, win[0]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_Win_lock_all(0, win[0]));
    for (int k = 0; k < K; k++) {
        CALL(MPI_Fetch_and_op(&one, &fetched[k], MPI_LONG, 0, C_FOP, MPI_SUM, win[0]));
        CALL(MPI_Accumulate(&dz, 1, MPI_DOUBLE, 0, C_DBL, 1, MPI_DOUBLE, MPI_SUM, win[0]));
        CALL(MPI_Accumulate(&iz, 1, MPI_INT, 0, C_INT, 1, MPI_INT, MPI_SUM, win[0]));
        long seen = 0, res = -1;
        do { /* increment by compare-and-swap */
            long want = seen + 1;
            CALL(MPI_Compare_and_swap(&want, &seen, &res, MPI_LONG, 0, C_CNT, win[0]));
            CALL(MPI_Win_flush(0, win[0]));
            if (res == seen)
                break;
            seen = res;
        } while (1);
    }
    CALL(MPI_Win_unlock_all(win[0]));
    for (int k = 0; k < K; k++) { /* a non-atomic increment under the exclusive lock */
        long v = 0;
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win[0]));
        CALL(MPI_Get(&v, 1, MPI_LONG, 0, C_LOCK, 1, MPI_LONG, win[0]));
        CALL(MPI_Win_flush(0, win[0]));
        v++;
        CALL(MPI_Put(&v, 1, MPI_LONG, 0, C_LOCK, 1, MPI_LONG, win[0]));
        CALL(MPI_Win_unlock(0, win[0]));
    }
    if (mtest_rank == 0)
        all = malloc((size_t)K * mtest_size * sizeof(long));
    MPI_Gather(fetched, K, MPI_LONG, all, K, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0) {
        long n = (long)K * mtest_size;
        char *seen = calloc((size_t)n, 1);
        for (long i = 0; i < n; i++) {
            if (all[i] < 0 || all[i] >= n || seen[all[i]]++)
                FAIL("Fetch_and_op returned %ld twice or out of 0..%ld", all[i], n - 1);
        }
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win[0]));
        CHECK_EQ(*(long *)(base[0] + C_FOP), n);
        CHECK(*(double *)(base[0] + C_DBL) == (double)n, "double sum %g, want %ld", *(double *)(base[0] + C_DBL), n);
        CHECK_EQ(*(int *)(base[0] + C_INT), 3 * n);
        CHECK_EQ(*(long *)(base[0] + C_CNT), n);
        CHECK_EQ(*(long *)(base[0] + C_LOCK), n);
        CALL(MPI_Win_unlock(0, win[0]));
        free(seen);
        free(all);
    }
    free(fetched);
}

static void compare_and_swap(void)
{
    if (mtest_rank == 0) {
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win[0]));
        *(int *)(base[0] + C_CASI) = 5;
        *(long *)(base[0] + C_CASL) = 5;
        CALL(MPI_Win_unlock(0, win[0]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == mtest_size - 1) {
        int ni = 9, ci = 4, ri = 0;
        long nl = 9, cl = 4, rl = 0;
        CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win[0]));
        CALL(MPI_Compare_and_swap(&ni, &ci, &ri, MPI_INT, 0, C_CASI, win[0]));
        CALL(MPI_Compare_and_swap(&nl, &cl, &rl, MPI_LONG, 0, C_CASL, win[0]));
        CHECK_EQ(ri, 5);
        CHECK_EQ(rl, 5);
        ci = 5, cl = 5;
        CALL(MPI_Compare_and_swap(&ni, &ci, &ri, MPI_INT, 0, C_CASI, win[0]));
        CALL(MPI_Compare_and_swap(&nl, &cl, &rl, MPI_LONG, 0, C_CASL, win[0]));
        CHECK_EQ(ri, 5);
        CHECK_EQ(rl, 5);
        CALL(MPI_Fetch_and_op(NULL, &ri, MPI_INT, 0, C_CASI, MPI_NO_OP, win[0]));
        CALL(MPI_Fetch_and_op(NULL, &rl, MPI_LONG, 0, C_CASL, MPI_NO_OP, win[0]));
        CHECK_EQ(ri, 9);
        CHECK_EQ(rl, 9);
        CALL(MPI_Win_unlock(0, win[0]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)in, (void)inout, (void)len, (void)t;
}

static void error_classes(void)
{
    MPI_Win s = win[0];
    long v = 1, r = 0, c = 0, two[2] = {1, 2}, rtwo[2];
    MPI_Op user;
    MPI_Op_create(user_sum, 1, &user);
    /* outside any epoch */
    CHECK_CLASS(MPI_Accumulate(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Get_accumulate(&v, 1, MPI_LONG, &r, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, s),
                MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Fetch_and_op(&v, &r, MPI_LONG, 0, 0, MPI_SUM, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Compare_and_swap(&v, &c, &r, MPI_LONG, 0, 0, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_flush(0, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_flush_all(s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_unlock(0, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_unlock_all(s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_lock(999, 0, 0, s), MPI_ERR_LOCKTYPE);
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, 0, 1, s), MPI_ERR_ASSERT);
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, mtest_size, 0, s), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Win_lock_all(1, s), MPI_ERR_ASSERT);
    /* inside a lock epoch */
    CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, s));
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_lock_all(0, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Accumulate(two, 2, MPI_LONG, 0, WSIZE - 8, 2, MPI_LONG, MPI_SUM, s), MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Get_accumulate(two, 2, MPI_LONG, rtwo, 2, MPI_LONG, 0, WSIZE - 8, 2, MPI_LONG, MPI_SUM, s),
                MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Fetch_and_op(&v, &r, MPI_LONG, 0, WSIZE, MPI_SUM, s), MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Fetch_and_op(&v, &r, MPI_LONG, 0, -8, MPI_SUM, s), MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Compare_and_swap(&v, &c, &r, MPI_LONG, 0, WSIZE - 4, s), MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Accumulate(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_NO_OP, s), MPI_ERR_OP);
    CHECK_CLASS(MPI_Accumulate(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, user, s), MPI_ERR_OP);
    CHECK_CLASS(MPI_Fetch_and_op(&v, &r, MPI_LONG, 0, 0, user, s), MPI_ERR_OP);
    CHECK_CLASS(MPI_Fetch_and_op(&v, &r, MPI_LONG, mtest_size, 0, MPI_SUM, s), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Compare_and_swap(&v, &c, &r, MPI_DOUBLE, 0, 0, s), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Win_unlock(mtest_size > 1 ? 1 : mtest_size, s), mtest_size > 1 ? MPI_ERR_RMA_SYNC : MPI_ERR_RANK);
    CALL(MPI_Fetch_and_op(&v, &r, MPI_LONG, 0, C_FOP, MPI_SUM, s)); /* still works */
    CALL(MPI_Win_flush_all(s));
    CALL(MPI_Win_unlock(0, s));
    MPI_Op_free(&user);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    static double created[WSIZE / sizeof(double)];
    MPI_Win_allocate_shared(WSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base[0], &win[0]);
    base[1] = (char *)created;
    MPI_Win_create(created, WSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win[1]);
    for (int w = 0; w < 2; w++) {
        MPI_Win_set_errhandler(win[w], MPI_ERRORS_RETURN);
        if (mtest_rank == 0) { /* MPI_Win_allocate_shared need not zero its memory */
            CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win[w]));
            memset(base[w], 0, WSIZE);
            CALL(MPI_Win_unlock(0, win[w]));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    every_op();
    undefined_ops();
    contention();
    compare_and_swap();
    error_classes();
    for (int w = 0; w < 2; w++)
        MPI_Win_free(&win[w]);
    return MTest_Finalize();
}
