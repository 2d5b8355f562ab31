/*
 * info_early.c - info objects outside MPI (MPI-4.0 chapter 9): MPI_Info_create, _set, _get,
 * _get_string, _get_nkeys, _get_nthkey, _dup, _delete, _free and _create_env work before
 * MPI_Init and after MPI_Finalize; an object made before MPI_Init is the same object while MPI
 * runs (also passed to MPI_Session_init) and after it ends; errors before MPI_Init are returned.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs;

#define EXPECT(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            errs++;                                                                            \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                         \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                             \
        }                                                                                      \
    } while (0)

/* The value of `key` in `info` ("" when absent). */
static const char *value(MPI_Info info, const char *key)
{
    static char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0, len = sizeof v;
    v[0] = 0;
    MPI_Info_get_string(info, key, &len, v, &flag);
    return flag ? v : "";
}

int main(int argc, char **argv)
{
    MPI_Info early, copy, env;
    int nkeys = -1, flag = 0, cls = -1;
    char key[MPI_MAX_INFO_KEY + 1];

    /* before MPI_Init */
    EXPECT(MPI_Info_create(&early) == MPI_SUCCESS, "create");
    MPI_Info_set(early, "color", "blue");
    MPI_Info_set(early, "size", "7");
    MPI_Info_set(early, "gone", "x");
    MPI_Info_delete(early, "gone");
    MPI_Info_get_nkeys(early, &nkeys);
    EXPECT(nkeys == 2, "%d keys", nkeys);
    MPI_Info_get_nthkey(early, 1, key);
    EXPECT(strcmp(key, "size") == 0, "second key %s", key);
    MPI_Info_dup(early, &copy);
    MPI_Info_set(copy, "color", "red");
    EXPECT(strcmp(value(early, "color"), "blue") == 0, "early color %s", value(early, "color"));
    EXPECT(MPI_Info_create_env(argc, argv, &env) == MPI_SUCCESS, "create_env");
    MPI_Info_get_valuelen(env, "host", &nkeys, &flag);
    EXPECT(flag && nkeys > 0, "MPI_INFO_ENV has no host before MPI_Init");
    int rc = MPI_Info_get_nthkey(early, 5, key);
    MPI_Error_class(rc, &cls);
    EXPECT(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "nthkey 5 of 2: class %d", cls);

    /* a session opened with it, then the World Model */
    MPI_Session session;
    EXPECT(MPI_Session_init(early, MPI_ERRORS_RETURN, &session) == MPI_SUCCESS, "session");
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    EXPECT(strcmp(value(early, "size"), "7") == 0, "size while running: %s", value(early, "size"));
    EXPECT(strcmp(value(copy, "color"), "red") == 0, "copy while running");
    MPI_Info_set(early, "during", "yes");
    MPI_Info_free(&copy);
    EXPECT(copy == MPI_INFO_NULL, "freed handle not MPI_INFO_NULL");
    MPI_Session_finalize(&session);
    MPI_Finalize();

    /* after MPI_Finalize */
    EXPECT(strcmp(value(early, "during"), "yes") == 0, "set while running, read after");
    EXPECT(strcmp(value(early, "color"), "blue") == 0, "color after");
    MPI_Info_free(&early);
    MPI_Info_free(&env);
    EXPECT(early == MPI_INFO_NULL && env == MPI_INFO_NULL, "free after MPI_Finalize");
    if (errs)
        fprintf(stderr, "[%d] %d errors\n", rank, errs);
    else if (rank == 0)
        printf(" No Errors\n");
    return errs != 0;
}
