/*
 * msgloop.c - fixed loops of the small-message paths, for instruction counts under callgrind
 * (no timing, no calibration: every run executes exactly the same calls).
 *
 *   msgloop rate ITERS BYTES      rank 0: WINDOW MPI_Isend + MPI_Waitall + MPI_Recv(ack);
 *                                 rank 1: WINDOW MPI_Irecv + MPI_Waitall + MPI_Send(ack) (as pt2pt -t bw)
 *   msgloop latency ITERS BYTES   ping-pong MPI_Send/MPI_Recv (as pt2pt -t latency)
 *   msgloop bcast ITERS BYTES     back-to-back MPI_Bcast from rank 0 (as coll -c bcast)
 *
 * Count one kernel's instructions per message with callgrind's toggle on the kernel function:
 *   install/bin/mpiexec -n 2 valgrind --tool=callgrind --collect-atstart=no \
 *       --toggle-collect=kernel_rate build/bench/msgloop rate 2000 8
 * then `callgrind_annotate --inclusive=yes callgrind.out.<pid>` per rank; divide by ITERS * WINDOW
 * (rate) or ITERS (latency). Both ranks print a checksum of the received bytes, so a run that
 * delivers wrong data is seen.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define TAG_DATA 1
#define TAG_ACK 2

static char sbuf[4096], rbuf[WINDOW][4096];

__attribute__((noinline)) static void kernel_rate(long iters, int bytes, int rank)
{
    MPI_Request req[WINDOW];
    int ack = 0;
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf, bytes, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rbuf[w], bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_INT, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    }
}

__attribute__((noinline)) static void kernel_latency(long iters, int bytes, int rank)
{
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, bytes, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf[0], bytes, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf[0], bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
        }
    }
}

__attribute__((noinline)) static void kernel_bcast(long iters, int bytes, int rank)
{
    char *buf = rank == 0 ? sbuf : rbuf[0];
    for (long i = 0; i < iters; i++)
        MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long iters = argc > 2 ? atol(argv[2]) : 1000;
    int bytes = argc > 3 ? atoi(argv[3]) : 8;
    if (argc < 2 || bytes < 0 || bytes > (int)sizeof sbuf || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: msgloop rate|latency|bcast ITERS BYTES (BYTES <= %zu)\n", sizeof sbuf);
        MPI_Finalize();
        return 2;
    }
    for (size_t i = 0; i < sizeof sbuf; i++)
        sbuf[i] = (char)(i * 7 + 1);
    if (strcmp(argv[1], "rate") == 0)
        kernel_rate(iters, bytes, rank);
    else if (strcmp(argv[1], "bcast") == 0)
        kernel_bcast(iters, bytes, rank);
    else
        kernel_latency(iters, bytes, rank);
    unsigned long sum = 0;
    for (int w = 0; w < WINDOW; w++)
        for (int i = 0; i < bytes; i++)
            sum = sum * 31 + (unsigned char)rbuf[w][i];
    printf("rank %d: %s %ld x %d B done, checksum %lu\n", rank, argv[1], iters, bytes, sum);
    MPI_Finalize();
    return 0;
}
