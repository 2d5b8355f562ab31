/*
 * coll_nb.c - every nonblocking collective of MPI-3.1 5.12 outstanding at the same time on one
 * communicator, interleaved with point-to-point traffic on that communicator, and completed in
 * an order different from the start order. Per iteration (4, each with new buffer contents):
 *  - a specific and a wildcard (ANY_SOURCE, ANY_TAG) receive are posted first: collective
 *    traffic must never match them, they get exactly the two point-to-point messages;
 *  - Ibarrier, Ibcast (small and 800 KB), Igather, Igatherv, Iscatter, Iscatterv, Iallgather,
 *    Iallgatherv, Ialltoall, Ialltoallv, Ialltoallw, Ireduce, Iallreduce (small and 80,000
 *    doubles), Ireduce_scatter, Ireduce_scatter_block, Iscan and Iexscan are started, with
 *    the two Isends placed among them, at different roots;
 *  - completion: Waitall over the reversed array, a Testany loop, a Waitsome loop, and
 *    single Waits in a scattered order; then every result is checked against a serial
 *    reference and every request must be MPI_REQUEST_NULL;
 *  - a barrier closes the iteration, so the next one's messages cannot meet its wildcard.
 * Runs with any number of ranks.
 */
#include "mtest.h"

#define MAXREQ 32
#define BIG (200 * 1000)   /* ints in the large Ibcast */
#define BIGR (80 * 1000)   /* doubles in the large Iallreduce */

static int P, me;

static int v(int seed, int from, int to, int k) { return seed * 1000000 + from * 10000 + to * 100 + k % 100; }

struct bufs {
    int bc[10], *bcbig, g[3], *gall, *gv, gvmine[3], *sc, scme[2], *scv, scvme[3];
    int ag[2], *agall, *agv, *a2as, *a2ar, *avs, *avr, *aws, *awr;
    int red[4], redout[4], ar[4], arout[4], *rsin, rsout[2], *rsbin, rsbout[2], scan[3], scanout[3], ex[3], exout[3];
    double *bigin, *bigout;
    int p2p1[100], p2p2[100], got1[100], got2[100];
    int *cnt_gv, *dsp_gv, *cnt_scv, *dsp_scv, *cnt_agv, *dsp_agv, *cnt_a, *dsp_as, *dsp_ar, *cnt_rs, *dsp_w;
    MPI_Datatype *types;
};

static int count_gv(int r) { return r % 3; }
static int count_scv(int r) { return (r + 1) % 3; }
static int count_agv(int r) { return r % 2 + 1; }
static int count_a(int i, int j) { return (i + j) % 3; }
static int count_rs(int r) { return r % 2 + (r == 0); }

static void setup(struct bufs *b)
{
    b->bcbig = mtest_malloc(BIG * sizeof(int));
    b->gall = mtest_malloc(3 * P * sizeof(int));
    b->gv = mtest_malloc(3 * P * sizeof(int));
    b->sc = mtest_malloc(2 * P * sizeof(int));
    b->scv = mtest_malloc(3 * P * sizeof(int));
    b->agall = mtest_malloc(2 * P * sizeof(int));
    b->agv = mtest_malloc(2 * P * sizeof(int));
    b->a2as = mtest_malloc(2 * P * sizeof(int));
    b->a2ar = mtest_malloc(2 * P * sizeof(int));
    b->avs = mtest_malloc(3 * P * sizeof(int));
    b->avr = mtest_malloc(3 * P * sizeof(int));
    b->aws = mtest_malloc(P * sizeof(int));
    b->awr = mtest_malloc(P * sizeof(int));
    b->rsin = mtest_malloc(2 * P * sizeof(int));
    b->rsbin = mtest_malloc(2 * P * sizeof(int));
    b->bigin = mtest_malloc(BIGR * sizeof(double));
    b->bigout = mtest_malloc(BIGR * sizeof(double));
    int **arrays[] = {&b->cnt_gv, &b->dsp_gv, &b->cnt_scv, &b->dsp_scv, &b->cnt_agv, &b->dsp_agv,
                      &b->cnt_a, &b->dsp_as, &b->dsp_ar, &b->cnt_rs, &b->dsp_w};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        *arrays[i] = mtest_malloc(P * sizeof(int));
    b->types = mtest_malloc(P * sizeof(MPI_Datatype));
    int at_gv = 0, at_scv = 0, at_agv = 0;
    for (int r = P - 1; r >= 0; r--) { /* backwards displacements */
        b->cnt_gv[r] = count_gv(r), b->dsp_gv[r] = at_gv, at_gv += count_gv(r);
        b->cnt_scv[r] = count_scv(r), b->dsp_scv[r] = at_scv, at_scv += count_scv(r);
        b->cnt_agv[r] = count_agv(r), b->dsp_agv[r] = at_agv, at_agv += count_agv(r);
    }
    for (int r = 0; r < P; r++) {
        b->cnt_a[r] = 3; /* send and receive counts differ per pair below */
        b->dsp_as[r] = 3 * r;
        b->dsp_ar[r] = 3 * (P - 1 - r);
        b->cnt_rs[r] = count_rs(r);
        b->dsp_w[r] = (int)sizeof(int) * ((r + 1) % P);
        b->types[r] = MPI_INT;
    }
}

static void fill(struct bufs *b, int s)
{
    for (int k = 0; k < 10; k++)
        b->bc[k] = me == 0 ? v(s, 0, 0, k) : -1;
    for (int k = 0; k < BIG; k++)
        b->bcbig[k] = me == P - 1 ? v(s, P - 1, 1, k) + k : -1;
    for (int k = 0; k < 3; k++) {
        b->g[k] = v(s, me, 2, k);
        b->gvmine[k] = v(s, me, 3, k);
        b->scvme[k] = -1;
        b->scan[k] = v(s, me, 4, k);
        b->ex[k] = v(s, me, 5, k);
    }
    for (int i = 0; i < 3 * P; i++) {
        b->gall[i] = b->gv[i] = -1;
        b->scv[i] = -1;
        b->avs[i] = b->avr[i] = -1;
    }
    for (int r = 0; r < P; r++)
        for (int k = 0; k < count_scv(r); k++)
            b->scv[b->dsp_scv[r] + k] = v(s, P - 1, r, k);
    for (int i = 0; i < 2 * P; i++) {
        b->sc[i] = v(s, 0, i / 2, i % 2);
        b->agall[i] = b->agv[i] = -1;
        b->a2as[i] = v(s, me, i / 2, i % 2);
        b->a2ar[i] = -1;
        b->rsin[i] = v(s, me, 6, i);
        b->rsbin[i] = v(s, me, 7, i);
    }
    for (int k = 0; k < 2; k++) {
        b->scme[k] = b->rsout[k] = b->rsbout[k] = -1;
        b->ag[k] = v(s, me, 8, k);
    }
    for (int r = 0; r < P; r++) {
        for (int k = 0; k < count_a(me, r); k++)
            b->avs[3 * r + k] = v(s, me, r, k + 10);
        b->aws[(r + 1) % P] = v(s, me, r, 20); /* sent to r from byte displacement dsp_w[r] */
        b->awr[r] = -1;
    }
    for (int k = 0; k < 4; k++) {
        b->red[k] = v(s, me, 9, k);
        b->ar[k] = (me * 7 + k * 3 + s) % 11;
        b->redout[k] = b->arout[k] = -1;
    }
    for (int k = 0; k < BIGR; k++) {
        b->bigin[k] = (double)((me + k + s) % 5);
        b->bigout[k] = -1;
    }
    for (int k = 0; k < 100; k++) {
        b->p2p1[k] = v(s, me, 11, k);
        b->p2p2[k] = v(s, me, 12, k);
        b->got1[k] = b->got2[k] = -1;
    }
}

/* Starts everything; returns the number of requests. */
static int start(struct bufs *b, MPI_Request *rq)
{
    int n = 0, left = (me + P - 1) % P, right = (me + 1) % P;
    MPI_Comm w = MPI_COMM_WORLD;
    CALL(MPI_Irecv(b->got1, 100, MPI_INT, left, 1, w, &rq[n++]));
    CALL(MPI_Irecv(b->got2, 100, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &rq[n++]));
    CALL(MPI_Ibarrier(w, &rq[n++]));
    CALL(MPI_Ibcast(b->bc, 10, MPI_INT, 0, w, &rq[n++]));
    CALL(MPI_Isend(b->p2p1, 100, MPI_INT, right, 1, w, &rq[n++]));
    CALL(MPI_Ibcast(b->bcbig, BIG, MPI_INT, P - 1, w, &rq[n++]));
    CALL(MPI_Igather(b->g, 3, MPI_INT, b->gall, 3, MPI_INT, P - 1, w, &rq[n++]));
    CALL(MPI_Igatherv(b->gvmine, count_gv(me), MPI_INT, b->gv, b->cnt_gv, b->dsp_gv, MPI_INT, 1 % P, w, &rq[n++]));
    CALL(MPI_Iscatter(b->sc, 2, MPI_INT, b->scme, 2, MPI_INT, 0, w, &rq[n++]));
    CALL(MPI_Iscatterv(b->scv, b->cnt_scv, b->dsp_scv, MPI_INT, b->scvme, count_scv(me), MPI_INT, P - 1, w, &rq[n++]));
    CALL(MPI_Iallgather(b->ag, 2, MPI_INT, b->agall, 2, MPI_INT, w, &rq[n++]));
    CALL(MPI_Iallgatherv(b->ag, count_agv(me), MPI_INT, b->agv, b->cnt_agv, b->dsp_agv, MPI_INT, w, &rq[n++]));
    CALL(MPI_Ialltoall(b->a2as, 2, MPI_INT, b->a2ar, 2, MPI_INT, w, &rq[n++]));
    static int a2v_sc[64], a2v_rc[64];
    for (int r = 0; r < P && r < 64; r++) {
        a2v_sc[r] = count_a(me, r);
        a2v_rc[r] = count_a(r, me);
    }
    CALL(MPI_Ialltoallv(b->avs, a2v_sc, b->dsp_as, MPI_INT, b->avr, a2v_rc, b->dsp_ar, MPI_INT, w, &rq[n++]));
    static int ones[64];
    for (int r = 0; r < P && r < 64; r++)
        ones[r] = 1;
    CALL(MPI_Isend(b->p2p2, 100, MPI_INT, left, 2, w, &rq[n++]));
    CALL(MPI_Ialltoallw(b->aws, ones, b->dsp_w, b->types, b->awr, ones, b->dsp_w, b->types, w, &rq[n++]));
    CALL(MPI_Ireduce(b->red, b->redout, 4, MPI_INT, MPI_SUM, P / 2, w, &rq[n++]));
    CALL(MPI_Iallreduce(b->ar, b->arout, 4, MPI_INT, MPI_MAX, w, &rq[n++]));
    CALL(MPI_Iallreduce(b->bigin, b->bigout, BIGR, MPI_DOUBLE, MPI_SUM, w, &rq[n++]));
    CALL(MPI_Ireduce_scatter(b->rsin, b->rsout, b->cnt_rs, MPI_INT, MPI_SUM, w, &rq[n++]));
    CALL(MPI_Ireduce_scatter_block(b->rsbin, b->rsbout, 2, MPI_INT, MPI_SUM, w, &rq[n++]));
    CALL(MPI_Iscan(b->scan, b->scanout, 3, MPI_INT, MPI_SUM, w, &rq[n++]));
    CALL(MPI_Iexscan(b->ex, b->exout, 3, MPI_INT, MPI_SUM, w, &rq[n++]));
    return n;
}

static void complete(int mode, int n, MPI_Request *rq)
{
    MPI_Request rev[MAXREQ];
    int idx[MAXREQ], done = 0;
    switch (mode) {
    case 0: /* Waitall over the reversed array */
        for (int i = 0; i < n; i++)
            rev[i] = rq[n - 1 - i];
        CALL(MPI_Waitall(n, rev, MPI_STATUSES_IGNORE));
        for (int i = 0; i < n; i++)
            rq[n - 1 - i] = rev[i];
        break;
    case 1: /* Testany until nothing is active */
        for (;;) {
            int i = -1, flag = 0;
            CALL(MPI_Testany(n, rq, &i, &flag, MPI_STATUS_IGNORE));
            if (flag && i == MPI_UNDEFINED)
                break;
            if (flag)
                done++;
        }
        CHECK_EQ(done, n);
        break;
    case 2: /* Waitsome */
        while (done < n) {
            int outcount = 0;
            CALL(MPI_Waitsome(n, rq, &outcount, idx, MPI_STATUSES_IGNORE));
            if (outcount == MPI_UNDEFINED)
                break;
            done += outcount;
        }
        CHECK_EQ(done, n);
        break;
    default: /* single waits, scattered order (7 is coprime with every n used here but 7, 14, 21) */
        for (int i = 0; i < n; i++) {
            int k = n % 7 ? (i * 7) % n : n - 1 - i;
            CALL(MPI_Wait(&rq[k], MPI_STATUS_IGNORE));
        }
    }
    for (int i = 0; i < n; i++)
        CHECK(rq[i] == MPI_REQUEST_NULL, "completion mode %d: request %d not freed", mode, i);
}

#define EXPECT(what, got, want)                                                                        \
    do {                                                                                               \
        long long g_ = (got), w_ = (want);                                                             \
        if (g_ != w_) {                                                                                \
            FAIL("iteration %d: %s is %lld, want %lld", s, what, g_, w_);                               \
            return;                                                                                    \
        }                                                                                              \
    } while (0)

static void check(struct bufs *b, int s)
{
    int left = (me + P - 1) % P, right = (me + 1) % P;
    for (int k = 0; k < 100; k++) {
        EXPECT("p2p (specific) element", b->got1[k], v(s, left, 11, k));
        EXPECT("p2p (wildcard) element", b->got2[k], v(s, right, 12, k));
    }
    for (int k = 0; k < 10; k++)
        EXPECT("Ibcast element", b->bc[k], v(s, 0, 0, k));
    for (int k = 0; k < BIG; k++)
        EXPECT("Ibcast (large) element", b->bcbig[k], v(s, P - 1, 1, k) + k);
    if (me == P - 1)
        for (int i = 0; i < 3 * P; i++)
            EXPECT("Igather element", b->gall[i], v(s, i / 3, 2, i % 3));
    if (me == 1 % P)
        for (int r = 0; r < P; r++)
            for (int k = 0; k < count_gv(r); k++)
                EXPECT("Igatherv element", b->gv[b->dsp_gv[r] + k], v(s, r, 3, k));
    for (int k = 0; k < 2; k++)
        EXPECT("Iscatter element", b->scme[k], v(s, 0, me, k));
    for (int k = 0; k < 3; k++)
        EXPECT("Iscatterv element", b->scvme[k], k < count_scv(me) ? v(s, P - 1, me, k) : -1);
    for (int i = 0; i < 2 * P; i++) {
        EXPECT("Iallgather element", b->agall[i], v(s, i / 2, 8, i % 2));
        EXPECT("Ialltoall element", b->a2ar[i], v(s, i / 2, me, i % 2));
    }
    for (int r = 0; r < P; r++)
        for (int k = 0; k < count_agv(r); k++)
            EXPECT("Iallgatherv element", b->agv[b->dsp_agv[r] + k], v(s, r, 8, k));
    for (int r = 0; r < P; r++) {
        for (int k = 0; k < 3; k++)
            EXPECT("Ialltoallv element", b->avr[b->dsp_ar[r] + k], k < count_a(r, me) ? v(s, r, me, k + 10) : -1);
        EXPECT("Ialltoallw element", b->awr[(r + 1) % P], v(s, r, me, 20));
    }
    for (int k = 0; k < 4; k++) {
        int sum = 0, mx = -1;
        for (int r = 0; r < P; r++) {
            sum += v(s, r, 9, k);
            mx = (r * 7 + k * 3 + s) % 11 > mx ? (r * 7 + k * 3 + s) % 11 : mx;
        }
        if (me == P / 2)
            EXPECT("Ireduce element", b->redout[k], sum);
        EXPECT("Iallreduce element", b->arout[k], mx);
    }
    for (int k = 0; k < BIGR; k++) {
        double sum = 0;
        for (int r = 0; r < P; r++)
            sum += (r + k + s) % 5;
        EXPECT("Iallreduce (large) element", (long long)b->bigout[k], (long long)sum);
    }
    int before = 0;
    for (int r = 0; r < me; r++)
        before += count_rs(r);
    for (int k = 0; k < count_rs(me); k++) {
        int sum = 0;
        for (int r = 0; r < P; r++)
            sum += v(s, r, 6, before + k);
        EXPECT("Ireduce_scatter element", b->rsout[k], sum);
    }
    for (int k = 0; k < 2; k++) {
        int sum = 0;
        for (int r = 0; r < P; r++)
            sum += v(s, r, 7, 2 * me + k);
        EXPECT("Ireduce_scatter_block element", b->rsbout[k], sum);
    }
    for (int k = 0; k < 3; k++) {
        int inc = 0, exc = 0;
        for (int r = 0; r <= me; r++) {
            inc += v(s, r, 4, k);
            exc += r < me ? v(s, r, 5, k) : 0;
        }
        EXPECT("Iscan element", b->scanout[k], inc);
        if (me > 0)
            EXPECT("Iexscan element", b->exout[k], exc);
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    if (P > 64) {
        if (me == 0)
            fprintf(stderr, "coll_nb runs with at most 64 ranks\n");
        return MTest_Finalize();
    }
    struct bufs b;
    setup(&b);
    for (int s = 0; s < 4; s++) {
        MPI_Request rq[MAXREQ];
        fill(&b, s);
        int n = start(&b, rq);
        complete(s, n, rq);
        check(&b, s);
        /* Messages from different senders are not ordered: without this barrier a neighbour
         * already in the next iteration could send a message that this iteration's wildcard
         * receive legitimately matches. */
        CALL(MPI_Barrier(MPI_COMM_WORLD));
    }
    return MTest_Finalize();
}
