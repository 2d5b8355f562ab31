/*
 * mt_detach.c - MPI_THREAD_MULTIPLE: MPI_Buffer_detach waits for buffered messages that another
 * thread receives. On every process one thread Bsends a large message (beyond any eager limit:
 * it leaves only once received) to the right neighbour and detaches the buffer, while a second
 * thread, after a pause, receives the left neighbour's. A detach that waited holding the library
 * lock would keep out the receiving thread of its own process, which the left neighbour's detach
 * waits for: every process would wait for ever (with one rank, for its own receive).
 */
#include "mtest_threads.h"
#include <unistd.h>

#define BYTES (1 << 20)
#define ROUNDS 5

static char *sent, *got;

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    for (int round = 0; round < ROUNDS; round++) {
        if (t == 0) {
            int size = BYTES + MPI_BSEND_OVERHEAD, detached_size = 0;
            char *buffer = malloc(size), *detached = NULL;
            mtest_fill(sent, BYTES, mtest_rank, round);
            MPI_Buffer_attach(buffer, size);
            MPI_Bsend(sent, BYTES, MPI_BYTE, right, round, MPI_COMM_WORLD);
            MPI_Buffer_detach(&detached, &detached_size);
            TCHECK(detached == buffer, "MPI_Buffer_detach gave back another buffer");
            TCHECK_EQ(detached_size, size);
            free(buffer);
        } else {
            usleep(20000);
            MPI_Recv(got, BYTES, MPI_BYTE, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            TCHECK_DATA(got, BYTES, left, round, "the buffered message");
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        sent = malloc(BYTES);
        got = malloc(BYTES);
        mtest_threads(2, worker);
        free(sent);
        free(got);
    }
    return MTest_Finalize();
}
