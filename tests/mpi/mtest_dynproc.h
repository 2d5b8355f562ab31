/* Shared checks of the dynamic-process tests (dynproc_*.c): what every intercommunicator made by
 * MPI_Comm_accept/connect or MPI_Comm_join must carry. `high` is 0 on one side and 1 on the other;
 * `local` is the communicator of this side's group. */
#ifndef MTEST_DYNPROC_H
#define MTEST_DYNPROC_H
#include "mtest.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DP_BIG ((1 << 20) + 3) /* a rendezvous message between the roots, both ways */

/* Every local rank sends to every remote rank and receives from each: (side, rank, dest). */
static inline void dp_point_to_point(MPI_Comm inter, int high)
{
    int rank, lsize, rsize;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    int *out = mtest_malloc(sizeof(int) * 3 * rsize), *in = mtest_malloc(sizeof(int) * 3 * rsize);
    MPI_Request *reqs = mtest_malloc(sizeof(MPI_Request) * 2 * rsize);
    for (int r = 0; r < rsize; r++) {
        out[3 * r] = high; out[3 * r + 1] = rank; out[3 * r + 2] = r;
        CALL(MPI_Irecv(in + 3 * r, 3, MPI_INT, r, 7, inter, &reqs[r]));
        CALL(MPI_Isend(out + 3 * r, 3, MPI_INT, r, 7, inter, &reqs[rsize + r]));
    }
    CALL(MPI_Waitall(2 * rsize, reqs, MPI_STATUSES_IGNORE));
    for (int r = 0; r < rsize; r++)
        CHECK(in[3 * r] == !high && in[3 * r + 1] == r && in[3 * r + 2] == rank,
              "from remote %d got (%d,%d,%d)", r, in[3 * r], in[3 * r + 1], in[3 * r + 2]);
    free(out); free(in); free(reqs);
    if (rank == 0) {
        char *a = mtest_malloc(DP_BIG), *b = mtest_malloc(DP_BIG);
        MPI_Status st;
        mtest_fill(a, DP_BIG, high, 5);
        CALL(MPI_Sendrecv(a, DP_BIG, MPI_BYTE, 0, 8, b, DP_BIG, MPI_BYTE, 0, 8, inter, &st));
        CHECK_DATA(b, DP_BIG, !high, 5, "the large message between the roots");
        CHECK_EQ(st.MPI_SOURCE, 0);
        free(a); free(b);
    }
}

/* Collectives on the intercommunicator: bcast from side 0's rank 0, allreduce of the other side. */
static inline void dp_inter_collectives(MPI_Comm inter, int high)
{
    int rank, rsize, v = -1;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    if (high) {
        CALL(MPI_Bcast(&v, 1, MPI_INT, 0, inter));
        CHECK_EQ(v, 4242);
    } else {
        v = 4242;
        CALL(MPI_Bcast(&v, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
    }
    int mine = high * 1000 + rank + 1, sum = 0, want = 0;
    for (int r = 0; r < rsize; r++)
        want += !high * 1000 + r + 1;
    CALL(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter));
    CHECK_EQ(sum, want);
}

/* Merge (side 0 first), then collectives over both jobs' processes, then an
 * MPI_Intercomm_create whose peer communicator is the merged one. */
static inline void dp_merged(MPI_Comm inter, int high, MPI_Comm local)
{
    int rank, lsize, rsize, msize, mrank;
    MPI_Comm merged, again, inter2;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    CALL(MPI_Intercomm_merge(inter, high, &merged));
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    CHECK_EQ(msize, lsize + rsize);
    CHECK_EQ(mrank, (high ? rsize : 0) + rank);
    enum { N = 1000 };
    int *vals = mtest_malloc(sizeof(int) * N), *sums = mtest_malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++)
        vals[i] = mrank + i;
    CALL(MPI_Allreduce(vals, sums, N, MPI_INT, MPI_SUM, merged));
    for (int i = 0; i < N; i++)
        if (sums[i] != msize * (msize - 1) / 2 + msize * i) {
            FAIL("merged allreduce element %d is %d", i, sums[i]);
            break;
        }
    free(vals); free(sums);
    int root_val = mrank == msize - 1 ? 77 : 0;
    CALL(MPI_Bcast(&root_val, 1, MPI_INT, msize - 1, merged));
    CHECK_EQ(root_val, 77);
    CALL(MPI_Barrier(merged));
    /* Both sides pass the same flag: the order must still be the same everywhere. */
    CALL(MPI_Intercomm_merge(inter, 0, &again));
    int first = 0, total = 0;
    MPI_Comm_rank(again, &mrank);
    int mine_first = mrank == 0;
    CALL(MPI_Allreduce(&mine_first, &first, 1, MPI_INT, MPI_SUM, again));
    CALL(MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, again));
    CHECK_EQ(first, 1);
    CHECK_EQ(total, msize * (msize - 1) / 2);
    CALL(MPI_Comm_free(&again));
    /* The peer communicator spans both jobs: members must travel as identities. */
    CALL(MPI_Intercomm_create(local, 0, merged, high ? 0 : lsize, 99, &inter2));
    int r2 = -1;
    MPI_Comm_remote_size(inter2, &r2);
    CHECK_EQ(r2, rsize);
    if (rank == 0) {
        int token = high * 10 + 1, got = -1;
        CALL(MPI_Sendrecv(&token, 1, MPI_INT, 0, 3, &got, 1, MPI_INT, 0, 3, inter2, MPI_STATUS_IGNORE));
        CHECK_EQ(got, !high * 10 + 1);
    }
    CALL(MPI_Barrier(inter2));
    CALL(MPI_Comm_free(&inter2));
    CALL(MPI_Comm_disconnect(&merged));
    CHECK(merged == MPI_COMM_NULL, "MPI_Comm_disconnect left the handle set");
}

/* Everything above, then disconnect. */
static inline void dp_exercise(MPI_Comm *inter, int high, MPI_Comm local)
{
    int flag = 0, lsize, size;
    MPI_Comm_test_inter(*inter, &flag);
    CHECK(flag, "accept/connect/join did not give an intercommunicator");
    MPI_Comm_size(*inter, &lsize);
    MPI_Comm_size(local, &size);
    CHECK_EQ(lsize, size);
    dp_point_to_point(*inter, high);
    dp_inter_collectives(*inter, high);
    dp_merged(*inter, high, local);
    CALL(MPI_Comm_disconnect(inter));
    CHECK(*inter == MPI_COMM_NULL, "MPI_Comm_disconnect left the handle set");
}

/* Pair mode (run.py pair=N): the directory both jobs share and this job's role, or NULL. */
static inline const char *dp_pair(int *role)
{
    const char *dir = getenv("MTEST_PAIR_DIR"), *r = getenv("MTEST_PAIR_ROLE");
    *role = r ? atoi(r) : 0;
    return dir;
}

/* Writes `text` to dir/name atomically (the reader never sees half of it). */
static inline void dp_put_file(const char *dir, const char *name, const char *text)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
        FAIL("cannot write %s", path);
}

/* Reads dir/name into buf once the other job has written it (waits up to 60 s). */
static inline void dp_get_file(const char *dir, const char *name, char *buf, int len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int i = 0; i < 6000; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(buf, len, f))
                buf[0] = 0;
            fclose(f);
            return;
        }
        usleep(10000);
    }
    FAIL("%s never appeared", path);
    buf[0] = 0;
}
#endif
