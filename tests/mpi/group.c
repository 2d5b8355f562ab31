/*
 * group.c - groups (MPI-3.1 sections 6.3-6.4): MPI_Comm_group of MPI_COMM_WORLD has the
 * world's size and rank; MPI_Group_translate_ranks maps ranks between the world group and the
 * group of a split communicator (MPI_UNDEFINED when absent, MPI_PROC_NULL maps to itself);
 * MPI_Group_compare gives IDENT, SIMILAR and UNEQUAL; MPI_GROUP_EMPTY has size 0 and a
 * non-member's rank is MPI_UNDEFINED; MPI_Group_free sets MPI_GROUP_NULL.
 * Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Group world, wdup, half, rev;
    MPI_Comm dup, chalf, crev;
    int n, rank, result;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(world, &n);
    CHECK_EQ(n, mtest_size);
    MPI_Group_rank(world, &rank);
    CHECK_EQ(rank, mtest_rank);

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_group(dup, &wdup);
    MPI_Group_compare(world, wdup, &result);
    CHECK_EQ(result, MPI_IDENT);

    /* even ranks in order; odd ranks too */
    int color = mtest_rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, mtest_rank, &chalf);
    MPI_Comm_group(chalf, &half);
    MPI_Group_size(half, &n);
    CHECK_EQ(n, (mtest_size + 1 - color) / 2);
    MPI_Group_rank(half, &rank);
    CHECK_EQ(rank, mtest_rank / 2);

    /* translate every world rank (plus MPI_PROC_NULL) into the half group */
    int *in = mtest_malloc((mtest_size + 1) * sizeof(int)), *out = mtest_malloc((mtest_size + 1) * sizeof(int));
    for (int i = 0; i < mtest_size; i++)
        in[i] = i;
    in[mtest_size] = MPI_PROC_NULL;
    MPI_Group_translate_ranks(world, mtest_size + 1, in, half, out);
    for (int i = 0; i < mtest_size; i++) {
        int want = i % 2 == color ? i / 2 : MPI_UNDEFINED;
        CHECK(out[i] == want, "world rank %d -> %d in half group, want %d", i, out[i], want);
    }
    CHECK_EQ(out[mtest_size], MPI_PROC_NULL);
    /* and back */
    MPI_Group_size(half, &n);
    for (int i = 0; i < n; i++)
        in[i] = i;
    MPI_Group_translate_ranks(half, n, in, world, out);
    for (int i = 0; i < n; i++)
        CHECK(out[i] == 2 * i + color, "half rank %d -> world %d", i, out[i]);

    MPI_Group_compare(world, half, &result);
    CHECK(result == (mtest_size == 1 ? MPI_IDENT : MPI_UNEQUAL), "compare(world, half) = %d", result);

    MPI_Comm_split(MPI_COMM_WORLD, 0, -mtest_rank, &crev);
    MPI_Comm_group(crev, &rev);
    MPI_Group_compare(world, rev, &result);
    CHECK(result == (mtest_size == 1 ? MPI_IDENT : MPI_SIMILAR), "compare(world, reversed) = %d", result);
    MPI_Group_rank(rev, &rank);
    CHECK_EQ(rank, mtest_size - 1 - mtest_rank);

    MPI_Group_size(MPI_GROUP_EMPTY, &n);
    CHECK_EQ(n, 0);
    MPI_Group_rank(MPI_GROUP_EMPTY, &rank);
    CHECK_EQ(rank, MPI_UNDEFINED);
    MPI_Group_compare(MPI_GROUP_EMPTY, world, &result);
    CHECK_EQ(result, MPI_UNEQUAL);

    MPI_Group_free(&world);
    MPI_Group_free(&wdup);
    MPI_Group_free(&half);
    MPI_Group_free(&rev);
    CHECK(world == MPI_GROUP_NULL && rev == MPI_GROUP_NULL, "Group_free did not set MPI_GROUP_NULL");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&chalf);
    MPI_Comm_free(&crev);
    free(in);
    free(out);
    return MTest_Finalize();
}
