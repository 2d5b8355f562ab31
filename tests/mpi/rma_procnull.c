/*
 * rma_procnull.c - MPI_PROC_NULL targets and zero-count operations (MPI-3.1 11.3: "MPI_PROC_NULL
 * is a valid target rank in all MPI RMA communication calls", with no effect; the epoch must
 * still be closed), on a window of the flavor named by MTEST_RMA_FLAVOR (rma_win.h). In a fence
 * epoch, a Lock_all epoch and a PSCW epoch with empty groups: Put, Get, Accumulate,
 * Get_accumulate, Fetch_and_op and Compare_and_swap to MPI_PROC_NULL leave the origin and result
 * buffers untouched; Rput/Rget/Raccumulate/Rget_accumulate to MPI_PROC_NULL complete. Put, Get,
 * Accumulate and Get_accumulate with count 0 to a real target (fence and Lock_all epochs) change
 * nothing. Runs with any
 * number of ranks.
 */
#include "rma_win.h"

static void ops(RmaWin *w, int passive, int real_target)
{
    int right = (mtest_rank + 1) % mtest_size, v[4] = {1, 2, 3, 4}, r[4] = {-1, -1, -1, -1}, c = 0;
    const int nul = MPI_PROC_NULL;
    CALL(MPI_Put(v, 4, MPI_INT, nul, 0, 4, MPI_INT, w->win));
    CALL(MPI_Get(r, 4, MPI_INT, nul, 0, 4, MPI_INT, w->win));
    CALL(MPI_Accumulate(v, 4, MPI_INT, nul, 0, 4, MPI_INT, MPI_SUM, w->win));
    CALL(MPI_Get_accumulate(v, 4, MPI_INT, r, 4, MPI_INT, nul, 0, 4, MPI_INT, MPI_SUM, w->win));
    CALL(MPI_Fetch_and_op(v, r, MPI_INT, nul, 0, MPI_SUM, w->win));
    CALL(MPI_Compare_and_swap(v, &c, r, MPI_INT, nul, 0, w->win));
    /* count 0 to a real target (only where the epoch includes it) */
    MPI_Aint d = rma_disp(w, right, 0);
    if (real_target) {
        CALL(MPI_Put(v, 0, MPI_INT, right, d, 0, MPI_INT, w->win));
        CALL(MPI_Get(r, 0, MPI_INT, right, d, 0, MPI_INT, w->win));
        CALL(MPI_Accumulate(v, 0, MPI_INT, right, d, 0, MPI_INT, MPI_SUM, w->win));
        CALL(MPI_Get_accumulate(v, 0, MPI_INT, r, 0, MPI_INT, right, d, 0, MPI_INT, MPI_SUM, w->win));
    }
    if (passive) {
        MPI_Request rq[4];
        CALL(MPI_Rput(v, 4, MPI_INT, nul, 0, 4, MPI_INT, w->win, &rq[0]));
        CALL(MPI_Rget(r, 4, MPI_INT, nul, 0, 4, MPI_INT, w->win, &rq[1]));
        CALL(MPI_Raccumulate(v, 4, MPI_INT, nul, 0, 4, MPI_INT, MPI_SUM, w->win, &rq[2]));
        CALL(MPI_Rget_accumulate(v, 4, MPI_INT, r, 4, MPI_INT, nul, 0, 4, MPI_INT, MPI_SUM, w->win, &rq[3]));
        CALL(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
        CALL(MPI_Win_flush_all(w->win));
    }
    for (int i = 0; i < 4; i++)
        CHECK(r[i] == -1 && v[i] == i + 1, "%s: buffers changed: r[%d] = %d, v[%d] = %d", passive ? "passive" : "active",
              i, r[i], i, v[i]);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    RmaWin w;
    rma_win_make(&w, 4 * sizeof(int), sizeof(int), MPI_COMM_WORLD);
    int *mem = w.base;
    CALL(MPI_Win_fence(0, w.win));
    for (int i = 0; i < 4; i++)
        mem[i] = 10 + i;
    CALL(MPI_Win_fence(0, w.win));
    ops(&w, 0, 1);
    CALL(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));

    CALL(MPI_Win_lock_all(0, w.win));
    ops(&w, 1, 1);
    CALL(MPI_Win_unlock_all(w.win));

    CALL(MPI_Win_post(MPI_GROUP_EMPTY, 0, w.win));
    CALL(MPI_Win_start(MPI_GROUP_EMPTY, 0, w.win));
    ops(&w, 0, 0);
    CALL(MPI_Win_complete(w.win));
    CALL(MPI_Win_wait(w.win));

    MPI_Barrier(MPI_COMM_WORLD);
    rma_own_begin(&w);
    for (int i = 0; i < 4; i++)
        CHECK(mem[i] == 10 + i, "window int %d is %d", i, mem[i]);
    rma_own_end(&w);
    MPI_Barrier(MPI_COMM_WORLD);
    rma_win_free(&w);
    return MTest_Finalize();
}
