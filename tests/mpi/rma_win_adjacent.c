/*
 * rma_win_adjacent.c - windows on neighbouring memory (MPI-3.1 11.2.1 allows windows over any
 * memory, even overlapping): three MPI_Win_create windows over consecutive ints of one array,
 * alive at the same time, each receiving an Accumulate (SUM) and a Put from the left neighbour
 * in a fence epoch; every int must hold exactly what was sent through its own window. Then a
 * window over an int next to one whose window was already freed. Runs with any number of ranks.
 */
#include "mtest.h"

#define NW 3

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int *mem = mtest_malloc(2 * NW * sizeof(int));
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    MPI_Win w[NW];
    for (int k = 0; k < 2 * NW; k++)
        mem[k] = 0;
    /* window k covers mem[2k .. 2k+1]: the windows touch each other */
    for (int k = 0; k < NW; k++)
        CALL(MPI_Win_create(&mem[2 * k], 2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w[k]));
    for (int k = 0; k < NW; k++)
        CALL(MPI_Win_fence(0, w[k]));
    for (int k = 0; k < NW; k++) {
        int a = 100 * k + mtest_rank + 1, b = -(100 * k + mtest_rank + 1);
        CALL(MPI_Accumulate(&a, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, w[k]));
        CALL(MPI_Put(&b, 1, MPI_INT, right, 1, 1, MPI_INT, w[k]));
    }
    for (int k = 0; k < NW; k++)
        CALL(MPI_Win_fence(0, w[k]));
    for (int k = 0; k < NW; k++) {
        CHECK(mem[2 * k] == 100 * k + left + 1, "window %d: accumulated %d, want %d", k, mem[2 * k], 100 * k + left + 1);
        CHECK(mem[2 * k + 1] == -(100 * k + left + 1), "window %d: put %d", k, mem[2 * k + 1]);
    }
    for (int k = 0; k < NW; k++)
        CALL(MPI_Win_free(&w[k]));

    /* a window next to the memory of a freed one */
    MPI_Win a;
    mem[3] = 0;
    CALL(MPI_Win_create(&mem[3], sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &a));
    CALL(MPI_Win_fence(0, a));
    int v = mtest_rank + 7;
    CALL(MPI_Accumulate(&v, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, a));
    CALL(MPI_Win_fence(0, a));
    CHECK(mem[3] == left + 7, "window after a freed neighbour: %d, want %d", mem[3], left + 7);
    CHECK(mem[2] == 100 + left + 1, "memory before the window changed: %d", mem[2]);
    CALL(MPI_Win_free(&a));
    free(mem);
    return MTest_Finalize();
}
