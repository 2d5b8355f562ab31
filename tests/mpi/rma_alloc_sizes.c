/*
 * rma_alloc_sizes.c - windows whose sizes are not multiples of anything (MPI-3.1 11.2: the size
 * is any non-negative number of bytes): per-rank sizes of 4p + 0, 4, 8, 12, 20, 36 and 4092 bytes
 * for p ranks, the same on every rank and then different on every rank (4p + 4r); every rank Puts
 * its rank into int `rank` of every target (fence epoch) and Gets back int `rank` of its right
 * neighbour; every int must land in the target's own window. The flavor comes from
 * MTEST_RMA_FLAVOR (rma_win.h, allocate by default). Runs with any number of ranks.
 */
#include "rma_win.h"

static void run(MPI_Aint size, const char *what)
{
    int p = mtest_size, me = mtest_rank;
    RmaWin w;
    rma_win_make_exact(&w, size, sizeof(int), MPI_COMM_WORLD);
    int *mem = w.base, *out = mtest_malloc(p * sizeof(int)), back = -1;
    CALL(MPI_Win_fence(0, w.win));
    for (int t = 0; t < p; t++) {
        out[t] = 1000 * me + t;
        CALL(MPI_Put(&out[t], 1, MPI_INT, t, rma_disp(&w, t, me), 1, MPI_INT, w.win));
    }
    CALL(MPI_Win_fence(0, w.win));
    int right = (me + 1) % p;
    CALL(MPI_Get(&back, 1, MPI_INT, right, rma_disp(&w, right, me), 1, MPI_INT, w.win));
    CALL(MPI_Win_fence(0, w.win));
    for (int o = 0; o < p; o++)
        if (mem[o] != 1000 * o + me) {
            FAIL("%s, %ld bytes: int %d is %d, want %d", what, (long)size, o, mem[o], 1000 * o + me);
            break;
        }
    for (MPI_Aint i = p; i < size / (MPI_Aint)sizeof(int); i++)
        if (mem[i] != 0) {
            FAIL("%s, %ld bytes: int %ld beyond the targets is %d", what, (long)size, (long)i, mem[i]);
            break;
        }
    CHECK(back == 1000 * me + right, "%s, %ld bytes: Get gave %d", what, (long)size, back);
    CALL(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    rma_win_free(&w);
    free(out);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    static const int extra[] = {0, 4, 8, 12, 20, 36, 4092};
    for (int k = 0; k < 7; k++)
        run(4 * mtest_size + extra[k], "same size everywhere");
    run(4 * mtest_size + 4 * mtest_rank, "4p + 4r");
    run(4 * mtest_size + 4 * (mtest_size - mtest_rank), "4p + 4(p - r)");
    return MTest_Finalize();
}
