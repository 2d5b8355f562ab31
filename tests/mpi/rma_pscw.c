/*
 * rma_pscw.c - general active-target synchronisation (MPI-3.1 11.5.2): MPI_Win_post /
 * MPI_Win_start / MPI_Win_complete / MPI_Win_wait and MPI_Win_test, on a window of the flavor
 * named by MTEST_RMA_FLAVOR (rma_win.h):
 *  - ring: each rank exposes to its left neighbour and accesses its right one; Put of a block,
 *    then 50 successive epochs of Accumulate (SUM 1) into the right neighbour (epochs must match
 *    in order);
 *  - all to one: rank 0 exposes to everyone (itself included) and polls MPI_Win_test until the
 *    epoch ends; every rank Accumulates into rank 0 and Puts into its own slot there;
 *  - all pairs: everyone exposes to and accesses everyone; Gets of a region the target stored
 *    before MPI_Win_post (Post makes local stores public), Puts into per-origin slots;
 *  - with MTEST_RMA_NOCHECK=1 in the environment, all pairs with MPI_MODE_NOCHECK on post and
 *    start, the posts made before a barrier that precedes the starts;
 *  - even ranks expose to odd ranks only (disjoint groups; odd ranks Get, even ranks only wait).
 * Runs with any number of ranks.
 */
#include "rma_win.h"

#define M 1000 /* ints per block */

static MPI_Group world_group;

static MPI_Group group_of(const int *ranks, int n)
{
    MPI_Group g;
    MPI_Group_incl(world_group, n, ranks, &g);
    return g;
}

static void ring(RmaWin *w)
{
    int p = mtest_size, me = mtest_rank, right = (me + 1) % p, left = (me + p - 1) % p;
    int *mem = w->base, *out = mtest_malloc(M * sizeof(int));
    MPI_Group gl = group_of(&left, 1), gr = group_of(&right, 1);
    for (int i = 0; i < M; i++)
        out[i] = me * 10000 + i;
    CALL(MPI_Win_post(gl, 0, w->win));
    CALL(MPI_Win_start(gr, 0, w->win));
    CALL(MPI_Put(out, M, MPI_INT, right, rma_disp(w, right, 0), M, MPI_INT, w->win));
    CALL(MPI_Win_complete(w->win));
    CALL(MPI_Win_wait(w->win));
    for (int i = 0; i < M; i++)
        if (mem[i] != left * 10000 + i) {
            FAIL("ring Put: element %d is %d, want %d", i, mem[i], left * 10000 + i);
            break;
        }
    int one = 1;
    for (int k = 0; k < 50; k++) {
        CALL(MPI_Win_post(gl, 0, w->win));
        CALL(MPI_Win_start(gr, 0, w->win));
        CALL(MPI_Accumulate(&one, 1, MPI_INT, right, rma_disp(w, right, M), 1, MPI_INT, MPI_SUM, w->win));
        CALL(MPI_Win_complete(w->win));
        CALL(MPI_Win_wait(w->win));
        if (mem[M] != k + 1) {
            FAIL("ring epoch %d: counter %d", k, mem[M]);
            break;
        }
    }
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    free(out);
}

static void all_to_one(RmaWin *w)
{
    int p = mtest_size, me = mtest_rank, zero = 0, v = me + 1;
    int *mem = w->base;
    MPI_Group g0 = group_of(&zero, 1);
    if (me == 0)
        CALL(MPI_Win_post(world_group, 0, w->win));
    CALL(MPI_Win_start(g0, 0, w->win));
    CALL(MPI_Accumulate(&v, 1, MPI_INT, 0, rma_disp(w, 0, 2 * M), 1, MPI_INT, MPI_SUM, w->win));
    CALL(MPI_Put(&v, 1, MPI_INT, 0, rma_disp(w, 0, 2 * M + 1 + me), 1, MPI_INT, w->win));
    CALL(MPI_Win_complete(w->win));
    if (me == 0) {
        int flag = 0;
        long polls = 0;
        while (!flag) {
            CALL(MPI_Win_test(w->win, &flag));
            polls++;
        }
        CHECK(polls >= 1, "Win_test");
        CHECK_EQ(mem[2 * M], p * (p + 1) / 2);
        for (int o = 0; o < p; o++)
            CHECK(mem[2 * M + 1 + o] == o + 1, "slot of %d holds %d", o, mem[2 * M + 1 + o]);
    }
    MPI_Group_free(&g0);
}

static void all_pairs(RmaWin *w, int nocheck)
{
    int p = mtest_size, me = mtest_rank, seed = nocheck ? 5 : 3;
    int *mem = w->base, *in = mtest_malloc((size_t)p * M * sizeof(int));
    /* my region 0 (M ints) gets a pattern by local stores before the post */
    for (int i = 0; i < M; i++)
        mem[i] = seed * 100000 + me * 1000 + i % 1000;
    CALL(MPI_Win_post(world_group, nocheck ? MPI_MODE_NOCHECK : 0, w->win));
    if (nocheck)
        MPI_Barrier(MPI_COMM_WORLD); /* every post is done before any start */
    CALL(MPI_Win_start(world_group, nocheck ? MPI_MODE_NOCHECK : 0, w->win));
    for (int t = 0; t < p; t++) {
        int v = seed * 1000 + me;
        CALL(MPI_Get(&in[t * M], M, MPI_INT, t, rma_disp(w, t, 0), M, MPI_INT, w->win));
        CALL(MPI_Put(&v, 1, MPI_INT, t, rma_disp(w, t, M + me), 1, MPI_INT, w->win));
    }
    CALL(MPI_Win_complete(w->win));
    CALL(MPI_Win_wait(w->win));
    for (int t = 0; t < p; t++)
        for (int i = 0; i < M; i++)
            if (in[t * M + i] != seed * 100000 + t * 1000 + i % 1000) {
                FAIL("all pairs%s: Get from %d element %d is %d", nocheck ? " NOCHECK" : "", t, i, in[t * M + i]);
                t = p;
                break;
            }
    for (int o = 0; o < p; o++)
        CHECK(mem[M + o] == seed * 1000 + o, "all pairs%s: slot of %d holds %d", nocheck ? " NOCHECK" : "", o,
              mem[M + o]);
    free(in);
}

static void even_to_odd(RmaWin *w)
{
    int p = mtest_size, me = mtest_rank, ne = 0, no = 0;
    int *evens = mtest_malloc(p * sizeof(int)), *odds = mtest_malloc(p * sizeof(int));
    for (int r = 0; r < p; r++) {
        if (r % 2)
            odds[no++] = r;
        else
            evens[ne++] = r;
    }
    int *mem = w->base;
    mem[0] = 424242 + me;
    if (me % 2 == 0 && no > 0) {
        MPI_Group go = group_of(odds, no);
        CALL(MPI_Win_post(go, 0, w->win));
        CALL(MPI_Win_wait(w->win));
        MPI_Group_free(&go);
    } else if (me % 2 == 1) {
        MPI_Group ge = group_of(evens, ne);
        int *got = mtest_malloc(ne * sizeof(int));
        CALL(MPI_Win_start(ge, 0, w->win));
        for (int k = 0; k < ne; k++)
            CALL(MPI_Get(&got[k], 1, MPI_INT, evens[k], rma_disp(w, evens[k], 0), 1, MPI_INT, w->win));
        CALL(MPI_Win_complete(w->win));
        for (int k = 0; k < ne; k++)
            CHECK(got[k] == 424242 + evens[k], "odd %d got %d from even %d", me, got[k], evens[k]);
        MPI_Group_free(&ge);
        free(got);
    }
    free(evens);
    free(odds);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    RmaWin w;
    rma_win_make(&w, (MPI_Aint)(2 * M + 1 + mtest_size) * sizeof(int), sizeof(int), MPI_COMM_WORLD);
    ring(&w);
    MPI_Barrier(MPI_COMM_WORLD);
    all_to_one(&w);
    MPI_Barrier(MPI_COMM_WORLD);
    const char *nc = getenv("MTEST_RMA_NOCHECK");
    all_pairs(&w, nc && *nc == '1');
    MPI_Barrier(MPI_COMM_WORLD);
    even_to_odd(&w);
    MPI_Barrier(MPI_COMM_WORLD);
    rma_win_free(&w);
    MPI_Group_free(&world_group);
    return MTest_Finalize();
}
