/* startup.c - the start-up benchmark's program: MPI_Init, MPI_Barrier, MPI_Finalize, nothing
 * else (bench/startup.py times whole runs of it under each launcher). */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
