/*
 * dtype.c - derived-datatype bandwidth benchmark (after VIRTUS, Cristaldi and Iannello: the
 * bandwidth of a 2-D strided array with stride = 2 x block, against the same data contiguous).
 *
 * Unidirectional bandwidth between ranks 0 (sender) and 1 (receiver): a window of MPI_Isend
 * answered by as many MPI_Irecv, MPI_Waitall, then a 4-byte ack (as osu_bw and bench/pt2pt.c;
 * the receives of one window share one buffer, as in osu_bw). The window is 16 messages, fewer
 * for large messages so that a window moves at most 16 MiB (16 MiB messages: a window of 1).
 * Bandwidth counts data bytes only (not the gaps), in MB/s = 1e6 bytes/s.
 *
 * Tests:
 *   strided  MPI_Type_vector(nblocks, block/8, 2 x block/8, MPI_DOUBLE): block sizes 8 B - 64 KiB,
 *            messages (data bytes) 64 KiB, 1 MiB, 16 MiB. The sender's and the receiver's layouts
 *            are chosen independently with -s and -r (strided or contig: the same doubles
 *            contiguous, so the signatures match); comma lists run every combination. With
 *            contig on both sides the block size means nothing and the row is printed once per
 *            message size with block 0.
 *   contig   the same number of data bytes contiguous on both sides (the reference).
 *   struct   an array of struct {double; int; char[3]; float} (19 data bytes in 24) via
 *            MPI_Type_create_struct resized to sizeof, on both sides.
 *   indexed  MPI_Type_indexed with pseudo-random block lengths of 1-64 doubles and gaps of
 *            1-64 doubles (fixed seed), on both sides.
 * VIRTUS's six protocol combinations: full support (strided both sides), send only / receive
 * only (strided both sides with Reflex's REFLEX_DIRECT_RECV=off resp. REFLEX_DIRECT_SEND=off),
 * contiguous receiver (-s strided -r contig), contiguous sender (-s contig -r strided), and
 * contiguous (the contig test). bench/dtype.py composes them.
 *
 * Measurement as bench/pt2pt.c: the iteration count is calibrated so that one repetition takes
 * about the target time (0.1 s; 0.05 s with -q) after one warm-up iteration, then
 * `reps` repetitions (5; 3 with -q), each timed by the slower of the two ranks; the best and the
 * median are printed.
 *
 * Output on rank 0, one line per measurement ('#' lines are comments):
 *   <test> <send layout> <recv layout> <block bytes> <data bytes> <best MB/s> <median MB/s> <iterations> <window>
 *
 * Usage: dtype [-q] [-t strided,contig,struct,indexed] [-s strided,contig] [-r strided,contig]
 *              [-b block,...] [-m bytes,...] [-R reps] [-T seconds]
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WINDOW 16
#define WINDOW_BYTES (16L << 20)
#define MAX_ITERS 1000000L
#define TAG_DATA 1
#define TAG_ACK 2
#define MAX_LIST 32

struct options {
    int quick, reps;
    double target;
    const char *tests;
    int send_strided[2], nsend; /* layouts of the sender for the strided test: 1 strided, 0 contig */
    int recv_strided[2], nrecv;
    long blocks[MAX_LIST], msgs[MAX_LIST];
    int nblocks, nmsgs;
};

/* One side of a transfer: what to pass to MPI_Isend / MPI_Irecv. */
struct side {
    MPI_Datatype type;
    int count;
    char *origin; /* buffer start (the type's lower bound is 0 for every layout here) */
    char *mem;
};

struct rec {
    double d;
    int i;
    char c[3];
    float f;
};
#define REC_DATA 19 /* 8 + 4 + 3 + 4 */

static void *alloc_touched(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1) != 0) {
        fprintf(stderr, "dtype: cannot allocate %zu bytes\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 1, n); /* fault the pages in before timing */
    return p;
}

static struct side make_contig(long bytes)
{
    struct side s = {MPI_DOUBLE, (int)(bytes / 8), NULL, NULL};
    s.mem = s.origin = alloc_touched(bytes);
    return s;
}

static struct side make_strided(long block, long bytes)
{
    struct side s = {MPI_DATATYPE_NULL, 1, NULL, NULL};
    long n = bytes / block, dbl = block / 8;
    MPI_Type_vector((int)n, (int)dbl, (int)(2 * dbl), MPI_DOUBLE, &s.type);
    MPI_Type_commit(&s.type);
    s.mem = s.origin = alloc_touched(2 * bytes);
    return s;
}

static struct side make_struct(long bytes)
{
    struct side s = {MPI_DATATYPE_NULL, (int)(bytes / REC_DATA), NULL, NULL};
    int bl[4] = {1, 1, 3, 1};
    MPI_Aint disp[4] = {offsetof(struct rec, d), offsetof(struct rec, i), offsetof(struct rec, c),
                        offsetof(struct rec, f)};
    MPI_Datatype types[4] = {MPI_DOUBLE, MPI_INT, MPI_CHAR, MPI_FLOAT}, t;
    MPI_Type_create_struct(4, bl, disp, types, &t);
    MPI_Type_create_resized(t, 0, sizeof(struct rec), &s.type);
    MPI_Type_free(&t);
    MPI_Type_commit(&s.type);
    s.mem = s.origin = alloc_touched((size_t)s.count * sizeof(struct rec));
    return s;
}

static struct side make_indexed(long bytes)
{
    struct side s = {MPI_DATATYPE_NULL, 1, NULL, NULL};
    long total = bytes / 8, have = 0, pos = 0, n = 0;
    int *bl = malloc(total * sizeof(int)), *disp = malloc(total * sizeof(int));
    uint32_t x = 2463534242u; /* xorshift32, fixed seed: the same layout on both ranks */
    if (!bl || !disp) {
        fprintf(stderr, "dtype: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    while (have < total) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        long b = 1 + (x & 63), gap = 1 + ((x >> 8) & 63);
        if (b > total - have)
            b = total - have;
        bl[n] = (int)b;
        disp[n] = (int)pos;
        pos += b + gap;
        have += b;
        n++;
    }
    MPI_Type_indexed((int)n, bl, disp, MPI_DOUBLE, &s.type);
    MPI_Type_commit(&s.type);
    free(bl);
    free(disp);
    s.mem = s.origin = alloc_touched(pos * 8);
    return s;
}

static void free_side(struct side *s)
{
    if (s->type != MPI_DOUBLE)
        MPI_Type_free(&s->type);
    free(s->mem);
}

/* Iterations of windows of `window` messages from rank 0 to rank 1, each followed by an ack. */
static void run_bw(long iters, int window, const struct side *s, MPI_Comm comm)
{
    int rank, ack = 0;
    MPI_Request req[MAX_WINDOW];
    MPI_Comm_rank(comm, &rank);
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(s->origin, s->count, s->type, 1, TAG_DATA, comm, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, 1, TAG_ACK, comm, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++)
                MPI_Irecv(s->origin, s->count, s->type, 0, TAG_DATA, comm, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_INT, 0, TAG_ACK, comm);
        }
    }
}

static double timed(long iters, int window, const struct side *s, MPI_Comm comm)
{
    double t, tmax;
    MPI_Barrier(comm);
    t = MPI_Wtime();
    run_bw(iters, window, s, comm);
    t = MPI_Wtime() - t;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
    return tmax;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Calibrate, repeat, print one line on rank 0. `s` is this rank's side (sender or receiver). */
static void measure(const char *test, const char *sl, const char *rl, long block, long data_bytes,
                    const struct side *s, MPI_Comm comm, const struct options *o)
{
    int window = (int)(WINDOW_BYTES / data_bytes);
    window = window < 1 ? 1 : window > MAX_WINDOW ? MAX_WINDOW : window;
    long iters = 1;
    timed(1, window, s, comm); /* warm-up: first touch of the type and the buffers */
    double t = timed(iters, window, s, comm);
    while (t < o->target / 8 && iters < MAX_ITERS) {
        iters *= 4;
        t = timed(iters, window, s, comm);
    }
    double scaled = t > 0 ? iters * (o->target / t) : MAX_ITERS;
    iters = scaled < 1 ? 1 : scaled > MAX_ITERS ? MAX_ITERS : (long)scaled;
    double per[64];
    int reps = o->reps > 64 ? 64 : o->reps;
    for (int r = 0; r < reps; r++)
        per[r] = timed(iters, window, s, comm) / iters;
    qsort(per, reps, sizeof per[0], cmp_double);
    double best = (double)data_bytes * window / per[0] / 1e6;
    double median = (double)data_bytes * window / per[reps / 2] / 1e6;
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        printf("%s %s %s %ld %ld %.6g %.6g %ld %d\n", test, sl, rl, block, data_bytes, best, median, iters, window);
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

static int parse_longs(const char *text, long *out)
{
    int n = 0;
    const char *p = text;
    while (*p && n < MAX_LIST) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0)
            return -1;
        if (*end == 'k' || *end == 'K')
            v <<= 10, end++;
        else if (*end == 'm' || *end == 'M')
            v <<= 20, end++;
        out[n++] = v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        p = end;
    }
    return n;
}

static int parse_layouts(const char *text, int *out)
{
    int n = 0;
    if (wanted(text, "strided"))
        out[n++] = 1;
    if (wanted(text, "contig"))
        out[n++] = 0;
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: dtype [-q] [-t strided,contig,struct,indexed] [-s strided,contig] [-r strided,contig]\n"
                    "             [-b block,...] [-m bytes,...] [-R reps] [-T seconds]   (sizes take k/m suffixes)\n");
}

static int parse(int argc, char **argv, struct options *o)
{
    int c;
    const char *blocks = NULL, *msgs = NULL, *sl = "strided", *rl = "strided";
    memset(o, 0, sizeof *o);
    o->tests = "strided,contig,struct,indexed";
    o->reps = -1;
    o->target = -1;
    while ((c = getopt(argc, argv, "qt:s:r:b:m:R:T:")) != -1) {
        switch (c) {
        case 'q': o->quick = 1; break;
        case 't': o->tests = optarg; break;
        case 's': sl = optarg; break;
        case 'r': rl = optarg; break;
        case 'b': blocks = optarg; break;
        case 'm': msgs = optarg; break;
        case 'R': o->reps = atoi(optarg); break;
        case 'T': o->target = atof(optarg); break;
        default: return -1;
        }
    }
    if (!blocks)
        blocks = o->quick ? "128,1024,8192" : "8,32,128,512,1024,4096,8192,65536";
    if (!msgs)
        msgs = o->quick ? "64k,1m" : "64k,1m,16m";
    o->nblocks = parse_longs(blocks, o->blocks);
    o->nmsgs = parse_longs(msgs, o->msgs);
    o->nsend = parse_layouts(sl, o->send_strided);
    o->nrecv = parse_layouts(rl, o->recv_strided);
    if (o->nblocks <= 0 || o->nmsgs <= 0 || o->nsend == 0 || o->nrecv == 0)
        return -1;
    for (int i = 0; i < o->nblocks; i++)
        if (o->blocks[i] % 8 != 0)
            return -1;
    if (o->reps < 1)
        o->reps = o->quick ? 3 : 5;
    if (o->target <= 0)
        o->target = o->quick ? 0.05 : 0.1;
    return 0;
}

static void run_strided(MPI_Comm pair, int rank, const struct options *o)
{
    for (int si = 0; si < o->nsend; si++)
        for (int ri = 0; ri < o->nrecv; ri++) {
            int mine = rank == 0 ? o->send_strided[si] : o->recv_strided[ri];
            const char *sl = o->send_strided[si] ? "strided" : "contig";
            const char *rl = o->recv_strided[ri] ? "strided" : "contig";
            int both_contig = !o->send_strided[si] && !o->recv_strided[ri];
            for (int m = 0; m < o->nmsgs; m++)
                for (int b = 0; b < (both_contig ? 1 : o->nblocks); b++) {
                    long block = both_contig ? 0 : o->blocks[b], bytes = o->msgs[m];
                    if (!both_contig && (block >= bytes || bytes % block != 0))
                        continue;
                    struct side s = mine ? make_strided(block, bytes) : make_contig(bytes);
                    measure("strided", sl, rl, block, bytes, &s, pair, o);
                    free_side(&s);
                }
        }
}

int main(int argc, char **argv)
{
    struct options o;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &o) != 0 || size < 2) {
        if (rank == 0) {
            usage();
            if (size < 2)
                fprintf(stderr, "dtype: needs 2 ranks\n");
        }
        MPI_Finalize();
        return 2;
    }
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl)
            *nl = 0;
        printf("# dtype np=%d target=%gs reps=%d max_window=%d library=%s\n", size, o.target, o.reps, MAX_WINDOW, lib);
        printf("# test send recv block bytes best_MB/s median_MB/s iterations window\n");
        fflush(stdout);
    }
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair != MPI_COMM_NULL) {
        /* the contiguous reference first: it works even where derived types do not */
        for (int m = 0; m < o.nmsgs && wanted(o.tests, "contig"); m++) {
            struct side s = make_contig(o.msgs[m]);
            measure("contig", "contig", "contig", 0, o.msgs[m], &s, pair, &o);
            free_side(&s);
        }
        if (wanted(o.tests, "strided"))
            run_strided(pair, rank, &o);
        for (int m = 0; m < o.nmsgs && wanted(o.tests, "struct"); m++) {
            struct side s = make_struct(o.msgs[m]);
            measure("struct", "struct", "struct", 0, (long)s.count * REC_DATA, &s, pair, &o);
            free_side(&s);
        }
        for (int m = 0; m < o.nmsgs && wanted(o.tests, "indexed"); m++) {
            struct side s = make_indexed(o.msgs[m]);
            measure("indexed", "indexed", "indexed", 0, o.msgs[m], &s, pair, &o);
            free_side(&s);
        }
        MPI_Comm_free(&pair);
    }
    MPI_Finalize();
    return 0;
}
