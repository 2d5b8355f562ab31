/*
 * rma_order.c - ordering of accumulate operations from one origin to one target location
 * (MPI-3.1 11.7.2: with the default accumulate_ordering rar,raw,war,waw they are applied in
 * program order), on a window of the flavor named by MTEST_RMA_FLAVOR (rma_win.h). Each rank
 * works on its own slot at its right neighbour, with no flush between the operations:
 *  - Accumulate(REPLACE, k) then Get_accumulate(NO_OP) reads k, for k = 1..50 (read after write);
 *  - Fetch_and_op(SUM, 1) repeated: the fetched values are 0, 1, 2, ... in program order;
 *  - Get_accumulate(NO_OP) then Accumulate(REPLACE): the read sees the value before the write;
 *  - 100 REPLACEs leave the last value;
 *  - the same with Raccumulate / Rget_accumulate requests completed together by Waitall.
 * In an exclusive lock, a Lock_all and a fence epoch. Runs with any number of ranks.
 */
#include "rma_win.h"

#define K 50

static void sequence(RmaWin *w, int mode, int reqs)
{
    int p = mtest_size, me = mtest_rank, right = (me + 1) % p;
    MPI_Aint slot = rma_disp(w, right, 4 * me), slot2 = rma_disp(w, right, 4 * me + 1);
    long r[K], f[K], before = -1, v, zero = 0, one = 1, vals[K];
    MPI_Request rq[2 * K];
    for (int k = 0; k < K; k++)
        r[k] = f[k] = -1;
    if (mode == 0)
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w->win));
    else if (mode == 1)
        CALL(MPI_Win_lock_all(0, w->win));
    else
        CALL(MPI_Win_fence(0, w->win));
    for (int k = 0; k < K; k++) {
        vals[k] = 1000 * me + k + 1;
        if (reqs) {
            CALL(MPI_Raccumulate(&vals[k], 1, MPI_LONG, right, slot, 1, MPI_LONG, MPI_REPLACE, w->win, &rq[2 * k]));
            CALL(MPI_Rget_accumulate(&zero, 1, MPI_LONG, &r[k], 1, MPI_LONG, right, slot, 1, MPI_LONG, MPI_NO_OP,
                                     w->win, &rq[2 * k + 1]));
        } else {
            CALL(MPI_Accumulate(&vals[k], 1, MPI_LONG, right, slot, 1, MPI_LONG, MPI_REPLACE, w->win));
            CALL(MPI_Get_accumulate(&zero, 1, MPI_LONG, &r[k], 1, MPI_LONG, right, slot, 1, MPI_LONG, MPI_NO_OP, w->win));
        }
    }
    if (reqs)
        CALL(MPI_Waitall(2 * K, rq, MPI_STATUSES_IGNORE));
    for (int k = 0; k < K; k++)
        CALL(MPI_Fetch_and_op(&one, &f[k], MPI_LONG, right, slot2, MPI_SUM, w->win));
    CALL(MPI_Get_accumulate(&zero, 1, MPI_LONG, &before, 1, MPI_LONG, right, slot, 1, MPI_LONG, MPI_NO_OP, w->win));
    for (int k = 0; k < 2 * K; k++) {
        v = 5000 + k;
        CALL(MPI_Accumulate(&v, 1, MPI_LONG, right, slot, 1, MPI_LONG, MPI_REPLACE, w->win));
    }
    if (mode == 0)
        CALL(MPI_Win_unlock(right, w->win));
    else if (mode == 1)
        CALL(MPI_Win_unlock_all(w->win));
    else
        CALL(MPI_Win_fence(0, w->win));
    static const char *names[3] = {"lock", "lock_all", "fence"};
    for (int k = 0; k < K; k++) {
        if (r[k] != 1000 * me + k + 1) {
            FAIL("%s%s: Get_accumulate after REPLACE %d read %ld", names[mode], reqs ? " (requests)" : "", k + 1, r[k]);
            break;
        }
        if (f[k] != k) {
            FAIL("%s%s: Fetch_and_op %d fetched %ld", names[mode], reqs ? " (requests)" : "", k, f[k]);
            break;
        }
    }
    CHECK(before == 1000 * me + K, "%s: read before the replaces: %ld", names[mode], before);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (me + p - 1) % p;
    long *mem = w->base;
    if (mode != 2)
        rma_own_begin(w);
    CHECK(mem[4 * left] == 5000 + 2 * K - 1, "%s: the last REPLACE left %ld", names[mode], mem[4 * left]);
    CHECK(mem[4 * left + 1] == K, "%s: the counter is %ld", names[mode], mem[4 * left + 1]);
    mem[4 * left + 1] = 0;
    if (mode != 2)
        rma_own_end(w);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    RmaWin w;
    rma_win_make(&w, 4 * mtest_size * sizeof(long), sizeof(long), MPI_COMM_WORLD);
    for (int reqs = 0; reqs < 2; reqs++) {
        sequence(&w, 0, reqs);
        sequence(&w, 1, reqs);
        if (!reqs) /* request-based operations belong to passive-target epochs only */
            sequence(&w, 2, reqs);
        if (!reqs)
            CALL(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    }
    rma_win_free(&w);
    return MTest_Finalize();
}
