/*
 * sizes.c - message sizes around every likely protocol switch (cell payload, eager limit,
 * rendezvous and pipeline chunk boundaries): 0, 1, 7, 8, 63, 64, 65, 1 KiB +-1, 4 KiB +-1,
 * 8 KiB, 16 KiB +-1, 32 KiB +-1, 64 KiB, 128 KiB, 256 KiB + 1 and 1 MiB + 3 bytes, sent in both
 * directions at once, first between partners and then around a ring, with blocking and
 * nonblocking calls; content and count checked. Runs with any number of ranks.
 */
#include "mtest.h"

static const int sizes[] = {0,     1,     7,     8,     63,    64,     65,     1023,       1024,
                            1025,  4095,  4096,  4097,  8192,  16383,  16384,  16385,      32767,
                            32768, 32769, 65536, 131072, 262145, 1048579};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static void exchange(int to, int from, int blocking, char *out, char *in)
{
    for (int k = 0; k < NSIZES; k++) {
        int len = sizes[k], n = -1, seed = k + 100 * blocking;
        MPI_Status st;
        mtest_fill(out, len, mtest_rank, seed);
        memset(in, 0, len);
        if (blocking) {
            MPI_Sendrecv(out, len, MPI_BYTE, to, k, in, len, MPI_BYTE, from, k, MPI_COMM_WORLD, &st);
        } else {
            MPI_Request r[2];
            MPI_Status sts[2];
            MPI_Irecv(in, len, MPI_BYTE, from, k, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(out, len, MPI_BYTE, to, k, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, sts);
            st = sts[0];
        }
        CHECK(st.MPI_SOURCE == from, "size %d: source %d, want %d", len, st.MPI_SOURCE, from);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK(n == len, "size %d: count %d", len, n);
        long long bad = mtest_verify(in, len, from, seed);
        CHECK(bad < 0, "size %d from %d (%s): first wrong byte %lld", len, from,
              blocking ? "Sendrecv" : "Isend/Irecv", bad);
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int maxlen = sizes[NSIZES - 1];
    char *out = mtest_malloc(maxlen), *in = mtest_malloc(maxlen);
    int peer = mtest_partner();
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    for (int blocking = 0; blocking < 2; blocking++) {
        exchange(peer, peer, blocking, out, in);
        exchange(right, left, blocking, out, in);
    }
    free(out);
    free(in);
    return MTest_Finalize();
}
