/*
 * mt_handoff.c - MPI_THREAD_MULTIPLE: requests created by one thread and completed by another.
 *
 * Each round, with the partner rank (pairs 0-1, 2-3, ...; an unpaired rank with itself):
 * - the main thread posts K receives and K sends (tags 0..K-1); thread 0 completes the receives
 *   with MPI_Waitany, thread 1 the sends with MPI_Test polling;
 * - thread 2 posts K more receives and sends (tags K..2K-1) and publishes them; thread 3 completes
 *   the receives with MPI_Waitsome and the sends with MPI_Testall polling.
 * Sizes cycle through eager and rendezvous; every payload and status is checked.
 */
#include "mtest_threads.h"
#include <sched.h>

#define ROUNDS 12
#define K 8
#define MAXSIZE 100000 /* above the eager limits of Reflex (64 KiB), MPICH and Open MPI */

static int partner, round_no;
static unsigned char *sbuf[2 * K], *rbuf[2 * K];
static MPI_Request rreq[2 * K], sreq[2 * K];
static int published;

static int size_of(int tag) { return (tag + round_no) % 3 == 0 ? MAXSIZE : 40 * (tag + 1); }
static int seed_of(int tag) { return round_no * 100 + tag; }

static void post(int tag)
{
    mtest_fill(sbuf[tag], size_of(tag), mtest_rank, seed_of(tag));
    MPI_Irecv(rbuf[tag], MAXSIZE, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &rreq[tag]);
    MPI_Isend(sbuf[tag], size_of(tag), MPI_BYTE, partner, tag, MPI_COMM_WORLD, &sreq[tag]);
}

static void check_received(int tag, const MPI_Status *st)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    TCHECK_EQ(st->MPI_SOURCE, partner);
    TCHECK_EQ(st->MPI_TAG, tag);
    TCHECK_EQ(n, size_of(tag));
    TCHECK_DATA(rbuf[tag], size_of(tag), partner, seed_of(tag), "received");
}

/* Thread 0: the main thread's receives, by Waitany. */
static void *by_waitany(void)
{
    for (int done = 0; done < K; done++) {
        int index = -1;
        MPI_Status st;
        MPI_Waitany(K, rreq, &index, &st);
        TCHECK(index >= 0 && index < K, "index %d", index);
        if (index >= 0 && index < K)
            check_received(index, &st);
    }
    int index = 0;
    MPI_Waitany(K, rreq, &index, MPI_STATUS_IGNORE);
    TCHECK_EQ(index, MPI_UNDEFINED);
    return NULL;
}

/* Thread 1: the main thread's sends, by MPI_Test polling. */
static void *by_test(void)
{
    int left = K;
    while (left > 0)
        for (int k = 0; k < K; k++) {
            int flag = 0;
            if (sreq[k] == MPI_REQUEST_NULL)
                continue;
            MPI_Test(&sreq[k], &flag, MPI_STATUS_IGNORE);
            if (flag) {
                TCHECK(sreq[k] == MPI_REQUEST_NULL, "send %d completed but its handle is live", k);
                left--;
            }
        }
    return NULL;
}

/* Thread 2: posts the second half and publishes it. */
static void *poster(void)
{
    for (int tag = K; tag < 2 * K; tag++)
        post(tag);
    __atomic_store_n(&published, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Thread 3: completes the second half, receives by Waitsome, sends by Testall. */
static void *by_waitsome(void)
{
    int indices[K], outcount = 0, flag = 0;
    MPI_Status st[K];
    while (!__atomic_load_n(&published, __ATOMIC_ACQUIRE))
        sched_yield();
    for (int done = 0; done < K; done += outcount) {
        MPI_Waitsome(K, rreq + K, &outcount, indices, st);
        TCHECK(outcount >= 1 && outcount <= K - done, "outcount %d", outcount);
        if (outcount < 1 || outcount > K - done)
            break;
        for (int i = 0; i < outcount; i++)
            check_received(K + indices[i], &st[i]);
    }
    while (!flag)
        MPI_Testall(K, sreq + K, &flag, MPI_STATUSES_IGNORE);
    return NULL;
}

static void *role(void *arg)
{
    switch (MTEST_THREAD_INDEX(arg)) {
    case 0: return by_waitany();
    case 1: return by_test();
    case 2: return poster();
    default: return by_waitsome();
    }
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        partner = mtest_partner();
        for (int k = 0; k < 2 * K; k++) {
            sbuf[k] = mtest_malloc(MAXSIZE);
            rbuf[k] = mtest_malloc(MAXSIZE);
        }
        for (round_no = 0; round_no < ROUNDS; round_no++) {
            published = 0;
            for (int tag = 0; tag < K; tag++)
                post(tag);
            mtest_threads(4, role);
            for (int k = 0; k < 2 * K; k++) {
                TCHECK(rreq[k] == MPI_REQUEST_NULL, "receive %d still live", k);
                TCHECK(sreq[k] == MPI_REQUEST_NULL, "send %d still live", k);
            }
        }
        for (int k = 0; k < 2 * K; k++) {
            free(sbuf[k]);
            free(rbuf[k]);
        }
    }
    return MTest_Finalize();
}
