/*
 * rma_copy.c - the bytes moved by MPI_Put and MPI_Get on a shared-memory window
 * (MPI_Win_allocate_shared), where an implementation may copy them directly: every length that
 * takes a different copy routine (0-3, 4-7, 8-16, 17-32, 33-64, 65-128 bytes inline in Reflex, the
 * C library's memcpy above, a backward copy for 2 KiB - 512 KiB when the destination is 1-63 bytes
 * past the source modulo 4096), each at destination-minus-source offsets modulo 4096 of 0, 1, 8, 31,
 * 32, 63, 64, 2048 and -8 (the origin buffer is placed to get them, from the target's address given
 * by MPI_Win_shared_query). Each rank in turn puts into and gets from its right neighbour inside
 * an exclusive lock; the destination's bytes and 64 guard bytes either side must be exactly what
 * a plain copy gives. Runs with any number of ranks.
 */
#include "mtest.h"
#include <stdint.h>

#define PAGE 4096
#define MAXLEN (70 * 1024)
#define GUARD 64
#define WIN (MAXLEN + 2 * PAGE + 2 * GUARD)

static const size_t lens[] = {0,   1,   2,    3,    4,    5,    7,    8,    9,    15,   16,   17,  31,
                              32,  33,  63,   64,   65,   100,  127,  128,  129,  255,  1000, 2047, 2048,
                              2049, 3000, 4096, 4159, 32768, 32805, MAXLEN};
static const int rels[] = {0, 1, 8, 31, 32, 63, 64, 2048, -8};

/* The offset o >= GUARD into `buf` with buf + o = at + k (mod PAGE). */
static size_t place(const void *buf, const void *at, long k)
{
    long d = (long)(((uintptr_t)at - (uintptr_t)buf - GUARD) % PAGE) + k;
    return GUARD + (size_t)(((d % PAGE) + PAGE) % PAGE);
}

/* Cheap distinct bytes (a fresh pattern per case, so that a stale byte shows). */
static void fill(void *buf, size_t n, int seed)
{
    unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 131 + (i >> 8) + (size_t)seed * 29 + 1);
}

static void check_bytes(const unsigned char *got, const unsigned char *want, size_t n, const char *what, size_t len,
                        int rel)
{
    if (!memcmp(got, want, n))
        return;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            FAIL("%s: len %zu, relative offset %d: byte %zu is %d, want %d", what, len, rel, i, got[i], want[i]);
            return;
        }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int right = (mtest_rank + 1) % mtest_size;
    char *mine;
    MPI_Win win;
    CALL(MPI_Win_allocate_shared(WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
    MPI_Aint tsize;
    int tunit;
    char *tbase;
    CALL(MPI_Win_shared_query(win, right, &tsize, &tunit, &tbase));
    CHECK(tsize == WIN && tunit == 1, "MPI_Win_shared_query: size %ld, unit %d", (long)tsize, tunit);
    unsigned char *buf = mtest_malloc(WIN), *want = mtest_malloc(WIN);
    for (int turn = 0; turn < mtest_size; turn++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (turn != mtest_rank)
            continue;
        CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
            for (size_t r = 0; r < sizeof rels / sizeof *rels; r++) {
                size_t len = lens[l], disp = GUARD + (r * 13) % PAGE;
                int rel = rels[r];
                /* Put: destination tbase + disp, source buf + o; compared with guards */
                size_t o = place(buf, tbase + disp, -rel), span = len + 2 * GUARD;
                unsigned char *t = (unsigned char *)tbase + disp - GUARD, *b = buf + o - GUARD;
                fill(b, span, (int)(l * 16 + r) + 97 * mtest_rank);
                fill(t, span, (int)(l * 16 + r) + 53);
                memcpy(want, t, span);
                memcpy(want + GUARD, buf + o, len);
                CALL(MPI_Put(buf + o, (int)len, MPI_BYTE, right, (MPI_Aint)disp, (int)len, MPI_BYTE, win));
                CALL(MPI_Win_flush(right, win));
                CHECK(((uintptr_t)tbase + disp - (uintptr_t)(buf + o)) % PAGE == (uintptr_t)rel % PAGE, "Put placement");
                check_bytes(t, want, span, "Put", len, rel);
                /* Get: destination buf + o, source tbase + disp */
                o = place(buf, tbase + disp, rel);
                b = buf + o - GUARD;
                fill(b, span, (int)(l * 16 + r) + 11);
                memcpy(want, b, span);
                memcpy(want + GUARD, tbase + disp, len);
                CALL(MPI_Get(buf + o, (int)len, MPI_BYTE, right, (MPI_Aint)disp, (int)len, MPI_BYTE, win));
                CALL(MPI_Win_flush(right, win));
                CHECK(((uintptr_t)(buf + o) - (uintptr_t)tbase - disp) % PAGE == (uintptr_t)rel % PAGE, "Get placement");
                check_bytes(b, want, span, "Get", len, rel);
                if (mtest_errs)
                    break;
            }
        CALL(MPI_Win_unlock(right, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    free(want);
    CALL(MPI_Win_free(&win));
    return MTest_Finalize();
}
