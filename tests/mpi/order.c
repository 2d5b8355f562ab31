/*
 * order.c - non-overtaking (MPI-3.1 section 3.5): messages from one sender to one receiver on
 * one communicator are matched in the order they were sent, whatever their size (eager and
 * rendezvous messages interleaved), with a fixed tag, with MPI_ANY_TAG, and with MPI_ANY_SOURCE
 * while several senders are active. Receives posted in advance are matched in posting order.
 * Needs >= 2 ranks; rank 0 receives, every other rank sends.
 */
#include "mtest.h"

#define NMSG 40
#define BIG (256 * 1024) /* above every eager threshold we know of */

/* Message i of a sender: alternately small and big, first int = sequence number. */
static size_t msg_bytes(int i) { return (i % 3 == 2) ? BIG : sizeof(int) * (1 + i % 5); }

static void send_stream(int dest, int tag_of_i_mod, MPI_Comm comm)
{
    MPI_Request req[NMSG];
    char *bufs[NMSG];
    for (int i = 0; i < NMSG; i++) {
        bufs[i] = mtest_malloc(msg_bytes(i));
        mtest_fill(bufs[i], msg_bytes(i), mtest_rank, i);
        memcpy(bufs[i], &i, sizeof i);
        int tag = tag_of_i_mod ? i % tag_of_i_mod : 7;
        MPI_Isend(bufs[i], (int)msg_bytes(i), MPI_BYTE, dest, tag, comm, &req[i]);
    }
    MPI_Waitall(NMSG, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < NMSG; i++)
        free(bufs[i]);
}

/* Check message payload: sequence number, size and pattern of sender src, message i. */
static void check_msg(char *buf, MPI_Status *st, int src, int i)
{
    int seq = -1, n = -1;
    memcpy(&seq, buf, sizeof seq);
    MPI_Get_count(st, MPI_BYTE, &n);
    CHECK(seq == i, "from %d: got message %d, want %d (overtaken)", src, seq, i);
    CHECK_EQ(n, (int)msg_bytes(i));
    CHECK_EQ(st->MPI_SOURCE, src);
    if (seq == i && n > (int)sizeof(int)) {
        for (size_t k = 0; k < sizeof(int); k++) /* restore the pattern under the sequence number */
            buf[k] = (char)mtest_byte(src, i, k);
        CHECK_DATA(buf, (size_t)n, src, i, "ordered message");
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    if (!MTest_NeedRanks(2))
        return MTest_Finalize();
    char *buf = mtest_malloc(BIG);
    MPI_Status st;

    /* 1. fixed tag, one sender (rank 1). */
    if (mtest_rank == 1)
        send_stream(0, 0, MPI_COMM_WORLD);
    if (mtest_rank == 0)
        for (int i = 0; i < NMSG; i++) {
            MPI_Recv(buf, BIG, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &st);
            check_msg(buf, &st, 1, i);
        }

    /* 2. MPI_ANY_TAG: tags vary, order still holds and the status reports the tag. */
    if (mtest_rank == 1)
        send_stream(0, 5, MPI_COMM_WORLD);
    if (mtest_rank == 0)
        for (int i = 0; i < NMSG; i++) {
            MPI_Recv(buf, BIG, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            check_msg(buf, &st, 1, i);
            CHECK_EQ(st.MPI_TAG, i % 5);
        }

    /* 3. MPI_ANY_SOURCE with every other rank sending: per-sender order holds. */
    if (mtest_rank != 0)
        send_stream(0, 0, MPI_COMM_WORLD);
    if (mtest_rank == 0) {
        int *next = calloc(mtest_size, sizeof(int));
        for (int k = 0; k < NMSG * (mtest_size - 1); k++) {
            MPI_Recv(buf, BIG, MPI_BYTE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
            int src = st.MPI_SOURCE;
            CHECK(src > 0 && src < mtest_size, "bad source %d", src);
            if (src > 0 && src < mtest_size)
                check_msg(buf, &st, src, next[src]++);
        }
        for (int r = 1; r < mtest_size; r++)
            CHECK_EQ(next[r], NMSG);
        free(next);
    }

    /* 4. Receives posted before the sends are matched in posting order (same source and tag). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0) {
        MPI_Request req[NMSG];
        char *bufs[NMSG];
        MPI_Status sts[NMSG];
        for (int i = 0; i < NMSG; i++) {
            bufs[i] = mtest_malloc(BIG);
            /* alternate ANY_SOURCE and a named source: both must respect posting order */
            MPI_Irecv(bufs[i], BIG, MPI_BYTE, i % 2 ? 1 : MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Send(NULL, 0, MPI_BYTE, 1, 99, MPI_COMM_WORLD); /* go */
        MPI_Waitall(NMSG, req, sts);
        for (int i = 0; i < NMSG; i++) {
            check_msg(bufs[i], &sts[i], 1, i);
            free(bufs[i]);
        }
    } else if (mtest_rank == 1) {
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_stream(0, 0, MPI_COMM_WORLD);
    }

    free(buf);
    return MTest_Finalize();
}
