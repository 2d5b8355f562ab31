/*
 * part_basic.c - partitioned point-to-point communication (MPI-4.0 chapter 4) around a ring
 * (each rank sends to rank+1 and receives from rank-1; on one rank, to itself):
 *   - 1, 2, 3 and 7 partitions, marked ready in a shuffled order with MPI_Pready,
 *     MPI_Pready_range and MPI_Pready_list, over several MPI_Start/MPI_Wait rounds;
 *   - MPI_Parrived: nothing has arrived before the sender marks anything ready, a receive
 *     partition arrives once the send partitions covering it are ready and not before, also
 *     when the two sides have different partition counts (6x2 ints into 4x3, 2x6 into 3x4);
 *   - derived datatypes (a strided vector on the send side, contiguous ints on the receive
 *     side, and a 12-byte type whose elements straddle the receiver's partitions);
 *   - large partitions (rendezvous), MPI_PROC_NULL peers, MPI_Testall/MPI_Request_get_status;
 *   - matching in order of initialisation, separate from ordinary messages with the same tag;
 *   - an intercommunicator (even world ranks send to odd ones).
 */
#include "mtest.h"
#include <stdlib.h>
#include <string.h>

static int next, prev;

/* A deterministic permutation of 0..n-1 (seeded by round and rank). */
static void shuffle(int *perm, int n, unsigned seed)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 16) % (unsigned)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Marks every partition of `req` ready in a shuffled order, by one of three calls per step. */
static void ready_all(MPI_Request req, int parts, unsigned seed)
{
    int perm[64];
    shuffle(perm, parts, seed);
    for (int i = 0; i < parts;) {
        int how = (int)((seed >> (i % 8)) % 3);
        if (how == 0 || i + 1 == parts) {
            CALL(MPI_Pready(perm[i], req));
            i++;
        } else if (how == 1) {
            CALL(MPI_Pready_list(2, &perm[i], req));
            i += 2;
        } else {
            /* a range needs neighbours: take the partitions perm[i] and perm[i]+1 when both
               are still to come, else fall back to one */
            CALL(MPI_Pready(perm[i], req));
            i++;
        }
    }
}

/* Ints, `parts` partitions of `count`, `rounds` rounds with shuffled readiness. */
static void ints_around(int parts, int count, int rounds)
{
    int n = parts * count;
    int *s = malloc(sizeof(int) * n), *r = malloc(sizeof(int) * n);
    MPI_Request sreq, rreq;
    CALL(MPI_Psend_init(s, parts, count, MPI_INT, next, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    CALL(MPI_Precv_init(r, parts, count, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < n; i++) {
            s[i] = mtest_rank * 100000 + round * 1000 + i;
            r[i] = -1;
        }
        CALL(MPI_Start(&rreq));
        CALL(MPI_Start(&sreq));
        ready_all(sreq, parts, (unsigned)(round * 31 + mtest_rank * 7 + parts));
        for (int p = 0; p < parts; p++) {
            int flag = 0;
            while (!flag)
                CALL(MPI_Parrived(rreq, p, &flag));
        }
        MPI_Status st;
        CALL(MPI_Wait(&rreq, &st));
        CALL(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        CHECK(rreq != MPI_REQUEST_NULL && sreq != MPI_REQUEST_NULL, "Wait freed a persistent request");
        CHECK_EQ(st.MPI_SOURCE, prev);
        CHECK_EQ(st.MPI_TAG, 5);
        int got = -1;
        MPI_Get_count(&st, MPI_INT, &got);
        CHECK_EQ(got, n);
        for (int i = 0; i < n; i++)
            if (r[i] != prev * 100000 + round * 1000 + i) {
                FAIL("parts %d round %d: r[%d] = %d", parts, round, i, r[i]);
                break;
            }
    }
    CALL(MPI_Request_free(&sreq));
    CALL(MPI_Request_free(&rreq));
    CHECK(sreq == MPI_REQUEST_NULL && rreq == MPI_REQUEST_NULL, "Request_free left a handle");
    free(s);
    free(r);
}

/* Different partition counts (ints): the sender readies its first `half` partitions, the
   receiver sees exactly the partitions those cover arrive, then the rest. */
static void split_around(int sparts, int scount, int rparts, int rcount)
{
    int n = sparts * scount, half = sparts / 2;
    int *s = malloc(sizeof(int) * n), *r = malloc(sizeof(int) * n);
    MPI_Request sreq, rreq;
    for (int i = 0; i < n; i++) {
        s[i] = mtest_rank * 1000 + i;
        r[i] = -1;
    }
    CALL(MPI_Psend_init(s, sparts, scount, MPI_INT, next, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    CALL(MPI_Precv_init(r, rparts, rcount, MPI_INT, prev, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    CALL(MPI_Start(&rreq));
    CALL(MPI_Start(&sreq));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int p = 0; p < rparts; p++) {
        int flag = 1;
        CALL(MPI_Parrived(rreq, p, &flag));
        CHECK(!flag, "receive partition %d arrived before anything was ready", p);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (half > 0)
        CALL(MPI_Pready_range(0, half - 1, sreq));
    /* receive partition p is covered by the first half when its last int is below half*scount */
    for (int p = 0; p < rparts; p++) {
        if ((p + 1) * rcount > half * scount)
            break;
        int flag = 0;
        while (!flag)
            CALL(MPI_Parrived(rreq, p, &flag));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int p = 0; p < rparts; p++) {
        int flag = 0;
        CALL(MPI_Parrived(rreq, p, &flag));
        CHECK(flag == ((p + 1) * rcount <= half * scount),
              "%dx%d into %dx%d: partition %d arrived = %d", sparts, scount, rparts, rcount, p, flag);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_Pready_range(half, sparts - 1, sreq));
    MPI_Request both[2] = {sreq, rreq};
    CALL(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
    for (int i = 0; i < n; i++)
        if (r[i] != prev * 1000 + i) {
            FAIL("%dx%d into %dx%d: r[%d] = %d", sparts, scount, rparts, rcount, i, r[i]);
            break;
        }
    CALL(MPI_Request_free(&sreq));
    CALL(MPI_Request_free(&rreq));
    free(s);
    free(r);
}

/* A strided vector (every other int) sent as 4 partitions of 2 elements, received as
   contiguous ints; then 2 partitions of a 12-byte type received as 3 partitions of 2 ints. */
static void derived_around(void)
{
    MPI_Datatype vec, three;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* ints 0 and 2, extent 3 ints */
    MPI_Type_create_resized(vec, 0, 4 * sizeof(int), &vec);
    MPI_Type_commit(&vec);
    int s[32], r[16];
    for (int i = 0; i < 32; i++)
        s[i] = mtest_rank * 100 + i;
    for (int i = 0; i < 16; i++)
        r[i] = -1;
    MPI_Request sreq, rreq;
    CALL(MPI_Psend_init(s, 4, 2, vec, next, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    CALL(MPI_Precv_init(r, 4, 4, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    for (int round = 0; round < 2; round++) {
        CALL(MPI_Start(&sreq));
        CALL(MPI_Start(&rreq));
        int list[4] = {3, 1, 0, 2};
        CALL(MPI_Pready_list(4, list, sreq));
        CALL(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        CALL(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
        /* element e of vec covers ints 4e and 4e+2 */
        for (int k = 0; k < 16; k++) {
            int e = k / 2, want = prev * 100 + 4 * e + 2 * (k % 2);
            if (r[k] != want) {
                FAIL("vector round %d: r[%d] = %d, want %d", round, k, r[k], want);
                break;
            }
        }
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    MPI_Type_free(&vec);

    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    int s6[6], r6[6];
    for (int i = 0; i < 6; i++) {
        s6[i] = mtest_rank * 10 + i;
        r6[i] = -1;
    }
    CALL(MPI_Psend_init(s6, 2, 1, three, next, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    CALL(MPI_Precv_init(r6, 3, 2, MPI_INT, prev, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    CALL(MPI_Start(&rreq));
    CALL(MPI_Start(&sreq));
    CALL(MPI_Pready(1, sreq));
    CALL(MPI_Pready(0, sreq));
    CALL(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
    CALL(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    for (int i = 0; i < 6; i++)
        CHECK_EQ(r6[i], prev * 10 + i);
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    MPI_Type_free(&three);
}

/* Large partitions (rendezvous), completed with Testall and Request_get_status. */
static void large_around(void)
{
    const int parts = 4, count = 64 * 1024; /* 512 KiB of doubles per partition */
    double *s = malloc(sizeof(double) * parts * count), *r = malloc(sizeof(double) * parts * count);
    for (int i = 0; i < parts * count; i++) {
        s[i] = mtest_rank + i * 0.5;
        r[i] = -1;
    }
    MPI_Request req[2];
    CALL(MPI_Precv_init(r, parts, count, MPI_DOUBLE, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
    CALL(MPI_Psend_init(s, parts, count, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    CALL(MPI_Startall(2, req));
    CALL(MPI_Pready_range(0, parts - 1, req[0]));
    int flag = 0;
    while (!flag)
        CALL(MPI_Request_get_status(req[1], &flag, MPI_STATUS_IGNORE));
    flag = 0;
    while (!flag)
        CALL(MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE));
    for (int i = 0; i < parts * count; i++)
        if (r[i] != prev + i * 0.5) {
            FAIL("large: r[%d] = %g", i, r[i]);
            break;
        }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    free(s);
    free(r);
}

/* Two partitioned pairs with one tag match in order of initialisation; an ordinary receive
   of any tag posted first sees only the ordinary message. */
static void matching_order(void)
{
    int a[2] = {mtest_rank, 1}, b[2] = {mtest_rank, 2}, ra[2] = {-1, -1}, rb[2] = {-1, -1};
    int plain = -1, out = 4242;
    MPI_Request ord, sa, sb, qa, qb;
    CALL(MPI_Irecv(&plain, 1, MPI_INT, prev, MPI_ANY_TAG, MPI_COMM_WORLD, &ord));
    CALL(MPI_Psend_init(a, 1, 2, MPI_INT, next, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sa));
    CALL(MPI_Psend_init(b, 2, 1, MPI_INT, next, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sb));
    CALL(MPI_Precv_init(ra, 2, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &qa));
    CALL(MPI_Precv_init(rb, 1, 2, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &qb));
    MPI_Request all[4] = {sb, sa, qb, qa};
    CALL(MPI_Startall(4, all));
    CALL(MPI_Pready_range(0, 1, sb));
    CALL(MPI_Pready(0, sa));
    CALL(MPI_Waitall(4, all, MPI_STATUSES_IGNORE));
    CALL(MPI_Send(&out, 1, MPI_INT, next, 3, MPI_COMM_WORLD));
    CALL(MPI_Wait(&ord, MPI_STATUS_IGNORE));
    CHECK_EQ(plain, 4242);
    CHECK(ra[0] == prev && ra[1] == 1, "first receive got %d,%d", ra[0], ra[1]);
    CHECK(rb[0] == prev && rb[1] == 2, "second receive got %d,%d", rb[0], rb[1]);
    MPI_Request_free(&sa);
    MPI_Request_free(&sb);
    MPI_Request_free(&qa);
    MPI_Request_free(&qb);
}

/* MPI_PROC_NULL peers complete at once. */
static void proc_null(void)
{
    int v[4] = {0};
    MPI_Request s, r;
    MPI_Status st;
    CALL(MPI_Psend_init(v, 2, 2, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    CALL(MPI_Precv_init(v, 2, 2, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    CALL(MPI_Start(&s));
    CALL(MPI_Start(&r));
    CALL(MPI_Pready_range(0, 1, s));
    int flag = 0;
    CALL(MPI_Parrived(r, 1, &flag));
    CHECK(flag, "a partition from MPI_PROC_NULL has not arrived");
    CALL(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CALL(MPI_Wait(&r, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

/* Across an intercommunicator (even world ranks to odd ones, local rank i to remote rank i). */
static void across_intercomm(void)
{
    if (mtest_size < 2)
        return;
    MPI_Comm local, inter;
    int color = mtest_rank % 2, lrank, rsize;
    MPI_Comm_split(MPI_COMM_WORLD, color, mtest_rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 77, &inter);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_remote_size(inter, &rsize);
    if (lrank < rsize) {
        int v[6], i;
        MPI_Request req;
        for (i = 0; i < 6; i++)
            v[i] = color == 0 ? lrank * 10 + i : -1;
        if (color == 0) {
            CALL(MPI_Psend_init(v, 3, 2, MPI_INT, lrank, 4, inter, MPI_INFO_NULL, &req));
            CALL(MPI_Start(&req));
            CALL(MPI_Pready_range(0, 2, req));
        } else {
            CALL(MPI_Precv_init(v, 2, 3, MPI_INT, lrank, 4, inter, MPI_INFO_NULL, &req));
            CALL(MPI_Start(&req));
        }
        CALL(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (i = 0; i < 6; i++)
            CHECK_EQ(v[i], lrank * 10 + i);
        MPI_Request_free(&req);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    next = (mtest_rank + 1) % mtest_size;
    prev = (mtest_rank + mtest_size - 1) % mtest_size;
    int parts[] = {1, 2, 3, 7};
    for (int k = 0; k < 4; k++)
        ints_around(parts[k], 5, 3);
    ints_around(3, 0, 2); /* empty partitions */
    split_around(6, 2, 4, 3);
    split_around(2, 6, 3, 4);
    split_around(4, 3, 4, 3);
    derived_around();
    large_around();
    matching_order();
    proc_null();
    across_intercomm();
    return MTest_Finalize();
}
