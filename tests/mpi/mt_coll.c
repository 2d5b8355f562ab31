/*
 * mt_coll.c - MPI_THREAD_MULTIPLE: blocking collectives run by several threads at once, each on
 * its own duplicate of MPI_COMM_WORLD (the threads of one rank reach their collectives in any
 * order), next to a thread doing point-to-point on MPI_COMM_WORLD: Barrier, Bcast, Allreduce,
 * Allgather, each result checked.
 */
#include "mtest_threads.h"

#define THREADS 3
#define ITERS 40

static MPI_Comm comms[THREADS];

static void *collectives(int t)
{
    MPI_Comm comm = comms[t];
    int *all = mtest_malloc(mtest_size * sizeof(int));
    for (int i = 0; i < ITERS; i++) {
        int root = (i + t) % mtest_size, value = mtest_rank == root ? 1000 * t + i : -1, sum = 0;
        MPI_Barrier(comm);
        MPI_Bcast(&value, 1, MPI_INT, root, comm);
        TCHECK_EQ(value, 1000 * t + i);
        int mine = mtest_rank + t + i;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
        TCHECK_EQ(sum, mtest_size * (mtest_size - 1) / 2 + mtest_size * (t + i));
        MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm);
        for (int r = 0; r < mtest_size; r++)
            TCHECK_EQ(all[r], r + t + i);
    }
    free(all);
    return NULL;
}

/* The last thread: a ring shift on MPI_COMM_WORLD meanwhile. */
static void *ring(void)
{
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    for (int i = 0; i < ITERS; i++) {
        int out = mtest_rank * 100 + i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, right, 5, &in, 1, MPI_INT, left, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        TCHECK_EQ(in, left * 100 + i);
    }
    return NULL;
}

static void *role(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    return t < THREADS ? collectives(t) : ring();
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        mtest_threads_on_dups(THREADS + 1, role, comms, THREADS);
    }
    return MTest_Finalize();
}
