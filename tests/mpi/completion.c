/*
 * completion.c - the completion calls (MPI-3.1 section 3.7.5): MPI_Waitany/Testany,
 * MPI_Waitall/Testall and MPI_Waitsome/Testsome over arrays mixing live requests and
 * MPI_REQUEST_NULL, with MPI_STATUS(ES)_IGNORE; completed requests are set to MPI_REQUEST_NULL;
 * all-null arrays give index/outcount MPI_UNDEFINED and flag true; MPI_Wait/MPI_Test on
 * MPI_REQUEST_NULL return an empty status. Runs with any number of ranks (partner or self).
 */
#include "mtest.h"

#define N 8

/* Post N receives from the partner in r[], with every third slot MPI_REQUEST_NULL. */
static int post(MPI_Request *r, int *in, int tag)
{
    int live = 0;
    for (int i = 0; i < N; i++) {
        in[i] = -1;
        if (i % 3 == 1)
            r[i] = MPI_REQUEST_NULL;
        else {
            MPI_Irecv(&in[i], 1, MPI_INT, mtest_partner(), tag + i, MPI_COMM_WORLD, &r[i]);
            live++;
        }
    }
    return live;
}

/* The partner's sends matching post(); waited for at once. */
static void send_all(int tag)
{
    MPI_Request s[N];
    int v[N];
    for (int i = 0; i < N; i++) {
        v[i] = 100 * mtest_rank + i;
        s[i] = MPI_REQUEST_NULL;
        if (i % 3 != 1)
            MPI_Isend(&v[i], 1, MPI_INT, mtest_partner(), tag + i, MPI_COMM_WORLD, &s[i]);
    }
    MPI_Waitall(N, s, MPI_STATUSES_IGNORE);
}

static void check_received(const int *in, MPI_Request *r)
{
    int peer = mtest_partner();
    for (int i = 0; i < N; i++) {
        CHECK(r[i] == MPI_REQUEST_NULL, "request %d not set to MPI_REQUEST_NULL", i);
        if (i % 3 != 1)
            CHECK(in[i] == 100 * peer + i, "slot %d got %d", i, in[i]);
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Request r[N];
    MPI_Status st, sts[N];
    int in[N], idx, flag, outcount, idxs[N], live;

    /* 1. Waitall with nulls and MPI_STATUSES_IGNORE. */
    post(r, in, 100);
    send_all(100);
    MPI_Waitall(N, r, MPI_STATUSES_IGNORE);
    check_received(in, r);

    /* 2. Waitany until MPI_UNDEFINED. */
    live = post(r, in, 200);
    send_all(200);
    for (int k = 0; k < live; k++) {
        MPI_Waitany(N, r, &idx, &st);
        CHECK(idx >= 0 && idx < N && idx % 3 != 1, "Waitany gave index %d", idx);
        if (idx >= 0 && idx < N)
            CHECK_EQ(st.MPI_TAG, 200 + idx);
    }
    MPI_Waitany(N, r, &idx, &st);
    CHECK_EQ(idx, MPI_UNDEFINED);
    CHECK_EMPTY_STATUS(st, MPI_INT);
    check_received(in, r);

    /* 3. Testany polling, with MPI_STATUS_IGNORE. */
    live = post(r, in, 300);
    send_all(300);
    for (int got = 0; got < live;) {
        MPI_Testany(N, r, &idx, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            CHECK(idx != MPI_UNDEFINED, "Testany flag true with MPI_UNDEFINED before all completed");
            got++;
        }
    }
    MPI_Testany(N, r, &idx, &flag, &st);
    CHECK(flag && idx == MPI_UNDEFINED, "Testany on all-null: flag %d index %d", flag, idx);
    check_received(in, r);

    /* 4. Waitsome and Testsome. */
    for (int use_test = 0; use_test < 2; use_test++) {
        int tag = 400 + 100 * use_test;
        live = post(r, in, tag);
        send_all(tag);
        for (int got = 0; got < live;) {
            if (use_test)
                MPI_Testsome(N, r, &outcount, idxs, sts);
            else
                MPI_Waitsome(N, r, &outcount, idxs, sts);
            CHECK(outcount != MPI_UNDEFINED && outcount >= (use_test ? 0 : 1), "outcount %d", outcount);
            if (outcount == MPI_UNDEFINED)
                break;
            for (int j = 0; j < outcount; j++)
                CHECK_EQ(sts[j].MPI_TAG, tag + idxs[j]);
            got += outcount;
        }
        MPI_Waitsome(N, r, &outcount, idxs, MPI_STATUSES_IGNORE);
        CHECK_EQ(outcount, MPI_UNDEFINED);
        MPI_Testsome(N, r, &outcount, idxs, MPI_STATUSES_IGNORE);
        CHECK_EQ(outcount, MPI_UNDEFINED);
        check_received(in, r);
    }

    /* 5. Testall polling; then all-null arrays and single null requests. */
    post(r, in, 600);
    send_all(600);
    do
        MPI_Testall(N, r, &flag, sts);
    while (!flag);
    check_received(in, r);
    MPI_Testall(N, r, &flag, MPI_STATUSES_IGNORE);
    CHECK(flag, "Testall on all-null returned false");
    MPI_Waitall(N, r, sts);
    for (int i = 0; i < N; i++)
        CHECK_EMPTY_STATUS(sts[i], MPI_INT);
    MPI_Waitall(0, r, MPI_STATUSES_IGNORE);

    MPI_Request null = MPI_REQUEST_NULL;
    MPI_Wait(&null, &st);
    CHECK_EMPTY_STATUS(st, MPI_INT);
    flag = 0;
    MPI_Test(&null, &flag, &st);
    CHECK(flag, "Test on MPI_REQUEST_NULL returned false");
    CHECK_EMPTY_STATUS(st, MPI_INT);
    return MTest_Finalize();
}
