/*
 * mpit_cvar.c - Reflex's MPI_T control variables: values come from the environment (the
 * testlist sets REFLEX_EAGER_LIMIT=8k and REFLEX_COLL_BCAST=knomial), read-only ones refuse
 * writes, and a write of REFLEX_COLL_BARRIER really changes the barrier schedule: the number of
 * messages each rank sends in MPI_Ibarrier (reflex_messages_sent) follows the algorithm written
 * (dissemination: ceil(log2 n) on every rank; pairwise exchange: the folded odd ranks 1, their
 * even partners log2(p) + 1, the others log2(p), p the largest power of two <= n).
 */
#include "mtest.h"

static int cvar_index(const char *name)
{
    int index = -1;
    CALL(MPI_T_cvar_get_index(name, &index));
    return index;
}

static MPI_T_cvar_handle cvar_handle(const char *name)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    int count = 0;
    CALL(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count));
    CHECK_EQ(count, 1);
    return h;
}

/* The value of the enumeration item called `word` of the variable `name`. */
static int item_value(const char *name, const char *word)
{
    MPI_T_enum e = MPI_T_ENUM_NULL;
    MPI_Datatype dt;
    int num = 0;
    CALL(MPI_T_cvar_get_info(cvar_index(name), NULL, NULL, NULL, &dt, &e, NULL, NULL, NULL, NULL));
    CHECK(dt == MPI_INT, "%s is not an MPI_INT", name);
    CALL(MPI_T_enum_get_info(e, &num, NULL, NULL));
    for (int i = 0; i < num; i++) {
        char item[64];
        int len = sizeof item, value = -1;
        CALL(MPI_T_enum_get_item(e, i, &value, item, &len));
        if (strcmp(item, word) == 0)
            return value;
    }
    FAIL("%s has no item %s", name, word);
    return -1;
}

static void environment_values(void)
{
    MPI_T_cvar_handle eager = cvar_handle("REFLEX_EAGER_LIMIT");
    unsigned long limit = 0;
    CALL(MPI_T_cvar_read(eager, &limit));
    CHECK_EQ(limit, 8192);
    int scope = 0;
    CALL(MPI_T_cvar_get_info(cvar_index("REFLEX_EAGER_LIMIT"), NULL, NULL, NULL, NULL, NULL, NULL,
                             NULL, NULL, &scope));
    CHECK_EQ(scope, MPI_T_SCOPE_READONLY);
    CHECK_EQ(MPI_T_cvar_write(eager, &limit), MPI_T_ERR_CVAR_SET_NEVER);
    CALL(MPI_T_cvar_handle_free(&eager));

    MPI_T_cvar_handle bcast = cvar_handle("REFLEX_COLL_BCAST");
    int algo = -1;
    CALL(MPI_T_cvar_read(bcast, &algo));
    CHECK_EQ(algo, item_value("REFLEX_COLL_BCAST", "knomial"));
    CALL(MPI_T_cvar_handle_free(&bcast));

    MPI_T_cvar_handle cc = MPI_T_CVAR_HANDLE_NULL;
    int count = 0;
    CALL(MPI_T_cvar_handle_alloc(cvar_index("REFLEX_CXX"), NULL, &cc, &count));
    char *text = mtest_malloc((size_t)count);
    CALL(MPI_T_cvar_read(cc, text));
    CHECK_EQ((int)strlen(text) + 1, count);
    free(text);
    CALL(MPI_T_cvar_handle_free(&cc));
}

static int log2_floor(int n)
{
    int k = 0;
    while ((2 << k) <= n)
        k++;
    return k;
}

/* Messages this rank sends in one barrier under each schedule. */
static unsigned long long dissemination_sends(void)
{
    int k = 0;
    while ((1 << k) < mtest_size)
        k++;
    return (unsigned long long)k;
}

static unsigned long long pairwise_sends(void)
{
    int p = 1 << log2_floor(mtest_size), rem = mtest_size - p;
    if (mtest_rank < 2 * rem)
        return mtest_rank % 2 ? 1 : (unsigned long long)log2_floor(p) + 1;
    return (unsigned long long)log2_floor(p);
}

/* Messages this rank sends in one MPI_Ibarrier. */
static unsigned long long ibarrier_sends(MPI_T_pvar_session s, MPI_T_pvar_handle sent)
{
    unsigned long long v = 0;
    MPI_Request req;
    CALL(MPI_T_pvar_reset(s, sent));
    CALL(MPI_T_pvar_start(s, sent));
    CALL(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    CALL(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CALL(MPI_T_pvar_stop(s, sent));
    CALL(MPI_T_pvar_read(s, sent, &v));
    return v;
}

static void barrier_schedule_follows_writes(void)
{
    MPI_T_cvar_handle barrier = cvar_handle("REFLEX_COLL_BARRIER");
    MPI_T_pvar_session s;
    MPI_T_pvar_handle sent;
    int index = -1, count = 0, scope = 0;
    CALL(MPI_T_cvar_get_info(cvar_index("REFLEX_COLL_BARRIER"), NULL, NULL, NULL, NULL, NULL,
                             NULL, NULL, NULL, &scope));
    CHECK_EQ(scope, MPI_T_SCOPE_ALL_EQ);
    CALL(MPI_T_pvar_session_create(&s));
    CALL(MPI_T_pvar_get_index("reflex_messages_sent", MPI_T_PVAR_CLASS_COUNTER, &index));
    CALL(MPI_T_pvar_handle_alloc(s, index, NULL, &sent, &count));

    int dissemination = item_value("REFLEX_COLL_BARRIER", "dissemination");
    int pairwise = item_value("REFLEX_COLL_BARRIER", "pairwise");
    int bad = 99, now = -1;
    for (int round = 0; round < 2; round++) {
        CALL(MPI_T_cvar_write(barrier, &pairwise));
        CALL(MPI_T_cvar_read(barrier, &now));
        CHECK_EQ(now, pairwise);
        CHECK_EQ(ibarrier_sends(s, sent), pairwise_sends());
        CALL(MPI_T_cvar_write(barrier, &dissemination));
        CHECK_EQ(ibarrier_sends(s, sent), dissemination_sends());
    }
    CHECK_EQ(MPI_T_cvar_write(barrier, &bad), MPI_T_ERR_INVALID);
    CALL(MPI_T_cvar_read(barrier, &now));
    CHECK_EQ(now, dissemination);
    CALL(MPI_T_pvar_session_free(&s));
    CALL(MPI_T_cvar_handle_free(&barrier));
}

int main(int argc, char **argv)
{
    int provided;
    MTest_Init(&argc, &argv);
    CALL(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK_EQ(provided, MPI_THREAD_MULTIPLE);
    environment_values();
    barrier_schedule_follows_writes();
    CALL(MPI_T_finalize());
    return MTest_Finalize();
}
