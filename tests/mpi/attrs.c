/*
 * attrs.c - predefined attributes of MPI_COMM_WORLD (MPI-3.1 sections 8.1.2 and 10.5.1) read
 * with MPI_Comm_get_attr: MPI_TAG_UB is present and >= 32767 (and a message with that tag
 * works), MPI_HOST and MPI_IO are present and are MPI_PROC_NULL, MPI_ANY_SOURCE or a rank,
 * MPI_WTIME_IS_GLOBAL is present and 0 or 1; MPI_APPNUM (0 for a single-command mpiexec) and
 * MPI_UNIVERSE_SIZE (>= 1; Open MPI reports the slot count, which may be below the world size) are optional but sane when present. Also a dup keeps
 * MPI_TAG_UB. Runs with any number of ranks.
 */
#include "mtest.h"

static int get(MPI_Comm comm, int key, const char *name, int required)
{
    int *val = NULL, flag = 0;
    MPI_Comm_get_attr(comm, key, &val, &flag);
    CHECK(flag || !required, "attribute %s missing", name);
    return flag && val ? *val : -999;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int tag_ub = get(MPI_COMM_WORLD, MPI_TAG_UB, "MPI_TAG_UB", 1);
    CHECK(tag_ub >= 32767, "MPI_TAG_UB %d < 32767", tag_ub);

    int host = get(MPI_COMM_WORLD, MPI_HOST, "MPI_HOST", 1);
    CHECK(host == MPI_PROC_NULL || (host >= 0 && host < mtest_size), "MPI_HOST %d", host);
    int io = get(MPI_COMM_WORLD, MPI_IO, "MPI_IO", 1);
    CHECK(io == MPI_PROC_NULL || io == MPI_ANY_SOURCE || (io >= 0 && io < mtest_size), "MPI_IO %d", io);
    int global = get(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, "MPI_WTIME_IS_GLOBAL", 1);
    CHECK(global == 0 || global == 1, "MPI_WTIME_IS_GLOBAL %d", global);

    int appnum = get(MPI_COMM_WORLD, MPI_APPNUM, "MPI_APPNUM", 0);
    CHECK(appnum == -999 || appnum == 0, "MPI_APPNUM %d, want 0 for a single-command launch", appnum);
    int universe = get(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, "MPI_UNIVERSE_SIZE", 0);
    CHECK(universe == -999 || universe >= 1, "MPI_UNIVERSE_SIZE %d", universe);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int dup_ub = get(dup, MPI_TAG_UB, "MPI_TAG_UB on a dup", 1);
    CHECK_EQ(dup_ub, tag_ub);
    MPI_Comm_free(&dup);

    /* The largest tag works. */
    if (tag_ub >= 32767) {
        int v = 5, r = 0;
        MPI_Status st;
        MPI_Sendrecv(&v, 1, MPI_INT, mtest_partner(), tag_ub, &r, 1, MPI_INT, mtest_partner(), tag_ub,
                     MPI_COMM_WORLD, &st);
        CHECK_EQ(st.MPI_TAG, tag_ub);
        CHECK_EQ(r, 5);
    }
    if (mtest_rank == 0)
        printf("tag_ub %d host %d io %d wtime_is_global %d appnum %d universe %d\n", tag_ub, host, io,
               global, appnum, universe);
    return MTest_Finalize();
}
