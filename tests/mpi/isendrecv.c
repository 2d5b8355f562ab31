/*
 * isendrecv.c - MPI_Isendrecv and MPI_Isendrecv_replace (MPI-4.0 section 3.10.2), and their
 * large-count forms: a send and a receive that complete as one request, whose status is the
 * receive's.
 *
 * - a ring (send right, receive from the left) at eager and rendezvous sizes, by MPI_Wait and by
 *   MPI_Test polling;
 * - MPI_Isendrecv_replace in the ring: the buffer ends up holding the left neighbour's data,
 *   with a contiguous and a strided (vector) datatype; the _c forms once each;
 * - MPI_ANY_SOURCE / MPI_ANY_TAG receives (the status names the left neighbour and its tag);
 * - MPI_PROC_NULL on both sides (completes at once, count 0, source MPI_PROC_NULL);
 * - K exchanges outstanding at once with distinct tags, completed by MPI_Waitall and by
 *   MPI_Testsome, the receives posted in the reverse order of the sends.
 */
#include "mtest.h"

#define K 8
#define BIG 100000

static int left, right;

static void check_recv(const MPI_Status *st, int tag, int n, MPI_Datatype dt)
{
    int count = -1;
    MPI_Get_count(st, dt, &count);
    CHECK_EQ(st->MPI_SOURCE, left);
    CHECK_EQ(st->MPI_TAG, tag);
    CHECK_EQ(count, n);
}

static void ring(unsigned char *out, unsigned char *in)
{
    const int sizes[] = {0, 1, 1000, BIG};
    for (int i = 0; i < 4; i++) {
        int n = sizes[i], flag = 0;
        MPI_Request r;
        MPI_Status st;
        mtest_fill(out, n, mtest_rank, i);
        memset(in, 0, n);
        CALL(MPI_Isendrecv(out, n, MPI_BYTE, right, i, in, BIG, MPI_BYTE, left, i, MPI_COMM_WORLD, &r));
        if (i % 2)
            CALL(MPI_Wait(&r, &st));
        else
            while (!flag)
                CALL(MPI_Test(&r, &flag, &st));
        CHECK(r == MPI_REQUEST_NULL, "request not MPI_REQUEST_NULL");
        check_recv(&st, i, n, MPI_BYTE);
        CHECK_DATA(in, n, left, i, "ring");
    }
    /* the large-count form */
    MPI_Request r;
    MPI_Status st;
    mtest_fill(out, 500, mtest_rank, 7);
    CALL(MPI_Isendrecv_c(out, 500, MPI_BYTE, right, 7, in, BIG, MPI_BYTE, left, 7, MPI_COMM_WORLD, &r));
    CALL(MPI_Wait(&r, &st));
    check_recv(&st, 7, 500, MPI_BYTE);
    CHECK_DATA(in, 500, left, 7, "Isendrecv_c");
}

static void replace(unsigned char *buf)
{
    const int counts[] = {1, 250, BIG / 4};
    MPI_Request r;
    MPI_Status st;
    for (int i = 0; i < 3; i++) {
        int n = counts[i];
        mtest_fill(buf, 4 * n, mtest_rank, 10 + i);
        CALL(MPI_Isendrecv_replace(buf, n, MPI_INT, right, 10 + i, left, 10 + i, MPI_COMM_WORLD, &r));
        CALL(MPI_Wait(&r, &st));
        check_recv(&st, 10 + i, n, MPI_INT);
        CHECK_DATA(buf, 4 * n, left, 10 + i, "Isendrecv_replace");
    }
    /* strided: every other int of 2*m; the gaps keep their own values */
    MPI_Datatype vec;
    int m = 3000, *ints = (int *)buf;
    MPI_Type_vector(m, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int j = 0; j < 2 * m; j++)
        ints[j] = j % 2 ? -j : mtest_rank * 1000000 + j;
    CALL(MPI_Isendrecv_replace(buf, 1, vec, right, 20, left, 20, MPI_COMM_WORLD, &r));
    CALL(MPI_Wait(&r, &st));
    check_recv(&st, 20, 1, vec);
    int bad = 0;
    for (int j = 0; j < 2 * m; j++)
        bad += ints[j] != (j % 2 ? -j : left * 1000000 + j);
    CHECK_EQ(bad, 0);
    MPI_Type_free(&vec);
    /* the large-count form */
    mtest_fill(buf, 64, mtest_rank, 21);
    CALL(MPI_Isendrecv_replace_c(buf, 64, MPI_BYTE, right, 21, left, 21, MPI_COMM_WORLD, &r));
    CALL(MPI_Wait(&r, &st));
    check_recv(&st, 21, 64, MPI_BYTE);
    CHECK_DATA(buf, 64, left, 21, "Isendrecv_replace_c");
}

static void wildcards(unsigned char *out, unsigned char *in)
{
    MPI_Request r;
    MPI_Status st;
    int n = 300;
    mtest_fill(out, n, mtest_rank, 30);
    /* Only the left neighbour sends to this rank: ANY_SOURCE can only match it. */
    CALL(MPI_Isendrecv(out, n, MPI_BYTE, right, 30 + mtest_rank, in, BIG, MPI_BYTE,
                       MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
    CALL(MPI_Wait(&r, &st));
    check_recv(&st, 30 + left, n, MPI_BYTE);
    CHECK_DATA(in, n, left, 30, "wildcard");
}

static void proc_null(unsigned char *out, unsigned char *in)
{
    MPI_Request r;
    MPI_Status st;
    int flag = 0;
    CALL(MPI_Isendrecv(out, 10, MPI_BYTE, MPI_PROC_NULL, 1, in, 10, MPI_BYTE, MPI_PROC_NULL, 1,
                       MPI_COMM_WORLD, &r));
    for (int tries = 0; !flag && tries < 1000000; tries++)
        CALL(MPI_Test(&r, &flag, &st));
    CHECK_EQ(flag, 1);
    CHECK_PROC_NULL_STATUS(st, MPI_BYTE);
    CALL(MPI_Isendrecv_replace(in, 10, MPI_BYTE, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r));
    CALL(MPI_Wait(&r, &st));
    CHECK_PROC_NULL_STATUS(st, MPI_BYTE);
    /* only one side null: the send still goes right, nothing is received */
    CALL(MPI_Isendrecv(out, 10, MPI_BYTE, right, 40, in, 10, MPI_BYTE, MPI_PROC_NULL, 40,
                       MPI_COMM_WORLD, &r));
    CALL(MPI_Wait(&r, &st));
    CHECK_PROC_NULL_STATUS(st, MPI_BYTE);
    MPI_Recv(in, 10, MPI_BYTE, left, 40, MPI_COMM_WORLD, &st);
    CHECK_EQ(st.MPI_SOURCE, left);
}

/* K exchanges in flight; the receives name the tags in reverse order. */
static void outstanding(unsigned char *out, unsigned char *in, int use_testsome)
{
    MPI_Request r[K];
    MPI_Status st[K];
    int n = use_testsome ? 2000 : 100;
    for (int k = 0; k < K; k++) {
        mtest_fill(out + k * n, n, mtest_rank, 50 + k);
        CALL(MPI_Isendrecv(out + k * n, n, MPI_BYTE, right, 50 + k, in + k * n, n, MPI_BYTE, left,
                           50 + K - 1 - k, MPI_COMM_WORLD, &r[k]));
    }
    if (!use_testsome) {
        CALL(MPI_Waitall(K, r, st));
        for (int k = 0; k < K; k++)
            check_recv(&st[k], 50 + K - 1 - k, n, MPI_BYTE);
    } else {
        int done = 0, outcount = 0, idx[K];
        while (done < K) {
            CALL(MPI_Testsome(K, r, &outcount, idx, st));
            CHECK(outcount != MPI_UNDEFINED, "Testsome: no active request left after %d", done);
            if (outcount == MPI_UNDEFINED)
                break;
            for (int j = 0; j < outcount; j++)
                check_recv(&st[j], 50 + K - 1 - idx[j], n, MPI_BYTE);
            done += outcount;
        }
    }
    for (int k = 0; k < K; k++)
        CHECK_DATA(in + k * n, n, left, 50 + K - 1 - k, "outstanding");
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    right = (mtest_rank + 1) % mtest_size;
    left = (mtest_rank + mtest_size - 1) % mtest_size;
    unsigned char *out = mtest_malloc(K * BIG), *in = mtest_malloc(K * BIG);
    ring(out, in);
    replace(in);
    wildcards(out, in);
    proc_null(out, in);
    outstanding(out, in, 0);
    outstanding(out, in, 1);
    free(out);
    free(in);
    return MTest_Finalize();
}
