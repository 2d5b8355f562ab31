/*
 * cancel_send.c - cancelling sends (MPI-3.1 section 3.8.4). A send that waits for its receiver
 * (synchronous, or too large to go eagerly) must let MPI_Wait return after MPI_Cancel whatever
 * the receiver does: either it is cancelled (and no receive ever gets the message) or it
 * completes (and the message was received), never both. Runs with any number of ranks (partner
 * or self).
 */
#include "mtest.h"

enum { LARGE = 300000 };

/* Whether a message with `tag` from `peer` is waiting (after both sides have reached this point
 * and everything sent before has arrived). */
static int message_waiting(int peer, int tag)
{
    int flag = 0;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 100 && !flag; i++)
        MPI_Iprobe(peer, tag, MPI_COMM_WORLD, &flag, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    return flag;
}

static int cancelled(MPI_Status *st)
{
    int flag = 0;
    MPI_Test_cancelled(st, &flag);
    return flag;
}

/* 1. Unmatched synchronous and rendezvous sends, blocking-style and persistent, are cancelled. */
static void unmatched(int peer, char *out)
{
    for (int kind = 0; kind < 3; kind++) {
        MPI_Request req;
        MPI_Status st;
        int tag = 10 + kind;
        if (kind == 0)
            MPI_Issend(out, 4, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req);
        else if (kind == 1)
            MPI_Isend(out, LARGE, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req);
        else
            MPI_Ssend_init(out, LARGE, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req);
        if (kind == 2)
            MPI_Start(&req);
        MPI_Cancel(&req);
        MPI_Wait(&req, &st);
        CHECK(cancelled(&st), "unmatched send of kind %d was not cancelled", kind);
        CHECK(!message_waiting(peer, tag), "cancelled send of kind %d still arrived", kind);
        if (kind == 2) { /* the persistent request works again afterwards */
            char *in = mtest_malloc(LARGE);
            MPI_Request rreq;
            MPI_Irecv(in, LARGE, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rreq);
            MPI_Start(&req);
            MPI_Wait(&req, &st);
            CHECK(!cancelled(&st), "restarted persistent send reports cancelled");
            MPI_Wait(&rreq, MPI_STATUS_IGNORE);
            CHECK_DATA(in, (size_t)LARGE, peer, 0, "restarted persistent send");
            MPI_Request_free(&req);
            free(in);
        }
    }
}

/* 2. A send already received cannot be cancelled: the cancel is refused and it completes. */
static void matched(int peer, char *out)
{
    for (int large = 0; large < 2; large++) {
        int len = large ? LARGE : 4, done = 0;
        char *in = mtest_malloc(len);
        MPI_Request sreq, rreq;
        MPI_Status st;
        MPI_Irecv(in, len, MPI_BYTE, peer, 20, MPI_COMM_WORLD, &rreq);
        MPI_Issend(out, len, MPI_BYTE, peer, 20, MPI_COMM_WORLD, &sreq);
        MPI_Wait(&rreq, MPI_STATUS_IGNORE);
        /* the partner's receive is done once ours is (both were posted before either send) */
        MPI_Sendrecv(&done, 1, MPI_INT, peer, 21, &done, 1, MPI_INT, peer, 21, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Cancel(&sreq);
        MPI_Wait(&sreq, &st);
        CHECK(!cancelled(&st), "a received send (%d bytes) reports cancelled", len);
        CHECK_DATA(in, (size_t)len, peer, 0, "received send");
        free(in);
    }
}

/* 3. Cancel racing the receive: whichever wins, the two sides agree. Each round has its own tag:
 * a rank leaves the closing exchange while its partner may still hold the round's receive
 * (cancelled only after that exchange), which must not match the next round's send. */
static void racing(int peer, char *out)
{
    for (int round = 0; round < 20; round++) {
        int len = round % 2 ? LARGE : 4, theirs = 0, mine, tag = 100 + round;
        char *in = mtest_malloc(len);
        MPI_Request sreq, rreq;
        MPI_Status st;
        MPI_Irecv(in, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rreq);
        MPI_Issend(out, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &sreq);
        MPI_Cancel(&sreq);
        MPI_Wait(&sreq, &st);
        mine = cancelled(&st);
        MPI_Sendrecv(&mine, 1, MPI_INT, peer, 31, &theirs, 1, MPI_INT, peer, 31, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (theirs) { /* the partner's message is gone: our receive matches nothing */
            MPI_Cancel(&rreq);
            MPI_Wait(&rreq, &st);
            CHECK(cancelled(&st), "round %d: a cancelled send's receive got data", round);
        } else {
            MPI_Wait(&rreq, &st);
            CHECK(!cancelled(&st), "round %d: receive of a delivered send cancelled", round);
            CHECK_DATA(in, (size_t)len, peer, 0, "message after a refused cancel");
        }
        free(in);
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    char *out = mtest_malloc(LARGE);
    mtest_fill(out, LARGE, mtest_rank, 0);
    unmatched(peer, out);
    matched(peer, out);
    racing(peer, out);
    free(out);
    return MTest_Finalize();
}
