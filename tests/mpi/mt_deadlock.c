/*
 * mt_deadlock.c - MPI_THREAD_MULTIPLE: a thread blocked in MPI_Recv must not keep the other
 * threads of its process out of MPI, since the message it waits for is sent by one of them.
 *
 * Self: thread A announces each round and blocks in MPI_Recv from its own rank; thread B waits for
 * the announcement, makes MPI calls (Iprobe) while A waits, then sends A's message (eager and
 * rendezvous sizes). Through the partner: A waits for a reply from the partner, which the
 * partner's thread C sends only after receiving the message that this rank's thread B sends after
 * A's announcement. A library that held a lock while A waits never completes either.
 * (The announcement only makes it likely that A is inside MPI_Recv when B calls MPI; the test is
 * correct whatever the interleaving.)
 */
#include "mtest_threads.h"
#include <sched.h>

#define ROUNDS 40
#define BIG 100000 /* above the eager limits of Reflex (64 KiB), MPICH and Open MPI */
#define TAG_SELF 10
#define TAG_REPLY 1000
#define TAG_REQUEST 2000

static int partner;
static int announced_self = -1, announced_peer = -1;

static int size_of(int round) { return round % 2 ? BIG : 16; }

static void announce(int *flag, int round) { __atomic_store_n(flag, round, __ATOMIC_RELEASE); }

/* Waits for the announcement of `round`, then calls MPI a few times while the other thread waits. */
static void await_announcement(int *flag, int round)
{
    int found = 0;
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < round)
        sched_yield();
    for (int k = 0; k < 50; k++)
        MPI_Iprobe(MPI_ANY_SOURCE, 999999, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE);
    TCHECK_EQ(found, 0);
}

static void *self_waiter(void *arg)
{
    unsigned char *in = mtest_malloc(BIG);
    MPI_Status st;
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        announce(&announced_self, r);
        MPI_Recv(in, BIG, MPI_BYTE, mtest_rank, TAG_SELF, MPI_COMM_WORLD, &st);
        int n = -1;
        MPI_Get_count(&st, MPI_BYTE, &n);
        TCHECK_EQ(n, size_of(r));
        TCHECK_DATA(in, size_of(r), mtest_rank, r, "message to self");
    }
    free(in);
    return NULL;
}

static void *self_sender(void *arg)
{
    unsigned char *out = mtest_malloc(BIG);
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        await_announcement(&announced_self, r);
        mtest_fill(out, size_of(r), mtest_rank, r);
        MPI_Send(out, size_of(r), MPI_BYTE, mtest_rank, TAG_SELF, MPI_COMM_WORLD);
    }
    free(out);
    return NULL;
}

/* A: waits for the partner's reply to the request its sibling B sends. */
static void *peer_waiter(void *arg)
{
    unsigned char *in = mtest_malloc(BIG);
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        announce(&announced_peer, r);
        MPI_Recv(in, BIG, MPI_BYTE, partner, TAG_REPLY + r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        TCHECK_DATA(in, size_of(r), partner, TAG_REPLY + r, "reply");
    }
    free(in);
    return NULL;
}

/* B: sends the request once A waits. */
static void *peer_requester(void *arg)
{
    unsigned char *out = mtest_malloc(BIG);
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        await_announcement(&announced_peer, r);
        mtest_fill(out, size_of(r), mtest_rank, TAG_REQUEST + r);
        MPI_Send(out, size_of(r), MPI_BYTE, partner, TAG_REQUEST + r, MPI_COMM_WORLD);
    }
    free(out);
    return NULL;
}

/* C: answers the partner's requests. */
static void *peer_echo(void *arg)
{
    unsigned char *buf = mtest_malloc(BIG);
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        MPI_Recv(buf, BIG, MPI_BYTE, partner, TAG_REQUEST + r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        TCHECK_DATA(buf, size_of(r), partner, TAG_REQUEST + r, "request");
        mtest_fill(buf, size_of(r), mtest_rank, TAG_REPLY + r);
        MPI_Send(buf, size_of(r), MPI_BYTE, partner, TAG_REPLY + r, MPI_COMM_WORLD);
    }
    free(buf);
    return NULL;
}

static void *role(void *arg)
{
    static void *(*const roles[])(void *) = {self_waiter, self_sender, peer_waiter, peer_requester,
                                             peer_echo};
    return roles[MTEST_THREAD_INDEX(arg)](NULL);
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        partner = mtest_partner();
        /* an unpaired rank runs the self roles only */
        mtest_threads(partner == mtest_rank ? 2 : 5, role);
    }
    return MTest_Finalize();
}
