/*
 * session_basic.c - sessions beside the World Model (MPI-4.0 11.3):
 *  - a session opened before MPI_Init (MPI_Initialized stays false until MPI_Init), one that
 *    outlives MPI_Finalize (MPI_Finalized true, its communicator still works), and sessions
 *    opened and finalized several times in between;
 *  - process sets: MPI_Session_get_num_psets / get_nth_pset (length query with 0, truncation),
 *    "mpi://WORLD" and "mpi://SELF" found, their pset info ("mpi_size") and groups; an unknown
 *    name is MPI_ERR_ARG;
 *  - MPI_Session_get_info with a "thread_level" key;
 *  - error handlers: Session_create_errhandler / set / get / call_errhandler (the handler sees
 *    the session and the code), errors of session calls go to the session's handler,
 *    MPI_ERRORS_RETURN returns them; MPI_Session_init's errors go to the handler it is given;
 *    bad session handles are MPI_ERR_SESSION.
 */
#include "mtest.h"

static int handler_calls, handler_code, on_reflex;
static MPI_Session handler_session;

static void on_error(MPI_Session *s, int *code, ...)
{
    handler_calls++;
    handler_session = *s;
    handler_code = *code;
}

static int has_key(MPI_Info info, const char *key, char *value)
{
    int flag = 0;
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL - 1, value, &flag);
    return flag;
}

static void psets(MPI_Session s)
{
    int n = 0, seen_world = 0, seen_self = 0;
    CALL(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    CHECK(n >= 2, "at least mpi://WORLD and mpi://SELF, got %d", n);
    for (int i = 0; i < n; i++) {
        char name[MPI_MAX_PSET_NAME_LEN];
        int len = 0;
        CALL(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "length of pset %d: %d", i, len);
        int room = len;
        CALL(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &room, name));
        CHECK_EQ((int)strlen(name) + 1, len);
        seen_world += strcmp(name, "mpi://WORLD") == 0;
        seen_self += strcmp(name, "mpi://SELF") == 0;
        if (len > 3) { /* a short buffer gets a truncated, terminated name */
            char small[3] = {'x', 'x', 'x'};
            room = 3;
            CALL(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &room, small));
            CHECK(small[2] == 0 && strncmp(small, name, 2) == 0, "truncated name %.3s", small);
        }
    }
    CHECK_EQ(seen_world, 1);
    CHECK_EQ(seen_self, 1);

    const char *names[2] = {"mpi://WORLD", "mpi://SELF"};
    int sizes[2] = {mtest_size, 1}, ranks[2] = {mtest_rank, 0};
    for (int k = 0; k < 2; k++) {
        MPI_Info info;
        MPI_Group g;
        char value[MPI_MAX_INFO_VAL];
        int size = -1, rank = -1;
        CALL(MPI_Session_get_pset_info(s, names[k], &info));
        CHECK(has_key(info, "mpi_size", value) && atoi(value) == sizes[k], "mpi_size of %s", names[k]);
        CALL(MPI_Info_free(&info));
        CALL(MPI_Group_from_session_pset(s, names[k], &g));
        CALL(MPI_Group_size(g, &size));
        CALL(MPI_Group_rank(g, &rank));
        CHECK_EQ(size, sizes[k]);
        CHECK_EQ(rank, ranks[k]);
        CALL(MPI_Group_free(&g));
    }
    MPI_Group g = MPI_GROUP_NULL;
    CHECK_CLASS(MPI_Group_from_session_pset(s, "mpi://NO-SUCH-SET", &g), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Session_get_pset_info(s, "mpi://NO-SUCH-SET", &(MPI_Info){0}), MPI_ERR_ARG);
}

static void get_info(MPI_Session s)
{
    MPI_Info info;
    char value[MPI_MAX_INFO_VAL];
    CALL(MPI_Session_get_info(s, &info));
    CHECK(has_key(info, "thread_level", value) && strncmp(value, "MPI_THREAD_", 11) == 0,
          "thread_level of MPI_Session_get_info");
    CALL(MPI_Info_free(&info));
}

static void errhandlers(MPI_Session s)
{
    MPI_Errhandler eh, got;
    CALL(MPI_Session_create_errhandler(on_error, &eh));
    CALL(MPI_Session_set_errhandler(s, eh));
    CALL(MPI_Session_get_errhandler(s, &got));
    CHECK(got == eh, "Session_get_errhandler returns the handler set");
    handler_calls = 0;
    CALL(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK_EQ(handler_calls, 1);
    CHECK_EQ(handler_code, MPI_ERR_OTHER);
    CHECK(handler_session == s, "the handler sees the session");
    /* An error of a session call goes to the session's handler, then is returned. */
    MPI_Group g;
    int rc = MPI_Group_from_session_pset(s, "mpi://NO-SUCH-SET", &g);
    CHECK_CLASS(rc, MPI_ERR_ARG);
    CHECK_EQ(handler_calls, 2);
    CHECK_EQ(handler_code, rc);
    CALL(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    CALL(MPI_Session_get_errhandler(s, &got));
    CHECK(got == MPI_ERRORS_RETURN, "MPI_ERRORS_RETURN set");
    MPI_Session_call_errhandler(s, MPI_ERR_OTHER); /* returns MPI_SUCCESS or the code */
    CHECK_EQ(handler_calls, 2);
    /* MPI_Session_init's errors go to the handler it is given (a bad thread_level value). */
    MPI_Info bad;
    MPI_Session none = MPI_SESSION_NULL;
    CALL(MPI_Info_create(&bad));
    CALL(MPI_Info_set(bad, "thread_level", "MPI_THREAD_NONSENSE"));
    rc = MPI_Session_init(bad, eh, &none);
    if (on_reflex) { /* MPICH 4.0.2 ignores an unknown thread_level value */
        CHECK_CLASS(rc, MPI_ERR_INFO_VALUE);
        CHECK_EQ(handler_calls, 3);
        CHECK(handler_session == MPI_SESSION_NULL, "MPI_Session_init's handler sees MPI_SESSION_NULL");
    } else if (rc == MPI_SUCCESS) {
        MPI_Session_finalize(&none);
    }
    CALL(MPI_Info_free(&bad));
    handler_calls = 2;
    CALL(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "freed handle");
    CHECK_CLASS(MPI_Session_set_errhandler(s, MPI_ERRHANDLER_NULL), MPI_ERR_ARG);
}

int main(int argc, char **argv)
{
    MPI_Session early = MPI_SESSION_NULL, late = MPI_SESSION_NULL, s;
    int flag = -1;

    CALL(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &early));
    CALL(MPI_Initialized(&flag));
    CHECK_EQ(flag, 0);
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    on_reflex = strstr(lib, "Reflex") != NULL;
    CALL(MPI_Initialized(&flag));
    CHECK_EQ(flag, 1);

    for (int round = 0; round < 3; round++) {
        MPI_Info info;
        CALL(MPI_Info_create(&info));
        CALL(MPI_Info_set(info, "thread_level", "MPI_THREAD_FUNNELED"));
        CALL(MPI_Session_init(info, MPI_ERRORS_RETURN, &s));
        CALL(MPI_Info_free(&info));
        CHECK(s != MPI_SESSION_NULL && s != early, "a new session handle");
        psets(s);
        get_info(s);
        errhandlers(s);
        CALL(MPI_Session_finalize(&s));
        CHECK(s == MPI_SESSION_NULL, "MPI_Session_finalize sets MPI_SESSION_NULL");
    }
    CHECK_CLASS(MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &flag), MPI_ERR_SESSION);
    psets(early);
    CALL(MPI_Session_finalize(&early));

    /* A session that outlives MPI_Finalize: its communicator still works afterwards. */
    MPI_Group wg;
    MPI_Comm comm;
    CALL(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &late));
    CALL(MPI_Group_from_session_pset(late, "mpi://WORLD", &wg));
    CALL(MPI_Comm_create_from_group(wg, "org.reflex.session_basic", MPI_INFO_NULL,
                                    MPI_ERRORS_RETURN, &comm));
    CALL(MPI_Group_free(&wg));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    CALL(MPI_Finalized(&flag));
    CHECK_EQ(flag, 1);
    int total = -1;
    CALL(MPI_Allreduce(&mtest_errs, &total, 1, MPI_INT, MPI_SUM, comm));
    int counted = mtest_errs; /* failures after the reduction fail this rank's exit code */
    CALL(MPI_Comm_free(&comm));
    CALL(MPI_Session_finalize(&late));
    total = total < 0 ? 1 : total;
    if (mtest_rank == 0) {
        printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
        fflush(stdout);
    }
    return total == 0 && mtest_errs == counted ? 0 : 1;
}
