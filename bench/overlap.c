/*
 * overlap.c - does a nonblocking collective progress while the application computes?
 *
 * For each operation (Ibarrier; Iallreduce of 8 B, 64 KiB and 1 MiB of doubles) and each amount
 * of computation C (busy loop, no MPI call): post the operation, compute C µs, wait. The time of
 * one iteration is about C + T when the operation advances only inside MPI calls and about
 * max(C, T) when something advances it meanwhile (a progress thread, an offloading NIC). T is
 * measured alone first (C = 0). Also printed: process CPU time (all threads, user + system) per
 * iteration, which shows what a progress thread costs.
 *
 * Output lines (rank 0): <op> <bytes> <compute_us> <iter_us> <cpu_us_per_iter> <overlap>
 * where overlap = (C + T - iter) / min(C, T), 1 = perfect, 0 = none (clamped to [0, 1]; "-"
 * for C = 0). Options: -M (MPI_Init_thread with MPI_THREAD_MULTIPLE), -q (quick), -c LIST
 * (compute µs, default 0,10,50,200,1000), -o LIST (ibarrier,iallreduce).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* Busy computation of about `us` microseconds, no MPI call. */
static volatile double sink;
static void compute(double us)
{
    double end = now_us() + us, x = 1.0;
    while (now_us() < end)
        for (int i = 0; i < 64; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static void post(const char *op, double *in, double *out, int count, MPI_Request *rq)
{
    if (strcmp(op, "ibarrier") == 0)
        MPI_Ibarrier(MPI_COMM_WORLD, rq);
    else
        MPI_Iallreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, rq);
}

/* Mean µs per iteration (slowest rank) and CPU µs per iteration (mean over ranks). */
static void run(const char *op, int count, double c, int iters, double *wall, double *cpu)
{
    double *in = calloc(count + 1, sizeof(double)), *out = calloc(count + 1, sizeof(double));
    MPI_Request rq;
    for (int i = 0; i < 3; i++) { /* warm-up */
        post(op, in, out, count, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_us(), t0 = now_us();
    for (int i = 0; i < iters; i++) {
        post(op, in, out, count, &rq);
        compute(c);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
    double t = (now_us() - t0) / iters, u = (cpu_us() - c0) / iters;
    MPI_Allreduce(&t, wall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&u, cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    *cpu /= size;
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    int multiple = 0, quick = 0, provided = 0;
    const char *computes = "0,10,50,200,1000", *ops = "ibarrier,iallreduce";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-M"))
            multiple = 1;
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            computes = argv[++i];
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            ops = argv[++i];
    }
    if (multiple)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("# overlap: op bytes compute_us iter_us cpu_us_per_iter overlap (thread_level=%d)\n",
               provided);
    const int counts[] = {1, 8192, 131072};
    char oplist[256];
    snprintf(oplist, sizeof oplist, "%s", ops);
    char *opsave = NULL;
    for (char *op = strtok_r(oplist, ",", &opsave); op; op = strtok_r(NULL, ",", &opsave)) {
        int nsizes = strcmp(op, "ibarrier") == 0 ? 1 : (quick ? 2 : 3);
        for (int s = 0; s < nsizes; s++) {
            int count = strcmp(op, "ibarrier") == 0 ? 0 : counts[s];
            double base = 0, cpu = 0;
            int iters = count >= 131072 ? 20 : (quick ? 100 : 400);
            char clist[256];
            snprintf(clist, sizeof clist, "%s", computes);
            char *save = NULL;
            for (char *cs = strtok_r(clist, ",", &save); cs; cs = strtok_r(NULL, ",", &save)) {
                double c = atof(cs), wall = 0;
                int n = c >= 1000 ? iters / 4 + 1 : iters;
                run(op, count, c, n, &wall, &cpu);
                if (c == 0)
                    base = wall;
                if (rank == 0) {
                    double lo = c < base ? c : base;
                    double ov = c > 0 && lo > 0 ? (c + base - wall) / lo : -1;
                    ov = ov > 1 ? 1 : ov;
                    if (c > 0 && ov < 0)
                        ov = 0;
                    if (c > 0)
                        printf("%s %zu %.0f %.2f %.2f %.2f\n", op, count * sizeof(double), c, wall, cpu, ov);
                    else
                        printf("%s %zu %.0f %.2f %.2f -\n", op, count * sizeof(double), c, wall, cpu);
                    fflush(stdout);
                }
            }
        }
    }
    MPI_Finalize();
    return 0;
}
