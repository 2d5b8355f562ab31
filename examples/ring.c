/* ring.c - the Reflex demo: a token travels around a ring of ranks, then every rank takes part in
 * a reduction and a ping-pong timing between ranks 0 and 1.
 *
 *   install/bin/mpicc examples/ring.c -o build/ring && install/bin/mpiexec -n 4 build/ring
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static double pingpong_us(int rank, int bytes, int iters)
{
    static char buf[1 << 20];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

int main(int argc, char **argv)
{
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Get_library_version(lib, &len);
    if (rank == 0)
        printf("%s: %d ranks on %s\n", lib, size, host);

    /* A token goes around the ring; each rank adds its rank number. */
    int token = 0;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == 0) {
        MPI_Send(&token, 1, MPI_INT, next, 1, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("token went around %d ranks and came back as %d (expected %d)\n", size, token,
               size * (size - 1) / 2);
    } else {
        MPI_Recv(&token, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token += rank;
        MPI_Send(&token, 1, MPI_INT, next, 1, MPI_COMM_WORLD);
    }

    double mine = rank + 1.0, sum = 0.0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("allreduce of 1..%d = %.0f\n", size, sum);

    if (size > 1) {
        int sizes[] = {8, 4096, 1 << 20};
        for (int i = 0; i < 3; i++) {
            double us = pingpong_us(rank, sizes[i], sizes[i] > 65536 ? 50 : 2000);
            if (rank == 0)
                printf("ping-pong %7d bytes: %8.2f us one way, %8.1f MB/s\n", sizes[i], us,
                       sizes[i] / us);
        }
    }
    MPI_Finalize();
    return 0;
}
