/*
 * intercomm.c - intercommunicators (MPI-3.1 6.6) and their collectives (5.2.2).
 *
 * MPI_COMM_WORLD is split into group A (even world ranks) and group B (odd ones) and joined by
 * MPI_Intercomm_create through MPI_COMM_WORLD (leaders: world ranks 0 and 1). Then:
 *  - queries: Comm_test_inter, sizes, Comm_remote_group, Comm_group, Comm_compare;
 *  - point-to-point across: every process sends to every remote process, specific and
 *    ANY_SOURCE receives see the sender's rank in its own group, Sendrecv;
 *  - Comm_dup (traffic on the duplicate never meets the original's), Comm_split (colors by local
 *    rank parity, reversed keys), Comm_create (a subgroup of each side), Comm_split_type (MPI-4);
 *  - Intercomm_merge with high set by group, both ways, and with equal high on both sides;
 *  - every collective on the intercommunicator, rooted ones rooted in A and in B (MPI_ROOT /
 *    MPI_PROC_NULL; NULL where a buffer is not significant), blocking and nonblocking, checked
 *    against the other group's data;
 *  - errors: Comm_remote_size of an intracommunicator, MPI_Scan on an intercommunicator.
 * Needs at least 2 ranks (with 1 it only checks the intracommunicator queries).
 */
#include "mtest.h"

static int P, me, inA, lsize, rsize, lrank, on_reflex;

/* World rank of rank r of group A (even) or B (odd). */
static int world_in(int groupA, int r) { return groupA ? 2 * r : 2 * r + 1; }
static int remote_world(int r) { return world_in(!inA, r); }
static int val(int world, int k) { return world * 1000 + k; }

static void queries(MPI_Comm ic)
{
    int flag = 0, n = 0, cmp = -1;
    CALL(MPI_Comm_test_inter(ic, &flag));
    CHECK_EQ(flag, 1);
    CALL(MPI_Comm_size(ic, &n));
    CHECK_EQ(n, lsize);
    CALL(MPI_Comm_remote_size(ic, &n));
    CHECK_EQ(n, rsize);
    CALL(MPI_Comm_rank(ic, &n));
    CHECK_EQ(n, lrank);
    MPI_Group remote, local, world;
    CALL(MPI_Comm_remote_group(ic, &remote));
    CALL(MPI_Comm_group(ic, &local));
    CALL(MPI_Comm_group(MPI_COMM_WORLD, &world));
    for (int r = 0; r < rsize; r++) {
        int w = -1;
        CALL(MPI_Group_translate_ranks(remote, 1, &r, world, &w));
        CHECK_EQ(w, remote_world(r));
    }
    for (int r = 0; r < lsize; r++) {
        int w = -1;
        CALL(MPI_Group_translate_ranks(local, 1, &r, world, &w));
        CHECK_EQ(w, world_in(inA, r));
    }
    MPI_Group_free(&remote);
    MPI_Group_free(&local);
    MPI_Group_free(&world);
    CALL(MPI_Comm_compare(ic, ic, &cmp));
    CHECK_EQ(cmp, MPI_IDENT);
    CALL(MPI_Comm_compare(ic, MPI_COMM_WORLD, &cmp));
    CHECK_EQ(cmp, MPI_UNEQUAL);
}

/* Every process sends to every remote process; receives by specific source, then ANY_SOURCE. */
static void p2p(MPI_Comm ic, int tag)
{
    int *out = malloc(sizeof(int) * rsize), *in = malloc(sizeof(int) * rsize);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * rsize);
    for (int r = 0; r < rsize; r++) {
        out[r] = val(me, r);
        CALL(MPI_Isend(&out[r], 1, MPI_INT, r, tag, ic, &rq[r]));
    }
    for (int r = rsize - 1; r >= 0; r--) {
        MPI_Status st;
        CALL(MPI_Recv(&in[r], 1, MPI_INT, r, tag, ic, &st));
        CHECK_EQ(st.MPI_SOURCE, r);
        CHECK_EQ(in[r], val(remote_world(r), lrank));
    }
    CALL(MPI_Waitall(rsize, rq, MPI_STATUSES_IGNORE));
    /* second pass: wildcard receives, the source tells who sent what */
    for (int r = 0; r < rsize; r++)
        CALL(MPI_Isend(&out[r], 1, MPI_INT, r, tag + 1, ic, &rq[r]));
    for (int i = 0; i < rsize; i++) {
        MPI_Status st;
        int v = -1;
        CALL(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, tag + 1, ic, &st));
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize, "source %d", st.MPI_SOURCE);
        CHECK_EQ(v, val(remote_world(st.MPI_SOURCE), lrank));
    }
    CALL(MPI_Waitall(rsize, rq, MPI_STATUSES_IGNORE));
    /* Sendrecv with the remote process of the same rank, where there is one */
    if (lrank < rsize) {
        int got = -1;
        MPI_Status st;
        CALL(MPI_Sendrecv(&out[lrank], 1, MPI_INT, lrank, tag + 2, &got, 1, MPI_INT,
                          MPI_ANY_SOURCE, tag + 2, ic, &st));
        CHECK_EQ(st.MPI_SOURCE, lrank);
        CHECK_EQ(got, val(remote_world(lrank), lrank));
    }
    free(out);
    free(in);
    free(rq);
}

/* A message on the duplicate and one on the original, same tag, received in reverse order. */
static void dup_isolation(MPI_Comm ic)
{
    MPI_Comm dup;
    int cmp = -1, flag = 0;
    CALL(MPI_Comm_dup(ic, &dup));
    CALL(MPI_Comm_test_inter(dup, &flag));
    CHECK_EQ(flag, 1);
    CALL(MPI_Comm_compare(ic, dup, &cmp));
    CHECK_EQ(cmp, MPI_CONGRUENT);
    int a = val(me, 1), b = val(me, 2), x = -1, y = -1;
    MPI_Request rq[2];
    CALL(MPI_Isend(&a, 1, MPI_INT, 0, 5, ic, &rq[0]));
    CALL(MPI_Isend(&b, 1, MPI_INT, 0, 5, dup, &rq[1]));
    if (lrank == 0)
        for (int r = 0; r < rsize; r++) {
            CALL(MPI_Recv(&y, 1, MPI_INT, r, 5, dup, MPI_STATUS_IGNORE));
            CALL(MPI_Recv(&x, 1, MPI_INT, r, 5, ic, MPI_STATUS_IGNORE));
            CHECK_EQ(x, val(remote_world(r), 1));
            CHECK_EQ(y, val(remote_world(r), 2));
        }
    CALL(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    p2p(dup, 40);
    CALL(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "freed communicator not nulled");
}

/* Split by local rank parity, reversed keys: each side pairs with the remote processes of its
 * color, in reverse local order. */
static void split(MPI_Comm ic)
{
    MPI_Comm sub;
    int color = lrank % 2;
    CALL(MPI_Comm_split(ic, color, -lrank, &sub));
    int mine = (lsize - color + 1) / 2, theirs = (rsize - color + 1) / 2;
    if (theirs == 0) {
        CHECK(sub == MPI_COMM_NULL, "no remote process has color %d", color);
        return;
    }
    CHECK(sub != MPI_COMM_NULL, "color %d has remote processes", color);
    if (sub == MPI_COMM_NULL)
        return;
    int n = 0, rank = -1;
    CALL(MPI_Comm_size(sub, &n));
    CHECK_EQ(n, mine);
    CALL(MPI_Comm_remote_size(sub, &n));
    CHECK_EQ(n, theirs);
    CALL(MPI_Comm_rank(sub, &rank));
    CHECK_EQ(rank, (mine - 1) - lrank / 2);
    /* remote rank q is the remote process of this color with the q-th highest local rank */
    MPI_Group remote, world;
    CALL(MPI_Comm_remote_group(sub, &remote));
    CALL(MPI_Comm_group(MPI_COMM_WORLD, &world));
    for (int q = 0; q < theirs; q++) {
        int w = -1;
        CALL(MPI_Group_translate_ranks(remote, 1, &q, world, &w));
        CHECK_EQ(w, remote_world(color + 2 * (theirs - 1 - q)));
    }
    MPI_Group_free(&remote);
    MPI_Group_free(&world);
    int sum = 0, expect = 0;
    CALL(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, sub));
    for (int r = color; r < rsize; r += 2)
        expect += remote_world(r);
    CHECK_EQ(sum, expect);
    CALL(MPI_Comm_free(&sub));
}

/* Comm_create: side A keeps all its processes, side B all but its rank 0 (when it has more). */
static void create(MPI_Comm ic)
{
    MPI_Group local, sub;
    CALL(MPI_Comm_group(ic, &local));
    int drop = !inA && lsize > 1, zero = 0;
    if (drop)
        CALL(MPI_Group_excl(local, 1, &zero, &sub));
    else
        sub = local;
    MPI_Comm c;
    CALL(MPI_Comm_create(ic, sub, &c));
    if (drop && lrank == 0) {
        CHECK(c == MPI_COMM_NULL, "rank 0 of B was left out");
    } else {
        int n = 0;
        CHECK(c != MPI_COMM_NULL, "a member got MPI_COMM_NULL");
        if (c != MPI_COMM_NULL) {
            CALL(MPI_Comm_remote_size(c, &n));
            CHECK_EQ(n, inA ? rsize - (rsize > 1) : rsize);
            CALL(MPI_Barrier(c));
            CALL(MPI_Comm_free(&c));
        }
    }
    if (drop)
        MPI_Group_free(&sub);
    MPI_Group_free(&local);
}

static void merge(MPI_Comm ic, int high, int expect_first_A)
{
    MPI_Comm m;
    int n = 0, rank = -1, flag = 1;
    CALL(MPI_Intercomm_merge(ic, high, &m));
    CALL(MPI_Comm_test_inter(m, &flag));
    CHECK_EQ(flag, 0);
    CALL(MPI_Comm_size(m, &n));
    CHECK_EQ(n, P);
    CALL(MPI_Comm_rank(m, &rank));
    int *worlds = malloc(sizeof(int) * P);
    CALL(MPI_Allgather(&me, 1, MPI_INT, worlds, 1, MPI_INT, m));
    CHECK_EQ(worlds[rank], me);
    if (expect_first_A >= 0) {
        int firstA = expect_first_A, sizeA = (P + 1) / 2;
        int want = (inA == firstA) ? lrank : (firstA ? sizeA : P - sizeA) + lrank;
        CHECK_EQ(rank, want);
    }
    /* the first group's processes come first, in their local order */
    int gA = worlds[0] % 2 == 0;
    for (int r = 0; r < P; r++) {
        int firstsize = gA ? (P + 1) / 2 : P / 2;
        int w = r < firstsize ? world_in(gA, r) : world_in(!gA, r - firstsize);
        CHECK_EQ(worlds[r], w);
    }
    free(worlds);
    CALL(MPI_Comm_free(&m));
}

static void check_ints(const char *what, const int *got, const int *want, int n)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            FAIL("%s: element %d is %d, want %d", what, i, got[i], want[i]);
            return;
        }
}

/* Rooted collectives with the root at rank `rootrank` of group `rootA`. */
static void rooted(MPI_Comm ic, int rootA, int rootrank)
{
    int amroot = inA == rootA && lrank == rootrank;
    int root = inA == rootA ? (amroot ? MPI_ROOT : MPI_PROC_NULL) : rootrank;
    int rootworld = world_in(rootA, rootrank);
    int buf[4], want[4];
    /* Bcast */
    for (int k = 0; k < 4; k++) {
        buf[k] = amroot ? val(me, k) : -1;
        want[k] = inA == rootA ? buf[k] : val(rootworld, k);
    }
    CALL(MPI_Bcast(buf, 4, MPI_INT, root, ic));
    check_ints("Bcast", buf, want, 4);
    /* MPICH 4.0.2 rejects a NULL buffer at MPI_PROC_NULL, where it is not significant */
    CALL(MPI_Bcast(root == MPI_PROC_NULL && on_reflex ? NULL : buf, 4, MPI_INT, root, ic));
    /* Gather: the root gets one pair per remote process */
    int pair[2] = {val(me, 1), val(me, 2)};
    int *all = malloc(sizeof(int) * 2 * (rsize + 1)), *ref = malloc(sizeof(int) * 2 * (rsize + 1));
    for (int i = 0; i < 2 * rsize; i++) {
        all[i] = -1;
        ref[i] = val(remote_world(i / 2), 1 + i % 2);
    }
    /* the send buffer is not significant in the root's group: NULL there */
    CALL(MPI_Gather(inA == rootA ? NULL : pair, 2, MPI_INT, all, 2, MPI_INT, root, ic));
    if (amroot)
        check_ints("Gather", all, ref, 2 * rsize);
    /* Scatter: remote process r gets the root's pair r */
    for (int i = 0; i < 2 * rsize; i++)
        all[i] = amroot ? val(me, i) : -1;
    int got[2] = {-1, -1};
    CALL(MPI_Scatter(all, 2, MPI_INT, got, 2, MPI_INT, root, ic));
    if (inA != rootA) {
        int w[2] = {val(rootworld, 2 * lrank), val(rootworld, 2 * lrank + 1)};
        check_ints("Scatter", got, w, 2);
    }
    /* Gatherv: remote process r sends r % 3 + 1 ints, placed backwards */
    int *counts = malloc(sizeof(int) * (rsize + 1)), *displs = malloc(sizeof(int) * (rsize + 1));
    int at = 0;
    for (int r = rsize - 1; r >= 0; r--) {
        counts[r] = r % 3 + 1;
        displs[r] = at;
        at += counts[r];
    }
    int *v = malloc(sizeof(int) * (at + 3)), three[3];
    for (int k = 0; k < 3; k++)
        three[k] = val(me, 10 + k);
    for (int i = 0; i < at; i++)
        v[i] = -1;
    CALL(MPI_Gatherv(three, lrank % 3 + 1, MPI_INT, v, counts, displs, MPI_INT, root, ic));
    if (amroot)
        for (int r = 0; r < rsize; r++)
            for (int k = 0; k < counts[r]; k++)
                CHECK_EQ(v[displs[r] + k], val(remote_world(r), 10 + k));
    /* Reduce: the root gets the sum over the remote group */
    int x[2] = {me, 1}, sum[2] = {-1, -1};
    /* MPICH 4.0.2 rejects a NULL send buffer at MPI_ROOT, where it is not significant */
    CALL(MPI_Reduce(inA == rootA && on_reflex ? NULL : x, sum, 2, MPI_INT, MPI_SUM, root, ic));
    if (amroot) {
        int s = 0;
        for (int r = 0; r < rsize; r++)
            s += remote_world(r);
        CHECK_EQ(sum[0], s);
        CHECK_EQ(sum[1], rsize);
    }
    free(all);
    free(ref);
    free(counts);
    free(displs);
    free(v);
}

static void unrooted(MPI_Comm ic)
{
    int n = rsize;
    int *all = malloc(sizeof(int) * 2 * n), *want = malloc(sizeof(int) * 2 * n);
    int mine[2] = {val(me, 1), val(me, 2)};
    /* Allgather: the remote group's pairs */
    for (int i = 0; i < 2 * n; i++)
        want[i] = val(remote_world(i / 2), 1 + i % 2);
    CALL(MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, ic));
    check_ints("Allgather", all, want, 2 * n);
    /* Alltoall: block r goes to remote r */
    int *out = malloc(sizeof(int) * 2 * n);
    for (int i = 0; i < 2 * n; i++) {
        out[i] = val(me, 100 + i);
        want[i] = val(remote_world(i / 2), 100 + 2 * lrank + i % 2);
    }
    CALL(MPI_Alltoall(out, 2, MPI_INT, all, 2, MPI_INT, ic));
    check_ints("Alltoall", all, want, 2 * n);
    /* Allreduce: sum and max over the remote group */
    int x[2] = {me, me}, r[2] = {-1, -1}, s = 0, mx = 0;
    for (int q = 0; q < n; q++) {
        s += remote_world(q);
        mx = remote_world(q) > mx ? remote_world(q) : mx;
    }
    CALL(MPI_Allreduce(x, r, 2, MPI_INT, MPI_SUM, ic));
    CHECK_EQ(r[0], s);
    CALL(MPI_Allreduce(x, r, 2, MPI_INT, MPI_MAX, ic));
    CHECK_EQ(r[1], mx);
    /* Reduce_scatter_block: a vector of 2 * lsize ints on each side (the same total is needed
     * on both sides, so this runs when the groups have equal sizes) */
    if (lsize == rsize) {
        int *vec = malloc(sizeof(int) * 2 * lsize), blk[2] = {-1, -1};
        for (int i = 0; i < 2 * lsize; i++)
            vec[i] = me + i;
        CALL(MPI_Reduce_scatter_block(vec, blk, 2, MPI_INT, MPI_SUM, ic));
        for (int k = 0; k < 2; k++)
            CHECK_EQ(blk[k], s + n * (2 * lrank + k));
        free(vec);
    }
    /* Reduce_scatter: side A gets counts 1 each plus the rest at rank 0, side B 2 each... the
     * totals must agree: each side splits T = 2 * max(lsize, rsize) its own way */
    int T = 2 * (lsize > rsize ? lsize : rsize);
    int *cnt = malloc(sizeof(int) * lsize), *vec = malloc(sizeof(int) * T), res[64];
    int left = T;
    for (int q = lsize - 1; q > 0; q--) {
        cnt[q] = inA ? 1 : 2;
        left -= cnt[q];
    }
    cnt[0] = left;
    for (int i = 0; i < T; i++)
        vec[i] = 2 * me + i;
    CALL(MPI_Reduce_scatter(vec, res, cnt, MPI_INT, MPI_SUM, ic));
    int before = 0;
    for (int q = 0; q < lrank; q++)
        before += cnt[q];
    for (int k = 0; k < cnt[lrank] && k < 64; k++)
        CHECK_EQ(res[k], 2 * s + n * (before + k));
    /* Barrier and nonblocking forms */
    CALL(MPI_Barrier(ic));
    MPI_Request rq[2];
    int y[2] = {-1, -1};
    CALL(MPI_Iallreduce(x, y, 2, MPI_INT, MPI_SUM, ic, &rq[0]));
    CALL(MPI_Ibarrier(ic, &rq[1]));
    CALL(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK_EQ(y[0], s);
    free(all);
    free(want);
    free(out);
    free(cnt);
    free(vec);
}

static void errors(MPI_Comm ic)
{
    int n = 0, x = 1, y = 0;
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    /* erroneous by the standard; MPICH 4.0.2 returns success, Reflex MPI_ERR_COMM */
    if (on_reflex)
        CHECK_CLASS(MPI_Comm_remote_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM);
    int rc = MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, ic);
    CHECK(rc != MPI_SUCCESS, "MPI_Scan on an intercommunicator succeeded");
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    on_reflex = strstr(lib, "Reflex") != NULL;
    int flag = 1;
    CALL(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK_EQ(flag, 0);
    if (P < 2)
        return MTest_Finalize();
    inA = me % 2 == 0;
    lrank = me / 2;
    lsize = inA ? (P + 1) / 2 : P / 2;
    rsize = P - lsize;
    MPI_Comm local, ic;
    CALL(MPI_Comm_split(MPI_COMM_WORLD, !inA, me, &local));
    CALL(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inA ? 1 : 0, 77, &ic));
    queries(ic);
    p2p(ic, 10);
    dup_isolation(ic);
    split(ic);
    create(ic);
    MPI_Comm shared;
    CALL(MPI_Comm_split_type(ic, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    /* The part of the intercommunicator on this node (consecutive blocks of mtest_node_size()
     * ranks; on one node the same intercommunicator, duplicated): the remote ranks here. */
    int per_node = mtest_node_size(), first_here = me - me % per_node, remote_here = 0;
    for (int r = first_here; r < first_here + per_node && r < P; r++)
        remote_here += (r % 2 == 0) != inA;
    if (shared != MPI_COMM_NULL) {
        int n = 0;
        CALL(MPI_Comm_remote_size(shared, &n));
        CHECK_EQ(n, remote_here);
        CALL(MPI_Comm_free(&shared));
    } else
        CHECK(remote_here == 0, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gave MPI_COMM_NULL with %d remote ranks on this node",
              remote_here);
    merge(ic, !inA, 1);
    merge(ic, inA, 0);
    merge(ic, 0, -1);
    for (int root = 0; root < 2; root++) {
        rooted(ic, 1, root % ((P + 1) / 2));
        rooted(ic, 0, root % (P / 2));
    }
    unrooted(ic);
    errors(ic);
    CALL(MPI_Comm_free(&ic));
    CALL(MPI_Comm_free(&local));
    return MTest_Finalize();
}
