/*
 * stall.c - for link-failure.sh: two ranks exchange one message (so their connection is up),
 * rank 0 prints "linked", then each waits for something the other never does. When their
 * connection is broken under them, the waits must fail instead of hanging. Modes (argument 1):
 *   (none)  each waits in MPI_Recv for a message the other never sends;
 *   return  the same under MPI_ERRORS_RETURN: the ranks print the error class and text of the
 *           failed receive and end the job with MPI_Abort(3);
 *   test    each polls MPI_Test on such a receive, as an application's polling loop does;
 *   flood   rank 0 queues 256 MiB of eager messages to rank 1 and waits for them (its sends
 *           wait for room on the connection, not for a message), rank 1 sleeps outside MPI.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FLOOD 8192           /* messages */
#define FLOOD_BYTES (32 << 10) /* each, under the TCP eager limit */

static void flood(int rank, int peer)
{
    if (rank == 1) {
        sleep(60);
        return;
    }
    char *buf = calloc(FLOOD_BYTES, 1);
    MPI_Request *rq = malloc(FLOOD * sizeof(MPI_Request));
    MPI_Status *st = malloc(FLOOD * sizeof(MPI_Status)); /* GCC warns of MPI_STATUSES_IGNORE here */
    for (int i = 0; i < FLOOD; i++)
        MPI_Isend(buf, FLOOD_BYTES, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &rq[i]);
    MPI_Waitall(FLOOD, rq, st);
}

static int poll_test(int peer)
{
    int x = 0, done = 0, rc;
    MPI_Request rq;
    MPI_Irecv(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &rq);
    while ((rc = MPI_Test(&rq, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done)
        ;
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, peer, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "stall: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argc > 1 ? argv[1] : "";
    int ret = strcmp(mode, "return") == 0;
    if (ret)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    peer = 1 - rank;
    MPI_Sendrecv(&rank, 1, MPI_INT, peer, 0, &x, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
        printf("linked\n");
        fflush(stdout);
    }
    if (strcmp(mode, "flood") == 0) {
        flood(rank, peer);
        MPI_Abort(MPI_COMM_WORLD, 4); /* not reached: the link breaks first */
    }
    int rc = strcmp(mode, "test") == 0 ? poll_test(peer)
                                       : MPI_Recv(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int cls = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    printf("rank %d: MPI_Recv returned class %d%s: %s\n", rank, cls, cls == MPI_ERR_OTHER ? " (MPI_ERR_OTHER)" : "",
           text);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 0;
}
