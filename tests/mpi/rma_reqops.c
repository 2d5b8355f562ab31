/*
 * rma_reqops.c - request-based RMA operations (MPI-3.1 11.3.5, 11.3.4 for Rget_accumulate)
 * inside passive-target epochs, on a window of the flavor named by MTEST_RMA_FLAVOR (rma_win.h):
 *  - MPI_Rput + MPI_Wait (local completion: the buffer is reusable) + MPI_Win_flush (remote);
 *  - MPI_Rget + MPI_Wait: the data is there when Wait returns, no flush needed;
 *  - MPI_Raccumulate (SUM) completed by an MPI_Test loop, from every rank to rank 0;
 *  - MPI_Rget_accumulate (SUM) into a per-origin slot: the result buffer holds the old value
 *    after MPI_Wait, and one with MPI_NO_OP reads after the flush;
 *  - 100 outstanding MPI_Rget completed by MPI_Waitall, then MPI_Testall on completed requests,
 *    and Waitany over Rputs under an exclusive lock.
 * Runs with any number of ranks.
 */
#include "rma_win.h"

#define M 1000
#define NR 100

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int p = mtest_size, me = mtest_rank, right = (me + 1) % p, left = (me + p - 1) % p;
    RmaWin w;
    rma_win_make(&w, (MPI_Aint)(M + 1 + p + NR) * sizeof(int), sizeof(int), MPI_COMM_WORLD);
    int *mem = w.base, *buf = mtest_malloc(M * sizeof(int)), *in = mtest_malloc(M * sizeof(int));
    MPI_Request rq, rqs[NR];
    MPI_Status st;
    enum { BLOCK = 0, SUM = M, SLOTS = M + 1 };
    const int ELEMS = M + 1 + p; /* NR ints after it: the Waitany region */

    CALL(MPI_Win_lock_all(0, w.win));
    /* Rput, Wait, reuse the buffer, flush */
    for (int i = 0; i < M; i++)
        buf[i] = 3 * me + i;
    CALL(MPI_Rput(buf, M, MPI_INT, right, rma_disp(&w, right, BLOCK), M, MPI_INT, w.win, &rq));
    CALL(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL, "Rput request not freed by Wait");
    for (int i = 0; i < M; i++)
        buf[i] = -1;
    CALL(MPI_Win_flush(right, w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Rget of what I put into my right neighbour */
    CALL(MPI_Rget(in, M, MPI_INT, right, rma_disp(&w, right, BLOCK), M, MPI_INT, w.win, &rq));
    CALL(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < M; i++)
        if (in[i] != 3 * me + i) {
            FAIL("Rget after Wait: element %d is %d, want %d", i, in[i], 3 * me + i);
            break;
        }

    /* Raccumulate to rank 0, completed by Test */
    int v = me + 1, flag = 0;
    CALL(MPI_Raccumulate(&v, 1, MPI_INT, 0, rma_disp(&w, 0, SUM), 1, MPI_INT, MPI_SUM, w.win, &rq));
    while (!flag)
        CALL(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
    CALL(MPI_Win_flush(0, w.win));

    /* Rget_accumulate into my slot at my right neighbour (starts at 0) */
    int add = 10 + me, old = -1, now = -1, dummy = 0;
    CALL(MPI_Rget_accumulate(&add, 1, MPI_INT, &old, 1, MPI_INT, right, rma_disp(&w, right, SLOTS + me), 1, MPI_INT,
                             MPI_SUM, w.win, &rq));
    CALL(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(old == 0, "Rget_accumulate result %d, want 0", old);
    CALL(MPI_Win_flush(right, w.win));
    CALL(MPI_Rget_accumulate(&dummy, 1, MPI_INT, &now, 1, MPI_INT, right, rma_disp(&w, right, SLOTS + me), 1,
                             MPI_INT, MPI_NO_OP, w.win, &rq));
    CALL(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(now == 10 + me, "Rget_accumulate NO_OP read %d, want %d", now, 10 + me);
    MPI_Barrier(MPI_COMM_WORLD);

    /* many outstanding Rgets from everyone */
    for (int k = 0; k < NR; k++) {
        int t = (me + k) % p;
        CALL(MPI_Rget(&in[k], 1, MPI_INT, t, rma_disp(&w, t, BLOCK + k), 1, MPI_INT, w.win, &rqs[k]));
    }
    CALL(MPI_Waitall(NR, rqs, MPI_STATUSES_IGNORE));
    for (int k = 0; k < NR; k++) {
        int t = (me + k) % p, o = (t + p - 1) % p;
        if (in[k] != 3 * o + k) {
            FAIL("Waitall of Rgets: %d from %d is %d, want %d", k, t, in[k], 3 * o + k);
            break;
        }
    }
    CALL(MPI_Testall(NR, rqs, &flag, MPI_STATUSES_IGNORE));
    CHECK(flag, "Testall of null requests");
    CALL(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    rma_own_begin(&w);
    if (me == 0)
        CHECK_EQ(mem[SUM], p * (p + 1) / 2);
    CHECK(mem[SLOTS + left] == 10 + left, "slot of %d holds %d", left, mem[SLOTS + left]);
    rma_own_end(&w);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Rputs under an exclusive lock, completed one by one by Waitany */
    for (int k = 0; k < NR; k++)
        buf[k] = 5000 + 10 * me + k;
    for (int t = 0; t < p; t++) {
        int done = 0;
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win));
        for (int k = 0; k < NR; k++)
            CALL(MPI_Rput(&buf[k], 1, MPI_INT, t, rma_disp(&w, t, ELEMS + k), 1, MPI_INT, w.win, &rqs[k]));
        for (int k = 0; k < NR; k++) {
            int idx = -1;
            CALL(MPI_Waitany(NR, rqs, &idx, MPI_STATUS_IGNORE));
            done += idx >= 0 && idx < NR;
        }
        CALL(MPI_Win_unlock(t, w.win));
        CHECK_EQ(done, NR);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rma_own_begin(&w);
    for (int k = 0; k < NR; k++) /* the last writer is unknown; it is some rank's value */
        if ((mem[ELEMS + k] - 5000 - k) % 10 != 0 || mem[ELEMS + k] < 5000 + k || mem[ELEMS + k] >= 5000 + 10 * p + k) {
            FAIL("Waitany region element %d is %d", k, mem[ELEMS + k]);
            break;
        }
    rma_own_end(&w);
    MPI_Barrier(MPI_COMM_WORLD);
    rma_win_free(&w);
    free(buf);
    free(in);
    return MTest_Finalize();
}
