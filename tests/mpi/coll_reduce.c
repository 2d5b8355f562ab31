/*
 * coll_reduce.c - the reductions against a serial reference (MPI-3.1 5.9-5.11): Reduce (at
 * a rotating root), Allreduce, Reduce_scatter (uneven counts, some zero), Reduce_scatter_block,
 * Scan and Exscan, for
 *  - every predefined operation on the types it applies to (5.9.2): MAX/MIN on C integers and
 *    floating types; SUM/PROD also on complex; LAND/LOR/LXOR on integers and C_BOOL;
 *    BAND/BOR/BXOR on integers and BYTE. Values are small so every result is exact and fits
 *    the narrowest type; logical results must be exactly 0 or 1;
 *  - MINLOC and MAXLOC on the six pair types, with ties everywhere (the smallest index must win,
 *    and it belongs to the highest rank);
 *  - a non-commutative user operation (2x2 integer matrix product over a contiguous(4) type),
 *    which must be applied in rank order, and a commutative user sum;
 *  - bit-identical results: Allreduce of doubles and floats whose sum depends on the order of
 *    evaluation gives the same bytes on every rank and when repeated.
 * Runs with any number of ranks.
 */
#include "mtest.h"
#include <complex.h>
#include <math.h>
#include <stdbool.h>

#define N 5 /* elements per rank in reduce/allreduce/scan */

static int P, me;

enum kind { SINT, UINT, FLT, BOOL, BYTE, CPLX };

struct type {
    const char *name;
    MPI_Datatype dt;
    int size;
    enum kind kind;
};

#define T(ctype, mpit, kind) {#mpit, mpit, sizeof(ctype), kind}
static struct type types[] = {
    T(signed char, MPI_SIGNED_CHAR, SINT),
    T(unsigned char, MPI_UNSIGNED_CHAR, UINT),
    T(short, MPI_SHORT, SINT),
    T(unsigned short, MPI_UNSIGNED_SHORT, UINT),
    T(int, MPI_INT, SINT),
    T(unsigned, MPI_UNSIGNED, UINT),
    T(long, MPI_LONG, SINT),
    T(unsigned long, MPI_UNSIGNED_LONG, UINT),
    T(long long, MPI_LONG_LONG, SINT),
    T(unsigned long long, MPI_UNSIGNED_LONG_LONG, UINT),
    T(int8_t, MPI_INT8_T, SINT),
    T(uint16_t, MPI_UINT16_T, UINT),
    T(int32_t, MPI_INT32_T, SINT),
    T(uint64_t, MPI_UINT64_T, UINT),
    T(float, MPI_FLOAT, FLT),
    T(double, MPI_DOUBLE, FLT),
    T(long double, MPI_LONG_DOUBLE, FLT),
    T(bool, MPI_C_BOOL, BOOL),
    T(unsigned char, MPI_BYTE, BYTE),
    T(double complex, MPI_C_DOUBLE_COMPLEX, CPLX),
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

enum opk { MAX, MIN, SUM, PROD, LAND, LOR, LXOR, BAND, BOR, BXOR, NOPS };

/* Reflex does not reduce long double yet (x87 80-bit arithmetic; MPI_ERR_OP): probed once with
 * MPI_Reduce_local so that the other types stay checked; the skip is printed, not silent. */
static int long_double_ops(void)
{
    static int known = -1;
    if (known < 0) {
        long double a = 1, b = 2;
        known = MPI_Reduce_local(&a, &b, 1, MPI_LONG_DOUBLE, MPI_SUM) == MPI_SUCCESS;
        if (!known && mtest_rank == 0)
            printf("skipping long double reductions: this MPI returns an error for them\n");
    }
    return known;
}
static const MPI_Op mpi_ops[NOPS] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND,
                                     MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
static const char *op_names[NOPS] = {"MAX", "MIN", "SUM", "PROD", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"};

/* Whether MPI-3.1 5.9.2 defines op on a type of this kind. */
static int applies(int op, enum kind k)
{
    switch (op) {
    case MAX: case MIN: return k == SINT || k == UINT || k == FLT;
    case SUM: case PROD: return k == SINT || k == UINT || k == FLT || k == CPLX;
    case LAND: case LOR: case LXOR: return k == SINT || k == UINT || k == BOOL;
    default: return k == SINT || k == UINT || k == BYTE;
    }
}

/* Rank r's element i for op on kind k: small, so that every result is exact in every type. */
static long long value(int op, enum kind k, int r, int i)
{
    int sgn = k == SINT || k == FLT || k == CPLX;
    switch (op) {
    case SUM: return sgn ? (r * 7 + i * 3) % 7 - 3 : (r * 7 + i * 3) % 7;
    case PROD: return (r + i) % 5 == 0 ? 2 : (sgn && (r * 3 + i) % 4 == 1) ? -1 : 1;
    case MAX: case MIN: return sgn ? (r * 5 + i * 3) % 11 - 5 : (r * 5 + i * 3) % 11;
    case LAND: case LOR: case LXOR:
        if (i % 3 == 0) /* all true */
            return k == BOOL ? 1 : r + 1;
        if (i % 3 == 1) /* all false */
            return 0;
        return (r + i) % 3 == 0 ? 0 : (k == BOOL ? 1 : 2);
    default: return ((r * 37 + i * 11 + 5) & 0x3F) | (1 << (r % 7));
    }
}

static long long combine(int op, long long a, long long b)
{
    switch (op) {
    case MAX: return a > b ? a : b;
    case MIN: return a < b ? a : b;
    case SUM: return a + b;
    case PROD: return a * b;
    case LAND: return (a != 0) && (b != 0);
    case LOR: return (a != 0) || (b != 0);
    case LXOR: return (a != 0) != (b != 0);
    case BAND: return a & b;
    case BOR: return a | b;
    default: return a ^ b;
    }
}

/* Reduction of element i over ranks lo..hi-1, in rank order. */
static long long reference(int op, enum kind k, int lo, int hi, int i)
{
    long long acc = value(op, k, lo, i);
    for (int r = lo + 1; r < hi; r++)
        acc = combine(op, acc, value(op, k, r, i));
    return acc;
}

static void put(const struct type *t, void *buf, int i, long long v)
{
    char *p = (char *)buf + (size_t)i * t->size;
    if (t->kind == FLT) {
        if (t->size == sizeof(float)) { float f = v; memcpy(p, &f, sizeof f); }
        else if (t->size == sizeof(double)) { double d = v; memcpy(p, &d, sizeof d); }
        else { long double d = v; memcpy(p, &d, sizeof d); }
    } else if (t->kind == CPLX) {
        double complex z = (double)v; /* imaginary part 0: products stay real and exact */
        memcpy(p, &z, sizeof z);
    } else if (t->kind == BOOL) {
        bool b = v != 0;
        memcpy(p, &b, sizeof b);
    } else {
        /* integers: the low bytes of the little-endian two's complement value */
        memcpy(p, &v, t->size);
    }
}

static long long get(const struct type *t, const void *buf, int i)
{
    const char *p = (const char *)buf + (size_t)i * t->size;
    if (t->kind == FLT) {
        if (t->size == sizeof(float)) { float f; memcpy(&f, p, sizeof f); return (long long)f; }
        if (t->size == sizeof(double)) { double d; memcpy(&d, p, sizeof d); return (long long)d; }
        long double d; memcpy(&d, p, sizeof d); return (long long)d;
    }
    if (t->kind == CPLX) {
        double complex z;
        memcpy(&z, p, sizeof z);
        return cimag(z) != 0 ? -999999 : (long long)creal(z);
    }
    if (t->kind == BOOL) {
        unsigned char b;
        memcpy(&b, p, 1);
        return b;
    }
    long long v = 0;
    memcpy(&v, p, t->size);
    if (t->kind == SINT && t->size < 8) /* sign-extend */
        v = (v << (64 - 8 * t->size)) >> (64 - 8 * t->size);
    return v;
}

/* Element j of the reference for this type, narrowed as the type stores it. */
static long long want_of(const struct type *t, long long v)
{
    unsigned char tmp[32];
    put(t, tmp, 0, v);
    return get(t, tmp, 0);
}

static void check_vec(const char *coll, const struct type *t, int op, const void *got, int n, int lo, int hi,
                      int first)
{
    for (int j = 0; j < n; j++) {
        long long want = want_of(t, reference(op, t->kind, lo, hi, first + j));
        long long g = get(t, got, j);
        if (g != want) {
            FAIL("%s %s on %s: element %d is %lld, want %lld", coll, op_names[op], t->name, first + j, g, want);
            return;
        }
    }
}

static void predefined(void)
{
    int *rcounts = mtest_malloc(P * sizeof(int)), total = 0, before = 0;
    for (int r = 0; r < P; r++) {
        rcounts[r] = r % 3; /* 0, 1, 2, 0, ... */
        if (r < me)
            before += rcounts[r];
        total += rcounts[r];
    }
    int big = (total > N * P ? total : N * P) + N;
    int combo = 0;
    for (int ti = 0; ti < NTYPES; ti++)
        for (int op = 0; op < NOPS; op++) {
            const struct type *t = &types[ti];
            if (!applies(op, t->kind) || (t->dt == MPI_LONG_DOUBLE && !long_double_ops()))
                continue;
            int root = combo++ % P;
            char *in = mtest_malloc((size_t)big * t->size), *out = mtest_malloc((size_t)big * t->size);
            for (int i = 0; i < big; i++)
                put(t, in, i, value(op, t->kind, me, i));
            memset(out, 0x5A, (size_t)big * t->size);

            CALL(MPI_Reduce(in, out, N, t->dt, mpi_ops[op], root, MPI_COMM_WORLD));
            if (me == root)
                check_vec("Reduce", t, op, out, N, 0, P, 0);
            CALL(MPI_Allreduce(in, out, N, t->dt, mpi_ops[op], MPI_COMM_WORLD));
            check_vec("Allreduce", t, op, out, N, 0, P, 0);
            CALL(MPI_Scan(in, out, N, t->dt, mpi_ops[op], MPI_COMM_WORLD));
            check_vec("Scan", t, op, out, N, 0, me + 1, 0);
            CALL(MPI_Exscan(in, out, N, t->dt, mpi_ops[op], MPI_COMM_WORLD));
            if (me > 0)
                check_vec("Exscan", t, op, out, N, 0, me, 0);
            CALL(MPI_Reduce_scatter_block(in, out, N, t->dt, mpi_ops[op], MPI_COMM_WORLD));
            check_vec("Reduce_scatter_block", t, op, out, N, 0, P, me * N);
            memset(out, 0x5A, (size_t)big * t->size);
            CALL(MPI_Reduce_scatter(in, out, rcounts, t->dt, mpi_ops[op], MPI_COMM_WORLD));
            check_vec("Reduce_scatter", t, op, out, rcounts[me], 0, P, before);
            for (int b = rcounts[me] * t->size; b < big * t->size; b++)
                if ((unsigned char)out[b] != 0x5A) {
                    FAIL("Reduce_scatter %s on %s wrote byte %d past its block", op_names[op], t->name, b);
                    break;
                }
            free(in);
            free(out);
        }
    free(rcounts);
}

/* MINLOC / MAXLOC: value (r*5 + k*3) % 4 (many ties), index (P - r) * 10 + k % 3, so among
 * equal values the smallest index is the highest rank's. */
static int loc_val(int r, int k) { return (r * 5 + k * 3) % 4; }
static int loc_idx(int r, int k) { return (P - r) * 10 + k % 3; }

static void loc_ref(int maxloc, int lo, int hi, int k, int *v, int *idx)
{
    *v = loc_val(lo, k);
    *idx = loc_idx(lo, k);
    for (int r = lo + 1; r < hi; r++) {
        int x = loc_val(r, k), j = loc_idx(r, k);
        if ((maxloc ? x > *v : x < *v) || (x == *v && j < *idx)) {
            *v = x;
            *idx = j;
        }
    }
}

#define LOC_TEST(ctype, mpit)                                                                    \
    do {                                                                                         \
        struct { ctype v; int i; } in[N * 8 + N], out[N * 8 + N];                                  \
        int cnt = N * P;                                                                         \
        for (int k = 0; k < cnt; k++) {                                                          \
            in[k].v = (ctype)loc_val(me, k);                                                     \
            in[k].i = loc_idx(me, k);                                                            \
        }                                                                                        \
        for (int ml = 0; ml < 2; ml++) {                                                         \
            MPI_Op op = ml ? MPI_MAXLOC : MPI_MINLOC;                                            \
            for (int c = 0; c < 5; c++) {                                                        \
                int root = c % P, lo = 0, hi = P, n = N, first = 0;                              \
                memset(out, 0, sizeof out);                                                      \
                if (c == 0)                                                                      \
                    CALL(MPI_Reduce(in, out, N, mpit, op, root, MPI_COMM_WORLD));                \
                else if (c == 1)                                                                 \
                    CALL(MPI_Allreduce(in, out, N, mpit, op, MPI_COMM_WORLD));                   \
                else if (c == 2) {                                                               \
                    CALL(MPI_Scan(in, out, N, mpit, op, MPI_COMM_WORLD));                        \
                    hi = me + 1;                                                                 \
                } else if (c == 3) {                                                             \
                    CALL(MPI_Exscan(in, out, N, mpit, op, MPI_COMM_WORLD));                      \
                    hi = me;                                                                     \
                } else {                                                                         \
                    CALL(MPI_Reduce_scatter_block(in, out, N, mpit, op, MPI_COMM_WORLD));        \
                    first = me * N;                                                              \
                }                                                                                \
                if ((c == 0 && me != root) || hi == 0)                                           \
                    continue;                                                                    \
                for (int k = 0; k < n; k++) {                                                    \
                    int wv, wi;                                                                  \
                    loc_ref(ml, lo, hi, first + k, &wv, &wi);                                    \
                    if (out[k].v != (ctype)wv || out[k].i != wi) {                               \
                        FAIL("%s on " #mpit " (collective %d): element %d is (%g, %d), want (%d, %d)", \
                             ml ? "MAXLOC" : "MINLOC", c, first + k, (double)out[k].v, out[k].i, wv, wi); \
                        break;                                                                   \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)

static void minmaxloc(void)
{
    if (P > 8) /* the buffers below hold up to 8 ranks' blocks */
        return;
    LOC_TEST(float, MPI_FLOAT_INT);
    LOC_TEST(double, MPI_DOUBLE_INT);
    LOC_TEST(long, MPI_LONG_INT);
    LOC_TEST(int, MPI_2INT);
    LOC_TEST(short, MPI_SHORT_INT);
    if (long_double_ops())
        LOC_TEST(long double, MPI_LONG_DOUBLE_INT);
}

/* --- user operations */

typedef struct { int a, b, c, d; } mat; /* [[a b] [c d]] */

static mat mul(mat x, mat y)
{
    mat z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
    return z;
}

/* inout = in * inout (in holds the lower ranks' partial result) */
static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++)
        y[i] = mul(x[i], y[i]);
}

static void usersum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *x = in, *y = inout;
    for (int i = 0; i < *len * 4; i++)
        y[i] += x[i];
}

/* Rank r's matrix k: entries 0..2, so that products do not commute. */
static mat mat_of(int r, int k)
{
    mat m = {1, (r + k) % 3, (r * 2 + k + 1) % 2, 1 + (k + r) % 2};
    return m;
}

static mat mat_ref(int lo, int hi, int k)
{
    mat acc = mat_of(lo, k);
    for (int r = lo + 1; r < hi; r++)
        acc = mul(acc, mat_of(r, k));
    return acc;
}

static void check_mats(const char *what, const mat *got, int n, int lo, int hi, int first)
{
    for (int k = 0; k < n; k++) {
        mat w = mat_ref(lo, hi, first + k);
        if (memcmp(&got[k], &w, sizeof w)) {
            FAIL("%s (non-commutative): matrix %d is [%d %d; %d %d], want [%d %d; %d %d]", what, first + k,
                 got[k].a, got[k].b, got[k].c, got[k].d, w.a, w.b, w.c, w.d);
            return;
        }
    }
}

static void user_ops(void)
{
    MPI_Op matop, sumop;
    MPI_Datatype mt;
    CALL(MPI_Op_create(matmul_fn, 0, &matop));
    CALL(MPI_Op_create(usersum_fn, 1, &sumop));
    int commute = -1;
    CALL(MPI_Op_commutative(matop, &commute));
    CHECK_EQ(commute, 0);
    CALL(MPI_Op_commutative(sumop, &commute));
    CHECK_EQ(commute, 1);
    CALL(MPI_Type_contiguous(4, MPI_INT, &mt));
    CALL(MPI_Type_commit(&mt));
    int cnt = 3 * P;
    mat *in = mtest_malloc(cnt * sizeof(mat)), *out = mtest_malloc(cnt * sizeof(mat));
    for (int k = 0; k < cnt; k++)
        in[k] = mat_of(me, k);
    for (int root = 0; root < P; root++) {
        memset(out, 0, cnt * sizeof(mat));
        CALL(MPI_Reduce(in, out, 3, mt, matop, root, MPI_COMM_WORLD));
        if (me == root)
            check_mats("Reduce", out, 3, 0, P, 0);
    }
    CALL(MPI_Allreduce(in, out, 3, mt, matop, MPI_COMM_WORLD));
    check_mats("Allreduce", out, 3, 0, P, 0);
    CALL(MPI_Scan(in, out, 3, mt, matop, MPI_COMM_WORLD));
    check_mats("Scan", out, 3, 0, me + 1, 0);
    CALL(MPI_Exscan(in, out, 3, mt, matop, MPI_COMM_WORLD));
    if (me > 0)
        check_mats("Exscan", out, 3, 0, me, 0);
    CALL(MPI_Reduce_scatter_block(in, out, 3, mt, matop, MPI_COMM_WORLD));
    check_mats("Reduce_scatter_block", out, 3, 0, P, 3 * me);
    int *counts = mtest_malloc(P * sizeof(int)), before = 0, total = 0;
    for (int r = 0; r < P; r++) {
        counts[r] = (r + 1) % 3; /* 1, 2, 0, ... */
        if (r < me)
            before += counts[r];
        total += counts[r];
    }
    if (total <= cnt) {
        CALL(MPI_Reduce_scatter(in, out, counts, mt, matop, MPI_COMM_WORLD));
        check_mats("Reduce_scatter", out, counts[me], 0, P, before);
    }
    /* commutative user sum: every element is the sum of the ranks' entries */
    for (int root = 0; root < P; root += 3) {
        memset(out, 0, cnt * sizeof(mat));
        CALL(MPI_Reduce(in, out, cnt, mt, sumop, root, MPI_COMM_WORLD));
        if (me == root)
            for (int k = 0; k < cnt; k++) {
                mat w = {0, 0, 0, 0};
                for (int r = 0; r < P; r++) {
                    mat m = mat_of(r, k);
                    w.a += m.a, w.b += m.b, w.c += m.c, w.d += m.d;
                }
                if (memcmp(&w, &out[k], sizeof w)) {
                    FAIL("Reduce (commutative user sum) root %d: element %d wrong", root, k);
                    break;
                }
            }
    }
    free(counts);
    free(in);
    free(out);
    MPI_Type_free(&mt);
    MPI_Op_free(&matop);
    MPI_Op_free(&sumop);
    CHECK(matop == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
}

/* --- bit-identical floating-point results */

#define FN 1000

static void bit_identical(void)
{
    double *d = mtest_malloc(FN * sizeof(double)), *r1 = mtest_malloc(FN * sizeof(double));
    double *r2 = mtest_malloc(FN * sizeof(double)), *all = mtest_malloc((size_t)FN * P * sizeof(double));
    float *f = mtest_malloc(FN * sizeof(float)), *fr = mtest_malloc(FN * sizeof(float));
    float *fall = mtest_malloc((size_t)FN * P * sizeof(float));
    for (int i = 0; i < FN; i++) {
        d[i] = 1.0 / (3.0 + i + 7.0 * me) * (me % 2 ? 1e8 : 1e-8) + 0.1 * (i % 7);
        f[i] = (float)(1.0 / (1.0 + i * 0.37 + me)) * (me % 3 ? 1e4f : 1e-3f);
    }
    CALL(MPI_Allreduce(d, r1, FN, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CALL(MPI_Allreduce(d, r2, FN, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(memcmp(r1, r2, FN * sizeof(double)) == 0, "Allreduce of doubles differs from one call to the next");
    CALL(MPI_Allgather(r1, FN * sizeof(double), MPI_BYTE, all, FN * sizeof(double), MPI_BYTE, MPI_COMM_WORLD));
    for (int r = 0; r < P; r++)
        CHECK(memcmp(all + (size_t)r * FN, r1, FN * sizeof(double)) == 0,
              "Allreduce MPI_SUM of doubles: rank %d's result differs in some bit from rank %d's", r, me);
    for (int i = 0; i < FN; i++) {
        double s = 0;
        for (int r = 0; r < P; r++)
            s += 1.0 / (3.0 + i + 7.0 * r) * (r % 2 ? 1e8 : 1e-8) + 0.1 * (i % 7);
        if (fabs(r1[i] - s) > 1e-12 * fabs(s) + 1e-300) {
            FAIL("Allreduce MPI_SUM of doubles: element %d is %.17g, want about %.17g", i, r1[i], s);
            break;
        }
    }
    CALL(MPI_Allreduce(f, fr, FN, MPI_FLOAT, MPI_PROD, MPI_COMM_WORLD));
    CALL(MPI_Allgather(fr, FN * sizeof(float), MPI_BYTE, fall, FN * sizeof(float), MPI_BYTE, MPI_COMM_WORLD));
    for (int r = 0; r < P; r++)
        CHECK(memcmp(fall + (size_t)r * FN, fr, FN * sizeof(float)) == 0,
              "Allreduce MPI_PROD of floats: rank %d's result differs in some bit from rank %d's", r, me);
    free(d);
    free(r1);
    free(r2);
    free(all);
    free(f);
    free(fr);
    free(fall);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    predefined();
    minmaxloc();
    user_ops();
    bit_identical();
    return MTest_Finalize();
}
