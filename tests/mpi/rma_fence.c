/*
 * rma_fence.c - active-target synchronisation with MPI_Win_fence (MPI-3.1 11.5.1), on a window of
 * the flavor named by MTEST_RMA_FLAVOR (rma_win.h). Each rank's window holds one block of M ints
 * per origin rank, for M = 1, 37, 4096 and 65536:
 *  - epoch 1 (MPI_MODE_NOPRECEDE): every rank Puts its block into its slot at every rank;
 *  - epoch 2 (MPI_MODE_NOPUT): every rank Gets, from every rank, the block its right neighbour
 *    put there (so a Get sees the Puts of the previous epoch at another origin's slot);
 *  - epoch 3: every rank Accumulates (SUM) into its left neighbour's slot at every rank, and in
 *    the same epoch Gets its own slot of a different region (the second half of the window);
 *  - epoch 4 (MPI_MODE_NOSTORE | MPI_MODE_NOSUCCEED ends it): local loads check everything.
 * Between epochs the target checks its memory with plain loads. Runs with any number of ranks.
 */
#include "rma_win.h"

static int val(int origin, int target, int i, int seed) { return seed * 7919 + origin * 131 + target * 17 + i % 1000; }

static void run(int m)
{
    int p = mtest_size, me = mtest_rank;
    RmaWin w;
    rma_win_make(&w, (MPI_Aint)2 * p * m * sizeof(int), sizeof(int), MPI_COMM_WORLD);
    int *mem = w.base;
    int *out = mtest_malloc((size_t)p * m * sizeof(int)), *in = mtest_malloc((size_t)p * m * sizeof(int));
    int bad = 0;

    /* epoch 1: puts */
    CALL(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
    for (int t = 0; t < p; t++) {
        for (int i = 0; i < m; i++)
            out[t * m + i] = val(me, t, i, 1);
        CALL(MPI_Put(&out[t * m], m, MPI_INT, t, rma_disp(&w, t, (MPI_Aint)me * m), m, MPI_INT, w.win));
    }
    CALL(MPI_Win_fence(MPI_MODE_NOPUT, w.win));
    for (int o = 0; o < p && !bad; o++)
        for (int i = 0; i < m; i++)
            if (mem[o * m + i] != val(o, me, i, 1)) {
                FAIL("m=%d after Put: slot %d element %d is %d, want %d", m, o, i, mem[o * m + i], val(o, me, i, 1));
                bad = 1;
                break;
            }

    /* epoch 2: gets of the right neighbour's slot */
    int right = (me + 1) % p, left = (me + p - 1) % p;
    for (int t = 0; t < p; t++)
        CALL(MPI_Get(&in[t * m], m, MPI_INT, t, rma_disp(&w, t, (MPI_Aint)right * m), m, MPI_INT, w.win));
    CALL(MPI_Win_fence(0, w.win));
    for (int t = 0; t < p && !bad; t++)
        for (int i = 0; i < m; i++)
            if (in[t * m + i] != val(right, t, i, 1)) {
                FAIL("m=%d Get from %d: element %d is %d, want %d", m, t, i, in[t * m + i], val(right, t, i, 1));
                bad = 1;
                break;
            }

    /* epoch 3: accumulate into the left neighbour's slot; get my slot of the second region */
    for (int t = 0; t < p; t++) {
        for (int i = 0; i < m; i++)
            out[t * m + i] = val(me, t, i, 2);
        CALL(MPI_Accumulate(&out[t * m], m, MPI_INT, t, rma_disp(&w, t, (MPI_Aint)left * m), m, MPI_INT, MPI_SUM,
                            w.win));
        CALL(MPI_Get(&in[t * m], m, MPI_INT, t, rma_disp(&w, t, (MPI_Aint)(p + me) * m), m, MPI_INT, w.win));
    }
    CALL(MPI_Win_fence(MPI_MODE_NOSTORE, w.win));
    for (int t = 0; t < p && !bad; t++)
        for (int i = 0; i < m; i++)
            if (in[t * m + i] != 0) {
                FAIL("m=%d Get of the untouched region of %d: element %d is %d", m, t, i, in[t * m + i]);
                bad = 1;
                break;
            }
    /* slot o was put by o and then accumulated by o's right neighbour... no: by the rank whose
     * left neighbour is o, i.e. o + 1 */
    for (int o = 0; o < p && !bad; o++)
        for (int i = 0; i < m; i++) {
            int want = val(o, me, i, 1) + val((o + 1) % p, me, i, 2);
            if (mem[o * m + i] != want) {
                FAIL("m=%d after Accumulate: slot %d element %d is %d, want %d", m, o, i, mem[o * m + i], want);
                bad = 1;
                break;
            }
        }
    CALL(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    rma_win_free(&w);
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    static const int ms[] = {1, 37, 4096, 65536};
    for (int k = 0; k < 4; k++)
        run(ms[k]);
    return MTest_Finalize();
}
