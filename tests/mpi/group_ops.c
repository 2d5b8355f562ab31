/*
 * group_ops.c - group constructors (MPI-3.1 section 6.3.2): MPI_Group_union keeps the first
 * group's order and appends the second's new members; intersection and difference keep the
 * first group's order; MPI_Group_range_incl/range_excl with positive and negative strides;
 * MPI_Group_incl/excl with n = 0 (MPI_GROUP_EMPTY / the same group) and reordering; an empty
 * result is MPI_GROUP_EMPTY, which may be freed. Error paths under MPI_ERRORS_RETURN: a rank
 * out of range is MPI_ERR_RANK; a zero stride or a range leaving the group is MPI_ERR_ARG
 * (MPICH, Reflex) or MPI_ERR_RANK (Open MPI), the standard naming no class; MPI_GROUP_NULL is
 * MPI_ERR_GROUP. Runs with any number of ranks.
 */
#include "mtest.h"

/* The world ranks of group g, in group order, must be want[0..n). */
static void check_members(MPI_Group g, MPI_Group world, int n, const int *want, int line)
{
    int size = -1, in[64], out[64];
    MPI_Group_size(g, &size);
    if (size != n) {
        mtest_report(__FILE__, line, "group size", "%d, want %d", size, n);
        return;
    }
    for (int i = 0; i < n; i++)
        in[i] = i;
    MPI_Group_translate_ranks(g, n, in, world, out);
    for (int i = 0; i < n; i++)
        if (out[i] != want[i])
            mtest_report(__FILE__, line, "group member", "rank %d is world %d, want %d", i, out[i], want[i]);
}
#define CHECK_MEMBERS(g, n, ...) do { int w_[] = { __VA_ARGS__ }; check_members((g), world, (n), w_, __LINE__); } while (0)

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int n = mtest_size, result, rc;
    MPI_Group world, evens, odds, g, h, lasttwo;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    /* evens = 0,2,4..  odds = 1,3,..  via range_incl / range_excl */
    int r_even[1][3] = { { 0, n - 1, 2 } };
    CALL(MPI_Group_range_incl(world, 1, r_even, &evens));
    CALL(MPI_Group_range_excl(world, 1, r_even, &odds));
    int ne = (n + 1) / 2, no = n / 2;
    int we[64], wo[64];
    for (int i = 0; i < ne; i++) we[i] = 2 * i;
    for (int i = 0; i < no; i++) wo[i] = 2 * i + 1;
    check_members(evens, world, ne, we, __LINE__);
    check_members(odds, world, no, wo, __LINE__);

    /* union(odds, evens) = odds then evens; union(world, evens) = world */
    CALL(MPI_Group_union(odds, evens, &g));
    int wu[64];
    for (int i = 0; i < no; i++) wu[i] = wo[i];
    for (int i = 0; i < ne; i++) wu[no + i] = we[i];
    check_members(g, world, n, wu, __LINE__);
    MPI_Group_compare(g, world, &result);
    CHECK(result == (n <= 1 ? MPI_IDENT : MPI_SIMILAR), "union vs world: %d", result);
    MPI_Group_free(&g);
    CALL(MPI_Group_union(world, evens, &g));
    MPI_Group_compare(g, world, &result);
    CHECK_EQ(result, MPI_IDENT);
    MPI_Group_free(&g);

    /* intersection and difference */
    CALL(MPI_Group_intersection(odds, evens, &g));
    CHECK(g == MPI_GROUP_EMPTY, "empty intersection is not MPI_GROUP_EMPTY");
    CALL(MPI_Group_free(&g));
    CHECK(g == MPI_GROUP_NULL, "freeing MPI_GROUP_EMPTY did not set MPI_GROUP_NULL");
    CALL(MPI_Group_intersection(world, evens, &g));
    check_members(g, world, ne, we, __LINE__);
    MPI_Group_free(&g);
    CALL(MPI_Group_difference(world, odds, &g));
    MPI_Group_compare(g, evens, &result);
    CHECK_EQ(result, MPI_IDENT);
    MPI_Group_free(&g);
    CALL(MPI_Group_difference(evens, world, &g));
    CHECK(g == MPI_GROUP_EMPTY, "empty difference is not MPI_GROUP_EMPTY");

    /* a descending range: n-1 down to 0 is the world reversed */
    int r_down[1][3] = { { n - 1, 0, -1 } };
    CALL(MPI_Group_range_incl(world, 1, r_down, &h));
    int wr[64];
    for (int i = 0; i < n; i++) wr[i] = n - 1 - i;
    check_members(h, world, n, wr, __LINE__);
    MPI_Group_rank(h, &result);
    CHECK_EQ(result, n - 1 - mtest_rank);
    MPI_Group_free(&h);

    /* two ranges; a stride that steps past `last` stops before it */
    if (n >= 4) {
        int r2[2][3] = { { 0, 0, 1 }, { n - 1, 2, -2 } };
        CALL(MPI_Group_range_incl(world, 2, r2, &h));
        int w2[64], k = 0;
        w2[k++] = 0;
        for (int r = n - 1; r >= 2; r -= 2) w2[k++] = r;
        check_members(h, world, k, w2, __LINE__);
        MPI_Group_free(&h);
    }

    /* incl with n = 0 is MPI_GROUP_EMPTY; excl with n = 0 is the same group */
    CALL(MPI_Group_incl(world, 0, NULL, &h));
    CHECK(h == MPI_GROUP_EMPTY, "Group_incl of nothing is not MPI_GROUP_EMPTY");
    CALL(MPI_Group_excl(world, 0, NULL, &h));
    MPI_Group_compare(h, world, &result);
    CHECK_EQ(result, MPI_IDENT);
    MPI_Group_free(&h);
    /* incl reorders: the last two ranks swapped */
    if (n >= 2) {
        int pick[2] = { n - 1, n - 2 };
        CALL(MPI_Group_incl(world, 2, pick, &lasttwo));
        CHECK_MEMBERS(lasttwo, 2, n - 1, n - 2);
        MPI_Group_rank(lasttwo, &result);
        CHECK_EQ(result, mtest_rank == n - 1 ? 0 : mtest_rank == n - 2 ? 1 : MPI_UNDEFINED);
        MPI_Group_free(&lasttwo);
    }

    /* error paths */
    int bad[2] = { 0, n };
    rc = MPI_Group_incl(world, 2, bad, &h);
    CHECK_CLASS(rc, MPI_ERR_RANK);
    /* The standard names no class for bad ranges: MPICH and Reflex say MPI_ERR_ARG, Open MPI
     * MPI_ERR_RANK. */
    int r_zero[1][3] = { { 0, n - 1, 0 } }, cls = -1;
    rc = MPI_Group_range_incl(world, 1, r_zero, &h);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG || cls == MPI_ERR_RANK, "zero stride: class %d", cls);
    int r_out[1][3] = { { 0, n, 1 } };
    rc = MPI_Group_range_excl(world, 1, r_out, &h);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG || cls == MPI_ERR_RANK, "range past the group: class %d", cls);
    rc = MPI_Group_union(world, MPI_GROUP_NULL, &h);
    CHECK_CLASS(rc, MPI_ERR_GROUP);

    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&world);
    return MTest_Finalize();
}
