/*
 * dt_p2p.c - point-to-point messages with derived datatypes (MPI-3.1 sections 3.3 and 4.1):
 * the data travels in type-map order, so a message sent with one type and received with another
 * type of the same signature lands exactly in the receive type's blocks, and nothing outside
 * them is written.
 *
 * Every rank sends to its right neighbour and receives from its left one (itself with one
 * rank). Layouts (doubles unless said): contiguous, vector with stride 2, vector of blocks of 4
 * repeated with count > 1, the columns of a 8 x C matrix (vector resized to one double: sending
 * them transposes), an irregular indexed type with zero-length blocks, the interior of a
 * subarray with a one-element halo, every third double (resized), a negative-stride vector, a
 * negative lower bound, a type nested four levels deep (indexed, hvector with a negative stride,
 * resized, contiguous); and arrays of struct {char, int, double} with C padding, packed without
 * padding, and every other struct. Pairs: each layout to contiguous, contiguous to it, it to
 * itself, and some crossed pairs; at 512 B (eager), 32 KiB (eager or rendezvous by the library's
 * limit) and 2 MiB (rendezvous), plus one
 * 8 MiB message. Ways to communicate: Sendrecv; Irecv posted before a barrier and the send
 * after it (expected); Isend before a barrier and Recv with MPI_ANY_SOURCE after it
 * (unexpected); blocking Send/Recv ordered around the ring.
 *
 * The expected result is computed here, independently of MPI: a small layout algebra expands
 * each type into (offset, length) byte blocks in type-map order. The receive buffer is filled
 * with a sentinel beforehand and compared byte for byte (blocks and gaps, plus 64 bytes on each
 * side) afterwards. Also: Get_count/Get_elements(_x) on derived types, including a partial
 * element (7 ints received with a type of 3 ints: count MPI_UNDEFINED, elements 7).
 */
#include "mtest.h"
#include <stddef.h>

#define MARGIN 64
#define SENTINEL 0xA5

/* ---- a layout algebra: the byte blocks of a type, in type-map order ---- */

typedef struct {
    long n, cap;
    long *off, *len;
} blocks_t;

typedef struct {
    MPI_Datatype t; /* the MPI type (committed before use) */
    blocks_t b;     /* blocks of one instance */
    long lb, ext;   /* bounds of one instance */
    long elems;     /* basic elements of one instance */
    const char *name;
} lay_t;

static void push(blocks_t *b, long off, long len)
{
    if (len == 0)
        return;
    if (b->n > 0 && b->off[b->n - 1] + b->len[b->n - 1] == off) {
        b->len[b->n - 1] += len;
        return;
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->off = realloc(b->off, b->cap * sizeof(long));
        b->len = realloc(b->len, b->cap * sizeof(long));
        if (!b->off || !b->len) {
            fprintf(stderr, "out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    b->off[b->n] = off;
    b->len[b->n] = len;
    b->n++;
}

/* Append `count` consecutive copies of L (extent apart) placed at `disp`. */
static void append_copies(blocks_t *b, const lay_t *L, long count, long disp)
{
    for (long c = 0; c < count; c++)
        for (long k = 0; k < L->b.n; k++)
            push(b, disp + c * L->ext + L->b.off[k], L->b.len[k]);
}

static void lay_free(lay_t *L)
{
    free(L->b.off);
    free(L->b.len);
    if (L->t != MPI_DATATYPE_NULL && L->t != MPI_DOUBLE && L->t != MPI_INT && L->t != MPI_CHAR)
        MPI_Type_free(&L->t);
    memset(L, 0, sizeof *L);
    L->t = MPI_DATATYPE_NULL;
}

static lay_t lay_basic(MPI_Datatype t, long size, const char *name)
{
    lay_t L = {t, {0, 0, NULL, NULL}, 0, size, 1, name};
    push(&L.b, 0, size);
    return L;
}

/* General block list: block i has bl[i] copies of L at byte displacement disp[i]. Bounds as
 * MPI-3.1 4.1.6 without alignment padding (callers resize structs whose end is unaligned). */
static lay_t lay_blocks(lay_t *L, long count, const long *bl, const long *disp, MPI_Datatype t, const char *name)
{
    lay_t R = {t, {0, 0, NULL, NULL}, 0, 0, 0, name};
    int first = 1;
    long lo = 0, hi = 0;
    for (long i = 0; i < count; i++) {
        append_copies(&R.b, L, bl[i], disp[i]);
        R.elems += bl[i] * L->elems;
        if (bl[i] == 0)
            continue;
        long l = disp[i] + L->lb, u = disp[i] + (bl[i] - 1) * L->ext + L->lb + L->ext;
        lo = first || l < lo ? l : lo;
        hi = first || u > hi ? u : hi;
        first = 0;
    }
    R.lb = lo;
    R.ext = hi - lo;
    return R;
}

/* Each constructor consumes (frees) its inner layout. */
static lay_t lay_hvector(lay_t L, long count, long bl, long stride_bytes, const char *name)
{
    MPI_Datatype t;
    MPI_Type_create_hvector((int)count, (int)bl, stride_bytes, L.t, &t);
    long *b = mtest_malloc(count * sizeof(long)), *d = mtest_malloc(count * sizeof(long));
    for (long i = 0; i < count; i++) {
        b[i] = bl;
        d[i] = i * stride_bytes;
    }
    lay_t R = lay_blocks(&L, count, b, d, t, name);
    free(b);
    free(d);
    lay_free(&L);
    return R;
}

static lay_t lay_vector(lay_t L, long count, long bl, long stride, const char *name)
{
    MPI_Datatype t;
    MPI_Type_vector((int)count, (int)bl, (int)stride, L.t, &t);
    long ext = L.ext;
    lay_t R = lay_hvector(L, count, bl, stride * ext, name); /* builds a second type: replace it */
    MPI_Type_free(&R.t);
    R.t = t;
    return R;
}

static lay_t lay_contig(lay_t L, long count, const char *name)
{
    MPI_Datatype t;
    MPI_Type_contiguous((int)count, L.t, &t);
    long ext = L.ext;
    lay_t R = lay_hvector(L, 1, count, ext, name);
    MPI_Type_free(&R.t);
    R.t = t;
    return R;
}

static lay_t lay_indexed(lay_t L, long count, const int *bl, const int *disp, const char *name)
{
    MPI_Datatype t;
    MPI_Type_indexed((int)count, bl, disp, L.t, &t);
    long *b = mtest_malloc(count * sizeof(long)), *d = mtest_malloc(count * sizeof(long));
    for (long i = 0; i < count; i++) {
        b[i] = bl[i];
        d[i] = disp[i] * L.ext;
    }
    lay_t R = lay_blocks(&L, count, b, d, t, name);
    free(b);
    free(d);
    lay_free(&L);
    return R;
}

static lay_t lay_resized(lay_t L, long lb, long ext, const char *name)
{
    MPI_Datatype t;
    MPI_Type_create_resized(L.t, lb, ext, &t);
    lay_t R = L;
    if (L.t != MPI_DOUBLE && L.t != MPI_INT && L.t != MPI_CHAR)
        MPI_Type_free(&L.t);
    R.t = t;
    R.lb = lb;
    R.ext = ext;
    R.name = name;
    return R;
}

/* struct {char, int, double} at the given offsets, resized to `ext` */
static lay_t lay_cid(long oc, long oi, long od, long ext, const char *name)
{
    int bl[3] = {1, 1, 1};
    MPI_Aint d[3] = {oc, oi, od};
    MPI_Datatype ty[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE}, s;
    MPI_Type_create_struct(3, bl, d, ty, &s);
    lay_t L = {s, {0, 0, NULL, NULL}, 0, ext, 3, name};
    long o[3] = {oc, oi, od}, n[3] = {1, 4, 8};
    for (int k = 0; k < 3; k++)
        push(&L.b, o[k], n[k]);
    return lay_resized(L, 0, ext, name);
}

/* ---- the layouts, each with about `n` doubles (n a multiple of 64) ---- */

enum { L_CONTIG, L_VEC1, L_VEC4, L_COLUMN, L_INDEXED, L_SUBARRAY, L_RESIZED, L_NEGSTRIDE, L_NEGLB, L_NESTED, NLAYOUT };
enum { S_PADDED, S_PACKED, S_EVERYOTHER, NSTRUCT };

/* A message: a layout and a count. */
typedef struct {
    lay_t L;
    long count;
} msg_t;

static msg_t make_layout(int which, long n)
{
    lay_t d = lay_basic(MPI_DOUBLE, 8, "double");
    long C = n / 8;
    switch (which) {
    case L_CONTIG:
        return (msg_t){d, n};
    case L_VEC1:
        return (msg_t){lay_vector(d, n, 1, 2, "vector(n,1,2)"), 1};
    case L_VEC4:
        return (msg_t){lay_vector(d, 8, 4, 9, "vector(8,4,9)"), n / 32};
    case L_COLUMN: {
        lay_t col = lay_vector(d, 8, 1, C, "column");
        return (msg_t){lay_resized(col, 0, 8, "column resized to 8"), C};
    }
    case L_INDEXED: {
        int *bl = mtest_malloc(n * sizeof(int)), *dis = mtest_malloc(n * sizeof(int));
        long cnt = 0, total = 0, pos = 3;
        uint32_t x = 12345;
        while (total < n) {
            x = x * 1103515245u + 12345u;
            long b = (x >> 16) % 18; /* 0..17: zero-length blocks too */
            if (b > n - total)
                b = n - total;
            bl[cnt] = (int)b;
            dis[cnt] = (int)pos;
            pos += b + (x >> 8) % 6;
            total += b;
            cnt++;
        }
        lay_t R = lay_indexed(d, cnt, bl, dis, "indexed irregular");
        free(bl);
        free(dis);
        return (msg_t){R, 1};
    }
    case L_SUBARRAY: {
        int sizes[2] = {10, (int)C + 2}, sub[2] = {8, (int)C}, st[2] = {1, 1};
        MPI_Datatype t;
        MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t);
        lay_t R = {t, {0, 0, NULL, NULL}, 0, 10 * (C + 2) * 8, n, "subarray interior"};
        for (long r = 1; r <= 8; r++)
            push(&R.b, (r * (C + 2) + 1) * 8, C * 8);
        return (msg_t){R, 1};
    }
    case L_RESIZED:
        return (msg_t){lay_resized(d, 0, 24, "double resized to 24"), n};
    case L_NEGSTRIDE:
        return (msg_t){lay_vector(d, n / 4, 4, -8, "vector(n/4,4,-8)"), 1};
    case L_NEGLB: {
        lay_t p = lay_contig(d, 2, "2 doubles");
        return (msg_t){lay_resized(p, -16, 40, "2 doubles resized(-16,40)"), n / 2};
    }
    default: { /* L_NESTED */
        int bl[2] = {1, 3}, dis[2] = {0, 2};
        lay_t i1 = lay_indexed(d, 2, bl, dis, "indexed");
        lay_t h2 = lay_hvector(i1, 2, 1, -40, "hvector(-40)");
        lay_t r3 = lay_resized(h2, -40, 88, "resized(-40,88)");
        return (msg_t){lay_contig(r3, 4, "nested"), n / 32};
    }
    }
}

static msg_t make_struct(int which, long m)
{
    switch (which) {
    case S_PADDED:
        return (msg_t){lay_cid(0, 4, 8, 16, "struct cid padded"), m};
    case S_PACKED:
        return (msg_t){lay_cid(0, 1, 5, 13, "struct cid packed"), m};
    default: {
        lay_t s = lay_cid(0, 4, 8, 16, "struct cid");
        return (msg_t){lay_vector(s, m, 1, 2, "every other struct"), 1};
    }
    }
}

/* ---- buffers ---- */

typedef struct {
    unsigned char *mem; /* MARGIN + span + MARGIN bytes */
    long bytes;
    unsigned char *origin; /* where the MPI buffer argument points */
    blocks_t b;            /* blocks of the whole message, relative to origin */
} buf_t;

static buf_t make_buf(const msg_t *m)
{
    buf_t B = {NULL, 0, NULL, {0, 0, NULL, NULL}};
    append_copies(&B.b, &m->L, m->count, 0);
    long lo = 0, hi = 0;
    for (long k = 0; k < B.b.n; k++) {
        if (k == 0 || B.b.off[k] < lo)
            lo = B.b.off[k];
        if (k == 0 || B.b.off[k] + B.b.len[k] > hi)
            hi = B.b.off[k] + B.b.len[k];
    }
    B.bytes = (hi - lo) + 2 * MARGIN;
    B.mem = mtest_malloc(B.bytes);
    B.origin = B.mem + MARGIN - lo;
    return B;
}

static void free_buf(buf_t *B)
{
    free(B->mem);
    free(B->b.off);
    free(B->b.len);
}

static long data_bytes(const buf_t *B)
{
    long s = 0;
    for (long k = 0; k < B->b.n; k++)
        s += B->b.len[k];
    return s;
}

/* The byte stream a sender with this layout sends (pattern of sender/seed over its buffer). */
static unsigned char *stream_of(const msg_t *m, int sender, int seed, long *nbytes)
{
    buf_t S = make_buf(m);
    mtest_fill(S.mem, S.bytes, sender, seed);
    long n = data_bytes(&S), p = 0;
    unsigned char *s = mtest_malloc(n);
    for (long k = 0; k < S.b.n; k++) {
        memcpy(s + p, S.origin + S.b.off[k], S.b.len[k]);
        p += S.b.len[k];
    }
    *nbytes = n;
    free_buf(&S);
    return s;
}

/* Compare the receive buffer with sentinel + the stream scattered into its blocks. */
static void check_recv(const buf_t *R, const unsigned char *stream, long n, const char *what)
{
    unsigned char *want = mtest_malloc(R->bytes);
    memset(want, SENTINEL, R->bytes);
    long p = 0;
    for (long k = 0; k < R->b.n && p < n; k++) {
        long len = R->b.len[k] < n - p ? R->b.len[k] : n - p;
        memcpy(want + (R->origin - R->mem) + R->b.off[k], stream + p, len);
        p += len;
    }
    if (memcmp(want, R->mem, R->bytes) != 0) {
        long i = 0;
        while (want[i] == R->mem[i])
            i++;
        long off = i - (R->origin - R->mem);
        int in_block = 0;
        for (long k = 0; k < R->b.n; k++)
            if (off >= R->b.off[k] && off < R->b.off[k] + R->b.len[k])
                in_block = 1;
        FAIL("%s: byte at offset %ld (%s) is 0x%02x, want 0x%02x", what, off,
             in_block ? "inside a block: wrong data" : "in a gap or margin: must stay untouched", R->mem[i], want[i]);
    }
    free(want);
}

/* ---- one exchange around the ring ---- */

enum { M_SENDRECV, M_EXPECTED, M_UNEXPECTED_ANY, M_ORDERED, NMODE };
static const char *mode_name[NMODE] = {"Sendrecv", "Irecv-barrier-Send", "Isend-barrier-Recv(ANY_SOURCE)",
                                       "ordered Send/Recv"};

static void exchange(const msg_t *sm, const msg_t *rm, int mode, int seed, long elems)
{
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    buf_t S = make_buf(sm), R = make_buf(rm);
    mtest_fill(S.mem, S.bytes, mtest_rank, seed);
    memset(R.mem, SENTINEL, R.bytes);
    MPI_Status st;
    MPI_Request rq;
    int tag = seed % 32768;
    char what[256];
    snprintf(what, sizeof what, "%s x %ld -> %s x %ld, %ld bytes, %s", sm->L.name, sm->count, rm->L.name, rm->count,
             data_bytes(&S), mode_name[mode]);
    if (mode == M_ORDERED && mtest_size == 1)
        mode = M_SENDRECV;
    switch (mode) {
    case M_SENDRECV:
        CALL(MPI_Sendrecv(S.origin, (int)sm->count, sm->L.t, right, tag, R.origin, (int)rm->count, rm->L.t, left, tag,
                          MPI_COMM_WORLD, &st));
        break;
    case M_EXPECTED:
        CALL(MPI_Irecv(R.origin, (int)rm->count, rm->L.t, left, tag, MPI_COMM_WORLD, &rq));
        MPI_Barrier(MPI_COMM_WORLD);
        CALL(MPI_Send(S.origin, (int)sm->count, sm->L.t, right, tag, MPI_COMM_WORLD)); /* matching receive is posted */
        CALL(MPI_Wait(&rq, &st));
        break;
    case M_UNEXPECTED_ANY:
        CALL(MPI_Isend(S.origin, (int)sm->count, sm->L.t, right, tag, MPI_COMM_WORLD, &rq));
        MPI_Barrier(MPI_COMM_WORLD);
        CALL(MPI_Recv(R.origin, (int)rm->count, rm->L.t, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
        CALL(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        break;
    default: /* M_ORDERED: rank 0 sends first, everyone else receives first */
        if (mtest_rank == 0) {
            CALL(MPI_Send(S.origin, (int)sm->count, sm->L.t, right, tag, MPI_COMM_WORLD));
            CALL(MPI_Recv(R.origin, (int)rm->count, rm->L.t, left, tag, MPI_COMM_WORLD, &st));
        } else {
            CALL(MPI_Recv(R.origin, (int)rm->count, rm->L.t, left, tag, MPI_COMM_WORLD, &st));
            CALL(MPI_Send(S.origin, (int)sm->count, sm->L.t, right, tag, MPI_COMM_WORLD));
        }
        break;
    }
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "%s: status source %d tag %d, want %d %d", what, st.MPI_SOURCE,
          st.MPI_TAG, left, tag);
    int cnt = -1, el = -1;
    MPI_Get_count(&st, rm->L.t, &cnt);
    MPI_Get_elements(&st, rm->L.t, &el);
    CHECK(cnt == rm->count && el == elems, "%s: Get_count %d Get_elements %d, want %ld %ld", what, cnt, el, rm->count,
          elems);
    long n;
    unsigned char *stream = stream_of(sm, left, seed, &n);
    check_recv(&R, stream, n, what);
    free(stream);
    long bad = mtest_verify(S.mem, S.bytes, mtest_rank, seed);
    CHECK(bad < 0, "%s: the send buffer changed at byte %lld", what, bad);
    free_buf(&S);
    free_buf(&R);
}

static int seed_counter = 1;

static void run_pair(msg_t (*make)(int, long), int s, int r, long n, int modes_mask, long elems)
{
    msg_t sm = make(s, n), rm = make(r, n);
    CALL(MPI_Type_commit(&sm.L.t));
    CALL(MPI_Type_commit(&rm.L.t));
    for (int mode = 0; mode < NMODE; mode++)
        if (modes_mask & (1 << mode))
            exchange(&sm, &rm, mode, seed_counter++, elems);
    lay_free(&sm.L);
    lay_free(&rm.L);
}

static void test_layouts(void)
{
    const long sizes[3] = {64, 4096, 262144}; /* doubles: 512 B, 32 KiB, 2 MiB */
    const int crossed[][2] = {{L_VEC1, L_COLUMN}, {L_INDEXED, L_SUBARRAY}, {L_NEGSTRIDE, L_NESTED},
                              {L_NESTED, L_INDEXED}, {L_NEGLB, L_VEC4}, {L_RESIZED, L_NEGSTRIDE}};
    int k = 0;
    for (int si = 0; si < 3; si++) {
        long n = sizes[si];
        /* every mode for the small and medium sizes; one mode per pair (rotating) for 2 MiB */
        for (int l = 0; l < NLAYOUT; l++) {
            int pairs[3][2] = {{l, L_CONTIG}, {L_CONTIG, l}, {l, l}};
            for (int p = 0; p < (l == L_CONTIG ? 1 : 3); p++, k++) {
                int mask = si < 2 ? (1 << NMODE) - 1 : 1 << (k % NMODE);
                run_pair(make_layout, pairs[p][0], pairs[p][1], n, mask, n);
            }
        }
        for (size_t c = 0; c < sizeof crossed / sizeof crossed[0]; c++, k++) {
            int mask = si < 2 ? (1 << NMODE) - 1 : 1 << (k % NMODE);
            run_pair(make_layout, crossed[c][0], crossed[c][1], n, mask, n);
        }
        const int spairs[][2] = {{S_PADDED, S_PADDED}, {S_PADDED, S_PACKED}, {S_PACKED, S_PADDED},
                                 {S_EVERYOTHER, S_PACKED}, {S_PACKED, S_EVERYOTHER}};
        for (size_t c = 0; c < sizeof spairs / sizeof spairs[0]; c++, k++) {
            int mask = si < 2 ? (1 << NMODE) - 1 : 1 << (k % NMODE);
            long m = n / 2; /* 13 bytes each */
            run_pair(make_struct, spairs[c][0], spairs[c][1], m, mask, 3 * m);
        }
    }
    /* one 8 MiB message: vector of 4-double blocks -> contiguous, unexpected and expected */
    run_pair(make_layout, L_VEC4, L_CONTIG, 1L << 20, (1 << M_UNEXPECTED_ANY) | (1 << M_EXPECTED), 1L << 20);
}

/* Partial elements: 7 ints received with a type of 3 ints. */
static void test_counts(void)
{
    int right = (mtest_rank + 1) % mtest_size, left = (mtest_rank + mtest_size - 1) % mtest_size;
    int out[9], in[9], cnt, el;
    MPI_Count elx = -1;
    MPI_Status st;
    MPI_Datatype three;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    for (int i = 0; i < 9; i++)
        out[i] = 100 * mtest_rank + i;

    for (int n = 6; n <= 7; n++) {
        memset(in, 0x5a, sizeof in);
        CALL(MPI_Sendrecv(out, n, MPI_INT, right, 50 + n, in, 3, three, left, 50 + n, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, three, &cnt);
        MPI_Get_elements(&st, three, &el);
        MPI_Get_elements_x(&st, three, &elx);
        CHECK(cnt == (n == 6 ? 2 : MPI_UNDEFINED), "%d ints as 3-int type: Get_count %d, want %d", n, cnt,
              n == 6 ? 2 : MPI_UNDEFINED);
        CHECK(el == n && elx == n, "%d ints as 3-int type: Get_elements %d, _x %lld", n, el, (long long)elx);
        for (int i = 0; i < 9; i++) {
            int want = i < n ? 100 * left + i : 0x5a5a5a5a;
            CHECK(in[i] == want, "%d ints as 3-int type: int %d is %d, want %d", n, i, in[i], want);
        }
    }
    /* a vector type of 2 x 3 ints with gaps, received partially: 4 ints -> elements 4 */
    MPI_Datatype v;
    MPI_Type_vector(2, 3, 4, MPI_INT, &v);
    MPI_Type_commit(&v);
    memset(in, 0x5a, sizeof in);
    CALL(MPI_Sendrecv(out, 4, MPI_INT, right, 60, in, 1, v, left, 60, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, v, &cnt);
    MPI_Get_elements(&st, v, &el);
    CHECK(cnt == MPI_UNDEFINED && el == 4, "4 ints as vector(2,3,4): Get_count %d Get_elements %d", cnt, el);
    const int want4[8] = {0, 1, 2, -1, 3, -1, -1, -1};
    for (int i = 0; i < 8; i++) {
        int want = want4[i] < 0 ? 0x5a5a5a5a : 100 * left + want4[i];
        CHECK(in[i] == want, "4 ints as vector(2,3,4): int %d is %d, want %d", i, in[i], want);
    }
    /* Get_elements counts basic elements of a struct: 2 x {char, int, double} = 6 */
    msg_t s = make_struct(S_PADDED, 2);
    MPI_Type_commit(&s.L.t);
    char sb[64], rb[64];
    memset(sb, 1, sizeof sb);
    CALL(MPI_Sendrecv(sb, 2, s.L.t, right, 61, rb, 2, s.L.t, left, 61, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, s.L.t, &cnt);
    MPI_Get_elements(&st, s.L.t, &el);
    CHECK(cnt == 2 && el == 6, "2 structs: Get_count %d Get_elements %d, want 2 6", cnt, el);
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == 26, "2 structs: Get_count(MPI_BYTE) %d, want 26", cnt);
    lay_free(&s.L);
    MPI_Type_free(&three);
    MPI_Type_free(&v);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_counts();
    test_layouts();
    return MTest_Finalize();
}
