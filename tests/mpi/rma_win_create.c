/*
 * rma_win_create.c - windows made by MPI_Win_create (MPI-3.1 11.2.1, 11.2.6, 11.2.7): every rank
 * exposes its own memory, some ranks expose none (size 0), with a displacement unit of 1, 4 and
 * 8 bytes; the window's attributes (MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT,
 * MPI_WIN_CREATE_FLAVOR = MPI_WIN_FLAVOR_CREATE, MPI_WIN_MODEL), MPI_Win_get_group (the
 * communicator's group), several windows alive at once and freed in another order, a window
 * where no rank exposes memory, and MPI_Win_free (sets MPI_WIN_NULL). Puts and gets in fence
 * epochs scale the target displacement by the target's unit. A window on a communicator whose
 * ranks are the reverse of MPI_COMM_WORLD's checks that target ranks are ranks of the window's
 * group. Runs with any number of ranks.
 */
#include "mtest.h"

#define SLOT 8 /* bytes per origin in a target's window */

/* Ranks r with r % 3 == 1 expose nothing (size 0); the others SLOT bytes per rank. */
static int exposes(int r) { return r % 3 != 1; }

static void check_attrs(MPI_Win win, void *base, MPI_Aint size, int unit, const char *what)
{
    void *got_base = NULL;
    MPI_Aint *got_size = NULL;
    int *got_unit = NULL, *flavor = NULL, *model = NULL, flag = 0;
    CALL(MPI_Win_get_attr(win, MPI_WIN_BASE, &got_base, &flag));
    CHECK(flag, "%s: MPI_WIN_BASE not set", what);
    if (size > 0)
        CHECK(flag && got_base == base, "%s: MPI_WIN_BASE %p, want %p", what, got_base, base);
    CALL(MPI_Win_get_attr(win, MPI_WIN_SIZE, &got_size, &flag));
    CHECK(flag && got_size, "%s: MPI_WIN_SIZE not set", what);
    if (flag && got_size)
        CHECK_EQ(*got_size, size);
    CALL(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &got_unit, &flag));
    CHECK(flag && got_unit, "%s: MPI_WIN_DISP_UNIT not set", what);
    if (flag && got_unit)
        CHECK_EQ(*got_unit, unit);
    CALL(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && flavor, "%s: MPI_WIN_CREATE_FLAVOR not set", what);
    if (flag && flavor)
        CHECK_EQ(*flavor, MPI_WIN_FLAVOR_CREATE);
    CALL(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && model, "%s: MPI_WIN_MODEL not set", what);
    if (flag && model)
        CHECK(*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE, "%s: model %d", what, *model);
}

/* Window on `comm` with the given displacement unit; each rank puts one long long into every
 * exposing rank's slot (fence epoch), then reads back every slot of every exposing rank. */
static void put_get(MPI_Comm comm, int unit, int seed)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    MPI_Aint size = exposes(me) ? (MPI_Aint)SLOT * p : 0;
    long long *mem = mtest_malloc(SLOT * p);
    for (int i = 0; i < p; i++)
        mem[i] = -1;
    MPI_Win win;
    CALL(MPI_Win_create(mem, size, unit, MPI_INFO_NULL, comm, &win));
    check_attrs(win, mem, size, unit, "Win_create");

    long long *mine = mtest_malloc(sizeof(long long) * p), *got = mtest_malloc(sizeof(long long) * p * p);
    for (int t = 0; t < p; t++)
        mine[t] = (long long)seed * 1000000 + me * 1000 + t;
    MPI_Aint disp = (MPI_Aint)SLOT * me / unit; /* byte offset SLOT*me in units of `unit` */
    CALL(MPI_Win_fence(0, win));
    for (int t = 0; t < p; t++)
        if (exposes(t))
            CALL(MPI_Put(&mine[t], 1, MPI_LONG_LONG, t, disp, 1, MPI_LONG_LONG, win));
    CALL(MPI_Win_fence(0, win));
    if (exposes(me))
        for (int o = 0; o < p; o++)
            if (mem[o] != (long long)seed * 1000000 + o * 1000 + me)
                FAIL("unit %d: slot of origin %d holds %lld", unit, o, mem[o]);
    for (int i = 0; i < p * p; i++)
        got[i] = -7;
    for (int t = 0; t < p; t++)
        if (exposes(t))
            CALL(MPI_Get(&got[t * p], p, MPI_LONG_LONG, t, 0, p, MPI_LONG_LONG, win));
    CALL(MPI_Win_fence(0, win));
    for (int t = 0; t < p; t++)
        for (int o = 0; o < p; o++) {
            long long want = exposes(t) ? (long long)seed * 1000000 + o * 1000 + t : -7;
            if (got[t * p + o] != want) {
                FAIL("unit %d: Get of target %d slot %d gave %lld, want %lld", unit, t, o, got[t * p + o], want);
                break;
            }
        }

    /* the window's group is the communicator's */
    MPI_Group wg, cg;
    int cmp = -1;
    CALL(MPI_Win_get_group(win, &wg));
    MPI_Comm_group(comm, &cg);
    MPI_Group_compare(wg, cg, &cmp);
    CHECK(cmp == MPI_IDENT, "Win_get_group is not the communicator's group (compare %d)", cmp);
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);

    CALL(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "Win_free did not set MPI_WIN_NULL");
    free(mem);
    free(mine);
    free(got);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static const int units[3] = {1, 4, 8};
    for (int k = 0; k < 3; k++)
        put_get(MPI_COMM_WORLD, units[k], k + 1);

    /* ranks reversed: window rank r is world rank size-1-r */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, mtest_size - mtest_rank, &rev);
    put_get(rev, 8, 7);
    MPI_Comm_free(&rev);

    /* several windows alive at once on the same communicator, freed in another order */
    MPI_Win w[3];
    int *mem[3];
    for (int k = 0; k < 3; k++) {
        mem[k] = mtest_malloc(64); /* separate allocations (rma_win_adjacent: neighbouring memory) */
        *mem[k] = 0;
        CALL(MPI_Win_create(mem[k], sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w[k]));
    }
    for (int k = 0; k < 3; k++)
        CALL(MPI_Win_fence(0, w[k]));
    for (int k = 0; k < 3; k++) {
        int v = 10 * k + 1;
        CALL(MPI_Accumulate(&v, 1, MPI_INT, (mtest_rank + 1) % mtest_size, 0, 1, MPI_INT, MPI_SUM, w[k]));
    }
    for (int k = 2; k >= 0; k--)
        CALL(MPI_Win_fence(0, w[k]));
    for (int k = 0; k < 3; k++)
        CHECK(*mem[k] == 10 * k + 1, "window %d holds %d", k, *mem[k]);
    CALL(MPI_Win_free(&w[1]));
    CALL(MPI_Win_free(&w[0]));
    CALL(MPI_Win_free(&w[2]));
    for (int k = 0; k < 3; k++)
        free(mem[k]);

    /* every rank exposes nothing: a valid window */
    MPI_Win empty;
    CALL(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &empty));
    CALL(MPI_Win_fence(0, empty));
    CALL(MPI_Win_fence(0, empty));
    CALL(MPI_Win_free(&empty));

    return MTest_Finalize();
}
