/*
 * bspprobe -- measure this machine's BSP parameters s, p, l, g, as the Oxford BSPlib toolset's
 * probe (and Bisseling's bspbench) did, and print them in the units of the table of Martin and
 * Wilson's "A Visual BSP Programming Environment" (s in Mflop/s, l and g in flop units), next to
 * that table.
 *
 *   s  the computing rate of one process: a DAXPY (y += a*x, 2 flops per element) on vectors
 *      that fit in the L1 cache, the slowest process counting;
 *   p  the number of processes;
 *   l  the cost of a superstep that moves nothing, T(0), and
 *   g  the cost per word of an h-relation: every process puts h single words, spread over the
 *      other processes, then syncs; the times per superstep T(h) for several h are fitted to
 *      T(h) = l + g*h by least squares with l held at T(0) (a free intercept went negative on
 *      one process, where cache effects bend the curve). Both are then given in flops
 *      (multiplied by s) and in microseconds.
 *
 * Usage: mpiexec -n P bspprobe [-w 4|8] [-r reps] [-o file]
 *   -w  word size in bytes (4: the paper's table counts 4-byte values; default 4)
 *   -r  rounds (default 20): each round times a block of 10 supersteps for every h; the
 *       fastest block of each h counts (this machine is shared: a block during which a process
 *       was descheduled measures the scheduler, not BSP)
 *   -o  also write "s= p= l= g= w=" to file (read by examples/bsp/jacobi)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bsp.h>

#define DAXPY_N 1024 /* 2 vectors of 8 KiB: inside a 32 KiB L1 data cache */
#define HMAX 2048
#define BLOCK 10 /* supersteps per timed block */
static const int HS[] = {0, 64, 128, 256, 512, 1024, 2048};
#define NH ((int)(sizeof HS / sizeof HS[0]))

struct options {
    int word, reps;
    const char *out;
};

static struct options parse(int argc, char **argv)
{
    struct options o = {4, 20, NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-w") && i + 1 < argc)
            o.word = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            o.reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            o.out = argv[++i];
        else
            bsp_abort("bspprobe: unknown argument %s (usage: bspprobe [-w 4|8] [-r reps] [-o file])\n", argv[i]);
    }
    if ((o.word != 4 && o.word != 8) || o.reps < 1)
        bsp_abort("bspprobe: -w takes 4 or 8 and -r a positive count\n");
    return o;
}

/* The smallest value of v over all processes (by a put of every value to every process). */
static double min_over_procs(double v)
{
    int p = bsp_nprocs();
    double *all = calloc((size_t)p, sizeof(double));
    bsp_push_reg(all, p * (int)sizeof(double));
    bsp_sync();
    for (int q = 0; q < p; q++)
        bsp_put(q, &v, all, bsp_pid() * (int)sizeof(double), sizeof(double));
    bsp_sync();
    double m = all[0];
    for (int q = 1; q < p; q++)
        m = all[q] < m ? all[q] : m;
    bsp_pop_reg(all);
    bsp_sync();
    free(all);
    return m;
}

/* s in flop/s: DAXPY repeated until at least 0.2 s have passed. */
static double measure_s(void)
{
    static double x[DAXPY_N], y[DAXPY_N];
    for (int i = 0; i < DAXPY_N; i++) {
        x[i] = 1.0 / (i + 1);
        y[i] = 0.5;
    }
    double a = 1.0 / 3.0, flops = 0.0, t0 = bsp_time(), t;
    do {
        for (int rep = 0; rep < 1000; rep++) {
            for (int i = 0; i < DAXPY_N; i++)
                y[i] += a * x[i];
            a = -a; /* keeps y bounded; the compiler cannot drop the loop */
        }
        flops += 2.0 * DAXPY_N * 1000;
        t = bsp_time() - t0;
    } while (t < 0.2);
    if (y[DAXPY_N / 2] == 12345.0) /* uses y */
        printf(" ");
    return flops / t;
}

/* Seconds per superstep of an h-relation of single-word puts. */
static double time_h(int h, int word, int reps, char *src, char *dst)
{
    int p = bsp_nprocs(), me = bsp_pid();
    bsp_sync();
    double t0 = bsp_time();
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < h; i++) {
            int to = p == 1 ? me : (me + 1 + i % (p - 1)) % p;
            bsp_put(to, src + (size_t)i * word, dst, (me * h + i) % HMAX * word, word);
        }
        bsp_sync();
    }
    return (bsp_time() - t0) / reps;
}

/* l = T(0); g = the least-squares slope of T(h) - l over h. */
static void fit(const double *t, double *l, double *g)
{
    double shh = 0, sht = 0;
    *l = t[0];
    for (int k = 1; k < NH; k++) {
        shh += (double)HS[k] * HS[k];
        sht += HS[k] * (t[k] - *l);
    }
    *g = sht / shh;
}

static void print_table(double s, int p, double l, double g, int word)
{
    static const struct {
        const char *machine;
        double s, p, l, g;
    } paper[] = {
        {"SGI Origin 2000", 101, 4, 1789, 10.24},
        {"SGI Origin 2000", 101, 32, 39057, 66.7},
        {"Cray T3E", 46.7, 4, 357, 1.77},
        {"Cray T3E", 46.7, 16, 751, 1.66},
        {"Pentium NOW, 10 Mbit shared Ethernet", 61, 4, 139981, 1128.5},
        {"Pentium NOW, 10 Mbit shared Ethernet", 61, 8, 539139, 1994.1},
        {"Pentium II NOW, 100 Mbit switched", 88, 4, 11757, 31.5},
        {"Pentium II NOW, 100 Mbit switched", 88, 8, 18347, 30.9},
    };
    printf("%-40s %8s %4s %10s %9s %10s %12s\n", "machine", "s Mflop/s", "p", "l flop", "g flop/w",
           "l us", "g us/word");
    for (size_t i = 0; i < sizeof paper / sizeof paper[0]; i++)
        printf("%-40s %8.1f %4.0f %10.0f %9.2f %10.1f %12.4f\n", paper[i].machine, paper[i].s, paper[i].p,
               paper[i].l, paper[i].g, paper[i].l / paper[i].s, paper[i].g / paper[i].s);
    printf("%-40s %8.1f %4d %10.0f %9.2f %10.1f %12.4f   (this machine, %d-byte words)\n",
           "this machine (bspprobe)", s / 1e6, p, l * s, g * s, l * 1e6, g * 1e6, word);
}

int main(int argc, char **argv)
{
    bsp_begin(bsp_nprocs());
    struct options o = parse(argc, argv);
    char *src = malloc((size_t)HMAX * 8), *dst = malloc((size_t)HMAX * 8);
    memset(src, 1, (size_t)HMAX * 8);
    bsp_push_reg(dst, HMAX * 8);
    bsp_sync();
    double s = min_over_procs(measure_s());
    double t[NH];
    time_h(HMAX, o.word, 2, src, dst); /* warm-up: first-touch, MPI connections */
    for (int k = 0; k < NH; k++)
        t[k] = 1e30;
    for (int round = 0; round < o.reps; round++)
        for (int k = 0; k < NH; k++) {
            double tk = time_h(HS[k], o.word, BLOCK, src, dst);
            t[k] = tk < t[k] ? tk : t[k];
        }
    double l, g;
    fit(t, &l, &g);
    if (bsp_pid() == 0) {
        printf("bspprobe: p=%d, %d-byte words, fastest of %d blocks of %d supersteps per h\n", bsp_nprocs(),
               o.word, o.reps, BLOCK);
        for (int k = 0; k < NH; k++)
            printf("  h=%5d  T(h)=%10.2f us\n", HS[k], t[k] * 1e6);
        print_table(s, bsp_nprocs(), l, g, o.word);
        if (o.out) {
            FILE *f = fopen(o.out, "w");
            if (!f)
                bsp_abort("bspprobe: cannot write %s\n", o.out);
            fprintf(f, "s=%.6e\np=%d\nl=%.6e\ng=%.6e\nw=%d\n", s, bsp_nprocs(), l * s, g * s, o.word);
            fclose(f);
        }
    }
    bsp_pop_reg(dst);
    bsp_end();
    free(src);
    free(dst);
    return 0;
}
