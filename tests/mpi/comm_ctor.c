/*
 * comm_ctor.c - the newer communicator constructors: MPI_Comm_create_group called by the
 * members only (even and odd ranks at the same time, then an overlapping group with another
 * tag), MPI_Comm_split_type with MPI_COMM_TYPE_SHARED (every rank of one host: all of them
 * here) ordered by key, and with MPI_UNDEFINED (MPI_COMM_NULL); MPI_Comm_idup (a request that
 * completes in MPI_Wait) and MPI_Comm_dup_with_info (the duplicate reports the given hints).
 * Each new communicator is checked with an allreduce. Error paths under MPI_ERRORS_RETURN:
 * a bad split type is MPI_ERR_ARG, a negative tag MPI_ERR_TAG.
 * Runs with any number of ranks (everything on one host).
 */
#include "mtest.h"

/* The communicator works: the sum of 1 over its ranks is its size. */
static void check_comm(MPI_Comm c, int want_size, int line)
{
    int size = -1, sum = -1, one = 1;
    MPI_Comm_size(c, &size);
    if (size != want_size)
        mtest_report(__FILE__, line, "communicator size", "%d, want %d", size, want_size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
    if (sum != size)
        mtest_report(__FILE__, line, "allreduce over the new communicator", "%d, want %d", sum, size);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int n = mtest_size, me = mtest_rank, rank, rc;
    MPI_Group world, mine, first;
    MPI_Comm c;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    /* Even and odd ranks create their communicators concurrently, with the same tag. */
    int parity[1][3] = { { me % 2, n - 1, 2 } };
    CALL(MPI_Group_range_incl(world, 1, parity, &mine));
    CALL(MPI_Comm_create_group(MPI_COMM_WORLD, mine, 7, &c));
    check_comm(c, me % 2 == 0 ? (n + 1) / 2 : n / 2, __LINE__);
    MPI_Comm_rank(c, &rank);
    CHECK_EQ(rank, me / 2);
    MPI_Comm_free(&c);

    /* The first (up to) three ranks, in reverse order, with another tag; the others stay out. */
    int k = n < 3 ? n : 3, pick[3];
    for (int i = 0; i < k; i++)
        pick[i] = k - 1 - i;
    CALL(MPI_Group_incl(world, k, pick, &first));
    if (me < k) {
        CALL(MPI_Comm_create_group(MPI_COMM_WORLD, first, 11, &c));
        check_comm(c, k, __LINE__);
        MPI_Comm_rank(c, &rank);
        CHECK_EQ(rank, k - 1 - me);
        MPI_Comm_free(&c);
    }

    /* Split by shared memory: the ranks of this node (consecutive blocks of mtest_node_size()),
     * ordered by the key (reversed). */
    int local = mtest_node_size(), first_here = me - me % local;
    int here = first_here + local <= n ? local : n - first_here;
    CALL(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, n - me, MPI_INFO_NULL, &c));
    check_comm(c, here, __LINE__);
    MPI_Comm_rank(c, &rank);
    CHECK_EQ(rank, here - 1 - me % local);
    MPI_Comm_free(&c);
    /* Odd ranks opt out with MPI_UNDEFINED. */
    int type = me % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, even_here = 0;
    for (int r = first_here; r < first_here + here; r++)
        even_here += r % 2 == 0;
    CALL(MPI_Comm_split_type(MPI_COMM_WORLD, type, 0, MPI_INFO_NULL, &c));
    if (me % 2) {
        CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED did not give MPI_COMM_NULL");
    } else {
        check_comm(c, even_here, __LINE__);
        MPI_Comm_free(&c);
    }

    /* Comm_idup: complete after the wait. */
    MPI_Request req;
    CALL(MPI_Comm_idup(MPI_COMM_WORLD, &c, &req));
    CALL(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    check_comm(c, n, __LINE__);
    int result;
    MPI_Comm_compare(c, MPI_COMM_WORLD, &result);
    CHECK_EQ(result, MPI_CONGRUENT);
    MPI_Comm_free(&c);

    /* Comm_dup_with_info: the hints travel with the duplicate. */
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    CALL(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c));
    MPI_Info_free(&info);
    check_comm(c, n, __LINE__);
    CALL(MPI_Comm_get_info(c, &used));
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, value, &flag);
    /* An implementation may drop hints it does not use; a kept one must have its value. */
    CHECK(!flag || strcmp(value, "true") == 0, "hint value \"%s\"", value);
    MPI_Info_free(&used);
    MPI_Comm_free(&c);

    /* Error paths; on Reflex a failed constructor leaves MPI_COMM_NULL (MPICH 4.0.2 does so
     * for MPI_Cart_create only). */
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    c = MPI_COMM_WORLD;
    rc = MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &c);
    CHECK_CLASS(rc, MPI_ERR_ARG);
    if (strstr(lib, "Reflex"))
        CHECK(c == MPI_COMM_NULL, "a failed MPI_Comm_split_type left a handle");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Group self_group;
    MPI_Comm_group(MPI_COMM_SELF, &self_group);
    rc = MPI_Comm_create_group(MPI_COMM_SELF, self_group, -1, &c);
    CHECK_CLASS(rc, MPI_ERR_TAG);
    MPI_Group_free(&self_group);

    MPI_Group_free(&first);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    return MTest_Finalize();
}
