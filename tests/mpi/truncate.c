/*
 * truncate.c - a message longer than the receive buffer (MPI-3.1 section 3.2.2) is an error of
 * class MPI_ERR_TRUNCATE: returned by MPI_Recv and MPI_Wait, and reported per request through
 * MPI_ERR_IN_STATUS + status.MPI_ERROR by MPI_Waitall. The buffer beyond the receive count is
 * never written (no silent corruption), for small and large messages, and the library keeps
 * working afterwards. Runs with any number of ranks (partner or self).
 */
#include "mtest.h"

#define SENTINEL 0x5a

static void check_untouched(const unsigned char *buf, int from, int to, const char *what)
{
    for (int i = from; i < to; i++)
        if (buf[i] != SENTINEL) {
            CHECK(buf[i] == SENTINEL, "%s: byte %d beyond the receive count was overwritten", what, i);
            return;
        }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    const int sizes[] = {16, 1000, 300000};
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    for (int k = 0; k < 3; k++) {
        int len = sizes[k], half = len / 2;
        unsigned char *out = mtest_malloc(len), *in = mtest_malloc(len);
        MPI_Request sreq, r[2];
        MPI_Status st, sts[2];
        int rc, v = 5, w = 0;
        mtest_fill(out, len, mtest_rank, k);

        /* 1. MPI_Recv returns MPI_ERR_TRUNCATE; bytes past half untouched. */
        memset(in, SENTINEL, len);
        MPI_Isend(out, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &sreq);
        rc = MPI_Recv(in, half, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
        CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
        check_untouched(in, half, len, "Recv");
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);

        /* 2. Irecv + Wait. */
        memset(in, SENTINEL, len);
        MPI_Irecv(in, half, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &sreq);
        rc = MPI_Wait(&r[0], &st);
        CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
        check_untouched(in, half, len, "Irecv+Wait");
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);

        /* 3. Waitall: MPI_ERR_IN_STATUS, the truncated request says MPI_ERR_TRUNCATE. */
        memset(in, SENTINEL, len);
        MPI_Irecv(in, half, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&w, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &r[1]);
        MPI_Request s2[2];
        MPI_Isend(out, len, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &s2[0]);
        MPI_Isend(&v, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &s2[1]);
        sts[0].MPI_ERROR = sts[1].MPI_ERROR = -12345;
        rc = MPI_Waitall(2, r, sts);
        CHECK_CLASS(rc, MPI_ERR_IN_STATUS);
        CHECK_CLASS(sts[0].MPI_ERROR, MPI_ERR_TRUNCATE);
        /* the good request either completed or is still pending (then it is still active) */
        if (sts[1].MPI_ERROR == MPI_ERR_PENDING) {
            CHECK(r[1] != MPI_REQUEST_NULL, "pending request in Waitall was freed");
            if (r[1] != MPI_REQUEST_NULL)
                CALL(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        } else {
            CHECK(sts[1].MPI_ERROR == MPI_SUCCESS, "good request in Waitall has MPI_ERROR %d", sts[1].MPI_ERROR);
        }
        CHECK_EQ(w, 5);
        check_untouched(in, half, len, "Waitall");
        MPI_Waitall(2, s2, MPI_STATUSES_IGNORE);

        /* 4. Still working: a full-size receive gets the whole message. */
        MPI_Isend(out, len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &sreq);
        CALL(MPI_Recv(in, len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &st));
        CHECK_DATA(in, (size_t)len, peer, k, "message after truncations");
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        free(out);
        free(in);
    }
    return MTest_Finalize();
}
