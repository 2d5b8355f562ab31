/*
 * mpit_vars.c - the tool information interface (MPI_T): enumerate every control variable,
 * performance variable, category, enumeration, event and event source, read every variable
 * that is bound to no object, and check the error classes of wrong arguments and the string
 * length rules. Portable: the Reflex-specific checks run only when the library has Reflex's
 * variables (found by name).
 */
#include "mtest.h"

static int is_reflex;

/* A buffer for `count` elements of any datatype a variable may have. */
static void *var_buffer(int count)
{
    return mtest_malloc((size_t)(count > 0 ? count : 1) * 16 + 16);
}

/* Verbosity, binding and scope are values of their enumerations. */
static int valid_verbosity(int v)
{
    return v >= MPI_T_VERBOSITY_USER_BASIC && v <= MPI_T_VERBOSITY_MPIDEV_ALL;
}

static void check_enum(MPI_T_enum e, const char *var)
{
    int num = -1, len = 256, value = -1;
    char name[256];
    CALL(MPI_T_enum_get_info(e, &num, name, &len));
    if (num <= 0)
        FAIL("enumeration of %s has %d items", var, num);
    for (int i = 0; i < num; i++) {
        len = sizeof name;
        CALL(MPI_T_enum_get_item(e, i, &value, name, &len));
        CHECK(len == (int)strlen(name) + 1, "item %d of %s: len %d for \"%s\"", i, var, len, name);
    }
    len = sizeof name;
    CHECK_EQ(MPI_T_enum_get_item(e, num, &value, name, &len), MPI_T_ERR_INVALID_ITEM);
}

static void check_cvars(void)
{
    int num = -1;
    CALL(MPI_T_cvar_get_num(&num));
    CHECK(num >= 0, "%d control variables", num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, bind = 0, scope = 0;
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        MPI_T_enum e = MPI_T_ENUM_NULL;
        CALL(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &e, desc, &desc_len, &bind,
                                 &scope));
        CHECK(name[0] != 0 && name_len == (int)strlen(name) + 1, "cvar %d name \"%s\" len %d", i,
              name, name_len);
        CHECK(valid_verbosity(verbosity), "cvar %s verbosity %d", name, verbosity);
        CHECK(bind >= MPI_T_BIND_NO_OBJECT && bind <= MPI_T_BIND_MPI_INFO, "cvar %s bind %d", name,
              bind);
        CHECK(scope >= MPI_T_SCOPE_CONSTANT && scope <= MPI_T_SCOPE_ALL_EQ, "cvar %s scope %d",
              name, scope);
        if (e != MPI_T_ENUM_NULL)
            check_enum(e, name);
        int index = -1;
        CALL(MPI_T_cvar_get_index(name, &index));
        CHECK_EQ(index, i);
        /* Every output may be NULL. */
        CALL(MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        if (bind != MPI_T_BIND_NO_OBJECT)
            continue;
        MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
        int count = -1;
        CALL(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
        CHECK(count >= 1, "cvar %s count %d", name, count);
        void *buf = var_buffer(count);
        CALL(MPI_T_cvar_read(h, buf));
        free(buf);
        CALL(MPI_T_cvar_handle_free(&h));
        CHECK(h == MPI_T_CVAR_HANDLE_NULL, "cvar handle not NULL after free");
    }
    char name[8];
    int len = sizeof name;
    CHECK_EQ(MPI_T_cvar_get_info(num, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
             MPI_T_ERR_INVALID_INDEX);
    CHECK_EQ(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
             MPI_T_ERR_INVALID_INDEX);
    int index = -1, count = 0;
    CHECK_EQ(MPI_T_cvar_get_index("no_such_control_variable", &index), MPI_T_ERR_INVALID_NAME);
    MPI_T_cvar_handle h;
    CHECK_EQ(MPI_T_cvar_handle_alloc(num, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
}

/* Start/stop/reset of one allocated handle follow the variable's properties. */
static void check_pvar_handle(MPI_T_pvar_session s, MPI_T_pvar_handle h, const char *name,
                              int count, int readonly, int continuous)
{
    void *buf = var_buffer(count);
    CALL(MPI_T_pvar_read(s, h, buf));
    if (continuous) {
        CHECK_EQ(MPI_T_pvar_start(s, h), MPI_T_ERR_PVAR_NO_STARTSTOP);
        CHECK_EQ(MPI_T_pvar_stop(s, h), MPI_T_ERR_PVAR_NO_STARTSTOP);
    } else {
        CALL(MPI_T_pvar_start(s, h));
        CALL(MPI_T_pvar_read(s, h, buf));
        CALL(MPI_T_pvar_stop(s, h));
    }
    if (readonly) {
        CHECK_EQ(MPI_T_pvar_reset(s, h), MPI_T_ERR_PVAR_NO_WRITE);
        CHECK_EQ(MPI_T_pvar_write(s, h, buf), MPI_T_ERR_PVAR_NO_WRITE);
        CHECK_EQ(MPI_T_pvar_readreset(s, h, buf), MPI_T_ERR_PVAR_NO_WRITE);
    } else if (is_reflex) {
        CALL(MPI_T_pvar_reset(s, h));
    }
    (void)name;
    free(buf);
}

static void check_pvars(void)
{
    int num = -1;
    MPI_T_pvar_session s = MPI_T_PVAR_SESSION_NULL;
    CALL(MPI_T_pvar_get_num(&num));
    CALL(MPI_T_pvar_session_create(&s));
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, var_class = 0;
        int bind = 0, readonly = -1, continuous = -1, atomic = -1;
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        MPI_T_enum e = MPI_T_ENUM_NULL;
        CALL(MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &dt, &e, desc,
                                 &desc_len, &bind, &readonly, &continuous, &atomic));
        CHECK(name[0] != 0 && name_len == (int)strlen(name) + 1, "pvar %d name \"%s\"", i, name);
        CHECK(valid_verbosity(verbosity), "pvar %s verbosity %d", name, verbosity);
        CHECK(var_class >= MPI_T_PVAR_CLASS_STATE && var_class <= MPI_T_PVAR_CLASS_GENERIC,
              "pvar %s class %d", name, var_class);
        CHECK(readonly == 0 || readonly == 1, "pvar %s readonly %d", name, readonly);
        CHECK(continuous == 0 || continuous == 1, "pvar %s continuous %d", name, continuous);
        int index = -1;
        CALL(MPI_T_pvar_get_index(name, var_class, &index));
        CHECK_EQ(index, i);
        /* Every output may be NULL (MPICH 4.0.2 crashes on that: checked on Reflex only). */
        if (is_reflex)
            CALL(MPI_T_pvar_get_info(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                     NULL, NULL, NULL));
        if (bind != MPI_T_BIND_NO_OBJECT)
            continue;
        MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
        int count = -1;
        CALL(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count));
        CHECK(count >= 1, "pvar %s count %d", name, count);
        check_pvar_handle(s, h, name, count, readonly, continuous);
        CALL(MPI_T_pvar_handle_free(s, &h));
        CHECK(h == MPI_T_PVAR_HANDLE_NULL, "pvar handle not NULL after free");
    }
    /* MPI_T_PVAR_ALL_HANDLES with start, stop and reset skips what cannot be done. */
    CALL(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES));
    CALL(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES));
    int count = 0, index = -1;
    MPI_T_pvar_handle h;
    if (is_reflex) {
        /* MPICH 4.0.2 crashes on a performance variable index out of range. */
        CHECK_EQ(MPI_T_pvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                     NULL, NULL, NULL),
                 MPI_T_ERR_INVALID_INDEX);
        CHECK_EQ(MPI_T_pvar_handle_alloc(s, num, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    }
    CHECK_EQ(MPI_T_pvar_get_index("no_such_performance_variable", MPI_T_PVAR_CLASS_COUNTER,
                                  &index),
             MPI_T_ERR_INVALID_NAME);
    CALL(MPI_T_pvar_session_free(&s));
    CHECK(s == MPI_T_PVAR_SESSION_NULL, "session not NULL after free");
    if (is_reflex) {
        /* Reflex checks handles and sessions it never handed out (others may crash). */
        unsigned long long v;
        MPI_T_pvar_session other;
        CALL(MPI_T_pvar_session_create(&other));
        CHECK_EQ(MPI_T_pvar_read(MPI_T_PVAR_SESSION_NULL, MPI_T_PVAR_HANDLE_NULL, &v),
                 MPI_T_ERR_INVALID_SESSION);
        CHECK_EQ(MPI_T_pvar_read(other, MPI_T_PVAR_HANDLE_NULL, &v), MPI_T_ERR_INVALID_HANDLE);
        CHECK_EQ(MPI_T_pvar_read(other, MPI_T_PVAR_ALL_HANDLES, &v), MPI_T_ERR_INVALID_HANDLE);
        CHECK_EQ(MPI_T_pvar_handle_alloc(MPI_T_PVAR_SESSION_NULL, 0, NULL, &h, &count),
                 MPI_T_ERR_INVALID_SESSION);
        CHECK_EQ(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &v), MPI_T_ERR_INVALID_HANDLE);
        CHECK_EQ(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &count, NULL, NULL),
                 MPI_T_ERR_INVALID_HANDLE);
        CHECK_EQ(MPI_T_pvar_get_num(NULL), MPI_T_ERR_INVALID);
        CALL(MPI_T_pvar_session_free(&other));
    }
}

static void check_categories(void)
{
    int num = -1, ncvar = 0, npvar = 0, stamp1 = -1, stamp2 = -2;
    CALL(MPI_T_category_get_num(&num));
    CALL(MPI_T_cvar_get_num(&ncvar));
    CALL(MPI_T_pvar_get_num(&npvar));
    CALL(MPI_T_category_changed(&stamp1));
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, nc = -1, np = -1, ncat = -1;
        CALL(MPI_T_category_get_info(i, name, &name_len, desc, &desc_len, &nc, &np, &ncat));
        int *idx = mtest_malloc(sizeof(int) * (size_t)(nc + np + ncat + 1));
        CALL(MPI_T_category_get_cvars(i, nc, idx));
        for (int k = 0; k < nc; k++)
            CHECK(idx[k] >= 0 && idx[k] < ncvar, "category %s cvar %d", name, idx[k]);
        CALL(MPI_T_category_get_pvars(i, np, idx));
        for (int k = 0; k < np; k++)
            CHECK(idx[k] >= 0 && idx[k] < npvar, "category %s pvar %d", name, idx[k]);
        CALL(MPI_T_category_get_categories(i, ncat, idx));
        for (int k = 0; k < ncat; k++)
            CHECK(idx[k] >= 0 && idx[k] < num, "category %s subcategory %d", name, idx[k]);
        free(idx);
        int index = -1;
        CALL(MPI_T_category_get_index(name, &index));
        CHECK_EQ(index, i);
    }
    CHECK_EQ(MPI_T_category_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
             MPI_T_ERR_INVALID_INDEX);
    int index;
    CHECK_EQ(MPI_T_category_get_index("no_such_category", &index), MPI_T_ERR_INVALID_NAME);
    CALL(MPI_T_category_changed(&stamp2));
    CHECK_EQ(stamp1, stamp2);
}

/* The string rules of MPI-4.0 15.3.3 on the first control variable's name. */
static void check_strings(void)
{
    int num = 0;
    CALL(MPI_T_cvar_get_num(&num));
    if (num == 0)
        return;
    char full[256], small[4] = "xxx";
    int len = 0;
    CALL(MPI_T_cvar_get_info(0, NULL, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    int want = len;
    len = sizeof full;
    CALL(MPI_T_cvar_get_info(0, full, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK_EQ(len, want);
    CHECK_EQ((int)strlen(full) + 1, want);
    if (want > 3) {
        len = 3;
        CALL(MPI_T_cvar_get_info(0, small, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        CHECK(small[2] == 0 && strncmp(small, full, 2) == 0, "truncated \"%s\" of \"%s\"", small,
              full);
        CHECK_EQ(len, 3);
    }
}

#if MPI_VERSION >= 4 || defined(REFLEX_VERSION) /* Reflex says 3.1 but has the MPI-4.0 calls */
static void check_events(void)
{
    int num = -1, nsrc = -1, index = -1;
    CALL(MPI_T_event_get_num(&num));
    CHECK(num >= 0, "%d events", num);
    {
        char name[64], desc[64];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, nelem = 4, bind;
        MPI_Datatype types[4];
        MPI_Aint displs[4];
        MPI_T_enum e;
        MPI_Info info;
        CHECK_EQ(MPI_T_event_get_info(num, name, &name_len, &verbosity, types, displs, &nelem, &e,
                                      &info, desc, &desc_len, &bind),
                 MPI_T_ERR_INVALID_INDEX);
    }
    CHECK_EQ(MPI_T_event_get_index("no_such_event", &index), MPI_T_ERR_INVALID_NAME);
    CALL(MPI_T_source_get_num(&nsrc));
    for (int i = 0; i < nsrc; i++) {
        char name[256];
        int len = sizeof name;
        MPI_T_source_order order;
        MPI_Count tps = 0, max = 0, t1 = -1, t2 = -1;
        CALL(MPI_T_source_get_info(i, name, &len, NULL, NULL, &order, &tps, &max, NULL));
        CHECK(tps > 0 && max > 0, "source %s ticks %lld max %lld", name, (long long)tps,
              (long long)max);
        CALL(MPI_T_source_get_timestamp(i, &t1));
        CALL(MPI_T_source_get_timestamp(i, &t2));
        if (order == MPI_T_SOURCE_ORDERED)
            CHECK(t2 >= t1, "source %s went back: %lld then %lld", name, (long long)t1,
                  (long long)t2);
    }
    MPI_Count t;
    CHECK_EQ(MPI_T_source_get_timestamp(nsrc, &t), MPI_T_ERR_INVALID_INDEX);
    if (is_reflex) {
        MPI_T_event_registration r = NULL;
        MPI_Info info;
        CHECK_EQ(num, 0);
        CHECK_EQ(nsrc, 1);
        CHECK_EQ(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &r), MPI_T_ERR_INVALID_INDEX);
        CHECK_EQ(MPI_T_event_handle_get_info(r, &info), MPI_T_ERR_INVALID_HANDLE);
        CHECK_EQ(MPI_T_event_handle_free(r, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
        CHECK_EQ(MPI_T_event_get_timestamp(NULL, &t), MPI_T_ERR_INVALID_HANDLE);
        int nev = -1;
        CALL(MPI_T_category_get_num_events(0, &nev));
        CHECK_EQ(nev, 0);
    }
}
#endif

/* Every MPI_T error code is an error class of its own, with a text. */
static void check_error_classes(void)
{
    const int codes[] = {MPI_T_ERR_MEMORY, MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_CANNOT_INIT,
                         MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID_ITEM, MPI_T_ERR_INVALID_HANDLE,
                         MPI_T_ERR_OUT_OF_HANDLES, MPI_T_ERR_OUT_OF_SESSIONS,
                         MPI_T_ERR_INVALID_SESSION, MPI_T_ERR_CVAR_SET_NOT_NOW,
                         MPI_T_ERR_CVAR_SET_NEVER, MPI_T_ERR_PVAR_NO_STARTSTOP,
                         MPI_T_ERR_PVAR_NO_WRITE, MPI_T_ERR_PVAR_NO_ATOMIC, MPI_T_ERR_INVALID_NAME,
                         MPI_T_ERR_INVALID
#ifdef MPI_T_ERR_NOT_SUPPORTED
                         , MPI_T_ERR_NOT_SUPPORTED
#endif
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        int cls = -1, len = 0;
        char text[MPI_MAX_ERROR_STRING];
        CALL(MPI_Error_class(codes[i], &cls));
        CHECK_EQ(cls, codes[i]);
        CALL(MPI_Error_string(codes[i], text, &len));
        CHECK(len > 0, "MPI_T error %d has no text", codes[i]);
    }
}

int main(int argc, char **argv)
{
    int provided = -1, index;
    MTest_Init(&argc, &argv);
    CALL(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "provided %d",
          provided);
    is_reflex = MPI_T_cvar_get_index("REFLEX_EAGER_LIMIT", &index) == MPI_SUCCESS;
    check_cvars();
    check_pvars();
    check_categories();
    check_strings();
    check_error_classes();
#if MPI_VERSION >= 4 || defined(REFLEX_VERSION) /* Reflex says 3.1 but has the MPI-4.0 calls */
    check_events();
#endif
    CALL(MPI_T_finalize());
    return MTest_Finalize();
}
