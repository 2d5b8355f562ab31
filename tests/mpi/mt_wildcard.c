/*
 * mt_wildcard.c - MPI_THREAD_MULTIPLE: wildcard receives competing across threads.
 *
 * Every rank runs SENDERS threads, each sending PER_DEST messages to every rank (itself
 * included), tag = sender thread, payload = (source rank, thread, sequence) + a checked pattern,
 * sizes cycling through eager and rendezvous; and RECEIVERS threads that together receive exactly
 * the number of messages addressed to this rank, each claiming one receive at a time from a shared
 * counter, with MPI_ANY_SOURCE/MPI_ANY_TAG in three forms: Recv, Irecv + Wait, Mprobe + Mrecv.
 * Every message must be received exactly once, intact, with a status naming its sender; and each
 * receiving thread must see the messages of one sender thread in order (non-overtaking: a later
 * message cannot match while an earlier one that matches the same receive is pending).
 */
#include "mtest_threads.h"

#define SENDERS 3
#define RECEIVERS 3
#define PER_DEST 60
#define MAXSIZE 100000 /* above the eager limits of Reflex (64 KiB), MPICH and Open MPI */
#define HEADER 3

static int claimed;          /* receives claimed by the receiver threads */
static int expected;         /* messages addressed to this rank */
static unsigned char *seen;  /* [source][thread][seq], under seen_lock */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static int size_of(int seq) { return seq % 4 == 3 ? MAXSIZE : 12 + 8 * (seq % 4); }

static void *sender(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    unsigned char *buf = mtest_malloc(MAXSIZE);
    for (int seq = 0; seq < PER_DEST; seq++)
        for (int d = 0; d < mtest_size; d++) {
            int n = size_of(seq), head[HEADER] = {mtest_rank, t, seq};
            mtest_fill(buf, n, mtest_rank, t * PER_DEST + seq);
            memcpy(buf, head, sizeof head);
            MPI_Send(buf, n, MPI_BYTE, d, t, MPI_COMM_WORLD);
        }
    free(buf);
    return NULL;
}

/* Receives one message in form `kind`; returns its status and count. */
static void receive_one(int kind, unsigned char *buf, MPI_Status *st, int *n)
{
    MPI_Request req;
    MPI_Message msg;
    switch (kind) {
    case 0:
        MPI_Recv(buf, MAXSIZE, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st);
        break;
    case 1:
        MPI_Irecv(buf, MAXSIZE, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, st);
        break;
    default:
        MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, st);
        MPI_Get_count(st, MPI_BYTE, n);
        MPI_Mrecv(buf, *n, MPI_BYTE, &msg, st);
        break;
    }
    MPI_Get_count(st, MPI_BYTE, n);
}

/* Checks and counts one message; `last` holds this receiver's last sequence per sender thread. */
static void record(const unsigned char *buf, const MPI_Status *st, int n, int *last)
{
    int head[HEADER];
    memcpy(head, buf, sizeof head);
    int src = head[0], t = head[1], seq = head[2];
    TCHECK(src >= 0 && src < mtest_size && t >= 0 && t < SENDERS && seq >= 0 && seq < PER_DEST,
           "bad header %d %d %d", src, t, seq);
    if (!(src >= 0 && src < mtest_size && t >= 0 && t < SENDERS && seq >= 0 && seq < PER_DEST))
        return;
    TCHECK_EQ(st->MPI_SOURCE, src);
    TCHECK_EQ(st->MPI_TAG, t);
    TCHECK_EQ(n, size_of(seq));
    if (n > (int)sizeof head) {
        unsigned char want[MAXSIZE];
        mtest_fill(want, n, src, t * PER_DEST + seq);
        TCHECK(memcmp(buf + sizeof head, want + sizeof head, n - sizeof head) == 0,
               "payload of message %d/%d/%d", src, t, seq);
    }
    TCHECK(seq > last[src * SENDERS + t], "message %d/%d/%d after sequence %d", src, t, seq,
           last[src * SENDERS + t]);
    last[src * SENDERS + t] = seq;
    pthread_mutex_lock(&seen_lock);
    seen[(src * SENDERS + t) * PER_DEST + seq]++;
    pthread_mutex_unlock(&seen_lock);
}

static void *receiver(void *arg)
{
    int r = MTEST_THREAD_INDEX(arg), i = 0;
    unsigned char *buf = mtest_malloc(MAXSIZE);
    int *last = mtest_malloc(mtest_size * SENDERS * sizeof(int));
    for (int k = 0; k < mtest_size * SENDERS; k++)
        last[k] = -1;
    while (__atomic_fetch_add(&claimed, 1, __ATOMIC_RELAXED) < expected) {
        MPI_Status st;
        int n = -1;
        receive_one((r + i++) % 3, buf, &st, &n);
        record(buf, &st, n, last);
    }
    free(last);
    free(buf);
    return NULL;
}

static void *role(void *arg)
{
    int i = MTEST_THREAD_INDEX(arg);
    return i < SENDERS ? sender((void *)(intptr_t)i) : receiver((void *)(intptr_t)(i - SENDERS));
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        expected = mtest_size * SENDERS * PER_DEST;
        seen = calloc(expected, 1);
        mtest_threads(SENDERS + RECEIVERS, role);
        for (int k = 0; k < expected; k++)
            if (seen[k] != 1)
                FAIL("message %d/%d/%d received %d times", k / (SENDERS * PER_DEST),
                     k / PER_DEST % SENDERS, k % PER_DEST, seen[k]);
        free(seen);
    }
    return MTest_Finalize();
}
