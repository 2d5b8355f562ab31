/*
 * pt2pt.c - OSU-style point-to-point benchmark for Reflex, MPICH and Open MPI.
 *
 * Tests (between ranks 0 and 1 unless said otherwise; further ranks sit out):
 *   latency  ping-pong, one-way time = round trip / 2, in microseconds (lower is better)
 *   bw       unidirectional bandwidth: windows of 64 MPI_Isend answered by 64 MPI_Irecv, then a
 *            4-byte ack per window (as osu_bw), in MB/s = 1e6 bytes/s (higher is better)
 *   bibw     bidirectional bandwidth: both ranks post a window of 64 receives and 64 sends,
 *            bytes counted in both directions, MB/s (higher is better)
 *   rate     message rate for 8-byte messages, window 64, messages/s (higher is better)
 *   ring     every rank MPI_Sendrecv to its right from its left, any number of ranks, 8 B and
 *            64 KiB; microseconds per step, the slowest rank's time (lower is better)
 *
 * Measurement: for every (test, size) the iteration count is calibrated so that one repetition
 * takes about the target time (0.1 s; 0.01 s with -q), after which the repetition is run
 * `reps` times (5; 3 with -q). Each repetition's time is agreed between the participants
 * (maximum over ranks). The calibration runs double as warm-up. We report the BEST repetition
 * (minimum time: least disturbed by the noise of a shared machine) and the median.
 *
 * Output, on rank 0, one line per measurement (lines starting with '#' are comments):
 *   <test> <bytes> <best> <median> <iterations>
 *
 * Usage: pt2pt [-q] [-M] [-t latency,bw,bibw,rate,ring] [-m max_bytes] [-r reps] [-T target_seconds]
 *   -M  initialise with MPI_Init_thread(MPI_THREAD_MULTIPLE) (one thread still does all the calls:
 *       the cost of the thread level itself); the granted level is printed in the header line
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW 64
#define MAX_ITERS 2000000L
#define TAG_DATA 1
#define TAG_ACK 2

struct options {
    int quick;
    const char *tests;
    long max_bytes;
    int reps;
    double target;
};

/* One benchmark kernel: runs `iters` iterations of a test at `bytes` on `comm`. */
struct kernel {
    const char *name;
    void (*run)(long iters, long bytes, MPI_Comm comm);
    /* converts (bytes, seconds per iteration) into the reported unit */
    double (*value)(long bytes, double secs_per_iter);
    int higher_is_better;
};

static char *sbuf, *rbuf; /* send buffer; WINDOW receive slots of max_bytes each */
static long slot_bytes;

static void *alloc_touched(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1) != 0) {
        fprintf(stderr, "pt2pt: cannot allocate %zu bytes\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 1, n); /* fault the pages in before timing */
    return p;
}

static void run_latency(long iters, long bytes, MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, (int)bytes, MPI_BYTE, 1, TAG_DATA, comm);
            MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 1, TAG_DATA, comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_DATA, comm, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)bytes, MPI_BYTE, 0, TAG_DATA, comm);
        }
    }
}

static void run_bw(long iters, long bytes, MPI_Comm comm)
{
    int rank, ack = 0;
    MPI_Request req[WINDOW];
    MPI_Comm_rank(comm, &rank);
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf, (int)bytes, MPI_BYTE, 1, TAG_DATA, comm, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, 1, TAG_ACK, comm, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rbuf + w * slot_bytes, (int)bytes, MPI_BYTE, 0, TAG_DATA, comm, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_INT, 0, TAG_ACK, comm);
        }
    }
}

static void run_bibw(long iters, long bytes, MPI_Comm comm)
{
    int rank;
    MPI_Request req[2 * WINDOW];
    MPI_Comm_rank(comm, &rank);
    int peer = 1 - rank;
    for (long i = 0; i < iters; i++) {
        for (int w = 0; w < WINDOW; w++)
            MPI_Irecv(rbuf + w * slot_bytes, (int)bytes, MPI_BYTE, peer, TAG_DATA, comm, &req[w]);
        for (int w = 0; w < WINDOW; w++)
            MPI_Isend(sbuf, (int)bytes, MPI_BYTE, peer, TAG_DATA, comm, &req[WINDOW + w]);
        MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE);
    }
}

static void run_ring(long iters, long bytes, MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (long i = 0; i < iters; i++)
        MPI_Sendrecv(sbuf, (int)bytes, MPI_BYTE, right, TAG_DATA, rbuf, (int)bytes, MPI_BYTE, left, TAG_DATA,
                     comm, MPI_STATUS_IGNORE);
}

static double usec_half(long bytes, double t) { (void)bytes; return t / 2 * 1e6; }
static double usec(long bytes, double t) { (void)bytes; return t * 1e6; }
static double mbps_window(long bytes, double t) { return (double)bytes * WINDOW / t / 1e6; }
static double mbps_window2(long bytes, double t) { return 2.0 * bytes * WINDOW / t / 1e6; }
static double rate_window(long bytes, double t) { (void)bytes; return WINDOW / t; }

static const struct kernel kernels[] = {
    {"latency", run_latency, usec_half, 0},
    {"bw", run_bw, mbps_window, 1},
    {"bibw", run_bibw, mbps_window2, 1},
    {"rate", run_bw, rate_window, 1},
    {"ring", run_ring, usec, 0},
};

/* Time `iters` iterations; all participants get the slowest rank's time. */
static double timed(const struct kernel *k, long iters, long bytes, MPI_Comm comm)
{
    double t, tmax;
    MPI_Barrier(comm);
    t = MPI_Wtime();
    k->run(iters, bytes, comm);
    t = MPI_Wtime() - t;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
    return tmax;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Calibrate, repeat, print "<name> <bytes> <best> <median> <iters>" on rank 0 of comm. */
static void measure(const struct kernel *k, long bytes, MPI_Comm comm, const struct options *o)
{
    long iters = 1;
    double t = timed(k, iters, bytes, comm);
    while (t < o->target / 8 && iters < MAX_ITERS) {
        iters *= 4;
        t = timed(k, iters, bytes, comm);
    }
    double scaled = t > 0 ? iters * (o->target / t) : MAX_ITERS;
    iters = scaled < 1 ? 1 : scaled > MAX_ITERS ? MAX_ITERS : (long)scaled;
    double per[64];
    int reps = o->reps > 64 ? 64 : o->reps;
    for (int r = 0; r < reps; r++)
        per[r] = timed(k, iters, bytes, comm) / iters;
    qsort(per, reps, sizeof per[0], cmp_double);
    double best = k->value(bytes, per[0]), median = k->value(bytes, per[reps / 2]);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        printf("%s %ld %.6g %.6g %ld\n", k->name, bytes, best, median, iters);
        fflush(stdout);
    }
}

static int wanted(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: pt2pt [-q] [-M] [-t latency,bw,bibw,rate,ring] [-m max_bytes] [-r reps] [-T seconds]\n");
}

static int parse(int argc, char **argv, struct options *o)
{
    int c;
    o->quick = 0;
    o->tests = "latency,bw,bibw,rate,ring";
    o->max_bytes = -1;
    o->reps = -1;
    o->target = -1;
    while ((c = getopt(argc, argv, "qMt:m:r:T:")) != -1) {
        switch (c) {
        case 'q': o->quick = 1; break;
        case 'M': break; /* seen before MPI_Init_thread (wants_multiple) */
        case 't': o->tests = optarg; break;
        case 'm': o->max_bytes = atol(optarg); break;
        case 'r': o->reps = atoi(optarg); break;
        case 'T': o->target = atof(optarg); break;
        default: return -1;
        }
    }
    if (o->max_bytes < 0)
        o->max_bytes = 4L << 20;
    if (o->reps < 1)
        o->reps = o->quick ? 3 : 5;
    if (o->target <= 0)
        o->target = o->quick ? 0.01 : 0.1;
    return 0;
}

/* Sizes for latency/bw/bibw: 0, then powers of two (every fourth one in quick mode). */
static int next_size(long *bytes, const struct options *o)
{
    if (*bytes == 0)
        *bytes = 1;
    else
        *bytes *= o->quick ? 8 : 2;
    return *bytes <= o->max_bytes;
}

/* -M, looked for before MPI is initialised (getopt runs after). */
static int wants_multiple(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-M") == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    int rank, size, provided = MPI_THREAD_SINGLE;
    if (wants_multiple(argc, argv))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &o) != 0) {
        if (rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    slot_bytes = o.max_bytes > 65536 ? o.max_bytes : 65536;
    sbuf = alloc_touched(slot_bytes);
    rbuf = alloc_touched((size_t)slot_bytes * WINDOW);
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl)
            *nl = 0;
        printf("# pt2pt np=%d target=%gs reps=%d window=%d thread_level=%d library=%s\n", size, o.target,
               o.reps, WINDOW, provided, lib);
        printf("# test bytes best median iterations\n");
        fflush(stdout);
    }

    /* Two-rank tests on a communicator of ranks 0 and 1. */
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair != MPI_COMM_NULL && size >= 2) {
        for (int k = 0; k < 3; k++) {
            if (!wanted(o.tests, kernels[k].name))
                continue;
            long bytes = k == 0 ? 0 : 1; /* bandwidth of 0-byte messages means nothing */
            do
                measure(&kernels[k], bytes, pair, &o);
            while (next_size(&bytes, &o));
        }
        if (wanted(o.tests, "rate"))
            measure(&kernels[3], 8, pair, &o);
    }
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    MPI_Barrier(MPI_COMM_WORLD);

    if (wanted(o.tests, "ring")) {
        measure(&kernels[4], 8, MPI_COMM_WORLD, &o);
        measure(&kernels[4], 65536, MPI_COMM_WORLD, &o);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
