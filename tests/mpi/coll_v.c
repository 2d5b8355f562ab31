/*
 * coll_v.c - the vector collectives against a serial reference (MPI-3.1 5.5-5.8): Gatherv,
 * Scatterv, Allgatherv, Alltoallv and Alltoallw with uneven counts (some zero), displacements
 * that run backwards with gaps between the blocks, and buffers pre-filled with a sentinel so
 * that gaps and unused tails must come back untouched. Gatherv/Scatterv run at every root;
 * Allgatherv also with blocks of up to ~4 KiB (past Reflex's one-round limit: the ring); Alltoallw
 * mixes MPI_INT and MPI_SHORT blocks (type chosen per pair, so both sides agree). Runs with any
 * number of ranks.
 */
#include "mtest.h"

#define SENT (-99)

static int P, me;

/* Element k of the block rank `from` contributes for rank `to`. */
static int val(int from, int to, int k) { return from * 10000 + to * 100 + k % 100 + k / 100 * 1000000; }

/* Uneven per-rank count (rank 1 of every 4 gives nothing), scaled. */
static int vcount(int r, int scale) { return ((r * 3 + 1) % 4) * scale; }

/* Displacements that run backwards: rank P-1 first, one free element between blocks. Returns
 * the total number of elements the layout spans. */
static int backwards(const int *counts, int *displs)
{
    int at = 0;
    for (int r = P - 1; r >= 0; r--) {
        displs[r] = at;
        at += counts[r] + 1;
    }
    return at;
}

/* Checks buf (span elements) holds rank r's block at displs[r] (val(r, tag, k)) and SENT elsewhere. */
static void check_layout(const char *what, const int *buf, int span, const int *counts, const int *displs, int tag,
                         int root)
{
    int *want = mtest_malloc(span * sizeof(int));
    for (int i = 0; i < span; i++)
        want[i] = SENT;
    for (int r = 0; r < P; r++)
        for (int k = 0; k < counts[r]; k++)
            want[displs[r] + k] = val(r, tag, k);
    for (int i = 0; i < span; i++)
        if (buf[i] != want[i]) {
            FAIL("%s root %d: element %d is %d, want %d", what, root, i, buf[i], want[i]);
            break;
        }
    free(want);
}

static void gatherv_scatterv(int scale)
{
    int *counts = mtest_malloc(P * sizeof(int)), *displs = mtest_malloc(P * sizeof(int));
    for (int r = 0; r < P; r++)
        counts[r] = vcount(r, scale);
    int span = backwards(counts, displs);
    int mine = counts[me];
    int *sbuf = mtest_malloc((mine + 1) * sizeof(int)), *rbuf = mtest_malloc(span * sizeof(int));
    for (int root = 0; root < P; root++) {
        /* Gatherv: every block lands at its displacement, gaps keep the sentinel. */
        for (int k = 0; k < mine; k++)
            sbuf[k] = val(me, 0, k);
        for (int i = 0; i < span; i++)
            rbuf[i] = SENT;
        CALL(MPI_Gatherv(sbuf, mine, MPI_INT, rbuf, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
        if (me == root)
            check_layout("Gatherv", rbuf, span, counts, displs, 0, root);
        else
            for (int i = 0; i < span; i++)
                CHECK(rbuf[i] == SENT, "Gatherv root %d: non-root receive buffer written at %d", root, i);

        /* Scatterv: the root's layout cut into blocks; nothing past the count is written. */
        if (me == root)
            for (int r = 0; r < P; r++)
                for (int k = 0; k < counts[r]; k++)
                    rbuf[displs[r] + k] = val(root, r, k);
        for (int k = 0; k <= mine; k++)
            sbuf[k] = SENT;
        CALL(MPI_Scatterv(rbuf, counts, displs, MPI_INT, sbuf, mine, MPI_INT, root, MPI_COMM_WORLD));
        for (int k = 0; k < mine; k++)
            if (sbuf[k] != val(root, me, k)) {
                FAIL("Scatterv root %d: element %d is %d, want %d", root, k, sbuf[k], val(root, me, k));
                break;
            }
        CHECK(sbuf[mine] == SENT, "Scatterv root %d wrote past the count", root);
    }
    free(counts);
    free(displs);
    free(sbuf);
    free(rbuf);
}

static void allgatherv(int scale)
{
    int *counts = mtest_malloc(P * sizeof(int)), *displs = mtest_malloc(P * sizeof(int));
    for (int r = 0; r < P; r++)
        counts[r] = vcount(r, scale);
    int span = backwards(counts, displs);
    int *sbuf = mtest_malloc((counts[me] + 1) * sizeof(int)), *rbuf = mtest_malloc(span * sizeof(int));
    for (int k = 0; k < counts[me]; k++)
        sbuf[k] = val(me, 0, k);
    for (int i = 0; i < span; i++)
        rbuf[i] = SENT;
    CALL(MPI_Allgatherv(sbuf, counts[me], MPI_INT, rbuf, counts, displs, MPI_INT, MPI_COMM_WORLD));
    check_layout(scale > 10 ? "Allgatherv (large)" : "Allgatherv", rbuf, span, counts, displs, 0, -1);
    free(counts);
    free(displs);
    free(sbuf);
    free(rbuf);
}

/* Elements rank i sends rank j in the alltoallv/w tests (zero for some pairs). */
static int pair_count(int i, int j) { return (i + 2 * j) % 3 * 2 + (i == j); }

static void alltoallv(void)
{
    int *sc = mtest_malloc(P * sizeof(int)), *sd = mtest_malloc(P * sizeof(int));
    int *rc = mtest_malloc(P * sizeof(int)), *rd = mtest_malloc(P * sizeof(int));
    int sspan = 0, rspan = 0;
    for (int r = 0; r < P; r++) {
        sc[r] = pair_count(me, r);
        rc[r] = pair_count(r, me);
    }
    /* send blocks backwards with gaps; receive blocks in an odd-first order */
    sspan = backwards(sc, sd);
    for (int pass = 0; pass < 2; pass++)
        for (int r = pass; r < P; r += 2) {
            rd[r] = rspan;
            rspan += rc[r] + 2;
        }
    int *sbuf = mtest_malloc((sspan + 1) * sizeof(int)), *rbuf = mtest_malloc((rspan + 1) * sizeof(int));
    for (int i = 0; i < sspan; i++)
        sbuf[i] = SENT;
    for (int r = 0; r < P; r++)
        for (int k = 0; k < sc[r]; k++)
            sbuf[sd[r] + k] = val(me, r, k);
    for (int i = 0; i < rspan; i++)
        rbuf[i] = SENT;
    CALL(MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD));
    int *want = mtest_malloc((rspan + 1) * sizeof(int));
    for (int i = 0; i < rspan; i++)
        want[i] = SENT;
    for (int r = 0; r < P; r++)
        for (int k = 0; k < rc[r]; k++)
            want[rd[r] + k] = val(r, me, k);
    for (int i = 0; i < rspan; i++)
        if (rbuf[i] != want[i]) {
            FAIL("Alltoallv: element %d is %d, want %d", i, rbuf[i], want[i]);
            break;
        }
    free(want);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sbuf);
    free(rbuf);
}

/* Alltoallw: blocks between i and j are ints when i + j is even, shorts otherwise; byte
 * displacements, receive blocks packed in reverse rank order. */
static void alltoallw(void)
{
    int *sc = mtest_malloc(P * sizeof(int)), *sd = mtest_malloc(P * sizeof(int));
    int *rc = mtest_malloc(P * sizeof(int)), *rd = mtest_malloc(P * sizeof(int));
    MPI_Datatype *st = mtest_malloc(P * sizeof(MPI_Datatype)), *rt = mtest_malloc(P * sizeof(MPI_Datatype));
    int sbytes = 0, rbytes = 0;
    for (int r = 0; r < P; r++) {
        sc[r] = pair_count(me, r);
        st[r] = (me + r) % 2 ? MPI_SHORT : MPI_INT;
        sd[r] = sbytes;
        sbytes += sc[r] * 4 + 4;
    }
    for (int r = P - 1; r >= 0; r--) {
        rc[r] = pair_count(r, me);
        rt[r] = (me + r) % 2 ? MPI_SHORT : MPI_INT;
        rd[r] = rbytes;
        rbytes += rc[r] * 4 + 8;
    }
    unsigned char *sbuf = mtest_malloc(sbytes), *rbuf = mtest_malloc(rbytes), *want = mtest_malloc(rbytes);
    memset(sbuf, 0xEE, sbytes);
    memset(rbuf, 0xEE, rbytes);
    memset(want, 0xEE, rbytes);
    for (int r = 0; r < P; r++)
        for (int k = 0; k < sc[r]; k++) {
            int v = val(me, r, k) % 30000;
            if (st[r] == MPI_SHORT) {
                short s = (short)v;
                memcpy(sbuf + sd[r] + k * 2, &s, 2);
            } else
                memcpy(sbuf + sd[r] + k * 4, &v, 4);
        }
    for (int r = 0; r < P; r++)
        for (int k = 0; k < rc[r]; k++) {
            int v = val(r, me, k) % 30000;
            if (rt[r] == MPI_SHORT) {
                short s = (short)v;
                memcpy(want + rd[r] + k * 2, &s, 2);
            } else
                memcpy(want + rd[r] + k * 4, &v, 4);
        }
    CALL(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD));
    for (int i = 0; i < rbytes; i++)
        if (rbuf[i] != want[i]) {
            FAIL("Alltoallw: byte %d is 0x%02x, want 0x%02x", i, rbuf[i], want[i]);
            break;
        }
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
    free(sbuf);
    free(rbuf);
    free(want);
}

/* Every count zero: nothing moves, nothing is written. */
static void all_zero(void)
{
    int *z = mtest_malloc(P * sizeof(int)), *d = mtest_malloc(P * sizeof(int));
    MPI_Datatype *t = mtest_malloc(P * sizeof(MPI_Datatype));
    for (int r = 0; r < P; r++) {
        z[r] = 0;
        d[r] = r;
        t[r] = MPI_INT;
    }
    int s = 7, buf[1] = {SENT};
    CALL(MPI_Gatherv(&s, 0, MPI_INT, buf, z, d, MPI_INT, P - 1, MPI_COMM_WORLD));
    CALL(MPI_Scatterv(&s, z, d, MPI_INT, buf, 0, MPI_INT, 0, MPI_COMM_WORLD));
    CALL(MPI_Allgatherv(&s, 0, MPI_INT, buf, z, d, MPI_INT, MPI_COMM_WORLD));
    CALL(MPI_Alltoallv(&s, z, d, MPI_INT, buf, z, d, MPI_INT, MPI_COMM_WORLD));
    CALL(MPI_Alltoallw(&s, z, d, t, buf, z, d, t, MPI_COMM_WORLD));
    CHECK(buf[0] == SENT, "zero-count v collectives wrote %d", buf[0]);
    free(z);
    free(d);
    free(t);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    gatherv_scatterv(1);
    gatherv_scatterv(300);
    allgatherv(1);
    allgatherv(400); /* up to 1200 ints per block: the ring path */
    alltoallv();
    alltoallw();
    all_zero();
    return MTest_Finalize();
}
