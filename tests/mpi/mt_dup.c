/*
 * mt_dup.c - MPI_THREAD_MULTIPLE: THREADS threads duplicate communicators at the same time,
 * each its own parent (MPI_Comm_dup, and MPI_Comm_idup completed by MPI_Wait), in whatever
 * order the threads of each process happen to run. Each duplicate is used at once with the
 * same tag as every other thread's, so two duplicates sharing a context on any process would
 * exchange each other's messages (payloads carry the thread and the round).
 */
#include "mtest_threads.h"

#define THREADS 4
#define ROUNDS 150

static MPI_Comm parents[THREADS];

/* Ring shift of (thread, round) on `comm`; the value from the left must be this thread's. */
static void use(MPI_Comm comm, int t, int round)
{
    int rank, size, got = -1, mine = t * 100000 + round;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Sendrecv(&mine, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 0, comm, MPI_STATUS_IGNORE);
    TCHECK_EQ(got, mine);
}

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm dup;
        if (round % 2) {
            MPI_Request req;
            MPI_Comm_idup(parents[t], &dup, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Comm_dup(parents[t], &dup);
        }
        use(dup, t, round);
        MPI_Comm_free(&dup);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        for (int t = 0; t < THREADS; t++)
            MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]);
        mtest_threads(THREADS, worker);
        for (int t = 0; t < THREADS; t++)
            MPI_Comm_free(&parents[t]);
    }
    return MTest_Finalize();
}
