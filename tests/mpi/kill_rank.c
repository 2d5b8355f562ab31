/*
 * kill_rank.c - fault test: after a barrier, rank 1 kills itself with SIGKILL while every other
 * rank blocks in MPI_Recv from it. The expected outcome is the launcher's: it exits non-zero
 * within a few seconds, leaves no process of the job behind and (for Reflex) no
 * /dev/shm/reflex-* file. This program never prints " No Errors". Needs >= 2 ranks.
 */
#include "mtest.h"
#include <signal.h>

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    if (!MTest_NeedRanks(2))
        return MTest_Finalize();
    int x = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 1) {
        fflush(stdout);
        raise(SIGKILL);
    }
    MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "[%d] MPI_Recv from a killed rank returned\n", mtest_rank);
    MPI_Finalize();
    return 3;
}
