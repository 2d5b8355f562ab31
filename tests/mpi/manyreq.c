/*
 * manyreq.c - 10,000 outstanding nonblocking requests each way between partners (self when
 * unpaired): first all receives posted before any send (the posted-receive queue), then all
 * sends before any receive (the unexpected-message queue), with 100 different tags so matching
 * has to search, completed with one MPI_Waitall; non-overtaking per tag is checked through
 * the payloads. Runs with any number of ranks.
 */
#include "mtest.h"

#define NREQ 10000
#define NTAGS 100

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    int *out = mtest_malloc(NREQ * sizeof(int)), *in = mtest_malloc(NREQ * sizeof(int));
    MPI_Request *r = mtest_malloc(2 * NREQ * sizeof(MPI_Request));

    for (int phase = 0; phase < 2; phase++) {
        for (int i = 0; i < NREQ; i++) {
            out[i] = i + phase * NREQ + mtest_rank * 1000000;
            in[i] = -1;
        }
        /* message i has tag i % NTAGS; receive j for tag t is the (j / NTAGS)-th with tag t */
        if (phase == 0) {
            for (int i = 0; i < NREQ; i++)
                MPI_Irecv(&in[i], 1, MPI_INT, peer, i % NTAGS, MPI_COMM_WORLD, &r[i]);
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; i < NREQ; i++)
                MPI_Isend(&out[i], 1, MPI_INT, peer, i % NTAGS, MPI_COMM_WORLD, &r[NREQ + i]);
        } else {
            for (int i = 0; i < NREQ; i++)
                MPI_Isend(&out[i], 1, MPI_INT, peer, i % NTAGS, MPI_COMM_WORLD, &r[NREQ + i]);
            MPI_Barrier(MPI_COMM_WORLD);
            /* receive the tags in reverse order: matching must skip over earlier tags */
            for (int t = NTAGS - 1; t >= 0; t--)
                for (int i = t; i < NREQ; i += NTAGS)
                    MPI_Irecv(&in[i], 1, MPI_INT, peer, t, MPI_COMM_WORLD, &r[i]);
        }
        MPI_Waitall(2 * NREQ, r, MPI_STATUSES_IGNORE);
        int bad = 0;
        for (int i = 0; i < NREQ && bad < 5; i++) {
            int want = i + phase * NREQ + peer * 1000000;
            CHECK(in[i] == want, "phase %d: receive %d got %d, want %d", phase, i, in[i], want);
            bad += in[i] != want;
        }
    }
    free(out);
    free(in);
    free(r);
    return MTest_Finalize();
}
