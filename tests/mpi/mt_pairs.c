/*
 * mt_pairs.c - MPI_THREAD_MULTIPLE: THREADS threads per rank, thread t exchanging ITERS messages
 * with thread t of the partner rank (pairs 0-1, 2-3, ...; an unpaired last rank talks to itself),
 * all on MPI_COMM_WORLD, tag t. Each iteration uses another blocking form: Send/Recv, Sendrecv,
 * Ssend/Recv, Probe + Get_count + Recv, Bsend/Recv, Isend/Irecv + Waitall, Sendrecv_replace;
 * sizes cycle through eager and rendezvous. Every payload is checked.
 * Also checks MPI_Is_thread_main from a non-main thread.
 */
#include "mtest_threads.h"

#define THREADS 4
#define ITERS 140
#define KINDS 7

static const int sizes[] = {8, 1000, 20000, 70000, 0};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXSIZE 70000

static int partner;

/* Exchanges one message each way with thread t of the partner, in the form `kind`. */
static void exchange(int t, int i, unsigned char *out, unsigned char *in)
{
    int n = sizes[(i + t) % NSIZES], kind = i % KINDS, count = -1;
    int seed_out = t * 1000 + i, first = mtest_rank < partner;
    MPI_Status st;
    MPI_Request req[2];
    mtest_fill(out, n, mtest_rank, seed_out);
    memset(in, 0, n);
    if (partner == mtest_rank && (kind == 0 || kind == 2 || kind == 3 || kind == 4))
        kind = 1; /* blocking sends to oneself may wait for the receive: use Sendrecv */
    switch (kind) {
    case 0:
    case 2:
    case 4:
        for (int turn = 0; turn < 2; turn++) {
            if (turn == !first) {
                if (kind == 0)
                    MPI_Send(out, n, MPI_BYTE, partner, t, MPI_COMM_WORLD);
                else if (kind == 2)
                    MPI_Ssend(out, n, MPI_BYTE, partner, t, MPI_COMM_WORLD);
                else
                    MPI_Bsend(out, n, MPI_BYTE, partner, t, MPI_COMM_WORLD);
            } else {
                MPI_Recv(in, n, MPI_BYTE, partner, t, MPI_COMM_WORLD, &st);
            }
        }
        break;
    case 1:
        MPI_Sendrecv(out, n, MPI_BYTE, partner, t, in, n, MPI_BYTE, partner, t, MPI_COMM_WORLD, &st);
        break;
    case 3:
        if (first)
            MPI_Send(out, n, MPI_BYTE, partner, t, MPI_COMM_WORLD);
        MPI_Probe(partner, t, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        TCHECK_EQ(count, n);
        MPI_Recv(in, n, MPI_BYTE, partner, t, MPI_COMM_WORLD, &st);
        if (!first)
            MPI_Send(out, n, MPI_BYTE, partner, t, MPI_COMM_WORLD);
        break;
    case 5:
        MPI_Irecv(in, n, MPI_BYTE, partner, t, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out, n, MPI_BYTE, partner, t, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        st.MPI_SOURCE = partner;
        st.MPI_TAG = t;
        break;
    case 6:
        memcpy(in, out, n);
        MPI_Sendrecv_replace(in, n, MPI_BYTE, partner, t, partner, t, MPI_COMM_WORLD, &st);
        break;
    }
    TCHECK_EQ(st.MPI_SOURCE, partner);
    TCHECK_EQ(st.MPI_TAG, t);
    TCHECK_DATA(in, n, partner, seed_out, "exchange");
}

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg), is_main = 1;
    unsigned char *out = mtest_malloc(MAXSIZE), *in = mtest_malloc(MAXSIZE);
    MPI_Is_thread_main(&is_main);
    TCHECK_EQ(is_main, 0);
    for (int i = 0; i < ITERS; i++)
        exchange(t, i, out, in);
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        int bsize = THREADS * (MAXSIZE + MPI_BSEND_OVERHEAD), dsize = 0;
        void *bbuf = mtest_malloc(bsize), *dbuf = NULL;
        partner = mtest_partner();
        MPI_Buffer_attach(bbuf, bsize);
        mtest_threads(THREADS, worker);
        MPI_Buffer_detach(&dbuf, &dsize);
        free(bbuf);
    }
    return MTest_Finalize();
}
