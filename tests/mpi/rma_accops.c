/*
 * rma_accops.c - MPI_Accumulate, MPI_Get_accumulate and MPI_Fetch_and_op with every predefined
 * operation over
 * every type it is defined for (MPI-3.1 5.9.2, 11.3.4): SUM PROD MAX MIN LAND LOR LXOR BAND BOR
 * BXOR REPLACE NO_OP on MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_UNSIGNED, MPI_SHORT,
 * MPI_SIGNED_CHAR; SUM PROD MAX MIN REPLACE NO_OP on MPI_FLOAT and MPI_DOUBLE; REPLACE and NO_OP
 * on MPI_CHAR; MAXLOC MINLOC REPLACE NO_OP on MPI_2INT and MPI_DOUBLE_INT (ties: the lower index).
 * Fence epochs, window flavor from MTEST_RMA_FLAVOR (rma_win.h). For each (type, op): every rank
 * Accumulates N elements into one shared region at the target (concurrent accumulates with the
 * same op are element-wise atomic; not with NO_OP, which only Get_accumulate and Fetch_and_op
 * take), Get_accumulates into its own region and Fetch_and_ops one element of another own region
 * (the results are the initial values). Results are compared with a serial reference computed in long long (all
 * values are small integers, exact in every type). Runs with any number of ranks.
 */
#include "rma_win.h"

#define N 16
#define ESZ 16 /* bytes per element slot, the largest type (double_int) fits */

enum { INT, LONG, LLONG, UNS, SHORT, SCHAR, FLOAT, DOUBLE, CHAR, TWOINT, DBLINT, NT };
static const MPI_Datatype types[NT] = {MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_UNSIGNED, MPI_SHORT, MPI_SIGNED_CHAR,
                                       MPI_FLOAT, MPI_DOUBLE, MPI_CHAR, MPI_2INT, MPI_DOUBLE_INT};
static const char *tnames[NT] = {"int", "long", "long long", "unsigned", "short", "signed char", "float", "double",
                                 "char", "2int", "double_int"};
enum { SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC, REPLACE, NOOP, NO };
static const char *onames[NO] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
                                 "MAXLOC", "MINLOC", "REPLACE", "NO_OP"};
static MPI_Op ops[NO];

typedef struct { int v, i; } two_int;
typedef struct { double v; int i; } double_int;
typedef struct { long long v, i; } val; /* an element; i only for the pair types */

static int valid(int t, int o)
{
    if (o == REPLACE || o == NOOP)
        return 1;
    if (t == CHAR)
        return 0;
    if (t == TWOINT || t == DBLINT)
        return o == MAXLOC || o == MINLOC;
    if (o == MAXLOC || o == MINLOC)
        return 0;
    if (t == FLOAT || t == DOUBLE)
        return o <= MIN;
    return 1;
}

static size_t tsize(int t)
{
    static const size_t s[NT] = {sizeof(int), sizeof(long), sizeof(long long), sizeof(unsigned), sizeof(short), 1,
                                 sizeof(float), sizeof(double), 1, sizeof(two_int), sizeof(double_int)};
    return s[t];
}

static void put(int t, void *buf, int k, val x)
{
    char *b = (char *)buf + k * tsize(t);
    switch (t) {
    case INT: *(int *)b = (int)x.v; break;
    case LONG: *(long *)b = (long)x.v; break;
    case LLONG: *(long long *)b = x.v; break;
    case UNS: *(unsigned *)b = (unsigned)x.v; break;
    case SHORT: *(short *)b = (short)x.v; break;
    case SCHAR: *(signed char *)b = (signed char)x.v; break;
    case FLOAT: *(float *)b = (float)x.v; break;
    case DOUBLE: *(double *)b = (double)x.v; break;
    case CHAR: *(char *)b = (char)x.v; break;
    case TWOINT: ((two_int *)b)->v = (int)x.v; ((two_int *)b)->i = (int)x.i; break;
    default: ((double_int *)b)->v = (double)x.v; ((double_int *)b)->i = (int)x.i; break;
    }
}

static val get(int t, const void *buf, int k)
{
    const char *b = (const char *)buf + k * tsize(t);
    val x = {0, 0};
    switch (t) {
    case INT: x.v = *(const int *)b; break;
    case LONG: x.v = *(const long *)b; break;
    case LLONG: x.v = *(const long long *)b; break;
    case UNS: x.v = *(const unsigned *)b; break;
    case SHORT: x.v = *(const short *)b; break;
    case SCHAR: x.v = *(const signed char *)b; break;
    case FLOAT: x.v = (long long)*(const float *)b; break;
    case DOUBLE: x.v = (long long)*(const double *)b; break;
    case CHAR: x.v = *(const char *)b; break;
    case TWOINT: x.v = ((const two_int *)b)->v; x.i = ((const two_int *)b)->i; break;
    default: x.v = (long long)((const double_int *)b)->v; x.i = ((const double_int *)b)->i; break;
    }
    return x;
}

static val combine(int o, val a, val b) /* a: target value, b: origin value */
{
    val r = a;
    switch (o) {
    case SUM: r.v = a.v + b.v; break;
    case PROD: r.v = a.v * b.v; break;
    case MAX: r.v = a.v > b.v ? a.v : b.v; break;
    case MIN: r.v = a.v < b.v ? a.v : b.v; break;
    case LAND: r.v = a.v && b.v; break;
    case LOR: r.v = a.v || b.v; break;
    case LXOR: r.v = !a.v != !b.v; break;
    case BAND: r.v = a.v & b.v; break;
    case BOR: r.v = a.v | b.v; break;
    case BXOR: r.v = a.v ^ b.v; break;
    case MAXLOC: r = a.v > b.v ? a : b.v > a.v ? b : (val){a.v, a.i < b.i ? a.i : b.i}; break;
    case MINLOC: r = a.v < b.v ? a : b.v < a.v ? b : (val){a.v, a.i < b.i ? a.i : b.i}; break;
    case REPLACE: r = b; break;
    default: break; /* NO_OP */
    }
    return r;
}

static val init_val(int o, int k) { return (val){o == PROD ? 1 + k % 3 : (o >= LAND && o <= LXOR) ? k % 2 : 2 + k % 4, 100}; }
static val org_val(int o, int r, int k)
{
    if (o == PROD)
        return (val){1 + ((r + k) % 5 == 0), r};
    if (o >= LAND && o <= LXOR)
        return (val){(r + k / 2) % 2, r};
    return (val){(r * 7 + k) % 5 + (o == BAND || o == BOR || o == BXOR ? 8 * (r % 2) : 0), r};
}

static void run(RmaWin *w, int t, int o, int target)
{
    int p = mtest_size, me = mtest_rank;
    char *mem = w->base, org[N * ESZ], res[N * ESZ], want[N * ESZ];
    for (int k = 0; k < N; k++) {
        put(t, org, k, org_val(o, me, k));
        put(t, res, k, (val){-1, -1});
        for (int region = 0; region <= 2 * p; region++)
            put(t, mem + region * N * ESZ, k, init_val(o, k));
    }
    CALL(MPI_Win_fence(0, w->win));
    if (o != NOOP) /* MPI_NO_OP is for Get_accumulate and Fetch_and_op only (MPI-3.1 11.3.4) */
        CALL(MPI_Accumulate(org, N, types[t], target, rma_disp(w, target, 0), N, types[t], ops[o], w->win));
    CALL(MPI_Get_accumulate(org, N, types[t], res, N, types[t], target, rma_disp(w, target, (1 + me) * N * ESZ), N,
                            types[t], ops[o], w->win));
    int kf = me % N; /* the Fetch_and_op element */
    char fres[ESZ];
    put(t, fres, 0, (val){-1, -1});
    CALL(MPI_Fetch_and_op(org + kf * tsize(t), fres, types[t], target,
                          rma_disp(w, target, (1 + p + me) * N * ESZ + kf * tsize(t)), ops[o], w->win));
    CALL(MPI_Win_fence(0, w->win));
    val f = get(t, fres, 0), f0 = init_val(o, kf);
    if (f.v != f0.v || ((t == TWOINT || t == DBLINT) && f.i != f0.i))
        FAIL("%s %s: Fetch_and_op result is (%lld,%lld), want (%lld,%lld)", onames[o], tnames[t], f.v, f.i, f0.v, f0.i);
    for (int k = 0; k < N; k++) {
        val g = get(t, res, k), i0 = init_val(o, k);
        if (g.v != i0.v || ((t == TWOINT || t == DBLINT) && g.i != i0.i)) {
            FAIL("%s %s: Get_accumulate result %d is (%lld,%lld), want (%lld,%lld)", onames[o], tnames[t], k, g.v, g.i,
                 i0.v, i0.i);
            break;
        }
    }
    if (me != target)
        return;
    for (int k = 0; k < N; k++) {
        val acc = init_val(o, k), g = get(t, mem, k);
        for (int r = 0; r < p; r++)
            acc = combine(o, acc, org_val(o, r, k));
        put(t, want, k, acc); /* through the type, so the reference wraps like the target does */
        acc = get(t, want, k);
        int ok = g.v == acc.v && ((t != TWOINT && t != DBLINT) || g.i == acc.i);
        if (o == REPLACE) { /* concurrent replaces: some rank's value */
            ok = 0;
            for (int r = 0; r < p; r++) {
                val v = org_val(o, r, k);
                ok |= g.v == v.v && ((t != TWOINT && t != DBLINT) || g.i == v.i);
            }
        }
        if (!ok) {
            FAIL("%s %s: Accumulate element %d is (%lld,%lld), want (%lld,%lld)", onames[o], tnames[t], k, g.v, g.i,
                 acc.v, acc.i);
            break;
        }
        val gg = get(t, mem + (1 + (k % p)) * N * ESZ, k); /* Get_accumulate regions: one origin each */
        val one = combine(o, init_val(o, k), org_val(o, k % p, k));
        put(t, want, k, one);
        one = get(t, want, k);
        if (gg.v != one.v || ((t == TWOINT || t == DBLINT) && gg.i != one.i)) {
            FAIL("%s %s: Get_accumulate target element %d is (%lld,%lld), want (%lld,%lld)", onames[o], tnames[t], k,
                 gg.v, gg.i, one.v, one.i);
            break;
        }
    }
    for (int r = 0; r < p; r++) { /* Fetch_and_op regions: one element each */
        int k = r % N;
        val g = get(t, mem + (1 + p + r) * N * ESZ, k), one = combine(o, init_val(o, k), org_val(o, r, k));
        put(t, want, k, one);
        one = get(t, want, k);
        if (g.v != one.v || ((t == TWOINT || t == DBLINT) && g.i != one.i))
            FAIL("%s %s: Fetch_and_op of %d: target is (%lld,%lld), want (%lld,%lld)", onames[o], tnames[t], r, g.v, g.i,
                 one.v, one.i);
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Op all[NO] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR,
                      MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
    memcpy(ops, all, sizeof ops);
    RmaWin w;
    rma_win_make(&w, (MPI_Aint)(1 + 2 * mtest_size) * N * ESZ, 1, MPI_COMM_WORLD);
    CALL(MPI_Win_fence(0, w.win));
    int cases = 0;
    for (int t = 0; t < NT; t++)
        for (int o = 0; o < NO; o++)
            if (valid(t, o))
                run(&w, t, o, cases++ % mtest_size);
    CALL(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    rma_win_free(&w);
    return MTest_Finalize();
}
