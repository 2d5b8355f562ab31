/*
 * recv_unexpected.c - receives of messages that arrived before them (MPI_Probe on the last one
 * makes sure every earlier message of the pair is waiting in the unexpected queue): Reflex copies
 * a plain eager message straight out of that queue, with no request, for MPI_Recv, and completes
 * an MPI_Irecv at once. Checked: matching in order by tag and by wildcards, the status (source,
 * tag, count), truncation (MPI_ERR_TRUNCATE, nothing written past the buffer), a rendezvous and a
 * synchronous message among them (left to the general path; the synchronous sender completes),
 * and a blocking receive while an older nonblocking one is posted (the older one gets the message
 * that matches both). Runs with any number of ranks (partner or self).
 */
#include "mtest.h"

#define BIG 100000 /* ints: past every eager limit */
#define ROUNDS 20

static int big_out[BIG], big_in[BIG];

/* Sends tags 1..3 (4 ints each), a rendezvous message (tag 5), a synchronous one (tag 4), then
 * tag 6, the one the receiver probes for. */
static void send_all(int peer, int round, MPI_Request *s, int out[][4])
{
    for (int t = 1; t <= 3; t++) {
        for (int i = 0; i < 4; i++)
            out[t][i] = 1000 * round + 10 * t + i;
        CALL(MPI_Isend(out[t], 4, MPI_INT, peer, t, MPI_COMM_WORLD, &s[t - 1]));
    }
    for (int i = 0; i < BIG; i++)
        big_out[i] = round + i;
    CALL(MPI_Isend(big_out, BIG, MPI_INT, peer, 5, MPI_COMM_WORLD, &s[3]));
    out[4][0] = 4;
    CALL(MPI_Issend(out[4], 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &s[4]));
    out[0][0] = 6;
    CALL(MPI_Isend(out[0], 1, MPI_INT, peer, 6, MPI_COMM_WORLD, &s[5]));
}

/* Receives what send_all sent, in another order than it was sent. */
static void recv_all(int peer, int round)
{
    MPI_Status st;
    int in[4], count = -1;
    CALL(MPI_Probe(peer, 6, MPI_COMM_WORLD, &st));
    /* By tag, past an older message. */
    CALL(MPI_Recv(in, 4, MPI_INT, peer, 2, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 2 && count == 4, "tag 2: source %d tag %d count %d",
          st.MPI_SOURCE, st.MPI_TAG, count);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(in[i], 1000 * round + 20 + i);
    /* Wildcards take the oldest left: tag 1. */
    CALL(MPI_Recv(in, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 1, "wildcards: source %d tag %d", st.MPI_SOURCE,
          st.MPI_TAG);
    CHECK_EQ(in[0], 1000 * round + 10);
    /* Too small a buffer: MPI_ERR_TRUNCATE, nothing written past it (what it holds is not
     * defined: MPICH leaves it alone, Reflex delivers what fitted). */
    in[2] = in[3] = -7;
    int rc = MPI_Recv(in, 2, MPI_INT, peer, 3, MPI_COMM_WORLD, &st);
    CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
    CHECK(in[2] == -7 && in[3] == -7, "truncated receive wrote past its buffer: %d %d", in[2], in[3]);
    /* The rendezvous message and the synchronous one. */
    CALL(MPI_Recv(big_in, BIG, MPI_INT, peer, 5, MPI_COMM_WORLD, &st));
    CHECK(big_in[0] == round && big_in[BIG - 1] == round + BIG - 1, "rendezvous: %d .. %d",
          big_in[0], big_in[BIG - 1]);
    CALL(MPI_Recv(in, 4, MPI_INT, peer, 4, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(in[0] == 4 && count == 1 && st.MPI_TAG == 4, "synchronous: %d, count %d", in[0], count);
    /* An MPI_Irecv of a waiting message. */
    MPI_Request r;
    CALL(MPI_Irecv(in, 4, MPI_INT, peer, 6, MPI_COMM_WORLD, &r));
    CALL(MPI_Wait(&r, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(in[0] == 6 && count == 1 && st.MPI_SOURCE == peer && st.MPI_TAG == 6,
          "Irecv: %d, count %d, source %d tag %d", in[0], count, st.MPI_SOURCE, st.MPI_TAG);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = mtest_partner();
    int out[5][4];
    MPI_Request s[6];
    for (int round = 0; round < ROUNDS; round++) {
        if (mtest_rank <= peer)
            send_all(peer, round, s, out);
        if (mtest_rank >= peer)
            recv_all(peer, round);
        if (mtest_rank <= peer)
            CALL(MPI_Waitall(6, s, MPI_STATUSES_IGNORE));
        /* A receive posted before its message gets the first one, a later one the second. */
        int a = -1, b = -1, v = round, w = round + 100;
        MPI_Request r[2];
        CALL(MPI_Irecv(&a, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &r[0]));
        CALL(MPI_Send(&v, 1, MPI_INT, peer, 7, MPI_COMM_WORLD));
        CALL(MPI_Isend(&w, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &r[1])); /* may go to oneself */
        CALL(MPI_Recv(&b, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CALL(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK(a == round && b == round + 100, "posted first: %d, then %d", a, b);
    }
    return MTest_Finalize();
}
