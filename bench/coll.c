/* coll.c - collective latency benchmark (OSU-style), one MPI program for every implementation.
 *
 * For each collective and message size: the iteration count is calibrated so that one
 * repetition takes about 50 ms (5 ms with -q; calibration doubles as warm-up), then the
 * repetition runs 5 times (3 with -q). A repetition's time per operation is the slowest rank's;
 * the best and the median repetition are printed:
 *
 *   <collective> <bytes> <best_us> <median_us> <iterations>
 *
 * Sizes are per-rank message sizes: the buffer of bcast/reduce/allreduce, each rank's block of
 * allgather and alltoall. Barrier is printed with size 0. Options: -c list (barrier,bcast,
 * reduce,allreduce,allgather,alltoall), -m max bytes (default 4 MiB), -q quick.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, quick;
static char *sbuf, *rbuf;

static void run(const char *coll, int bytes, long iters)
{
    int count = bytes / 4;
    for (long i = 0; i < iters; i++) {
        if (!strcmp(coll, "barrier"))
            MPI_Barrier(MPI_COMM_WORLD);
        else if (!strcmp(coll, "bcast"))
            MPI_Bcast(sbuf, count, MPI_INT, 0, MPI_COMM_WORLD);
        else if (!strcmp(coll, "reduce"))
            MPI_Reduce(sbuf, rbuf, count, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        else if (!strcmp(coll, "allreduce"))
            MPI_Allreduce(sbuf, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(coll, "allgather"))
            MPI_Allgather(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD);
        else if (!strcmp(coll, "alltoall"))
            MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD);
    }
}

/* Seconds per operation for `iters` operations, the slowest rank's. */
static double timed(const char *coll, int bytes, long iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    run(coll, bytes, iters);
    t = MPI_Wtime() - t;
    double slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest / iters;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(const char *coll, int bytes)
{
    double target = quick ? 0.005 : 0.05;
    long iters = 1;
    double per = timed(coll, bytes, iters);
    while (per * iters < target && iters < (1L << 24)) {
        iters *= 2;
        per = timed(coll, bytes, iters);
    }
    int reps = quick ? 3 : 5;
    double t[5];
    for (int r = 0; r < reps; r++)
        t[r] = timed(coll, bytes, iters);
    qsort(t, reps, sizeof t[0], by_value);
    if (rank == 0)
        printf("%s %d %.3f %.3f %ld\n", coll, bytes, t[0] * 1e6, t[reps / 2] * 1e6, iters);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *colls = "barrier,bcast,reduce,allreduce,allgather,alltoall";
    int max = 4 << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c") && i + 1 < argc)
            colls = argv[++i];
        else if (!strcmp(argv[i], "-m") && i + 1 < argc)
            max = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
    }
    size_t cap = (size_t)max * size;
    sbuf = calloc(cap, 1);
    rbuf = calloc(cap, 1);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "coll: cannot allocate %zu bytes\n", 2 * cap);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(version, &len);
        printf("# %s\n# np %d\n", strtok(version, "\n"), size);
    }
    char *list = strdup(colls);
    for (char *c = strtok(list, ","); c; c = strtok(NULL, ",")) {
        if (!strcmp(c, "barrier")) {
            measure(c, 0);
            continue;
        }
        for (int bytes = 4; bytes <= max; bytes *= (quick ? 64 : 16))
            measure(c, bytes);
    }
    free(list);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
