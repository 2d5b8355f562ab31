/*
 * jacobi.c -- the Jacobi example of Martin and Wilson's "A Visual BSP Programming Environment":
 * an I x I grid of floats split in strips of rows, one strip per process; each iteration updates
 * the interior points (4 flops each) and sends the strip's first and last rows to the neighbours'
 * halo rows with bsp_put, then syncs.
 *
 * It prints the measured time per iteration next to the BSP cost model's prediction
 *     T = (w + h*g + l) / s,   w = 4*I*I/p flops,  h = 2*I words (I for p = 2, 0 for p = 1)
 * using the parameters measured by bspprobe: `bspprobe -o params.txt`, then
 * `jacobi -p params.txt` (or BSP_PARAMS=params.txt). Words are 4-byte floats, as in the paper.
 *
 * Usage: mpiexec -n P jacobi [-n I] [-i iterations] [-p params-file]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bsp.h>

struct params {
    double s, l, g; /* flop/s, flops, flops per word */
    int w;          /* word size in bytes the probe used */
    int found;
};

static struct params read_params(const char *path)
{
    struct params pr = {0, 0, 0, 4, 0};
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return pr;
    char line[128];
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "s=%lf", &pr.s);
        sscanf(line, "l=%lf", &pr.l);
        sscanf(line, "g=%lf", &pr.g);
        sscanf(line, "w=%d", &pr.w);
    }
    fclose(f);
    pr.found = pr.s > 0;
    return pr;
}

/* One Jacobi sweep over the interior of a strip of `rows` rows (plus halo rows 0 and rows+1). */
static void sweep(const float *u, float *unew, int rows, int width)
{
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j < width - 1; j++)
            unew[i * width + j] = 0.25f * (u[(i - 1) * width + j] + u[(i + 1) * width + j] +
                                           u[i * width + j - 1] + u[i * width + j + 1]);
}

int main(int argc, char **argv)
{
    bsp_begin(bsp_nprocs());
    int n = 1000, iters = 50;
    const char *ppath = getenv("BSP_PARAMS");
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "-n"))
            n = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "-i"))
            iters = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "-p"))
            ppath = argv[a + 1];
    }
    int p = bsp_nprocs(), me = bsp_pid();
    if (n < 3 || n < p || iters < 1)
        bsp_abort("jacobi: need -n >= max(3, p) and -i >= 1\n");
    int rows = n / p + (me < n % p ? 1 : 0);
    size_t cells = (size_t)(rows + 2) * n;
    float *a = calloc(cells, sizeof(float)), *b = calloc(cells, sizeof(float));
    if (me == 0) /* the top edge of the grid is held at 1 */
        for (int j = 0; j < n; j++)
            a[j] = b[j] = 1.0f;
    bsp_push_reg(a, (int)(cells * sizeof(float)));
    bsp_push_reg(b, (int)(cells * sizeof(float)));
    bsp_sync();

    int rowbytes = n * (int)sizeof(float);
    float *u = a, *unew = b;
    double compute = 0.0, t0 = 0.0;
    for (int it = -1; it < iters; it++) { /* iteration -1 warms up and is not timed */
        if (it == 0)
            t0 = bsp_time();
        double c0 = bsp_time();
        sweep(u, unew, rows, n);
        compute += it >= 0 ? bsp_time() - c0 : 0.0;
        if (me != p - 1) /* my last row -> the next strip's top halo row */
            bsp_put(me + 1, &unew[rows * n], unew, 0, rowbytes);
        if (me != 0) /* my first row -> the previous strip's bottom halo row */
            bsp_put(me - 1, &unew[n], unew, (rows + 1) * rowbytes, rowbytes);
        bsp_sync();
        float *t = u;
        u = unew;
        unew = t;
    }
    double per_iter = (bsp_time() - t0) / iters;

    /* The slowest process's computing time, gathered at pid 0. */
    double *comp = me == 0 ? calloc((size_t)p, sizeof(double)) : NULL;
    bsp_push_reg(comp, me == 0 ? p * (int)sizeof(double) : 0);
    bsp_sync();
    bsp_put(0, &compute, comp, me * (int)sizeof(double), sizeof compute);
    bsp_sync();
    if (me == 0)
        for (int q = 0; q < p; q++)
            compute = comp[q] > compute ? comp[q] : compute;

    if (me == 0) {
        struct params pr = read_params(ppath);
        double w = 4.0 * n * (double)n / p;
        double h = (p == 1 ? 0.0 : p == 2 ? 1.0 : 2.0) * n * 4.0 / pr.w;
        printf("jacobi: %dx%d grid, p=%d, %d iterations\n", n, n, p, iters);
        printf("  measured:  %10.3f ms per iteration (%.3f ms of it computing, slowest process)\n",
               per_iter * 1e3, compute / iters * 1e3);
        if (pr.found) {
            double pred = (w + h * pr.g + pr.l) / pr.s;
            printf("  predicted: %10.3f ms per iteration = (w %.0f + h %.0f * g %.2f + l %.0f) / s %.1f Mflop/s\n",
                   pred * 1e3, w, h, pr.g, pr.l, pr.s / 1e6);
            printf("             (w/s %.3f ms, h*g/s %.3f ms, l/s %.3f ms); measured/predicted = %.2f\n",
                   w / pr.s * 1e3, h * pr.g / pr.s * 1e3, pr.l / pr.s * 1e3, per_iter / pred);
            double pred2 = compute / iters + (h * pr.g + pr.l) / pr.s;
            printf("  with w timed instead of w/s: %.3f ms per iteration; measured/predicted = %.2f\n",
                   pred2 * 1e3, per_iter / pred2);
            printf("  1-process prediction 4*I*I/s = %.3f ms\n", 4.0 * n * (double)n / pr.s * 1e3);
        } else {
            printf("  no BSP parameters: run bspprobe -o params.txt and pass -p params.txt\n");
        }
        /* A value that depends on the whole computation: the centre of the top strip. */
        printf("  u[1][n/2] = %.6f\n", u[n + n / 2]);
    }
    bsp_pop_reg(comp);
    bsp_pop_reg(b);
    bsp_pop_reg(a);
    bsp_end();
    free(a);
    free(b);
    free(comp);
    return 0;
}
