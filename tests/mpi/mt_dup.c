/*
 * mt_dup.c - MPI_THREAD_MULTIPLE: THREADS threads make communicators at the same time, each
 * from its own parent, in whatever order the threads of each process happen to run: by
 * MPI_Comm_dup, MPI_Comm_idup + MPI_Wait, MPI_Comm_split (two halves, ranks reversed),
 * MPI_Comm_create (every rank but the last), MPI_Comm_create_group (the same group) and
 * MPI_Comm_split_type (MPI_COMM_TYPE_SHARED, ranks reversed). Each new
 * communicator is used at once with the same tag as every other thread's, so two sharing a
 * context on any process would exchange each other's messages (payloads carry the thread and
 * the round).
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

/* A new communicator from `parent` in the way `round` selects (MPI_COMM_NULL where this
 * process is left out). */
static MPI_Comm make(MPI_Comm parent, int round)
{
    MPI_Comm made = MPI_COMM_NULL;
    MPI_Group all, most;
    MPI_Request req;
    int rank, size;
    MPI_Comm_rank(parent, &rank);
    MPI_Comm_size(parent, &size);
    switch (round % 6) {
    case 0:
        MPI_Comm_dup(parent, &made);
        break;
    case 1:
        MPI_Comm_idup(parent, &made, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case 2:
        MPI_Comm_split(parent, rank % 2, size - rank, &made);
        break;
    case 5:
        MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &made);
        break;
    default: /* every rank but the last, if there are several */
        MPI_Comm_group(parent, &all);
        int last = size - 1;
        if (size > 1)
            MPI_Group_excl(all, 1, &last, &most);
        else
            MPI_Group_incl(all, 1, &last, &most);
        if (round % 5 == 3)
            MPI_Comm_create(parent, most, &made);
        else if (rank != last || size == 1)
            MPI_Comm_create_group(parent, most, round, &made);
        MPI_Group_free(&most);
        MPI_Group_free(&all);
    }
    return made;
}

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm made = make(parents[t], round);
        if (made != MPI_COMM_NULL) {
            use(made, t, round);
            MPI_Comm_free(&made);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        mtest_threads_on_dups(THREADS, worker, parents, THREADS);
    }
    return MTest_Finalize();
}
