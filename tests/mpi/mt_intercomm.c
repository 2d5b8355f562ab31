/*
 * mt_intercomm.c - MPI_THREAD_MULTIPLE: THREADS threads build intercommunicators at the same
 * time, each from its own parent, in whatever order the threads of each process happen to run:
 * the parent's lower and upper halves are joined by MPI_Intercomm_create (the thread's round as
 * the tag), and the intercommunicator is then merged (each half choosing `high` by the round),
 * duplicated, split (two colors) or restricted with MPI_Comm_create (every process of each half
 * but its last). Every result is used at once, with the same tags as every other thread's, so
 * two communicators sharing a context on any process would exchange each other's messages
 * (payloads carry the thread and the round). Needs 2 or more ranks.
 */
#include "mtest_threads.h"

#define THREADS 4
#define ROUNDS 60

static MPI_Comm parents[THREADS];

/* Both groups' sums of `mine` by an allreduce across `inter`, and the leaders' exchange: what
 * arrives must be the other group's, of this thread and round. */
static void use_inter(MPI_Comm inter, int mine)
{
    int rank, rsize, sum = -1, theirs = -1;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter);
    TCHECK_EQ(sum, rsize * mine);
    if (rank == 0) {
        MPI_Sendrecv(&mine, 1, MPI_INT, 0, 0, &theirs, 1, MPI_INT, 0, 0, inter,
                     MPI_STATUS_IGNORE);
        TCHECK_EQ(theirs, mine);
    }
}

/* Ring shift of `mine` on intracommunicator `comm`. */
static void use_intra(MPI_Comm comm, int mine)
{
    int rank, size, got = -1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Sendrecv(&mine, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 0, comm, MPI_STATUS_IGNORE);
    TCHECK_EQ(got, mine);
}

/* Merges `inter` (this process in the lower half or not) and checks the order of the ranks:
 * the half that passed high = 0 comes first. */
static void merge(MPI_Comm inter, int lower, int round, int mine)
{
    int high = (round / 4) % 2 ? lower : !lower, rank, lsize, size, mrank;
    MPI_Comm merged;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_size(inter, &lsize);
    MPI_Intercomm_merge(inter, high, &merged);
    MPI_Comm_size(merged, &size);
    MPI_Comm_rank(merged, &mrank);
    TCHECK_EQ(mrank, high ? size - lsize + rank : rank);
    use_intra(merged, mine);
    MPI_Comm_free(&merged);
}

/* A communicator made from intercommunicator `inter` in the way `round` selects, used. */
static void derive(MPI_Comm inter, int round, int mine)
{
    MPI_Comm made = MPI_COMM_NULL;
    MPI_Group local, most;
    int rank, lsize;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_size(inter, &lsize);
    if (round % 4 == 1) {
        MPI_Comm_dup(inter, &made);
    } else if (round % 4 == 2) {
        MPI_Comm_split(inter, rank % 2, -rank, &made);
    } else {
        MPI_Comm_group(inter, &local);
        int last = lsize - 1;
        if (lsize > 1)
            MPI_Group_excl(local, 1, &last, &most);
        else
            MPI_Group_incl(local, 1, &last, &most);
        MPI_Comm_create(inter, most, &made);
        MPI_Group_free(&most);
        MPI_Group_free(&local);
    }
    if (made != MPI_COMM_NULL) {
        use_inter(made, mine);
        MPI_Comm_free(&made);
    }
}

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    MPI_Comm parent = parents[t];
    int rank, size;
    MPI_Comm_rank(parent, &rank);
    MPI_Comm_size(parent, &size);
    int half = size / 2, lower = rank < half;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm local, inter;
        int mine = t * 100000 + round;
        MPI_Comm_split(parent, lower, rank, &local);
        MPI_Intercomm_create(local, 0, parent, lower ? half : 0, round, &inter);
        MPI_Comm_free(&local);
        use_inter(inter, mine);
        if (round % 4 == 0)
            merge(inter, lower, round, mine);
        else
            derive(inter, round, mine);
        MPI_Comm_free(&inter);
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
