/*
 * bigmsg.c - one 64 MiB message each way between partners at the same time (self when
 * unpaired), content checked byte for byte; then the same with MPI_INT elements and a
 * receive buffer larger than the message. Exercises the large-message (rendezvous/single-copy)
 * path with a buffer far bigger than any pipeline chunk. Runs with any number of ranks.
 */
#include "mtest.h"

#define BIG ((size_t)64 << 20)

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    char *out = mtest_malloc(BIG), *in = mtest_malloc(BIG + 4096);
    MPI_Request r[2];
    MPI_Status st[2];
    int n;

    mtest_fill(out, BIG, mtest_rank, 1);
    memset(in, 0, BIG);
    MPI_Irecv(in, (int)BIG, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(out, (int)BIG, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, st);
    MPI_Get_count(&st[0], MPI_BYTE, &n);
    CHECK_EQ(n, (long long)BIG);
    CHECK_DATA(in, BIG, peer, 1, "64 MiB message");

    /* As ints, into a larger buffer: count reports the message, the tail stays untouched. */
    int cnt = (int)(BIG / sizeof(int));
    mtest_fill(out, BIG, mtest_rank, 2);
    memset(in, 0x33, BIG + 4096);
    MPI_Irecv(in, cnt + 1024, MPI_INT, peer, 2, MPI_COMM_WORLD, &r[0]);
    MPI_Send(out, cnt, MPI_INT, peer, 2, MPI_COMM_WORLD);
    MPI_Wait(&r[0], &st[0]);
    MPI_Get_count(&st[0], MPI_INT, &n);
    CHECK_EQ(n, cnt);
    CHECK_DATA(in, BIG, peer, 2, "64 MiB of MPI_INT");
    for (int i = 0; i < 4096; i++)
        if ((unsigned char)in[BIG + i] != 0x33) {
            CHECK((unsigned char)in[BIG + i] == 0x33, "byte %d past the message was written", i);
            break;
        }
    free(out);
    free(in);
    return MTest_Finalize();
}
