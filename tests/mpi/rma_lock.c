/*
 * rma_lock.c - passive-target synchronisation (MPI-3.1 11.5.3-11.5.4), on a window of the flavor
 * named by MTEST_RMA_FLAVOR (rma_win.h). Window: regions A, B, C, D of M ints each.
 *  - MPI_LOCK_EXCLUSIVE: every rank, for every target in turn, locks it, Puts its block into its
 *    slot of A (M/p ints each), unlocks; after a barrier every target checks A;
 *  - MPI_LOCK_SHARED (and shared with MPI_MODE_NOCHECK): every rank Gets its right neighbour's
 *    slot from every target;
 *  - Lock_all + Flush: Put into the right neighbour's B, MPI_Win_flush, Get of the same place
 *    sees the Put; the same with MPI_Win_flush_all;
 *  - Flush_local / Flush_local_all: after them the origin buffer may be overwritten; the target
 *    gets the values the buffer held at the Put (region C);
 *  - MPI_Win_sync: inside a Lock_all epoch each rank stores into its own D, Win_sync, barrier,
 *    and Gets its left neighbour's D;
 *  - an exclusive lock of a rank on itself, local loads and stores inside it.
 * Runs with any number of ranks.
 */
#include "rma_win.h"

#define M 840 /* divisible by 1..8 */

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int p = mtest_size, me = mtest_rank, right = (me + 1) % p, left = (me + p - 1) % p, s = M / p;
    RmaWin w;
    rma_win_make(&w, 4 * M * sizeof(int), sizeof(int), MPI_COMM_WORLD);
    int *mem = w.base, *buf = mtest_malloc(M * sizeof(int)), *in = mtest_malloc(M * sizeof(int));
    enum { A = 0, B = M, C = 2 * M, D = 3 * M };

    /* exclusive locks, one target at a time */
    for (int k = 0; k < p; k++) {
        int t = (me + k) % p;
        for (int i = 0; i < s; i++)
            buf[i] = 100000 * me + 100 * t + i % 100;
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win));
        CALL(MPI_Put(buf, s, MPI_INT, t, rma_disp(&w, t, A + me * s), s, MPI_INT, w.win));
        CALL(MPI_Win_unlock(t, w.win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rma_own_begin(&w);
    for (int o = 0; o < p; o++)
        for (int i = 0; i < s; i++)
            if (mem[A + o * s + i] != 100000 * o + 100 * me + i % 100) {
                FAIL("exclusive: slot %d element %d is %d", o, i, mem[A + o * s + i]);
                o = p;
                break;
            }
    rma_own_end(&w);
    MPI_Barrier(MPI_COMM_WORLD);

    /* shared locks (plain and NOCHECK): read the right neighbour's slot everywhere */
    for (int nocheck = 0; nocheck < 2; nocheck++)
        for (int t = 0; t < p; t++) {
            CALL(MPI_Win_lock(MPI_LOCK_SHARED, t, nocheck ? MPI_MODE_NOCHECK : 0, w.win));
            CALL(MPI_Get(in, s, MPI_INT, t, rma_disp(&w, t, A + right * s), s, MPI_INT, w.win));
            CALL(MPI_Win_unlock(t, w.win));
            for (int i = 0; i < s; i++)
                if (in[i] != 100000 * right + 100 * t + i % 100) {
                    FAIL("shared%s: Get from %d element %d is %d", nocheck ? " NOCHECK" : "", t, i, in[i]);
                    break;
                }
        }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Lock_all: Put, flush, Get of the same place */
    CALL(MPI_Win_lock_all(0, w.win));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < M; i++) {
            buf[i] = 7 * me + i + round * 13;
            in[i] = -1;
        }
        CALL(MPI_Put(buf, M, MPI_INT, right, rma_disp(&w, right, B), M, MPI_INT, w.win));
        if (round == 0)
            CALL(MPI_Win_flush(right, w.win));
        else
            CALL(MPI_Win_flush_all(w.win));
        CALL(MPI_Get(in, M, MPI_INT, right, rma_disp(&w, right, B), M, MPI_INT, w.win));
        CALL(MPI_Win_flush(right, w.win));
        for (int i = 0; i < M; i++)
            if (in[i] != 7 * me + i + round * 13) {
                FAIL("%s: Get after Put element %d is %d", round ? "flush_all" : "flush", i, in[i]);
                break;
            }
    }
    /* flush_local: the origin buffer is reusable; the target gets the old contents */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < s; i++)
            buf[i] = 1000 * me + i + round;
        int slot = C + me * s;
        for (int t = 0; t < p; t++) {
            CALL(MPI_Put(buf, s, MPI_INT, t, rma_disp(&w, t, slot), s, MPI_INT, w.win));
            if (round == 0)
                CALL(MPI_Win_flush_local(t, w.win));
        }
        if (round == 1)
            CALL(MPI_Win_flush_local_all(w.win));
        for (int i = 0; i < s; i++)
            buf[i] = -99;
        CALL(MPI_Win_flush_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(w.win);
        for (int o = 0; o < p; o++)
            for (int i = 0; i < s; i++)
                if (mem[C + o * s + i] != 1000 * o + i + round) {
                    FAIL("%s: slot %d element %d is %d", round ? "flush_local_all" : "flush_local", o, i,
                         mem[C + o * s + i]);
                    o = p;
                    break;
                }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Win_sync: my stores become visible to the others' Gets */
    for (int i = 0; i < M; i++)
        mem[D + i] = 31 * me + i;
    MPI_Win_sync(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_Get(in, M, MPI_INT, left, rma_disp(&w, left, D), M, MPI_INT, w.win));
    CALL(MPI_Win_flush(left, w.win));
    for (int i = 0; i < M; i++)
        if (in[i] != 31 * left + i) {
            FAIL("Win_sync: Get of the left's stores element %d is %d", i, in[i]);
            break;
        }
    CALL(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* exclusive lock on myself: local loads and stores */
    CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
    mem[D] = -5;
    CALL(MPI_Get(in, 1, MPI_INT, me, rma_disp(&w, me, D + 1), 1, MPI_INT, w.win));
    CALL(MPI_Win_unlock(me, w.win));
    CHECK(in[0] == 31 * me + 1, "Get from myself under my own lock: %d", in[0]);
    CHECK(mem[D] == -5, "local store under my own lock: %d", mem[D]);

    MPI_Barrier(MPI_COMM_WORLD);
    rma_win_free(&w);
    free(buf);
    free(in);
    return MTest_Finalize();
}
