/*
 * kill_sender.c - fault test for the large-message copy: rank 1 starts a 64 MiB MPI_Isend to
 * rank 0 and kills itself with SIGKILL at once, while rank 0 receives it (its reads of the dead
 * sender's memory fail, or it waits for chunks that never come). The expected outcome is the
 * launcher's, as in kill_rank.c: a non-zero exit within a few seconds, no process and no
 * /dev/shm/reflex-* file left. Never prints " No Errors". Needs >= 2 ranks; others just wait.
 */
#include "mtest.h"
#include <signal.h>

#define BIG ((size_t)64 << 20)

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    if (!MTest_NeedRanks(2))
        return MTest_Finalize();
    char *buf = mtest_malloc(BIG);
    memset(buf, 1, BIG);
    MPI_Request r;
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 1) {
        MPI_Isend(buf, (int)BIG, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
        fflush(stdout);
        raise(SIGKILL);
    }
    if (mtest_rank == 0)
        MPI_Recv(buf, (int)BIG, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* Every rank then waits on the dead one: only the launcher can end the job. */
    MPI_Barrier(MPI_COMM_WORLD);
    fprintf(stderr, "[%d] the job outlived a killed sender\n", mtest_rank);
    MPI_Finalize();
    return 3;
}
