/*
 * progress_recv.c - a blocking receive keeps everything else moving (MPI-3.1 section 3.7.4,
 * progress): while rank 0 waits in MPI_Recv for a message that rank 1 sends only after an
 * earlier operation involving rank 0 has completed, rank 0 must advance that operation:
 *   1. a large message rank 0 has already matched with an MPI_Irecv (rendezvous copy);
 *   2. passive-target MPI_Get and MPI_Accumulate by rank 1 on a window of rank 0 created over
 *      ordinary memory (MPI_Win_create);
 *   3. a large message already streaming in when the MPI_Recv starts (over TCP, a chunk that
 *      MPI_Test began landing in the user's buffer must go on landing there).
 * Ranks beyond 2 only take part in the collective calls; one rank alone has nothing to check.
 */
#include "mtest.h"

enum { LARGE = 1 << 20 };

static void matched_rendezvous(void)
{
    char *big = mtest_malloc(LARGE);
    int token = 0;
    if (mtest_rank == 0) {
        MPI_Request req;
        MPI_Irecv(big, LARGE, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req);
        MPI_Barrier(MPI_COMM_WORLD); /* the Irecv is posted before rank 1 sends */
        MPI_Recv(&token, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK_DATA(big, (size_t)LARGE, 1, 3, "large message");
        CHECK_EQ(token, 42);
    } else if (mtest_rank == 1) {
        mtest_fill(big, LARGE, 1, 3);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Send(big, LARGE, MPI_BYTE, 0, 1, MPI_COMM_WORLD); /* completes only once copied */
        token = 42;
        MPI_Send(&token, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(big);
}

/* Rounds of case 3: rank 0 calls MPI_Test a growing number of times before its MPI_Recv, so
 * that in some rounds the MPI_Recv starts while a chunk is half landed. */
enum { STREAM_ROUNDS = 16, HUGE = 4 << 20 };

static void streaming_rendezvous(void)
{
    char *big = mtest_malloc(HUGE);
    for (int round = 0; round < STREAM_ROUNDS; round++) {
        int token = 0, tag = 4 + round % 2;
        if (mtest_rank == 0) {
            MPI_Request req;
            int done = 0;
            MPI_Irecv(big, HUGE, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &req);
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; i < 4 * round * round && !done; i++)
                MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            MPI_Recv(&token, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!done)
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK_DATA(big, (size_t)HUGE, 1, tag, "message streaming during MPI_Recv");
            CHECK_EQ(token, 40 + round);
        } else if (mtest_rank == 1) {
            mtest_fill(big, HUGE, 1, tag);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Send(big, HUGE, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
            token = 40 + round;
            MPI_Send(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    free(big);
}

static void passive_target(void)
{
    int local[4] = {7, 8, 9, 10}, got[4] = {0}, one[4] = {1, 1, 1, 1}, token = 0;
    MPI_Win win;
    MPI_Win_create(local, sizeof local, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (mtest_rank == 0) {
        MPI_Recv(&token, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_EQ(token, 7);
    } else if (mtest_rank == 1) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(got, 4, MPI_INT, 0, 0, 4, MPI_INT, win);
        MPI_Win_unlock(0, win);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Accumulate(one, 4, MPI_INT, 0, 0, 4, MPI_INT, MPI_SUM, win);
        MPI_Win_unlock(0, win);
        CHECK_EQ(got[3], 10);
        token = got[0];
        MPI_Send(&token, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    if (mtest_rank == 0)
        CHECK_EQ(local[2], 10);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    if (mtest_size >= 2) { /* one rank alone has nobody to wait for */
        matched_rendezvous();
        passive_target();
        streaming_rendezvous();
    }
    return MTest_Finalize();
}
