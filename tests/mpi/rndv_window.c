/*
 * rndv_window.c - windows of large messages between every pair of ranks at once, in both
 * directions: sizes from 64 KiB to 3 MiB, most of them odd (not a multiple of any copy chunk),
 * many outstanding MPI_Isend/MPI_Irecv per pair, half of the receives posted before the sends
 * and half after a barrier (so their requests-to-send wait unexpected), all with MPI_ANY_SOURCE;
 * content, source and count checked. Then a large message into a short receive buffer: the
 * error class is MPI_ERR_TRUNCATE and nothing lands past the buffer. Written for the cooperative
 * large-message copy (both sides copy chunks); runs with any number of ranks.
 */
#include "mtest.h"

static const int sizes[] = {65536, 65537, 100003, 262149, 1048589, 131071, 3145735, 524287};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define ROUNDS 2
#define NMSG (NSIZES * ROUNDS)

/* Tag k carries sizes[k % NSIZES] bytes from every rank; seed = tag. */
static int size_of(int tag)
{
    return sizes[tag % NSIZES];
}

static void post_recvs(int from, int to, int peers, char ***in, MPI_Request *r)
{
    for (int k = from; k < to; k++)
        for (int p = 0; p < peers; p++)
            MPI_Irecv(in[k][p], size_of(k), MPI_BYTE, MPI_ANY_SOURCE, k, MPI_COMM_WORLD,
                      &r[k * peers + p]);
}

static void window(void)
{
    int peers = mtest_size - 1;
    if (peers == 0)
        return;
    char ***in = mtest_malloc(NMSG * sizeof *in), **out = mtest_malloc(NMSG * sizeof *out);
    MPI_Request *rr = mtest_malloc((size_t)NMSG * peers * sizeof *rr);
    MPI_Request *sr = mtest_malloc((size_t)NMSG * peers * sizeof *sr);
    MPI_Status *st = mtest_malloc((size_t)NMSG * peers * sizeof *st);
    for (int k = 0; k < NMSG; k++) {
        out[k] = mtest_malloc(size_of(k));
        mtest_fill(out[k], size_of(k), mtest_rank, k);
        in[k] = mtest_malloc(peers * sizeof **in);
        for (int p = 0; p < peers; p++) {
            in[k][p] = mtest_malloc(size_of(k));
            memset(in[k][p], 0, size_of(k));
        }
    }
    post_recvs(0, NMSG / 2, peers, in, rr);
    for (int k = 0; k < NMSG; k++)
        for (int p = 0, q = 0; p < mtest_size; p++)
            if (p != mtest_rank)
                MPI_Isend(out[k], size_of(k), MPI_BYTE, p, k, MPI_COMM_WORLD, &sr[k * peers + q++]);
    MPI_Barrier(MPI_COMM_WORLD);
    post_recvs(NMSG / 2, NMSG, peers, in, rr);
    MPI_Waitall(NMSG * peers, rr, st);
    MPI_Waitall(NMSG * peers, sr, MPI_STATUSES_IGNORE);
    for (int k = 0; k < NMSG; k++) {
        int seen = 0;
        for (int p = 0; p < peers; p++) {
            MPI_Status *s = &st[k * peers + p];
            int n = -1;
            MPI_Get_count(s, MPI_BYTE, &n);
            CHECK_EQ(n, size_of(k));
            CHECK(s->MPI_SOURCE != mtest_rank && s->MPI_SOURCE >= 0 && s->MPI_SOURCE < mtest_size,
                  "tag %d: source %d", k, s->MPI_SOURCE);
            seen |= 1 << s->MPI_SOURCE;
            CHECK_DATA(in[k][p], size_of(k), s->MPI_SOURCE, k, "window message");
            free(in[k][p]);
        }
        CHECK_EQ(seen, ((1 << mtest_size) - 1) & ~(1 << mtest_rank));
        free(in[k]);
        free(out[k]);
    }
    free(in), free(out), free(rr), free(sr), free(st);
}

static void truncated(void)
{
    int peer = mtest_partner(), len = 1048589, room = 300007;
    unsigned char *out = mtest_malloc(len), *in = mtest_malloc(len);
    MPI_Request r;
    MPI_Status st;
    mtest_fill(out, len, mtest_rank, 77);
    memset(in, 0x5a, len);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Isend(out, len, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &r);
    int rc = MPI_Recv(in, room, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &st);
    CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK_DATA(in, room, peer, 77, "truncated message");
    for (int i = room; i < len; i++)
        if (in[i] != 0x5a) {
            CHECK(in[i] == 0x5a, "byte %d beyond the receive count was overwritten", i);
            break;
        }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    free(out), free(in);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    window();
    truncated();
    return MTest_Finalize();
}
