/* hello.c -- the program every build-system test builds: it checks that it runs on Reflex with
 * the expected number of ranks and that a collective gives the right answer, then prints one line
 * per rank ("buildsys <lang> rank R of N: ok") that run.sh looks for. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, sum = -1, len = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(version, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (strstr(version, "Reflex") == NULL) {
        printf("buildsys c rank %d: not Reflex: %s\n", rank, version);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (sum != size * (size - 1) / 2) {
        printf("buildsys c rank %d: allreduce gave %d, expected %d\n", rank, sum,
               size * (size - 1) / 2);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    printf("buildsys c rank %d of %d: ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
