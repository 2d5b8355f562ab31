/*
 * self.c - messages to oneself (MPI-3.1 section 3.5 on self messages; MPI_COMM_SELF): a rank
 * can Isend to itself and then Recv (and the reverse), MPI_Sendrecv and MPI_Sendrecv_replace
 * with itself, keep many self messages in order, probe them, and communicate on
 * MPI_COMM_SELF. Sizes 0 B to 4 MiB. Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    const int sizes[] = {0, 1, 64, 4096, 65537, 4 << 20};
    int me = mtest_rank;
    MPI_Status st;
    int n;

    for (int k = 0; k < 6; k++) {
        int len = sizes[k];
        char *out = mtest_malloc(len), *in = mtest_malloc(len);
        MPI_Request r;
        mtest_fill(out, len, me, k);

        /* Isend first, then the blocking receive. */
        MPI_Isend(out, len, MPI_BYTE, me, 1, MPI_COMM_WORLD, &r);
        MPI_Probe(me, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, len);
        MPI_Recv(in, len, MPI_BYTE, me, 1, MPI_COMM_WORLD, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK_EQ(st.MPI_SOURCE, me);
        CHECK_DATA(in, (size_t)len, me, k, "Isend+Recv to self");

        /* Irecv first, then a blocking send. */
        memset(in, 0, len);
        MPI_Irecv(in, len, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &r);
        MPI_Send(out, len, MPI_BYTE, me, 2, MPI_COMM_WORLD);
        MPI_Wait(&r, &st);
        CHECK_EQ(st.MPI_SOURCE, me);
        CHECK_DATA(in, (size_t)len, me, k, "Irecv+Send to self");

        /* Sendrecv and Sendrecv_replace with oneself. */
        memset(in, 0, len);
        MPI_Sendrecv(out, len, MPI_BYTE, me, 3, in, len, MPI_BYTE, me, 3, MPI_COMM_WORLD, &st);
        CHECK_DATA(in, (size_t)len, me, k, "Sendrecv to self");
        MPI_Sendrecv_replace(in, len, MPI_BYTE, me, 4, me, 4, MPI_COMM_WORLD, &st);
        CHECK_DATA(in, (size_t)len, me, k, "Sendrecv_replace to self");
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, len);

        /* MPI_COMM_SELF: rank 0 of a 1-rank communicator. */
        memset(in, 0, len);
        MPI_Isend(out, len, MPI_BYTE, 0, 5, MPI_COMM_SELF, &r);
        MPI_Recv(in, len, MPI_BYTE, 0, 5, MPI_COMM_SELF, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK_EQ(st.MPI_SOURCE, 0);
        CHECK_DATA(in, (size_t)len, me, k, "COMM_SELF message");
        free(out);
        free(in);
    }

    /* Many self messages stay in order. */
    {
        enum { N = 200 };
        int v[N];
        MPI_Request r[N];
        for (int i = 0; i < N; i++) {
            v[i] = i;
            MPI_Isend(&v[i], 1, MPI_INT, me, 6, MPI_COMM_WORLD, &r[i]);
        }
        for (int i = 0; i < N; i++) {
            int x = -1;
            MPI_Recv(&x, 1, MPI_INT, me, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK_EQ(x, i);
        }
        MPI_Waitall(N, r, MPI_STATUSES_IGNORE);
    }
    return MTest_Finalize();
}
