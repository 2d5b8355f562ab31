/*
 * comm_idup.c - MPI_Comm_idup is nonblocking (MPI-3.1 section 6.4.2):
 *   1. rank 0 posts its duplicate last, after a message that the others send only once their
 *      own duplicates are posted: the others' MPI_Comm_idup must return without rank 0;
 *   2. duplicates of two communicators posted in opposite orders on even and odd ranks, then
 *      completed by one MPI_Waitall (the order of posting on different parents is free);
 *   3. blocking constructors (dup, split) and a collective on the parent while duplicates are
 *      pending, then several pending duplicates of one parent;
 *   4. a duplicate of an intercommunicator;
 *   5. attributes are copied through their callbacks, and freed duplicates do not leak: many
 *      duplicate/free cycles.
 * Every new communicator is checked with traffic that would cross communicators if two shared
 * a context: the same tag on the parent and on the duplicate at once.
 */
#include "mtest.h"

/* Sends to the right and receives from the left on `a` and `b` (two communicators over the
 * same group, in the same order) with the same tag, the receive on b posted first: a receive
 * matched on the wrong communicator gets the wrong value. */
static void check_distinct(MPI_Comm a, MPI_Comm b, const char *what)
{
    int rank, size, got[2] = {-1, -1}, mine[2];
    MPI_Comm_rank(a, &rank);
    MPI_Comm_size(a, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request req[4];
    mine[0] = 1000 + rank;
    mine[1] = 2000 + rank;
    MPI_Irecv(&got[1], 1, MPI_INT, left, 7, b, &req[0]);
    MPI_Irecv(&got[0], 1, MPI_INT, left, 7, a, &req[1]);
    MPI_Isend(&mine[0], 1, MPI_INT, right, 7, a, &req[2]);
    MPI_Isend(&mine[1], 1, MPI_INT, right, 7, b, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    CHECK(got[0] == 1000 + left && got[1] == 2000 + left, "%s: got %d and %d from %d", what,
          got[0], got[1], left);
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, b);
    CHECK_EQ(sum, size);
}

static void rank0_last(void)
{
    MPI_Comm dup;
    MPI_Request req;
    int token = 0;
    if (mtest_rank == 0) {
        for (int r = 1; r < mtest_size; r++)
            MPI_Recv(&token, 1, MPI_INT, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
    } else {
        MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
        MPI_Send(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check_distinct(MPI_COMM_WORLD, dup, "duplicate posted last on rank 0");
    MPI_Comm_free(&dup);
}

static void crossed(void)
{
    MPI_Comm a, b, da, db;
    MPI_Request req[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_split(MPI_COMM_WORLD, 0, mtest_size - mtest_rank, &b); /* ranks reversed */
    if (mtest_rank % 2 == 0) {
        MPI_Comm_idup(a, &da, &req[0]);
        MPI_Comm_idup(b, &db, &req[1]);
    } else {
        MPI_Comm_idup(b, &db, &req[1]);
        MPI_Comm_idup(a, &da, &req[0]);
    }
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    check_distinct(a, da, "duplicates posted in opposite orders (a)");
    check_distinct(b, db, "duplicates posted in opposite orders (b)");
    MPI_Comm_free(&da);
    MPI_Comm_free(&db);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

enum { PENDING = 4 };

static void overlapping(void)
{
    MPI_Comm dups[PENDING], dup, half;
    MPI_Request req[PENDING];
    int n = 0;
    MPI_Comm_idup(MPI_COMM_WORLD, &dups[0], &req[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, mtest_rank % 2, mtest_rank, &half);
    MPI_Allreduce(&mtest_rank, &n, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK_EQ(n, mtest_size - 1);
    for (int i = 1; i < PENDING; i++)
        MPI_Comm_idup(i % 2 ? dup : MPI_COMM_WORLD, &dups[i], &req[i]);
    MPI_Waitall(PENDING, req, MPI_STATUSES_IGNORE);
    check_distinct(MPI_COMM_WORLD, dups[0], "duplicate pending across dup and split");
    check_distinct(dup, dups[1], "duplicate of a duplicate");
    check_distinct(dups[0], dups[2], "two duplicates of one parent");
    check_distinct(dups[3], dups[1], "two duplicates of a duplicate");
    int members = 0, one = 1;
    MPI_Allreduce(&one, &members, 1, MPI_INT, MPI_SUM, half);
    CHECK_EQ(members, (mtest_size + 1 - mtest_rank % 2) / 2);
    for (int i = 0; i < PENDING; i++)
        MPI_Comm_free(&dups[i]);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
}

static void intercomm(void)
{
    if (mtest_size < 2)
        return;
    MPI_Comm local, inter, dup;
    MPI_Request req;
    int low = mtest_rank < mtest_size / 2, remote_size, flag = 0;
    MPI_Comm_split(MPI_COMM_WORLD, low, mtest_rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? mtest_size / 2 : 0, 5, &inter);
    MPI_Comm_idup(inter, &dup, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_test_inter(dup, &flag);
    CHECK(flag, "the duplicate of an intercommunicator is not one");
    MPI_Comm_remote_size(dup, &remote_size);
    CHECK_EQ(remote_size, low ? mtest_size - mtest_size / 2 : mtest_size / 2);
    int lrank, mine, got = -1;
    MPI_Comm_rank(dup, &lrank);
    mine = 100 * low + lrank;
    /* rank 0 of each group swaps with rank 0 of the other, on the parent and the duplicate */
    if (lrank == 0) {
        int old = -1;
        MPI_Request r[4];
        MPI_Irecv(&got, 1, MPI_INT, 0, 3, dup, &r[0]);
        MPI_Irecv(&old, 1, MPI_INT, 0, 3, inter, &r[1]);
        int other = mine + 1;
        MPI_Isend(&other, 1, MPI_INT, 0, 3, inter, &r[2]);
        MPI_Isend(&mine, 1, MPI_INT, 0, 3, dup, &r[3]);
        MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        CHECK_EQ(got, 100 * !low);
        CHECK_EQ(old, 100 * !low + 1);
    }
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

static int copies;

static int copy_attr(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static void attributes_and_cycles(void)
{
    int key, *value = NULL, found = 0, payload = 42;
    MPI_Comm_create_keyval(copy_attr, MPI_COMM_NULL_DELETE_FN, &key, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, key, &payload);
    for (int i = 0; i < 500; i++) {
        MPI_Comm dup;
        MPI_Request req;
        MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (i == 0) {
            MPI_Comm_get_attr(dup, key, &value, &found);
            CHECK(found && value == &payload, "the attribute was not copied to the duplicate");
            check_distinct(MPI_COMM_WORLD, dup, "first of many duplicates");
        }
        MPI_Comm_free(&dup);
    }
    CHECK_EQ(copies, 500);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, key);
    MPI_Comm_free_keyval(&key);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    rank0_last();
    crossed();
    overlapping();
    intercomm();
    attributes_and_cycles();
    return MTest_Finalize();
}
