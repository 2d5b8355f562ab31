/*
 * env_init.c - environment basics (MPI-3.1 chapter 8 and section 12.4): MPI_Initialized and
 * MPI_Finalized before, during and after the library's life; MPI_Get_version before MPI_Init
 * and after MPI_Finalize; MPI_Init_thread's provided level is a valid level and agrees with
 * MPI_Query_thread and MPI_Is_thread_main; MPI_Get_library_version and
 * MPI_Get_processor_name give non-empty strings of the reported length; MPI_Wtime never goes
 * backwards and MPI_Wtick is positive. Rank 0 prints "library: <version line>" so that runs
 * can check which library was really loaded. Runs with any number of ranks.
 */
#include "mtest.h"
#include <string.h>

static int errs_before_init = 0;

#define EARLY_CHECK(cond, what) \
    do { if (!(cond)) { fprintf(stderr, "env_init.c:%d: check failed: %s\n", __LINE__, what); errs_before_init++; } } while (0)

int main(int argc, char **argv)
{
    int flag = -1, version = 0, subversion = 0, provided = -1;

    MPI_Initialized(&flag);
    EARLY_CHECK(flag == 0, "MPI_Initialized true before MPI_Init_thread");
    MPI_Finalized(&flag);
    EARLY_CHECK(flag == 0, "MPI_Finalized true before MPI_Init_thread");
    /* A binary built against another MPI's mpi.h and run on Reflex (the ABI test) legitimately sees
     * Reflex's MPI version, not the one its header was written for. */
    char early_lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int early_len = 0;
    MPI_Get_library_version(early_lib, &early_len);
#ifdef REFLEX_VERSION
    const int header_matches_library = 1;
#else
    const int header_matches_library = strstr(early_lib, "Reflex") == NULL;
#endif
    MPI_Get_version(&version, &subversion);
    EARLY_CHECK(!header_matches_library || (version == MPI_VERSION && subversion == MPI_SUBVERSION),
                "MPI_Get_version before init");

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mtest_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mtest_size);
    mtest_errs += errs_before_init;

    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
              MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE, "thread level constants out of order");
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "provided %d", provided);
    int queried = -1;
    MPI_Query_thread(&queried);
    CHECK_EQ(queried, provided);
    MPI_Is_thread_main(&flag);
    CHECK(flag, "MPI_Is_thread_main false on the thread that called MPI_Init_thread");
    MPI_Initialized(&flag);
    CHECK(flag, "MPI_Initialized false after MPI_Init_thread");
    MPI_Finalized(&flag);
    CHECK(!flag, "MPI_Finalized true before MPI_Finalize");

    MPI_Get_version(&version, &subversion);
    CHECK(version > 3 || (version == 3 && subversion >= 1), "version %d.%d < 3.1", version, subversion);
    CHECK(!header_matches_library || (version == MPI_VERSION && subversion == MPI_SUBVERSION),
          "Get_version %d.%d, mpi.h %d.%d", version, subversion, MPI_VERSION, MPI_SUBVERSION);

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    memset(lib, 'x', sizeof lib);
    MPI_Get_library_version(lib, &len);
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING, "library version length %d", len);
    if (len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING)
        CHECK((int)strlen(lib) == len, "strlen %d != resultlen %d", (int)strlen(lib), len);

    char name[MPI_MAX_PROCESSOR_NAME];
    len = -1;
    MPI_Get_processor_name(name, &len);
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
    if (len > 0 && len < MPI_MAX_PROCESSOR_NAME)
        CHECK((int)strlen(name) == len, "processor name strlen %d != %d", (int)strlen(name), len);

    double tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick < 1.0, "MPI_Wtick %g", tick);
    double t0 = MPI_Wtime(), prev = t0, t = t0;
    for (long i = 0; i < 100000000 && t == t0; i++) { /* until the clock moves */
        t = MPI_Wtime();
        CHECK(t >= prev, "MPI_Wtime went backwards: %.9f after %.9f", t, prev);
        if (t < prev)
            break;
        prev = t;
    }
    CHECK(t > t0, "MPI_Wtime did not advance");

    if (mtest_rank == 0) {
        char *nl = strchr(lib, '\n'); /* first line only */
        if (nl)
            *nl = 0;
        printf("library: %s\n", lib);
    }

    int total = 0;
    MPI_Allreduce(&mtest_errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();

    MPI_Finalized(&flag);
    if (!flag) {
        fprintf(stderr, "[%d] MPI_Finalized false after MPI_Finalize\n", mtest_rank);
        total++;
    }
    MPI_Initialized(&flag);
    if (!flag) {
        fprintf(stderr, "[%d] MPI_Initialized false after MPI_Finalize\n", mtest_rank);
        total++;
    }
    MPI_Get_version(&version, &subversion);
    if (header_matches_library && version != MPI_VERSION) {
        fprintf(stderr, "[%d] MPI_Get_version after MPI_Finalize gave %d\n", mtest_rank, version);
        total++;
    }
    if (mtest_rank == 0 && total == 0)
        printf(" No Errors\n");
    else if (total)
        printf(" Found %d errors\n", total);
    return total == 0 ? 0 : 1;
}
