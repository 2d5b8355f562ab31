/*
 * session_comm.c - communicators built from groups alone (MPI-4.0 11.3:
 * MPI_Comm_create_from_group, MPI_Intercomm_create_from_groups), in a program that also uses the
 * World Model:
 *  - MPI_Comm_create_from_group over the group of "mpi://WORLD": ranks, point-to-point (a ring)
 *    and collectives (Allreduce, Bcast) on it; the error handler given is attached (an error on
 *    the new communicator is returned, MPI_Comm_get_errhandler gives it back);
 *  - two creations with different string tags over overlapping groups, entered at different
 *    times: A = world ranks 0..P-2, B = world ranks P-1..1 (reversed, so that the last rank is
 *    rank 0 of B); the middle ranks create A then B while the last rank is already in B, so its
 *    messages reach them during A. Beside them, an MPI_Comm_create_group on MPI_COMM_WORLD with
 *    a tag of its own (the library's traffic must not meet it);
 *  - the same string tag used at the same time by two disjoint groups (the halves);
 *  - MPI_Intercomm_create_from_groups between the low and the high half (leaders: first rank of
 *    each), traffic across it, an Allreduce on it, and MPI_Intercomm_merge;
 *  - errors (Reflex only: MPICH 4.0.2 crashes on them): a NULL string tag, a leader out of
 *    range.
 */
#include "mtest.h"

static int on_reflex; /* MPICH 4.0.2 crashes on the erroneous calls instead of returning errors */

static MPI_Group range_group(MPI_Group world, int first, int last, int stride)
{
    MPI_Group g;
    int ranges[1][3] = {{first, last, stride}};
    CALL(MPI_Group_range_incl(world, 1, ranges, &g));
    return g;
}

/* Ring, Allreduce of the world ranks, Bcast from the last rank: `worlds` lists the world rank
 * of each rank of `comm`. */
static void exercise(MPI_Comm comm, const int *worlds)
{
    int rank, size, got = -1, sum = -1, expect = 0;
    CALL(MPI_Comm_rank(comm, &rank));
    CALL(MPI_Comm_size(comm, &size));
    CHECK_EQ(worlds[rank], mtest_rank);
    CALL(MPI_Sendrecv(&mtest_rank, 1, MPI_INT, (rank + 1) % size, 3, &got, 1, MPI_INT,
                      (rank + size - 1) % size, 3, comm, MPI_STATUS_IGNORE));
    CHECK_EQ(got, worlds[(rank + size - 1) % size]);
    for (int r = 0; r < size; r++)
        expect += worlds[r];
    CALL(MPI_Allreduce(&mtest_rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK_EQ(sum, expect);
    int v = rank == size - 1 ? 77 + size : -1;
    CALL(MPI_Bcast(&v, 1, MPI_INT, size - 1, comm));
    CHECK_EQ(v, 77 + size);
}

static void from_world(MPI_Group world)
{
    MPI_Comm comm;
    MPI_Errhandler eh;
    int *worlds = mtest_malloc(sizeof(int) * mtest_size);
    for (int r = 0; r < mtest_size; r++)
        worlds[r] = r;
    CALL(MPI_Comm_create_from_group(world, "org.reflex.world", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                    &comm));
    exercise(comm, worlds);
    CALL(MPI_Comm_get_errhandler(comm, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "the handler given is attached");
    CALL(MPI_Errhandler_free(&eh));
    CHECK_CLASS(MPI_Send(&mtest_rank, 1, MPI_INT, mtest_size, 0, comm), MPI_ERR_RANK);
    CALL(MPI_Comm_free(&comm));
    free(worlds);
}

static void overlapping(MPI_Group world)
{
    int P = mtest_size, me = mtest_rank;
    if (P < 2)
        return;
    MPI_Group a = range_group(world, 0, P - 2, 1), b = range_group(world, P - 1, 1, -1);
    int *wa = mtest_malloc(sizeof(int) * P), *wb = mtest_malloc(sizeof(int) * P);
    for (int r = 0; r < P - 1; r++) {
        wa[r] = r;
        wb[r] = P - 1 - r;
    }
    MPI_Comm ca = MPI_COMM_NULL, cb = MPI_COMM_NULL, cw = MPI_COMM_NULL;
    if (me <= P - 2)
        CALL(MPI_Comm_create_from_group(a, "org.reflex.A", MPI_INFO_NULL, MPI_ERRORS_RETURN, &ca));
    if (me >= 1)
        CALL(MPI_Comm_create_from_group(b, "org.reflex.B", MPI_INFO_NULL, MPI_ERRORS_RETURN, &cb));
    /* The application's own group creation on MPI_COMM_WORLD, with a tag of its own. */
    CALL(MPI_Comm_create_group(MPI_COMM_WORLD, a, 5, &cw));
    CHECK((cw != MPI_COMM_NULL) == (me <= P - 2), "Comm_create_group membership");
    if (ca != MPI_COMM_NULL)
        exercise(ca, wa);
    if (cb != MPI_COMM_NULL)
        exercise(cb, wb);
    if (cw != MPI_COMM_NULL) {
        exercise(cw, wa);
        CALL(MPI_Comm_free(&cw));
    }
    if (ca != MPI_COMM_NULL)
        CALL(MPI_Comm_free(&ca));
    if (cb != MPI_COMM_NULL)
        CALL(MPI_Comm_free(&cb));
    CALL(MPI_Group_free(&a));
    CALL(MPI_Group_free(&b));
    free(wa);
    free(wb);
}

static void halves(MPI_Group world)
{
    int P = mtest_size, me = mtest_rank, half = P / 2;
    if (P < 2)
        return;
    MPI_Group low = range_group(world, 0, half - 1, 1), high = range_group(world, half, P - 1, 1);
    int in_low = me < half;
    MPI_Group mine = in_low ? low : high, other = in_low ? high : low;
    int *w = mtest_malloc(sizeof(int) * P);
    for (int r = 0; r < P; r++)
        w[r] = (in_low ? 0 : half) + r;

    /* One string tag, two disjoint groups at the same time. */
    MPI_Comm c;
    CALL(MPI_Comm_create_from_group(mine, "org.reflex.half", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    exercise(c, w);
    CALL(MPI_Comm_free(&c));

    MPI_Comm ic, merged;
    int lsize = in_low ? half : P - half, rsize = P - lsize, n = -1, flag = 0;
    CALL(MPI_Intercomm_create_from_groups(mine, 0, other, 0, "org.reflex.inter", MPI_INFO_NULL,
                                          MPI_ERRORS_RETURN, &ic));
    CALL(MPI_Comm_test_inter(ic, &flag));
    CHECK_EQ(flag, 1);
    CALL(MPI_Comm_size(ic, &n));
    CHECK_EQ(n, lsize);
    CALL(MPI_Comm_remote_size(ic, &n));
    CHECK_EQ(n, rsize);
    int lrank = me - (in_low ? 0 : half), peer = lrank < rsize ? lrank : rsize - 1, got = -1;
    /* Everyone sends to remote rank `peer`; remote ranks receive from whoever maps to them. */
    MPI_Request req;
    CALL(MPI_Isend(&me, 1, MPI_INT, peer, 9, ic, &req));
    for (int r = 0; r < rsize; r++) {
        int target = r < lsize ? r : lsize - 1;
        if (target == lrank) {
            CALL(MPI_Recv(&got, 1, MPI_INT, r, 9, ic, MPI_STATUS_IGNORE));
            CHECK_EQ(got, (in_low ? half : 0) + r);
        }
    }
    CALL(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int sum = -1, expect = 0;
    for (int r = 0; r < rsize; r++)
        expect += (in_low ? half : 0) + r;
    CALL(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, ic));
    CHECK_EQ(sum, expect);
    CALL(MPI_Intercomm_merge(ic, !in_low, &merged));
    CALL(MPI_Comm_rank(merged, &n));
    CHECK_EQ(n, me);
    CALL(MPI_Barrier(merged));
    CALL(MPI_Comm_free(&merged));
    CALL(MPI_Comm_free(&ic));

    /* Errors: a leader out of range (every process of both groups names one). */
    MPI_Comm bad = MPI_COMM_NULL;
    if (on_reflex)
        CHECK_CLASS(MPI_Intercomm_create_from_groups(mine, lsize, other, 0, "org.reflex.bad",
                                                     MPI_INFO_NULL, MPI_ERRORS_RETURN, &bad),
                    MPI_ERR_RANK);
    CALL(MPI_Group_free(&low));
    CALL(MPI_Group_free(&high));
    free(w);
}

int main(int argc, char **argv)
{
    MPI_Session s;
    MPI_Group world;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Get_library_version(lib, &len);
    on_reflex = strstr(lib, "Reflex") != NULL;
    CALL(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    CALL(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    from_world(world);
    overlapping(world);
    halves(world);
    MPI_Comm c = MPI_COMM_NULL;
    if (on_reflex)
        CHECK_CLASS(MPI_Comm_create_from_group(world, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c),
                    MPI_ERR_ARG);
    CALL(MPI_Group_free(&world));
    CALL(MPI_Session_finalize(&s));
    return MTest_Finalize();
}
