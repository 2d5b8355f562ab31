/*
 * comm.c - communicator basics (MPI-3.1 sections 6.4.1-6.4.3): MPI_Comm_rank/size on
 * MPI_COMM_WORLD and MPI_COMM_SELF; MPI_Comm_dup gives a congruent communicator whose messages
 * never match the parent's; MPI_Comm_split orders by key then old rank, gives MPI_COMM_NULL for
 * MPI_UNDEFINED, and the new communicators carry point-to-point and collective traffic;
 * MPI_Comm_compare returns IDENT, CONGRUENT, SIMILAR and UNEQUAL where due; MPI_Comm_free sets
 * MPI_COMM_NULL; 200 dup/free cycles do not exhaust context ids. Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int rank, size, result, v, r;
    MPI_Comm dup, half, rev, all, none;

    MPI_Comm_rank(MPI_COMM_SELF, &rank);
    MPI_Comm_size(MPI_COMM_SELF, &size);
    CHECK(rank == 0 && size == 1, "COMM_SELF rank %d size %d", rank, size);
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result);
    CHECK_EQ(result, MPI_IDENT);

    /* dup: congruent, separate matching. */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_rank(dup, &rank);
    MPI_Comm_size(dup, &size);
    CHECK(rank == mtest_rank && size == mtest_size, "dup rank %d size %d", rank, size);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
    CHECK_EQ(result, MPI_CONGRUENT);
    {
        int a = 1, b = 2, x = 0;
        MPI_Request q[2];
        int peer = mtest_partner();
        MPI_Isend(&a, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(&b, 1, MPI_INT, peer, 0, dup, &q[1]);
        MPI_Recv(&x, 1, MPI_INT, peer, 0, dup, MPI_STATUS_IGNORE);
        CHECK(x == 2, "receive on the dup got %d, the parent's message leaked in", x);
        MPI_Recv(&x, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_EQ(x, 1);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }

    /* split by parity, key reverses the order. */
    int color = mtest_rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, -mtest_rank, &half);
    MPI_Comm_rank(half, &rank);
    MPI_Comm_size(half, &size);
    int want_size = (mtest_size + 1 - color) / 2;
    CHECK_EQ(size, want_size);
    CHECK_EQ(rank, want_size - 1 - mtest_rank / 2);
    /* ring inside the half, and a collective */
    v = mtest_rank;
    MPI_Sendrecv(&v, 1, MPI_INT, (rank + 1) % size, 1, &r, 1, MPI_INT, (rank + size - 1) % size, 1, half,
                 MPI_STATUS_IGNORE);
    {
        int left_world = mtest_rank + 2 < mtest_size && (mtest_rank + 2) % 2 == color ? mtest_rank + 2 : -1;
        if (size > 1 && left_world >= 0)
            CHECK(r == left_world, "ring in split comm: got %d, want %d", r, left_world);
    }
    int sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half);
    int want_sum = 0;
    for (int i = color; i < mtest_size; i += 2)
        want_sum += i;
    CHECK_EQ(sum, want_sum);
    MPI_Comm_compare(MPI_COMM_WORLD, half, &result);
    CHECK(result == (mtest_size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(world, half) = %d", result);

    /* all ranks, same order -> CONGRUENT; reversed -> SIMILAR (when size > 1). */
    MPI_Comm_split(MPI_COMM_WORLD, 7, mtest_rank, &all);
    MPI_Comm_compare(MPI_COMM_WORLD, all, &result);
    CHECK_EQ(result, MPI_CONGRUENT);
    MPI_Comm_split(MPI_COMM_WORLD, 7, -mtest_rank, &rev);
    MPI_Comm_rank(rev, &rank);
    CHECK_EQ(rank, mtest_size - 1 - mtest_rank);
    MPI_Comm_compare(MPI_COMM_WORLD, rev, &result);
    CHECK(result == (mtest_size == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "compare(world, reversed) = %d", result);
    /* equal keys keep the old order */
    MPI_Comm eq;
    MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &eq);
    MPI_Comm_rank(eq, &rank);
    CHECK_EQ(rank, mtest_rank);
    MPI_Comm_free(&eq);

    /* MPI_UNDEFINED color: MPI_COMM_NULL for the odd ranks. */
    MPI_Comm_split(MPI_COMM_WORLD, color ? MPI_UNDEFINED : 0, 0, &none);
    CHECK((none == MPI_COMM_NULL) == (color == 1), "color %d got %s", color,
          none == MPI_COMM_NULL ? "MPI_COMM_NULL" : "a communicator");
    if (none != MPI_COMM_NULL)
        MPI_Comm_free(&none);

    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&all);
    CHECK(dup == MPI_COMM_NULL && half == MPI_COMM_NULL, "Comm_free did not set MPI_COMM_NULL");

    /* Context ids are recycled. */
    for (int i = 0; i < 200; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_free(&c);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    v = mtest_rank;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_MAX, dup);
    CHECK_EQ(sum, mtest_size - 1);
    MPI_Comm_free(&dup);
    return MTest_Finalize();
}
