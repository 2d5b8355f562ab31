/*
 * rma_shared.c - MPI_Win_allocate and MPI_Win_allocate_shared windows (MPI-3.1 11.2.2, 11.2.3):
 *  - Win_allocate: a base pointer for every rank with a non-zero size, sizes that differ between
 *    ranks (rank 1 asks for 0 bytes), attributes (MPI_WIN_BASE is the returned pointer,
 *    MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR = MPI_WIN_FLAVOR_ALLOCATE), Put/Get
 *    in fence epochs;
 *  - Win_allocate_shared, default layout: contiguous across ranks (rank i+1's segment starts
 *    where rank i's ends, ranks of size 0 skipped), MPI_Win_shared_query of every rank (size,
 *    displacement unit, pointer) and of MPI_PROC_NULL (the lowest rank with a non-zero size),
 *    MPI_WIN_MODEL = MPI_WIN_UNIFIED, MPI_WIN_FLAVOR_SHARED; every rank stores through the
 *    pointer of its right neighbour inside a Lock_all epoch, then MPI_Win_sync + MPI_Barrier +
 *    MPI_Win_sync, and reads what its left neighbour stored into its own segment; the same
 *    through a fence epoch with plain loads and stores;
 *  - with MTEST_RMA_NONCONTIG=1 in the environment, alloc_shared_noncontig=true instead of the
 *    default layout: the same queries, stores and loads, no layout assumed.
 * All ranks must share a node (they do under the test runner). Runs with any number of ranks.
 */
#include "mtest.h"

static MPI_Aint seg_size(int r) { return r == 1 ? 0 : 64 * (r + 1); } /* bytes */

static int attr_int(MPI_Win win, int key)
{
    int *v = NULL, flag = 0;
    MPI_Win_get_attr(win, key, &v, &flag);
    return flag && v ? *v : -12345;
}

static void allocate(void)
{
    long long *base = NULL;
    MPI_Win win;
    MPI_Aint sz = seg_size(mtest_rank);
    CALL(MPI_Win_allocate(sz, sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(sz == 0 || base != NULL, "Win_allocate gave a NULL base for %ld bytes", (long)sz);
    void *got = NULL;
    MPI_Aint *gsz = NULL;
    int flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &got, &flag);
    CHECK(flag && (sz == 0 || got == base), "MPI_WIN_BASE %p, want %p", got, (void *)base);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &gsz, &flag);
    CHECK(flag && gsz && *gsz == sz, "MPI_WIN_SIZE %ld, want %ld", gsz ? (long)*gsz : -1L, (long)sz);
    CHECK_EQ(attr_int(win, MPI_WIN_DISP_UNIT), sizeof(long long));
    CHECK_EQ(attr_int(win, MPI_WIN_CREATE_FLAVOR), MPI_WIN_FLAVOR_ALLOCATE);

    /* each rank puts its rank into element `rank` of every rank that has room for it, fence, get back */
    CALL(MPI_Win_fence(0, win));
    for (int t = 0; t < mtest_size; t++) {
        long long v = 1000 * mtest_rank + t;
        if (seg_size(t) >= (MPI_Aint)sizeof(long long) * (mtest_rank + 1))
            CALL(MPI_Put(&v, 1, MPI_LONG_LONG, t, mtest_rank, 1, MPI_LONG_LONG, win));
    }
    CALL(MPI_Win_fence(0, win));
    for (int o = 0; o < mtest_size && (MPI_Aint)sizeof(long long) * (o + 1) <= sz; o++)
        CHECK(base[o] == 1000 * o + mtest_rank, "element %d holds %lld", o, base[o]);
    long long back = -1;
    int t = (mtest_rank + 1) % mtest_size;
    if (seg_size(t) >= (MPI_Aint)sizeof(long long) * (mtest_rank + 1)) {
        CALL(MPI_Get(&back, 1, MPI_LONG_LONG, t, mtest_rank, 1, MPI_LONG_LONG, win));
        CALL(MPI_Win_fence(0, win));
        CHECK(back == 1000 * mtest_rank + t, "Get gave %lld", back);
    } else {
        CALL(MPI_Win_fence(0, win));
    }
    CALL(MPI_Win_free(&win));
}

/* The neighbour's segment through Win_shared_query: store `rank*1000 + i` into its ints. */
static void shared(int noncontig)
{
    MPI_Info info = MPI_INFO_NULL;
    if (noncontig) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
    }
    int *base = NULL;
    MPI_Win win;
    MPI_Aint sz = seg_size(mtest_rank);
    CALL(MPI_Win_allocate_shared(sz, sizeof(int), info, MPI_COMM_WORLD, &base, &win));
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK_EQ(attr_int(win, MPI_WIN_CREATE_FLAVOR), MPI_WIN_FLAVOR_SHARED);
    CHECK_EQ(attr_int(win, MPI_WIN_MODEL), MPI_WIN_UNIFIED);

    int **ptr = mtest_malloc(mtest_size * sizeof(int *));
    int first = -1;
    for (int r = 0; r < mtest_size; r++) {
        MPI_Aint qs = -1;
        int du = -1;
        ptr[r] = NULL;
        CALL(MPI_Win_shared_query(win, r, &qs, &du, &ptr[r]));
        CHECK(qs == seg_size(r), "%s: shared_query(%d) size %ld, want %ld", noncontig ? "noncontig" : "contig",
              r, (long)qs, (long)seg_size(r));
        CHECK_EQ(du, sizeof(int));
        if (r == mtest_rank && sz > 0)
            CHECK(ptr[r] == base, "shared_query of myself %p, base %p", (void *)ptr[r], (void *)base);
        if (seg_size(r) > 0 && first < 0)
            first = r;
    }
    if (!noncontig) { /* contiguous: every segment starts where the previous non-empty one ends */
        int prev = first;
        for (int r = first + 1; r < mtest_size; r++)
            if (seg_size(r) > 0) {
                CHECK((char *)ptr[r] == (char *)ptr[prev] + seg_size(prev),
                      "segment %d at %p, segment %d ends at %p", r, (void *)ptr[r], prev,
                      (void *)((char *)ptr[prev] + seg_size(prev)));
                prev = r;
            }
        MPI_Aint qs = -1;
        int du = -1;
        int *p0 = NULL;
        CALL(MPI_Win_shared_query(win, MPI_PROC_NULL, &qs, &du, &p0));
        CHECK(p0 == ptr[first] && qs == seg_size(first), "shared_query(PROC_NULL): %p size %ld, want rank %d's",
              (void *)p0, (long)qs, first);
    }

    /* passive epoch: store into the right neighbour's segment, sync, read my own */
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    int nr = (int)(seg_size(right) / sizeof(int)), nl = (int)(seg_size(left) / sizeof(int));
    int nme = (int)(sz / sizeof(int));
    for (int round = 0; round < 2; round++) {
        if (round == 0) {
            CALL(MPI_Win_lock_all(0, win));
        } else {
            CALL(MPI_Win_fence(0, win));
        }
        for (int i = 0; i < nr; i++)
            ptr[right][i] = 1000 * mtest_rank + i + round * 7;
        if (round == 0) {
            MPI_Win_sync(win);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_sync(win);
        } else {
            CALL(MPI_Win_fence(0, win));
        }
        for (int i = 0; i < nme; i++)
            if (base[i] != 1000 * left + i + round * 7) {
                FAIL("%s round %d: my int %d is %d, want %d", noncontig ? "noncontig" : "contig", round, i, base[i],
                     1000 * left + i + round * 7);
                break;
            }
        /* and through RMA: Get the left neighbour's first int, which I wrote */
        int g = -1;
        if (nl > 0) {
            CALL(MPI_Get(&g, 1, MPI_INT, left, 0, 1, MPI_INT, win));
            if (round == 0)
                CALL(MPI_Win_flush(left, win));
            else
                CALL(MPI_Win_fence(0, win));
            if (left == mtest_rank || seg_size(left) > 0)
                CHECK(g == 1000 * ((left + mtest_size - 1) % mtest_size) + round * 7, "Get of left's int: %d", g);
        } else if (round == 1) {
            CALL(MPI_Win_fence(0, win));
        }
        if (round == 0)
            CALL(MPI_Win_unlock_all(win));
        else
            CALL(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(ptr);
    CALL(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    allocate();
    const char *nc = getenv("MTEST_RMA_NONCONTIG");
    shared(nc && *nc == '1');
    return MTest_Finalize();
}
