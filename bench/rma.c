/* rma.c - one-sided communication (MPI RMA) benchmark, one MPI program for every implementation.
 *
 * Tests (-t list; rank 0 is the origin, rank 1 the target unless said otherwise):
 *   put_lat, get_lat   one Put/Get of B bytes + MPI_Win_flush inside a Lock(SHARED) epoch
 *   put_fence          one Put of B bytes in a fence epoch (two fences per iteration, all ranks)
 *   put_bw, get_bw     64 Puts/Gets of B bytes to distinct offsets, then one flush (MB/s)
 *   acc_double         Accumulate(SUM) of one double + flush (µs)
 *   fop_long           Fetch_and_op(SUM) on one long + flush (µs)
 *   fence              MPI_Win_fence with no operations (all ranks)
 *   lock_excl, lock_shared   Lock + Unlock of rank 1 with no operation (rank 0)
 *   lock_all           Lock_all + Unlock_all (rank 0)
 *   pscw               one round: rank 0 starts/completes to all the others, they post/wait
 *   barrier            MPI_Barrier, for reference
 * The window comes from MPI_Win_allocate (-w alloc, default) or MPI_Win_allocate_shared
 * (-w shared). Sizes 8 B .. -m bytes (default 1 MiB), every 4th power of two with -q.
 *
 * For each test and size the iteration count is calibrated so that a repetition takes about
 * 50 ms (5 ms with -q) and has at least 32 rounds (4 for bandwidth windows over 4 MiB) unless
 * that takes over 20 times as long (oversubscribed busy-polling runs); 5 repetitions (3 with -q); a repetition's time is the slowest rank's.
 * Output on rank 0, one line per measurement:
 *
 *   <test> <bytes> <best> <median> <iterations>      (µs per operation; MB/s for *_bw)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64 /* operations per bandwidth window */

static int rank, size, quick;
static char *buf, *base;
static MPI_Win win;
static MPI_Group others, zero;

/* The tests, resolved from their names once per measurement so that the timed loop does not
 * compare strings (a dozen strcmp calls cost as much as a shared-memory Put). */
enum test { FENCE, BARRIER, PUT_FENCE, PSCW, LOCK_EXCL, LOCK_SHARED, LOCK_ALL, PUT_LAT, GET_LAT, PUT_BW, GET_BW,
            ACC_DOUBLE, FOP_LONG, NTESTS };
static const char *names[NTESTS] = {"fence",    "barrier", "put_fence", "pscw",   "lock_excl",  "lock_shared", "lock_all",
                                    "put_lat", "get_lat", "put_bw",    "get_bw", "acc_double", "fop_long"};

static enum test test_of(const char *t)
{
    for (int i = 0; i < NTESTS; i++)
        if (!strcmp(t, names[i]))
            return (enum test)i;
    if (rank == 0)
        fprintf(stderr, "rma: unknown test %s\n", t);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return NTESTS;
}

static void one_round(enum test t, int bytes)
{
    long f = 0, one = 1;
    double d = 1.0;
    int origin = rank == 0, target = size > 1 ? 1 : 0;
    switch (t) {
    case FENCE:
        MPI_Win_fence(0, win);
        return;
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    case PUT_FENCE:
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        if (origin)
            MPI_Put(buf, bytes, MPI_BYTE, target, 0, bytes, MPI_BYTE, win);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        return;
    case PSCW:
        if (origin) {
            MPI_Win_start(others, 0, win);
            MPI_Win_complete(win);
        } else {
            MPI_Win_post(zero, 0, win);
            MPI_Win_wait(win);
        }
        return;
    default:
        break;
    }
    if (!origin)
        return; /* passive target: only rank 0 works */
    switch (t) {
    case LOCK_EXCL:
    case LOCK_SHARED:
        MPI_Win_lock(t == LOCK_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, target, 0, win);
        MPI_Win_unlock(target, win);
        break;
    case LOCK_ALL:
        MPI_Win_lock_all(0, win);
        MPI_Win_unlock_all(win);
        break;
    case PUT_LAT:
        MPI_Put(buf, bytes, MPI_BYTE, target, 0, bytes, MPI_BYTE, win);
        MPI_Win_flush(target, win);
        break;
    case GET_LAT:
        MPI_Get(buf, bytes, MPI_BYTE, target, 0, bytes, MPI_BYTE, win);
        MPI_Win_flush(target, win);
        break;
    case PUT_BW:
    case GET_BW:
        for (int k = 0; k < WINDOW; k++) {
            if (t == PUT_BW)
                MPI_Put(buf + (size_t)k * bytes, bytes, MPI_BYTE, target, (MPI_Aint)k * bytes, bytes, MPI_BYTE, win);
            else
                MPI_Get(buf + (size_t)k * bytes, bytes, MPI_BYTE, target, (MPI_Aint)k * bytes, bytes, MPI_BYTE, win);
        }
        MPI_Win_flush(target, win);
        break;
    case ACC_DOUBLE:
        MPI_Accumulate(&d, 1, MPI_DOUBLE, target, 0, 1, MPI_DOUBLE, MPI_SUM, win);
        MPI_Win_flush(target, win);
        break;
    case FOP_LONG:
        MPI_Fetch_and_op(&one, &f, MPI_LONG, target, 0, MPI_SUM, win);
        MPI_Win_flush(target, win);
        break;
    default:
        break;
    }
}

static int passive(const char *t)
{
    return strcmp(t, "fence") && strcmp(t, "barrier") && strcmp(t, "put_fence") && strcmp(t, "pscw") &&
           strncmp(t, "lock", 4);
}

/* Seconds per operation for `iters` rounds, the slowest rank's. */
static double timed(const char *t, int bytes, long iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (passive(t) && rank == 0)
        MPI_Win_lock(MPI_LOCK_SHARED, size > 1 ? 1 : 0, 0, win);
    enum test id = test_of(t);
    double s = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        one_round(id, bytes);
    s = MPI_Wtime() - s;
    if (passive(t) && rank == 0)
        MPI_Win_unlock(size > 1 ? 1 : 0, win);
    double slowest;
    /* passive targets only wait: the origin's time is the operation's */
    MPI_Allreduce(&s, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (passive(t) || !strncmp(t, "lock", 4))
        MPI_Bcast(&s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD), slowest = s;
    return slowest / iters;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(const char *t, int bytes)
{
    double target = quick ? 0.005 : 0.05, per;
    /* at least a few rounds per repetition: one slow first round (a descheduled rank on a busy
     * machine) must not end the calibration */
    long iters = 1, least = (long)bytes * WINDOW > (1L << 22) ? 4 : 32;
    per = timed(t, bytes, iters);
    while ((per * iters < target || (iters < least && per * iters < 20 * target)) && iters < (1L << 22)) {
        iters *= 2;
        per = timed(t, bytes, iters);
    }
    int reps = quick ? 3 : 5;
    double s[5];
    for (int r = 0; r < reps; r++)
        s[r] = timed(t, bytes, iters);
    qsort(s, reps, sizeof s[0], by_value);
    if (rank == 0) {
        if (strstr(t, "_bw")) /* MB/s: the best is the fastest */
            printf("%s %d %.1f %.1f %ld\n", t, bytes, WINDOW * bytes / s[0] / 1e6, WINDOW * bytes / s[reps / 2] / 1e6,
                   iters);
        else
            printf("%s %d %.3f %.3f %ld\n", t, bytes, s[0] * 1e6, s[reps / 2] * 1e6, iters);
        fflush(stdout);
    }
}

static int sized(const char *t) { return strstr(t, "put_") || strstr(t, "get_"); }

int main(int argc, char **argv)
{
    const char *tests = "put_lat,get_lat,put_fence,put_bw,get_bw,acc_double,fop_long,fence,lock_excl,lock_shared,"
                        "lock_all,pscw,barrier";
    const char *kind = "alloc";
    int max = 1 << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            tests = argv[++i];
        else if (!strcmp(argv[i], "-m") && i + 1 < argc)
            max = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc)
            kind = argv[++i];
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
    }
    /* bandwidth windows need WINDOW * max bytes */
    size_t cap = (size_t)WINDOW * (max > 65536 ? max : 65536);
    buf = calloc(cap, 1);
    int rc = !strcmp(kind, "shared")
                 ? MPI_Win_allocate_shared((MPI_Aint)cap, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win)
                 : MPI_Win_allocate((MPI_Aint)cap, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (!buf || rc != MPI_SUCCESS) {
        fprintf(stderr, "rma: cannot make a %zu-byte %s window\n", cap, kind);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(base, 0, cap);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int r0 = 0, lo = 1, hi = size - 1;
    MPI_Group_incl(world, 1, &r0, &zero);
    if (size > 1) {
        int range[1][3] = {{lo, hi, 1}};
        MPI_Group_range_incl(world, 1, range, &others);
    } else {
        others = MPI_GROUP_EMPTY;
    }
    if (rank == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(version, &len);
        printf("# %s\n# np %d window %s\n", strtok(version, "\n"), size, kind);
    }
    char *list = strdup(tests);
    for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
        if (!strcmp(t, "pscw") && size < 2)
            continue;
        if (!sized(t)) {
            measure(t, !strcmp(t, "acc_double") ? 8 : 0);
            continue;
        }
        int step = quick ? 16 : 2;
        for (int bytes = 8; bytes <= max; bytes *= step)
            measure(t, bytes);
    }
    free(list);
    MPI_Group_free(&zero);
    if (others != MPI_GROUP_EMPTY)
        MPI_Group_free(&others);
    MPI_Group_free(&world);
    MPI_Win_free(&win);
    free(buf);
    MPI_Finalize();
    return 0;
}
