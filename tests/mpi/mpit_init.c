/*
 * mpit_init.c - the life of the MPI_T interface beside MPI's: nothing works before
 * MPI_T_init_thread (MPI_T_ERR_NOT_INITIALIZED), it is usable before MPI_Init and after
 * MPI_Finalize, MPI_T_init_thread and MPI_T_finalize are counted, and the last finalize ends
 * it. On Reflex (its variables found by name) also: a control variable read before MPI_Init
 * holds the value MPI_Init will use (the testlist sets REFLEX_EAGER_LIMIT=8k), a writable one
 * cannot be written before MPI_Init (MPI_T_ERR_CVAR_SET_NOT_NOW), and a counter started while
 * MPI runs keeps its last value after MPI_Finalize.
 *
 * The checks after MPI_Finalize cannot be summed over ranks: each rank prints its failures and
 * exits non-zero, and rank 0 prints " No Errors" only when it had none after the collective
 * verdict of the checks before.
 */
#include "mtest.h"

static int num_cvars(void)
{
    int n = -1;
    CALL(MPI_T_cvar_get_num(&n));
    return n;
}

/* Reflex only: the first control variables read before MPI_Init. */
static void reflex_before_init(void)
{
    int index, count;
    MPI_T_cvar_handle h;
    unsigned long limit = 0;
    CALL(MPI_T_cvar_get_index("REFLEX_EAGER_LIMIT", &index));
    CALL(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
    CALL(MPI_T_cvar_read(h, &limit));
    CHECK_EQ(limit, 8192);
    CALL(MPI_T_cvar_handle_free(&h));
    int algo = 0;
    CALL(MPI_T_cvar_get_index("REFLEX_COLL_BARRIER", &index));
    CALL(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
    CHECK_EQ(MPI_T_cvar_write(h, &algo), MPI_T_ERR_CVAR_SET_NOT_NOW);
    CALL(MPI_T_cvar_handle_free(&h));
}

int main(int argc, char **argv)
{
    int provided = -1, n = -1, index;
    /* Before MPI_T_init_thread nothing works. */
    CHECK_EQ(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_EQ(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);

    /* Before MPI_Init, twice (counted). */
    CALL(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CALL(MPI_T_init_thread(MPI_THREAD_FUNNELED, &provided));
    int before = num_cvars();
    int is_reflex = MPI_T_cvar_get_index("REFLEX_EAGER_LIMIT", &index) == MPI_SUCCESS;
    if (is_reflex)
        reflex_before_init();
    CALL(MPI_T_finalize());
    CHECK(num_cvars() >= 0, "still initialized after one of two finalizes");

    MTest_Init(&argc, &argv);
    CHECK(num_cvars() >= before, "%d control variables before MPI_Init, fewer after", before);
    MPI_T_pvar_session s = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle sent = MPI_T_PVAR_HANDLE_NULL;
    CALL(MPI_T_pvar_session_create(&s));
    if (is_reflex) {
        int count, token = 1;
        CALL(MPI_T_pvar_get_index("reflex_messages_sent", MPI_T_PVAR_CLASS_COUNTER, &index));
        CALL(MPI_T_pvar_handle_alloc(s, index, NULL, &sent, &count));
        CALL(MPI_T_pvar_start(s, sent));
        int next = (mtest_rank + 1) % mtest_size, prev = (mtest_rank + mtest_size - 1) % mtest_size;
        CALL(MPI_Sendrecv_replace(&token, 1, MPI_INT, next, 0, prev, 0, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE));
    }
    int total = 0;
    MPI_Allreduce(&mtest_errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int rank = mtest_rank;
    MPI_Finalize();

    /* After MPI_Finalize: still usable until the last MPI_T_finalize. */
    CHECK(num_cvars() >= 0, "unusable after MPI_Finalize");
    if (is_reflex) {
        unsigned long long v = 0;
        CALL(MPI_T_pvar_read(s, sent, &v));
        CHECK(v >= 1, "messages sent read after MPI_Finalize: %llu", v);
        unsigned long long again = 0;
        CALL(MPI_T_pvar_read(s, sent, &again));
        CHECK_EQ(again, v);
    }
    CALL(MPI_T_pvar_session_free(&s));
    CALL(MPI_T_finalize());
    CHECK_EQ(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_EQ(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);

    /* A fresh start after the end (MPICH 4.0.2 crashes there: checked on Reflex only). */
    if (is_reflex) {
        CALL(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
        CHECK(num_cvars() >= 0, "unusable after a second MPI_T_init_thread");
        CALL(MPI_T_finalize());
    }

    if (mtest_errs > 0)
        return 1;
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
        fflush(stdout);
    }
    return total == 0 ? 0 : 1;
}
