/*
 * coll_persist.c - MPI-4.0 persistent collectives (5.13) and large-count (_c) collectives:
 *  - every _init form (Barrier, Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v,w),
 *    Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan, Neighbor_allgather(v),
 *    Neighbor_alltoall(v,w) on a periodic ring) is created once, then started 3 times with
 *    new buffer contents before each start: alternately one by one (MPI_Start + MPI_Wait) and
 *    all together (MPI_Startall + MPI_Waitall); after each round every result is checked
 *    against a serial reference; the requests stay allocated (inactive) between rounds and
 *    are freed with MPI_Request_free at the end;
 *  - a few MPI_Count/MPI_Aint forms with small counts: Bcast_c, Allreduce_c, Gatherv_c,
 *    Alltoallv_c, Iallgather_c, Reduce_scatter_block_init_c.
 * Needs MPI 4.0 (not in Open MPI 4.1). Runs with any number of ranks.
 */
#include "mtest.h"

#define NP 19
#define C 2

static int P, me;

static int v(int s, int from, int to, int k) { return s * 100000 + from * 1000 + to * 10 + k; }

static int *ia(int n) { return mtest_malloc((n > 0 ? n : 1) * sizeof(int)); }

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    MPI_Comm w = MPI_COMM_WORLD, ring;
    int periods[1] = {1}, dims[1] = {P};
    CALL(MPI_Cart_create(w, 1, dims, periods, 0, &ring));
    int down, up;
    CALL(MPI_Cart_shift(ring, 0, 1, &down, &up));
    int root = P / 2;

    int bc[C], g[C], *gall = ia(C * P), *gv = ia(C * P), sc[C], *scall = ia(C * P), scv[C];
    int ag[C], *agall = ia(C * P), *agv = ia(C * P), *a2s = ia(C * P), *a2r = ia(C * P);
    int *avs = ia(C * P), *avr = ia(C * P), *aws = ia(C * P), *awr = ia(C * P);
    int red[C], redo[C], ar[C], aro[C], *rsin = ia(C * P), rso[C], *rsbin = ia(C * P), rsbo[C];
    int scn[C], scno[C], ex[C], exo[C], nag[2 * C], na2s[2 * C], na2r[2 * C], nagv[2 * C], na2vr[2 * C], na2wr[2 * C];
    int *cnt = ia(P), *dsp = ia(P), *cnt1 = ia(P), *dspb = ia(P), ncnt[2] = {C, C}, ndsp[2] = {0, C};
    MPI_Aint ndspb[2] = {0, C * sizeof(int)};
    MPI_Datatype *types = mtest_malloc(P * sizeof(MPI_Datatype)), ntypes[2] = {MPI_INT, MPI_INT};
    for (int r = 0; r < P; r++) {
        cnt[r] = C;
        dsp[r] = C * (P - 1 - r); /* backwards */
        cnt1[r] = 1;
        dspb[r] = (int)sizeof(int) * C * (P - 1 - r);
        types[r] = MPI_INT;
    }
    MPI_Request rq[NP];
    int n = 0;
    CALL(MPI_Barrier_init(w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Bcast_init(bc, C, MPI_INT, root, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Gather_init(g, C, MPI_INT, gall, C, MPI_INT, root, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Gatherv_init(g, C, MPI_INT, gv, cnt, dsp, MPI_INT, 0, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Scatter_init(scall, C, MPI_INT, sc, C, MPI_INT, root, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Scatterv_init(scall, cnt, dsp, MPI_INT, scv, C, MPI_INT, P - 1, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Allgather_init(ag, C, MPI_INT, agall, C, MPI_INT, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Allgatherv_init(ag, C, MPI_INT, agv, cnt, dsp, MPI_INT, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Alltoall_init(a2s, C, MPI_INT, a2r, C, MPI_INT, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Alltoallv_init(avs, cnt, dsp, MPI_INT, avr, cnt, dsp, MPI_INT, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Alltoallw_init(aws, cnt, dspb, types, awr, cnt, dspb, types, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Reduce_init(red, redo, C, MPI_INT, MPI_SUM, root, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Allreduce_init(ar, aro, C, MPI_INT, MPI_MAX, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Reduce_scatter_init(rsin, rso, cnt, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Reduce_scatter_block_init(rsbin, rsbo, C, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Scan_init(scn, scno, C, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq[n++]));
    CALL(MPI_Exscan_init(ex, exo, C, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq[n++]));
    MPI_Request nrq[5];
    CALL(MPI_Neighbor_allgather_init(ag, C, MPI_INT, nag, C, MPI_INT, ring, MPI_INFO_NULL, &nrq[0]));
    CALL(MPI_Neighbor_alltoall_init(na2s, C, MPI_INT, na2r, C, MPI_INT, ring, MPI_INFO_NULL, &nrq[1]));
    CALL(MPI_Neighbor_allgatherv_init(ag, C, MPI_INT, nagv, ncnt, ndsp, MPI_INT, ring, MPI_INFO_NULL, &nrq[2]));
    CALL(MPI_Neighbor_alltoallv_init(na2s, ncnt, ndsp, MPI_INT, na2vr, ncnt, ndsp, MPI_INT, ring, MPI_INFO_NULL,
                                     &nrq[3]));
    CALL(MPI_Neighbor_alltoallw_init(na2s, ncnt, ndspb, ntypes, na2wr, ncnt, ndspb, ntypes, ring, MPI_INFO_NULL,
                                     &nrq[4]));

    for (int s = 1; s <= 3; s++) {
        /* new contents */
        for (int k = 0; k < C; k++) {
            bc[k] = me == root ? v(s, root, 0, k) : -1;
            g[k] = v(s, me, 1, k);
            ag[k] = v(s, me, 2, k);
            red[k] = v(s, me, 3, k);
            ar[k] = (me * 3 + k + s) % 7;
            scn[k] = v(s, me, 4, k);
            ex[k] = v(s, me, 5, k);
            sc[k] = scv[k] = rso[k] = rsbo[k] = -1;
        }
        for (int i = 0; i < C * P; i++) {
            int r = i / C, k = i % C;
            scall[C * (P - 1 - r) + k] = v(s, 9, r, k); /* block for r at dsp[r]; Scatter reads block r at C*r */
            a2s[i] = v(s, me, r, k);
            avs[dsp[r] + k] = v(s, me, r, k + 5);
            aws[dsp[r] + k] = v(s, me, r, k + 7);
            rsin[i] = v(s, me, 6, i);
            rsbin[i] = v(s, me, 7, i);
            gall[i] = gv[i] = agall[i] = agv[i] = a2r[i] = avr[i] = awr[i] = -1;
        }
        for (int i = 0; i < 2 * C; i++) {
            na2s[i] = v(s, me, i / C, i % C + 8);
            nag[i] = na2r[i] = nagv[i] = na2vr[i] = na2wr[i] = -1;
        }
        if (s % 2) {
            CALL(MPI_Startall(n, rq));
            CALL(MPI_Startall(5, nrq));
            CALL(MPI_Waitall(5, nrq, MPI_STATUSES_IGNORE));
            CALL(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE));
        } else {
            for (int i = 0; i < n; i++) {
                CALL(MPI_Start(&rq[i]));
                CALL(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
            }
            for (int i = 0; i < 5; i++) {
                CALL(MPI_Start(&nrq[i]));
                CALL(MPI_Wait(&nrq[i], MPI_STATUS_IGNORE));
            }
        }
        for (int i = 0; i < n; i++)
            CHECK(rq[i] != MPI_REQUEST_NULL, "persistent request %d freed by its completion", i);
#define EXPECT(what, got, want)                                                                         \
    do {                                                                                                \
        if ((got) != (want)) {                                                                          \
            FAIL("round %d: %s is %d, want %d", s, what, (int)(got), (int)(want));                        \
            goto next;                                                                                  \
        }                                                                                               \
    } while (0)
        for (int k = 0; k < C; k++) {
            EXPECT("Bcast_init element", bc[k], v(s, root, 0, k));
            EXPECT("Scatter_init element", sc[k], v(s, 9, P - 1 - me, k)); /* block me sits at C*me */
            EXPECT("Scatterv_init element", scv[k], v(s, 9, me, k));
            int sum = 0, mx = 0, inc = 0, exc = 0;
            for (int r = 0; r < P; r++) {
                sum += v(s, r, 3, k);
                mx = (r * 3 + k + s) % 7 > mx ? (r * 3 + k + s) % 7 : mx;
                inc += r <= me ? v(s, r, 4, k) : 0;
                exc += r < me ? v(s, r, 5, k) : 0;
            }
            if (me == root)
                EXPECT("Reduce_init element", redo[k], sum);
            EXPECT("Allreduce_init element", aro[k], mx);
            EXPECT("Scan_init element", scno[k], inc);
            if (me > 0)
                EXPECT("Exscan_init element", exo[k], exc);
            int rs = 0, rsb = 0;
            for (int r = 0; r < P; r++) {
                rs += v(s, r, 6, C * me + k);
                rsb += v(s, r, 7, C * me + k);
            }
            EXPECT("Reduce_scatter_init element", rso[k], rs);
            EXPECT("Reduce_scatter_block_init element", rsbo[k], rsb);
            /* ring: block 0 from below (its "up" block 1), block 1 from above (its block 0) */
            EXPECT("Neighbor_allgather_init element", nag[k], v(s, down, 2, k));
            EXPECT("Neighbor_allgather_init element", nag[C + k], v(s, up, 2, k));
            EXPECT("Neighbor_allgatherv_init element", nagv[C + k], v(s, up, 2, k));
            EXPECT("Neighbor_alltoall_init element", na2r[k], v(s, down, 1, k + 8));
            EXPECT("Neighbor_alltoall_init element", na2r[C + k], v(s, up, 0, k + 8));
            EXPECT("Neighbor_alltoallv_init element", na2vr[k], v(s, down, 1, k + 8));
            EXPECT("Neighbor_alltoallw_init element", na2wr[C + k], v(s, up, 0, k + 8));
        }
        for (int r = 0; r < P; r++)
            for (int k = 0; k < C; k++) {
                if (me == root)
                    EXPECT("Gather_init element", gall[C * r + k], v(s, r, 1, k));
                if (me == 0)
                    EXPECT("Gatherv_init element", gv[dsp[r] + k], v(s, r, 1, k));
                EXPECT("Allgather_init element", agall[C * r + k], v(s, r, 2, k));
                EXPECT("Allgatherv_init element", agv[dsp[r] + k], v(s, r, 2, k));
                EXPECT("Alltoall_init element", a2r[C * r + k], v(s, r, me, k));
                EXPECT("Alltoallv_init element", avr[dsp[r] + k], v(s, r, me, k + 5));
                EXPECT("Alltoallw_init element", awr[dsp[r] + k], v(s, r, me, k + 7));
            }
    next:;
    }
    for (int i = 0; i < n; i++)
        CALL(MPI_Request_free(&rq[i]));
    for (int i = 0; i < 5; i++)
        CALL(MPI_Request_free(&nrq[i]));

    /* large-count forms with small counts */
    {
        MPI_Count cc = C, *cnts = mtest_malloc(P * sizeof(MPI_Count));
        MPI_Aint *dsps = mtest_malloc(P * sizeof(MPI_Aint));
        int buf[C], *all = ia(C * P), *out = ia(C * P);
        for (int r = 0; r < P; r++) {
            cnts[r] = C;
            dsps[r] = C * (P - 1 - r);
        }
        for (int k = 0; k < C; k++)
            buf[k] = me == 0 ? 40 + k : -1;
        CALL(MPI_Bcast_c(buf, cc, MPI_INT, 0, w));
        for (int k = 0; k < C; k++)
            CHECK(buf[k] == 40 + k, "Bcast_c element %d is %d", k, buf[k]);
        for (int k = 0; k < C; k++)
            buf[k] = me + k;
        int sum[C];
        CALL(MPI_Allreduce_c(buf, sum, cc, MPI_INT, MPI_SUM, w));
        for (int k = 0; k < C; k++)
            CHECK(sum[k] == P * (P - 1) / 2 + P * k, "Allreduce_c element %d is %d", k, sum[k]);
        CALL(MPI_Gatherv_c(buf, cc, MPI_INT, all, cnts, dsps, MPI_INT, P - 1, w));
        if (me == P - 1)
            for (int r = 0; r < P; r++)
                for (int k = 0; k < C; k++)
                    CHECK(all[dsps[r] + k] == r + k, "Gatherv_c: rank %d element %d is %d", r, k, all[dsps[r] + k]);
        for (int i = 0; i < C * P; i++)
            all[i] = v(0, me, i / C, i % C);
        CALL(MPI_Alltoallv_c(all, cnts, dsps, MPI_INT, out, cnts, dsps, MPI_INT, w));
        /* block for rank r is read at dsps[r] = C*(P-1-r): that is all[] block P-1-r */
        for (int r = 0; r < P; r++)
            for (int k = 0; k < C; k++)
                CHECK(out[dsps[r] + k] == v(0, r, P - 1 - me, k), "Alltoallv_c: from %d element %d is %d", r, k,
                      out[dsps[r] + k]);
        MPI_Request q;
        CALL(MPI_Iallgather_c(buf, cc, MPI_INT, out, cc, MPI_INT, w, &q));
        CALL(MPI_Wait(&q, MPI_STATUS_IGNORE));
        for (int i = 0; i < C * P; i++)
            CHECK(out[i] == i / C + i % C, "Iallgather_c element %d is %d", i, out[i]);
        for (int i = 0; i < C * P; i++)
            all[i] = i;
        CALL(MPI_Reduce_scatter_block_init_c(all, sum, cc, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &q));
        for (int round = 0; round < 2; round++) {
            CALL(MPI_Start(&q));
            CALL(MPI_Wait(&q, MPI_STATUS_IGNORE));
            for (int k = 0; k < C; k++)
                CHECK(sum[k] == P * (C * me + k), "Reduce_scatter_block_init_c element %d is %d", k, sum[k]);
        }
        CALL(MPI_Request_free(&q));
        free(cnts);
        free(dsps);
        free(all);
        free(out);
    }
    MPI_Comm_free(&ring);
    return MTest_Finalize();
}
