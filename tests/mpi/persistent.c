/*
 * persistent.c - persistent communication requests (MPI-3.1 section 3.9): MPI_Send_init,
 * MPI_Bsend_init, MPI_Ssend_init, MPI_Rsend_init and MPI_Recv_init, started with MPI_Start and
 * MPI_Startall many times with new buffer contents each time, a small and a large size; an
 * inactive persistent request completes at once with an empty status; MPI_Request_free works on
 * an inactive request and on an active send. Runs with any number of ranks (partner or self).
 * Persistent requests on MPI_PROC_NULL are in persistent_procnull.c.
 */
#include "mtest.h"

#define ROUNDS 20
enum { STD, BUF, SYN, RDY, NMODES };
static const char *mode_name[NMODES] = {"Send_init", "Bsend_init", "Ssend_init", "Rsend_init"};

static void make_send(int mode, void *buf, int n, int dest, int tag, MPI_Request *r)
{
    switch (mode) {
    case STD: MPI_Send_init(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r); break;
    case BUF: MPI_Bsend_init(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r); break;
    case SYN: MPI_Ssend_init(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r); break;
    default: MPI_Rsend_init(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r); break;
    }
}

/* One mode, one size: ROUNDS exchanges with the partner, both directions at once. */
static void exchange(int mode, int len, int peer)
{
    char *out = mtest_malloc(len), *in = mtest_malloc(len);
    MPI_Request r[2]; /* [0] = receive, [1] = send */
    MPI_Status st[2];
    int tag = 10 + mode;
    MPI_Recv_init(in, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r[0]);
    make_send(mode, out, len, peer, tag, &r[1]);
    for (int i = 0; i < ROUNDS; i++) {
        int seed = 1000 * mode + i;
        mtest_fill(out, len, mtest_rank, seed);
        memset(in, 0, len);
        if (mode == RDY) {
            /* ready mode: our receive must be posted before the partner's send starts */
            MPI_Start(&r[0]);
            MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 1, NULL, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            MPI_Start(&r[1]);
        } else if (i % 2) {
            MPI_Startall(2, r);
        } else {
            MPI_Start(&r[0]);
            MPI_Start(&r[1]);
        }
        if (i % 3 == 0)
            MPI_Waitall(2, r, st);
        else {
            MPI_Wait(&r[1], &st[1]);
            MPI_Wait(&r[0], &st[0]);
        }
        CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL,
              "%s: completion freed a persistent request", mode_name[mode]);
        CHECK_EQ(st[0].MPI_SOURCE, peer);
        CHECK_EQ(st[0].MPI_TAG, tag);
        CHECK_DATA(in, (size_t)len, peer, seed, "persistent receive");
    }
    /* inactive requests: Wait and Test return at once with an empty status */
    MPI_Status e;
    int flag = 0;
    MPI_Wait(&r[0], &e);
    CHECK_EMPTY_STATUS(e, MPI_BYTE);
    MPI_Test(&r[1], &flag, &e);
    CHECK(flag, "%s: Test on an inactive persistent request returned false", mode_name[mode]);
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "Request_free did not null the handles");
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    const int sizes[] = {8, 200000};
    int bsize = 2 * (200000 + MPI_BSEND_OVERHEAD);
    char *bbuf = mtest_malloc(bsize);
    MPI_Buffer_attach(bbuf, bsize);

    for (int mode = 0; mode < NMODES; mode++)
        for (int k = 0; k < 2; k++)
            exchange(mode, sizes[k], peer);

    /* Request_free on an active persistent send: the message is still delivered. */
    {
        int v = 4242 + mtest_rank, r = 0;
        MPI_Request s, rr;
        MPI_Irecv(&r, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &rr);
        MPI_Send_init(&v, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &s);
        MPI_Start(&s);
        MPI_Request_free(&s);
        MPI_Wait(&rr, MPI_STATUS_IGNORE);
        CHECK_EQ(r, 4242 + peer);
    }

    void *det;
    int detsize;
    MPI_Buffer_detach(&det, &detsize);
    free(bbuf);
    return MTest_Finalize();
}
