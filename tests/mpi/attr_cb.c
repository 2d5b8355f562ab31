/*
 * attr_cb.c - attribute caching (MPI-3.1 section 6.7): keyvals with copy and delete callbacks.
 * MPI_Comm_dup calls each copy callback once with the old value and keeps the attribute only
 * when it sets flag; MPI_COMM_DUP_FN copies the value, MPI_COMM_NULL_COPY_FN drops it; setting
 * an attribute again deletes the old value first; MPI_Comm_delete_attr and MPI_Comm_free call
 * the delete callback once per attribute with its value; a keyval freed while in use keeps
 * working for the attributes already set; the MPI-1 names (MPI_Keyval_create, MPI_Attr_put/
 * get/delete, MPI_DUP_FN, MPI_NULL_COPY_FN) behave the same. A copy callback that fails makes
 * MPI_Comm_dup fail, a delete callback that fails makes MPI_Comm_delete_attr fail; predefined
 * keyvals cannot be set or freed, MPI_KEYVAL_INVALID is refused (MPI_ERR_KEYVAL for a get). At
 * MPI_Finalize the attributes of MPI_COMM_SELF are deleted last-set first: rank 0 prints
 * "self delete N" for N = 2, 1, 0 (testlist checks the order). Runs with any number of ranks.
 */
#include "mtest.h"

static int copies[8], deletes[8];
static void *last_deleted[8];

/* extra_state points to the keyval's slot number in the counters. */
static int copy_plus_one(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm; (void)keyval;
    copies[*(int *)extra]++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int copy_refuse(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm; (void)keyval; (void)in; (void)out;
    copies[*(int *)extra]++;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static int delete_count(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)keyval;
    deletes[*(int *)extra]++;
    last_deleted[*(int *)extra] = value;
    return MPI_SUCCESS;
}

static int delete_refuse(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)keyval; (void)value;
    deletes[*(int *)extra]++;
    return MPI_ERR_OTHER;
}

static int delete_print(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    if (mtest_rank == 0) {
        printf("self delete %d\n", (int)(intptr_t)value);
        fflush(stdout);
    }
    return MPI_SUCCESS;
}

static int slot[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

static void *get(MPI_Comm c, int key, int *flag)
{
    void *v = NULL;
    *flag = -1;
    CALL(MPI_Comm_get_attr(c, key, &v, flag));
    return v;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int kplus, kdup, knull, kone, flag, rc;
    char base[16];
    MPI_Comm c, d;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);

    CALL(MPI_Comm_create_keyval(copy_plus_one, delete_count, &kplus, &slot[0]));
    CALL(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, delete_count, &kdup, &slot[1]));
    CALL(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_count, &knull, &slot[2]));
    CALL(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &kone, NULL));
    CHECK(kplus != kdup && kdup != knull, "keyvals are not distinct");

    CALL(MPI_Comm_set_attr(c, kplus, &base[0]));
    CALL(MPI_Comm_set_attr(c, kdup, &base[5]));
    CALL(MPI_Comm_set_attr(c, knull, &base[9]));
    CALL(MPI_Attr_put(c, kone, &base[3]));
    CHECK(get(c, kdup, &flag) == &base[5] && flag, "get after set");
    void *v = NULL;
    CALL(MPI_Attr_get(c, kone, &v, &flag));
    CHECK(flag && v == &base[3], "MPI_Attr_get after MPI_Attr_put");

    /* Setting again deletes the old value first. */
    CALL(MPI_Comm_set_attr(c, kdup, &base[6]));
    CHECK_EQ(deletes[1], 1);
    CHECK(last_deleted[1] == &base[5], "delete callback got the wrong value");

    /* Dup: copy callbacks decide. */
    CALL(MPI_Comm_dup(c, &d));
    CHECK_EQ(copies[0], 1);
    CHECK(get(d, kplus, &flag) == &base[1] && flag, "copy callback's value not kept");
    CHECK(get(d, kdup, &flag) == &base[6] && flag, "MPI_COMM_DUP_FN did not copy");
    get(d, knull, &flag);
    CHECK(flag == 0, "MPI_COMM_NULL_COPY_FN copied the attribute");
    CALL(MPI_Attr_get(d, kone, &v, &flag));
    CHECK(flag && v == &base[3], "MPI_DUP_FN did not copy");
    CHECK(get(c, kplus, &flag) == &base[0] && flag, "the original changed");

    /* Delete: callback once, attribute gone; deleting again is harmless. */
    CALL(MPI_Comm_delete_attr(d, kdup));
    CHECK_EQ(deletes[1], 2);
    get(d, kdup, &flag);
    CHECK_EQ(flag, 0);
    CALL(MPI_Attr_delete(d, kone));

    /* A keyval freed while in use: the handle is invalidated, the attributes stay. */
    int kfreed = kplus;
    CALL(MPI_Comm_free_keyval(&kplus));
    CHECK(kplus == MPI_KEYVAL_INVALID, "free_keyval did not set MPI_KEYVAL_INVALID");
    CALL(MPI_Comm_free(&d)); /* deletes d's kplus attribute through the freed keyval */
    CHECK_EQ(deletes[0], 1);
    CHECK(last_deleted[0] == &base[1], "delete at free got the wrong value");
    (void)kfreed;
    CALL(MPI_Comm_free(&c)); /* kplus, kdup, knull (kone has no delete callback) */
    CHECK_EQ(deletes[0], 2);
    CHECK_EQ(deletes[1], 3);
    CHECK_EQ(deletes[2], 1);
    CHECK(last_deleted[2] == &base[9], "knull's value at free");

    /* Failing callbacks. */
    int kbad, kbaddel;
    CALL(MPI_Comm_create_keyval(copy_refuse, MPI_COMM_NULL_DELETE_FN, &kbad, &slot[3]));
    CALL(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_refuse, &kbaddel, &slot[4]));
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    CALL(MPI_Comm_set_attr(c, kbad, base));
    rc = MPI_Comm_dup(c, &d);
    CHECK(rc != MPI_SUCCESS, "MPI_Comm_dup succeeded although a copy callback failed");
    CHECK_EQ(copies[3], 1);
    CALL(MPI_Comm_set_attr(c, kbaddel, base));
    rc = MPI_Comm_delete_attr(c, kbaddel);
    CHECK(rc != MPI_SUCCESS, "MPI_Comm_delete_attr succeeded although the callback failed");
    CHECK_EQ(deletes[4], 1);
    CALL(MPI_Comm_delete_attr(c, kbad));
    MPI_Comm_free_keyval(&kbad);

    /* Predefined and invalid keyvals. */
    int tag_ub = MPI_TAG_UB, dummy = 0;
    /* (Open MPI reports MPI_ERR_OTHER where MPICH and Reflex say MPI_ERR_KEYVAL, so only the
     * failure itself is checked for these three.) */
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, &dummy);
    CHECK(rc != MPI_SUCCESS, "MPI_TAG_UB was set");
    rc = MPI_Comm_free_keyval(&tag_ub);
    CHECK(rc != MPI_SUCCESS, "MPI_TAG_UB was freed");
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, kplus, &dummy); /* freed: now MPI_KEYVAL_INVALID */
    CHECK(rc != MPI_SUCCESS, "an attribute was set with MPI_KEYVAL_INVALID");
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &v, &flag);
    CHECK_CLASS(rc, MPI_ERR_KEYVAL);

    /* Attributes on MPI_COMM_SELF are deleted at MPI_Finalize, last set first. */
    int kself;
    CALL(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_print, &kself, NULL));
    int kself2, kself3;
    CALL(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_print, &kself2, NULL));
    CALL(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_print, &kself3, NULL));
    /* Set in an order unrelated to creation, so hash- or handle-ordered lists are caught. */
    CALL(MPI_Comm_set_attr(MPI_COMM_SELF, kself2, (void *)(intptr_t)0));
    CALL(MPI_Comm_set_attr(MPI_COMM_SELF, kself3, (void *)(intptr_t)1));
    CALL(MPI_Comm_set_attr(MPI_COMM_SELF, kself, (void *)(intptr_t)2));
    MPI_Comm_free(&c);
    MPI_Comm_free_keyval(&kbaddel);
    MPI_Keyval_free(&kone);
    return MTest_Finalize();
}
