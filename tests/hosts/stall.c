/*
 * stall.c - for link-failure.sh: two ranks exchange one message (so their connection is up),
 * rank 0 prints "linked", then each waits for a message the other never sends. When their
 * connection is broken under them, the waits must fail instead of hanging. With the argument
 * "return" the ranks use MPI_ERRORS_RETURN, print the error class and text of the failed
 * receive and end the job with MPI_Abort(3).
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

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
    int ret = argc > 1 && strcmp(argv[1], "return") == 0;
    if (ret)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    peer = 1 - rank;
    MPI_Sendrecv(&rank, 1, MPI_INT, peer, 0, &x, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
        printf("linked\n");
        fflush(stdout);
    }
    int rc = MPI_Recv(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
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
