/*
 * session_only.c - a program that never calls MPI_Init (MPI-4.0 11.3): everything goes through a
 * session. It takes the group of "mpi://WORLD", builds a communicator from it
 * (MPI_Comm_create_from_group), talks on it (ring Sendrecv, Allreduce, Bcast), opens a second
 * session (asking for MPI_THREAD_MULTIPLE) while the first is open and closes them in the
 * opposite order, and finalizes the last
 * session, which must end MPI cleanly (the launcher sees a normal exit). MPI_Initialized and
 * MPI_Finalized stay false: sessions are not the World Model.
 * With SESSION_ONLY_TOUCH_WORLD=1 it then uses MPI_COMM_WORLD, which is invalid without
 * MPI_Init: the initial error handler (fatal) must end the job with a message, not a crash.
 */
#include "mtest.h"

static void ring(MPI_Comm comm)
{
    int rank, size, got = -1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    CALL(MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 7, &got, 1, MPI_INT,
                      (rank + size - 1) % size, 7, comm, MPI_STATUS_IGNORE));
    CHECK_EQ(got, (rank + size - 1) % size);
    int sum = -1, root = size - 1, v = rank == root ? 4242 : 0;
    CALL(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK_EQ(sum, size * (size - 1) / 2);
    CALL(MPI_Bcast(&v, 1, MPI_INT, root, comm));
    CHECK_EQ(v, 4242);
}

int main(void)
{
    MPI_Session s1 = MPI_SESSION_NULL, s2 = MPI_SESSION_NULL;
    MPI_Group world;
    MPI_Comm comm, comm2;
    int flag = -1, size = 0, gsize = 0;

    CALL(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s1));
    CALL(MPI_Group_from_session_pset(s1, "mpi://WORLD", &world));
    CALL(MPI_Comm_create_from_group(world, "org.reflex.session_only", MPI_INFO_NULL,
                                    MPI_ERRORS_RETURN, &comm));
    MPI_Comm_rank(comm, &mtest_rank);
    MPI_Comm_size(comm, &mtest_size);
    CALL(MPI_Group_size(world, &gsize));
    CHECK_EQ(gsize, mtest_size);
    CALL(MPI_Initialized(&flag));
    CHECK_EQ(flag, 0);
    ring(comm);

    /* A second session, open at the same time, asking for MPI_THREAD_MULTIPLE (every later call
     * then runs under it), with its own communicator. */
    MPI_Info want, got;
    char level[MPI_MAX_INFO_VAL];
    CALL(MPI_Info_create(&want));
    CALL(MPI_Info_set(want, "thread_level", "MPI_THREAD_MULTIPLE"));
    CALL(MPI_Session_init(want, MPI_ERRORS_RETURN, &s2));
    CALL(MPI_Info_free(&want));
    CALL(MPI_Session_get_info(s2, &got));
    CALL(MPI_Info_get(got, "thread_level", MPI_MAX_INFO_VAL - 1, level, &flag));
    CHECK(flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0, "thread_level %s", flag ? level : "(none)");
    CALL(MPI_Info_free(&got));
    CHECK(s2 != s1, "two open sessions have different handles");
    MPI_Group world2;
    CALL(MPI_Group_from_session_pset(s2, "mpi://WORLD", &world2));
    CALL(MPI_Comm_create_from_group(world2, "org.reflex.session_only.2", MPI_INFO_NULL,
                                    MPI_ERRORS_RETURN, &comm2));
    CALL(MPI_Comm_size(comm2, &size));
    CHECK_EQ(size, mtest_size);
    ring(comm2);
    CALL(MPI_Comm_free(&comm2));
    CALL(MPI_Group_free(&world2));
    CALL(MPI_Session_finalize(&s2));
    CHECK(s2 == MPI_SESSION_NULL, "MPI_Session_finalize sets the handle to MPI_SESSION_NULL");
    ring(comm); /* the first session still works */

    if (getenv("SESSION_ONLY_TOUCH_WORLD"))
        MPI_Comm_size(MPI_COMM_WORLD, &size); /* erroneous: no World Model; fatal */

    int total = 0;
    CALL(MPI_Allreduce(&mtest_errs, &total, 1, MPI_INT, MPI_SUM, comm));
    int counted = mtest_errs; /* failures after the reduction fail this rank's exit code */
    CALL(MPI_Comm_free(&comm));
    CALL(MPI_Group_free(&world));
    CALL(MPI_Session_finalize(&s1));
    CALL(MPI_Finalized(&flag));
    CHECK_EQ(flag, 0);
    if (mtest_rank == 0) {
        printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
        fflush(stdout);
    }
    return total == 0 && mtest_errs == counted ? 0 : 1;
}
