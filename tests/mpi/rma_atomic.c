/*
 * rma_atomic.c - atomicity of accumulate operations under contention (MPI-3.1 11.7.1: accumulate
 * operations with the same predefined type on the same location are element-wise atomic), and
 * MPI_Compare_and_swap (11.3.4) on every C integer type and MPI_BYTE, on a window of the flavor
 * named by MTEST_RMA_FLAVOR (rma_win.h); all the targets are rank 0:
 *  - Compare_and_swap semantics: a failing compare leaves the target and returns it, a matching
 *    one swaps (int, long, long long, unsigned, short, signed char, unsigned char, MPI_BYTE);
 *  - a counter: every rank K times MPI_Fetch_and_op(SUM, 1) in its own exclusive lock epoch, then
 *    K times in one shared Lock_all epoch with a flush each; the fetched values of all ranks
 *    together are exactly 0 .. pK-1 (each once) and the counter ends at pK;
 *  - every rank Accumulates (SUM, 1) into the same 512 ints, K times, under Lock_all;
 *  - a mutex made of Compare_and_swap (0 -> rank+1, spin with flush) guarding a non-atomic
 *    Get + Put increment of another location, released by Accumulate(REPLACE, 0): exact count;
 *  - Accumulate, Fetch_and_op and Get_accumulate (all SUM on MPI_LONG) mixed on one location.
 * Runs with any number of ranks.
 */
#include "rma_win.h"

#define A 512
enum { CNT1 = 0, CNT2 = 1, LOCKV = 2, GUARDED = 3, MIX = 4, CAS = 8, ARR = 16 }; /* in longs */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

#define CAS_CASE(T, MT)                                                                                             \
    do {                                                                                                            \
        T cur = (T)5, want5 = (T)4, nv = (T)9, res = (T)0, *slot = (T *)((char *)w->base + CAS * sizeof(long));    \
        MPI_Aint d = rma_disp(w, 0, CAS * sizeof(long) / sizeof(int));                                            \
        if (mtest_rank == 0) {                                                                                      \
            rma_own_begin(w);                                                                                       \
            *slot = cur;                                                                                            \
            rma_own_end(w);                                                                                         \
        }                                                                                                           \
        MPI_Barrier(MPI_COMM_WORLD);                                                                                \
        if (mtest_rank == mtest_size - 1) {                                                                         \
            CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));                                                   \
            CALL(MPI_Compare_and_swap(&nv, &want5, &res, MT, 0, d, w->win));                                        \
            CALL(MPI_Win_flush(0, w->win));                                                                         \
            CHECK(res == cur, #MT ": failing compare fetched %lld", (long long)res);                                \
            want5 = cur;                                                                                            \
            CALL(MPI_Compare_and_swap(&nv, &want5, &res, MT, 0, d, w->win));                                        \
            CALL(MPI_Win_flush(0, w->win));                                                                         \
            CHECK(res == cur, #MT ": matching compare fetched %lld", (long long)res);                                \
            CALL(MPI_Compare_and_swap(&nv, &want5, &res, MT, 0, d, w->win));                                        \
            CALL(MPI_Win_unlock(0, w->win));                                                                        \
            CHECK(res == nv, #MT ": after the swap fetched %lld", (long long)res);                                  \
        }                                                                                                           \
        MPI_Barrier(MPI_COMM_WORLD);                                                                                \
    } while (0)

static void cas_types(RmaWin *w)
{
    CAS_CASE(int, MPI_INT);
    CAS_CASE(long, MPI_LONG);
    CAS_CASE(long long, MPI_LONG_LONG);
    CAS_CASE(unsigned, MPI_UNSIGNED);
    CAS_CASE(short, MPI_SHORT);
    CAS_CASE(signed char, MPI_SIGNED_CHAR);
    CAS_CASE(unsigned char, MPI_UNSIGNED_CHAR);
    CAS_CASE(unsigned char, MPI_BYTE);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int p = mtest_size, me = mtest_rank, k_rounds = p > 4 ? 30 : 100, mutex_rounds = p > 4 ? 5 : 20;
    RmaWin w;
    rma_win_make(&w, (ARR + A) * sizeof(long), sizeof(int), MPI_COMM_WORLD);
    long *mem = w.base, one = 1, *fetched = mtest_malloc(2 * k_rounds * sizeof(long));
#define D(idx) rma_disp(&w, 0, (idx) * (MPI_Aint)(sizeof(long) / sizeof(int)))
    cas_types(&w);

    /* the counters */
    for (int k = 0; k < k_rounds; k++) {
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
        CALL(MPI_Fetch_and_op(&one, &fetched[k], MPI_LONG, 0, D(CNT1), MPI_SUM, w.win));
        CALL(MPI_Win_unlock(0, w.win));
    }
    CALL(MPI_Win_lock_all(0, w.win));
    for (int k = 0; k < k_rounds; k++) {
        CALL(MPI_Fetch_and_op(&one, &fetched[k_rounds + k], MPI_LONG, 0, D(CNT2), MPI_SUM, w.win));
        CALL(MPI_Win_flush(0, w.win));
    }
    /* the array */
    long *ones = mtest_malloc(A * sizeof(long));
    for (int i = 0; i < A; i++)
        ones[i] = 1;
    for (int k = 0; k < k_rounds / 4; k++) {
        CALL(MPI_Accumulate(ones, A, MPI_LONG, 0, D(ARR), A, MPI_LONG, MPI_SUM, w.win));
        if (k % 8 == 7)
            CALL(MPI_Win_flush(0, w.win));
    }
    /* the mutex */
    for (int k = 0; k < mutex_rounds; k++) {
        long mine = me + 1, zero = 0, got = -1, v = -1;
        do {
            CALL(MPI_Compare_and_swap(&mine, &zero, &got, MPI_LONG, 0, D(LOCKV), w.win));
            CALL(MPI_Win_flush(0, w.win));
        } while (got != 0);
        CALL(MPI_Get(&v, 1, MPI_LONG, 0, D(GUARDED), 1, MPI_LONG, w.win));
        CALL(MPI_Win_flush(0, w.win));
        v++;
        CALL(MPI_Put(&v, 1, MPI_LONG, 0, D(GUARDED), 1, MPI_LONG, w.win));
        CALL(MPI_Win_flush(0, w.win));
        CALL(MPI_Accumulate(&zero, 1, MPI_LONG, 0, D(LOCKV), 1, MPI_LONG, MPI_REPLACE, w.win));
        CALL(MPI_Win_flush(0, w.win));
    }
    /* the mix */
    for (int k = 0; k < k_rounds / 2; k++) {
        long f = -1;
        CALL(MPI_Accumulate(&one, 1, MPI_LONG, 0, D(MIX), 1, MPI_LONG, MPI_SUM, w.win));
        CALL(MPI_Fetch_and_op(&one, &f, MPI_LONG, 0, D(MIX), MPI_SUM, w.win));
        CALL(MPI_Get_accumulate(&one, 1, MPI_LONG, &f, 1, MPI_LONG, 0, D(MIX), 1, MPI_LONG, MPI_SUM, w.win));
        CALL(MPI_Win_flush(0, w.win));
    }
    CALL(MPI_Win_unlock_all(w.win));

    /* every fetched value exactly once */
    long *all = me == 0 ? mtest_malloc((size_t)2 * k_rounds * p * sizeof(long)) : NULL;
    for (int c = 0; c < 2; c++) {
        MPI_Gather(&fetched[c * k_rounds], k_rounds, MPI_LONG, all, k_rounds, MPI_LONG, 0, MPI_COMM_WORLD);
        if (me == 0) {
            qsort(all, (size_t)k_rounds * p, sizeof(long), cmp_long);
            for (long i = 0; i < (long)k_rounds * p; i++)
                if (all[i] != i) {
                    FAIL("counter %d (%s): sorted fetched value %ld is %ld", c + 1, c ? "lock_all" : "exclusive", i, all[i]);
                    break;
                }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        rma_own_begin(&w);
        CHECK_EQ(mem[CNT1], (long)k_rounds * p);
        CHECK_EQ(mem[CNT2], (long)k_rounds * p);
        for (int i = 0; i < A; i++)
            if (mem[ARR + i] != (long)(k_rounds / 4) * p) {
                FAIL("array element %d is %ld, want %ld", i, mem[ARR + i], (long)(k_rounds / 4) * p);
                break;
            }
        CHECK_EQ(mem[LOCKV], 0);
        CHECK_EQ(mem[GUARDED], (long)mutex_rounds * p);
        CHECK_EQ(mem[MIX], 3L * (k_rounds / 2) * p);
        rma_own_end(&w);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rma_win_free(&w);
    free(all);
    free(ones);
    free(fetched);
    return MTest_Finalize();
}
