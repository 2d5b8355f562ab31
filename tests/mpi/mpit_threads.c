/*
 * mpit_threads.c - the MPI_T interface from several threads at once (MPI_T_init_thread with
 * MPI_THREAD_MULTIPLE): threads create and free sessions, allocate, start, read, stop and free
 * handles of every performance variable, read every control variable and walk the categories,
 * first before MPI_Init, then while the main thread communicates under MPI_THREAD_MULTIPLE.
 * Handles are private to their thread, so every call must succeed.
 */
#include "mtest.h"
#include <pthread.h>

#define NTHREADS 3
#define ROUNDS 20

static int thread_errs[NTHREADS];

/* One round: every variable bound to no object through one session, every control variable,
 * every category. */
static int one_round(void)
{
    int errs = 0, num = 0, count;
    MPI_T_pvar_session s;
    if (MPI_T_pvar_session_create(&s) != MPI_SUCCESS)
        return 1;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[256];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind, readonly,
            continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum e;
        if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &dt, &e, desc,
                                &desc_len, &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS ||
            bind != MPI_T_BIND_NO_OBJECT)
            continue;
        MPI_T_pvar_handle h;
        unsigned long long buf[16];
        if (MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count) != MPI_SUCCESS || count > 16) {
            errs++;
            continue;
        }
        if (!continuous)
            errs += MPI_T_pvar_start(s, h) != MPI_SUCCESS;
        errs += MPI_T_pvar_read(s, h, buf) != MPI_SUCCESS;
        if (!continuous)
            errs += MPI_T_pvar_stop(s, h) != MPI_SUCCESS;
        errs += MPI_T_pvar_handle_free(s, &h) != MPI_SUCCESS;
    }
    errs += MPI_T_pvar_session_free(&s) != MPI_SUCCESS;
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        int bind, scope, verbosity;
        MPI_Datatype dt;
        MPI_T_enum e;
        MPI_T_cvar_handle h;
        char buf[4096];
        if (MPI_T_cvar_get_info(i, NULL, NULL, &verbosity, &dt, &e, NULL, NULL, &bind, &scope) !=
                MPI_SUCCESS ||
            bind != MPI_T_BIND_NO_OBJECT)
            continue;
        if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS) {
            errs++;
            continue;
        }
        if (count * 16 <= (int)sizeof buf)
            errs += MPI_T_cvar_read(h, buf) != MPI_SUCCESS;
        errs += MPI_T_cvar_handle_free(&h) != MPI_SUCCESS;
    }
    MPI_T_category_get_num(&num);
    for (int i = 0; i < num; i++) {
        int nc, np, ncat;
        errs += MPI_T_category_get_info(i, NULL, NULL, NULL, NULL, &nc, &np, &ncat) != MPI_SUCCESS;
    }
    return errs;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++)
        thread_errs[id] += one_round();
    return NULL;
}

static void run_threads(int communicate)
{
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    if (communicate) {
        int next = (mtest_rank + 1) % mtest_size, prev = (mtest_rank + mtest_size - 1) % mtest_size;
        for (int r = 0; r < 50; r++) {
            int token = r, got = -1;
            CALL(MPI_Sendrecv(&token, 1, MPI_INT, next, r, &got, 1, MPI_INT, prev, r,
                              MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_EQ(got, r);
        }
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(thread_errs[i] == 0, "thread %d: %d MPI_T calls failed", i, thread_errs[i]);
        thread_errs[i] = 0;
    }
}

int main(int argc, char **argv)
{
    int provided = -1;
    CALL(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK_EQ(provided, MPI_THREAD_MULTIPLE);
    run_threads(0);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mtest_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mtest_size);
    if (provided == MPI_THREAD_MULTIPLE)
        run_threads(1);
    else
        fprintf(stderr, "MPI_THREAD_MULTIPLE not provided: the second part is skipped\n");
    CALL(MPI_T_finalize());
    return MTest_Finalize();
}
