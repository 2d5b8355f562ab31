/*
 * isend_eager.c - small MPI_Isend requests that complete as they start (Reflex hands every such
 * send one shared, already complete request): each one still behaves as a request of its own
 * under MPI_Wait, MPI_Test, MPI_Request_get_status, MPI_Request_free, MPI_Cancel (a complete send
 * is not cancelled) and the multi-completion calls mixed with receives and MPI_REQUEST_NULL; the
 * messages arrive intact and in order. Runs with any number of ranks (partner or self).
 */
#include "mtest.h"

#define N 300

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    MPI_Request s[N], r[N];
    int out[N], in[N], flag, idx, outcount, idxs[N];
    MPI_Status st;

    /* 1. Each request completes on its own, and becomes MPI_REQUEST_NULL when completed. */
    for (int i = 0; i < N; i++) {
        out[i] = 1000 * mtest_rank + i;
        in[i] = -1;
        MPI_Irecv(&in[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &r[i]);
    }
    for (int i = 0; i < N; i++)
        CALL(MPI_Isend(&out[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &s[i]));
    for (flag = 0; !flag;)
        CALL(MPI_Request_get_status(s[0], &flag, &st));
    CHECK(s[0] != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
    CALL(MPI_Wait(&s[0], &st));
    CHECK(s[0] == MPI_REQUEST_NULL, "MPI_Wait left a send request set");
    for (flag = 0; !flag;)
        CALL(MPI_Test(&s[1], &flag, MPI_STATUS_IGNORE));
    CHECK(s[1] == MPI_REQUEST_NULL, "MPI_Test left a completed send request set");
    CALL(MPI_Request_free(&s[2]));
    CHECK(s[2] == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
    CALL(MPI_Cancel(&s[3]));
    CALL(MPI_Wait(&s[3], &st));
    int cancelled = -1;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled == 0, "a send that had completed was reported cancelled");
    CALL(MPI_Waitany(N, s, &idx, MPI_STATUS_IGNORE));
    CHECK(idx >= 4 && idx < N && s[idx] == MPI_REQUEST_NULL, "MPI_Waitany gave index %d", idx);
    CALL(MPI_Waitsome(N, s, &outcount, idxs, MPI_STATUSES_IGNORE));
    CHECK(outcount >= 1 && outcount <= N - 5, "MPI_Waitsome gave outcount %d", outcount);
    for (flag = 0; !flag;)
        CALL(MPI_Testall(N, s, &flag, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++)
        CHECK(s[i] == MPI_REQUEST_NULL, "send request %d still set", i);
    CALL(MPI_Waitall(N, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++)
        CHECK(in[i] == 1000 * peer + i, "message %d: got %d", i, in[i]);

    /* 2. Sends and receives in one MPI_Waitall, with MPI_REQUEST_NULL among them; one tag, so
     * the receives must match the sends in order. */
    MPI_Request all[2 * N];
    for (int i = 0; i < N; i++) {
        in[i] = -1;
        MPI_Irecv(&in[i], 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &all[2 * i]);
        all[2 * i + 1] = MPI_REQUEST_NULL;
        if (i % 5 != 4)
            CALL(MPI_Isend(&out[i], 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &all[2 * i + 1]));
    }
    for (int i = 0; i < N; i += 5) /* the ones skipped above, after the others */
        CALL(MPI_Send(&out[i + 4], 1, MPI_INT, peer, 7, MPI_COMM_WORLD));
    CALL(MPI_Waitall(2 * N, all, MPI_STATUSES_IGNORE));
    int k = 0;
    for (int i = 0; i < N; i++) /* the nonblocking sends first, in order */
        if (i % 5 != 4) {
            CHECK(in[k] == 1000 * peer + i, "message %d: got %d, want %d", k, in[k], 1000 * peer + i);
            k++;
        }
    for (int i = 4; i < N; i += 5, k++) /* then the blocking ones */
        CHECK(in[k] == 1000 * peer + i, "message %d: got %d, want %d", k, in[k], 1000 * peer + i);
    /* 3. Empty messages from and into NULL buffers, blocking and not. */
    MPI_Request e[2];
    int count = -1;
    CALL(MPI_Irecv(NULL, 0, MPI_INT, peer, 9, MPI_COMM_WORLD, &e[0]));
    CALL(MPI_Isend(NULL, 0, MPI_INT, peer, 9, MPI_COMM_WORLD, &e[1]));
    CALL(MPI_Waitall(2, e, MPI_STATUSES_IGNORE));
    CALL(MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 10, NULL, 0, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 0 && st.MPI_SOURCE == peer && st.MPI_TAG == 10, "empty message: count %d from %d tag %d",
          count, st.MPI_SOURCE, st.MPI_TAG);
    if (mtest_rank < peer) {
        CALL(MPI_Send(NULL, 0, MPI_INT, peer, 11, MPI_COMM_WORLD));
        CALL(MPI_Recv(NULL, 0, MPI_INT, peer, 11, MPI_COMM_WORLD, &st));
    } else if (mtest_rank > peer) {
        CALL(MPI_Recv(NULL, 0, MPI_INT, peer, 11, MPI_COMM_WORLD, &st));
        CALL(MPI_Send(NULL, 0, MPI_INT, peer, 11, MPI_COMM_WORLD));
    }
    return MTest_Finalize();
}
