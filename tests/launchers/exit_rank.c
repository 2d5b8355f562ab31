/*
 * exit_rank.c - fault test: after a barrier, rank 1 exits with status 3 without MPI_Finalize
 * while every other rank blocks in MPI_Recv from it. The launcher must end the whole job with a
 * non-zero status (Slurm: with KillOnBadExit=1 or srun -K). Never prints " No Errors".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        printf("exit_rank needs at least 2 ranks\n");
        return 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        exit(3);
    MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "[%d] received from a rank that exited\n", rank);
    MPI_Finalize();
    return 0;
}
