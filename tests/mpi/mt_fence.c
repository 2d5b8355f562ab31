/*
 * mt_fence.c - MPI_THREAD_MULTIPLE: THREADS threads each run fence epochs on a window of their
 * own (over their own duplicate of MPI_COMM_WORLD), at the same time: every round, a Put of
 * (thread, round) into the right neighbour's window between two fences. A fence that waited
 * for its barrier while holding the library lock would keep the other threads of its process
 * from the fences of their windows, which the other processes wait for.
 */
#include "mtest_threads.h"

#define THREADS 4
#define ROUNDS 100

static MPI_Comm comms[THREADS];
static MPI_Win wins[THREADS];
static int cells[THREADS];

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    int right = (mtest_rank + 1) % mtest_size;
    for (int round = 0; round < ROUNDS; round++) {
        int value = t * 100000 + round * 100 + mtest_rank;
        MPI_Win_fence(0, wins[t]);
        MPI_Put(&value, 1, MPI_INT, right, 0, 1, MPI_INT, wins[t]);
        MPI_Win_fence(0, wins[t]);
        int left = (mtest_rank + mtest_size - 1) % mtest_size;
        TCHECK_EQ(cells[t], t * 100000 + round * 100 + left);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        for (int t = 0; t < THREADS; t++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
            MPI_Win_create(&cells[t], sizeof(int), sizeof(int), MPI_INFO_NULL, comms[t], &wins[t]);
        }
        mtest_threads(THREADS, worker);
        for (int t = 0; t < THREADS; t++) {
            MPI_Win_free(&wins[t]);
            MPI_Comm_free(&comms[t]);
        }
    }
    return MTest_Finalize();
}
