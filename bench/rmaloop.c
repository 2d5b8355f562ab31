/*
 * rmaloop.c - fixed loops of the one-sided fast paths on a shared-memory window, for instruction
 * counts under callgrind, and a bare timing of the same loops (no bench/rma.c frame).
 *
 *   rmaloop TEST ITERS [BYTES [RUNS]]   rank 0 runs loop_TEST ITERS times (after 1000 warm-up
 *                                       iterations), RUNS times, and prints the best ns/iteration
 *   TEST: put, get (one call of BYTES MPI_BYTE + MPI_Win_flush), flush (alone), acc (Accumulate
 *         SUM of 1 double + flush), fop (Fetch_and_op SUM of 1 long + flush), cas
 *         (Compare_and_swap of 1 long + flush), lock (Lock exclusive + Unlock)
 * The window comes from MPI_Win_allocate_shared (1 MiB per rank); rank 0 targets rank 1 (itself
 * on 1 rank), inside MPI_Win_lock(SHARED) except for `lock`.
 *
 * Instructions per iteration (1 rank; the loop's own ~19 included):
 *   install/bin/mpiexec -n 1 valgrind --tool=callgrind --toggle-collect=loop_put \
 *       build/bench/rmaloop put 100000 8
 * then the PROGRAM TOTALS of `callgrind_annotate` divided by 101000 (ITERS + the warm-up).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*loop_fn)(char *buf, int n, int bytes, int target, MPI_Win win);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

__attribute__((noinline)) void loop_put(char *buf, int n, int b, int t, MPI_Win w)
{
    for (int i = 0; i < n; i++) {
        MPI_Put(buf, b, MPI_BYTE, t, 0, b, MPI_BYTE, w);
        MPI_Win_flush(t, w);
    }
}

__attribute__((noinline)) void loop_get(char *buf, int n, int b, int t, MPI_Win w)
{
    for (int i = 0; i < n; i++) {
        MPI_Get(buf, b, MPI_BYTE, t, 0, b, MPI_BYTE, w);
        MPI_Win_flush(t, w);
    }
}

__attribute__((noinline)) void loop_flush(char *buf, int n, int b, int t, MPI_Win w)
{
    (void)buf, (void)b;
    for (int i = 0; i < n; i++)
        MPI_Win_flush(t, w);
}

__attribute__((noinline)) void loop_acc(char *buf, int n, int b, int t, MPI_Win w)
{
    double d = 1.0;
    (void)buf, (void)b;
    for (int i = 0; i < n; i++) {
        MPI_Accumulate(&d, 1, MPI_DOUBLE, t, 0, 1, MPI_DOUBLE, MPI_SUM, w);
        MPI_Win_flush(t, w);
    }
}

__attribute__((noinline)) void loop_fop(char *buf, int n, int b, int t, MPI_Win w)
{
    long one = 1, r;
    (void)buf, (void)b;
    for (int i = 0; i < n; i++) {
        MPI_Fetch_and_op(&one, &r, MPI_LONG, t, 0, MPI_SUM, w);
        MPI_Win_flush(t, w);
    }
}

__attribute__((noinline)) void loop_cas(char *buf, int n, int b, int t, MPI_Win w)
{
    long one = 1, zero = 0, r;
    (void)buf, (void)b;
    for (int i = 0; i < n; i++) {
        MPI_Compare_and_swap(&one, &zero, &r, MPI_LONG, t, 0, w);
        MPI_Win_flush(t, w);
    }
}

__attribute__((noinline)) void loop_lock(char *buf, int n, int b, int t, MPI_Win w)
{
    (void)buf, (void)b;
    for (int i = 0; i < n; i++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w);
        MPI_Win_unlock(t, w);
    }
}

static const struct {
    const char *name;
    loop_fn fn;
} loops[] = {{"put", loop_put}, {"get", loop_get}, {"flush", loop_flush}, {"acc", loop_acc},
             {"fop", loop_fop}, {"cas", loop_cas}, {"lock", loop_lock}};

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    loop_fn f = NULL;
    for (size_t i = 0; argc > 2 && i < sizeof loops / sizeof loops[0]; i++)
        if (!strcmp(argv[1], loops[i].name))
            f = loops[i].fn;
    if (!f) {
        if (rank == 0)
            fprintf(stderr, "usage: rmaloop put|get|flush|acc|fop|cas|lock ITERS [BYTES [RUNS]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = atoi(argv[2]), bytes = argc > 3 ? atoi(argv[3]) : 8, runs = argc > 4 ? atoi(argv[4]) : 1;
    char *base, *buf = calloc(1, 1 << 20);
    MPI_Win win;
    MPI_Win_allocate_shared(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    int target = size > 1 ? 1 : 0, locked = f != loop_lock;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        if (locked)
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        f(buf, 1000, bytes, target, win);
        double best = 1e9;
        for (int r = 0; r < runs; r++) {
            double t0 = now();
            f(buf, n, bytes, target, win);
            double dt = (now() - t0) / n;
            best = dt < best ? dt : best;
        }
        if (locked)
            MPI_Win_unlock(target, win);
        printf("%s %d B: %.2f ns\n", argv[1], bytes, best * 1e9);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    free(buf);
    MPI_Finalize();
    return 0;
}
