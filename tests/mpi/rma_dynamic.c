/*
 * rma_dynamic.c - dynamic windows (MPI-3.1 11.2.4): MPI_Win_create_dynamic with no memory, its
 * attributes (MPI_WIN_CREATE_FLAVOR = MPI_WIN_FLAVOR_DYNAMIC, MPI_WIN_SIZE 0, MPI_WIN_BASE
 * MPI_BOTTOM), MPI_Win_attach of a buffer whose address (MPI_Get_address) every rank learns by
 * MPI_Allgather; Put to the right neighbour and Get from the left with the address as target
 * displacement, in a Lock_all epoch (with flushes) and in fence epochs; two regions attached at
 * once (targets in both); a region detached and another attached later (addresses exchanged
 * again); one buffer attached as two halves, with transfers across both; a region attached by
 * some ranks only. Runs with any number of ranks.
 */
#include "mtest.h"

#define N 100

static MPI_Aint *gather_addr(void *p)
{
    MPI_Aint mine, *all = mtest_malloc(mtest_size * sizeof(MPI_Aint));
    MPI_Get_address(p, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
    return all;
}

/* Everyone puts N longs into its right neighbour's region `which`, then gets them back from the
 * left neighbour's. */
/* Puts n longs into the right neighbour's region and gets them back from the left's. */
static void exchange(MPI_Win win, long *region, MPI_Aint *addr, int n, int seed, int passive)
{
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    long out[2 * N], back[2 * N];
    for (int i = 0; i < n; i++) {
        out[i] = seed * 100000L + mtest_rank * 1000L + i;
        back[i] = -1;
    }
    if (passive) {
        CALL(MPI_Win_lock_all(0, win));
        CALL(MPI_Put(out, n, MPI_LONG, right, addr[right], n, MPI_LONG, win));
        CALL(MPI_Win_flush(right, win));
        MPI_Barrier(MPI_COMM_WORLD); /* every put is complete at its target */
        CALL(MPI_Get(back, n, MPI_LONG, left, addr[left], n, MPI_LONG, win));
        CALL(MPI_Win_flush_all(win));
        CALL(MPI_Win_unlock_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, mtest_rank, 0, win);
        MPI_Win_sync(win);
    } else {
        CALL(MPI_Win_fence(0, win));
        CALL(MPI_Put(out, n, MPI_LONG, right, addr[right], n, MPI_LONG, win));
        CALL(MPI_Win_fence(0, win));
        CALL(MPI_Get(back, n, MPI_LONG, left, addr[left], n, MPI_LONG, win));
        CALL(MPI_Win_fence(0, win));
    }
    for (int i = 0; i < n; i++) {
        if (region[i] != seed * 100000L + left * 1000L + i) {
            FAIL("seed %d %s: region[%d] = %ld", seed, passive ? "lock_all" : "fence", i, region[i]);
            break;
        }
        if (back[i] != seed * 100000L + ((left + mtest_size - 1) % mtest_size) * 1000L + i) {
            FAIL("seed %d %s: got back[%d] = %ld", seed, passive ? "lock_all" : "fence", i, back[i]);
            break;
        }
    }
    if (passive)
        MPI_Win_unlock(mtest_rank, win);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Win win;
    CALL(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int *flavor = NULL, flag = 0;
    MPI_Aint *size = NULL;
    void *base = (void *)1;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && flavor && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "flavor %d", flavor ? *flavor : -1);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag);
    CHECK(flag && size && *size == 0, "MPI_WIN_SIZE %ld", size ? (long)*size : -1L);
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == MPI_BOTTOM, "MPI_WIN_BASE %p", base);

    /* an empty epoch before anything is attached */
    CALL(MPI_Win_fence(0, win));
    CALL(MPI_Win_fence(0, win));

    long *a = mtest_malloc(N * sizeof(long)), *b = mtest_malloc(N * sizeof(long));
    for (int i = 0; i < N; i++)
        a[i] = b[i] = -5;
    CALL(MPI_Win_attach(win, a, N * sizeof(long)));
    MPI_Aint *addr_a = gather_addr(a);
    exchange(win, a, addr_a, N, 1, 1);
    exchange(win, a, addr_a, N, 2, 0);

    /* a second region beside the first */
    CALL(MPI_Win_attach(win, b, N * sizeof(long)));
    MPI_Aint *addr_b = gather_addr(b);
    exchange(win, b, addr_b, N, 3, 1);
    exchange(win, a, addr_a, N, 4, 0);
    exchange(win, b, addr_b, N, 5, 0);

    /* detach a, attach a new region c, addresses exchanged again; b stays */
    MPI_Barrier(MPI_COMM_WORLD); /* nobody targets a any more */
    CALL(MPI_Win_detach(win, a));
    long *c = mtest_malloc(N * sizeof(long));
    CALL(MPI_Win_attach(win, c, N * sizeof(long)));
    MPI_Aint *addr_c = gather_addr(c);
    exchange(win, c, addr_c, N, 6, 1);
    exchange(win, b, addr_b, N, 7, 1);

    /* one buffer attached as two halves: a transfer may span both */
    long *e = mtest_malloc(2 * N * sizeof(long));
    CALL(MPI_Win_attach(win, e + N, N * sizeof(long)));
    CALL(MPI_Win_attach(win, e, N * sizeof(long)));
    MPI_Aint *addr_e = gather_addr(e);
    exchange(win, e, addr_e, 2 * N, 8, 1);
    exchange(win, e, addr_e, 2 * N, 9, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_Win_detach(win, e));
    CALL(MPI_Win_detach(win, e + N));

    /* only even ranks attach d; odd ranks put into their even left neighbour if there is one */
    long *d = mtest_malloc(sizeof(long));
    *d = 0;
    if (mtest_rank % 2 == 0)
        CALL(MPI_Win_attach(win, d, sizeof(long)));
    MPI_Aint *addr_d = gather_addr(d);
    CALL(MPI_Win_fence(0, win));
    long v = 77 + mtest_rank;
    if (mtest_rank % 2 == 1)
        CALL(MPI_Accumulate(&v, 1, MPI_LONG, mtest_rank - 1, addr_d[mtest_rank - 1], 1, MPI_LONG, MPI_SUM, win));
    CALL(MPI_Win_fence(0, win));
    if (mtest_rank % 2 == 0) {
        long want = mtest_rank + 1 < mtest_size ? 77 + mtest_rank + 1 : 0;
        CHECK(*d == want, "region attached on even ranks only: %ld, want %ld", *d, want);
        CALL(MPI_Win_detach(win, d));
    }

    CALL(MPI_Win_detach(win, b));
    CALL(MPI_Win_detach(win, c));
    CALL(MPI_Win_free(&win));
    free(a);
    free(b);
    free(c);
    free(d);
    free(addr_a);
    free(addr_b);
    free(addr_c);
    free(addr_d);
    free(e);
    free(addr_e);
    return MTest_Finalize();
}
