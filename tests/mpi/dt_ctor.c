/*
 * dt_ctor.c - derived datatype constructors and queries (MPI-3.1 chapter 4), checked against
 * hand-computed values: contiguous, vector, hvector, indexed, hindexed, indexed_block,
 * hindexed_block, create_struct, subarray (C and Fortran order), darray (block, cyclic, none;
 * two process grids), resized, dup, and a type nested five levels deep. For each type:
 * Type_size(_x), get_extent(_x), get_true_extent(_x), the type map (which elements, in which
 * order: packed from an arena where int i holds the value i, then unpacked into a sentinel-filled
 * arena to see that nothing else is written), get_envelope and get_contents (the constructor's
 * arguments back; derived inner types come back as handles that are freed here).
 * Also: negative strides and displacements, resized lower bounds, zero-length blocks, the
 * alignment padding of create_struct, MPI_LB/MPI_UB markers (MPI-1, removed in MPI-3.0; not on
 * Open MPI, whose mpi.h turns them into a static assertion), default and user names,
 * Type_match_size, Type_create_f90_{real,integer,complex}, and type attributes with copy/delete
 * callbacks on Type_dup, Type_free and Type_delete_attr.
 * Purely local: every rank runs the same checks.
 */
#include "mtest.h"
#include <stddef.h>

#define ARENA 4096
#define ORIGIN 2048 /* arena index of the buffer origin: negative displacements stay inside */
#define SENTINEL (-999999)
#define MAXC 64

static int arena[ARENA];

static void fill_arena(void)
{
    for (int i = 0; i < ARENA; i++)
        arena[i] = i - ORIGIN;
}

/* Type size, extent and true extent (int and _x queries must agree). */
#define CHECK_BOUNDS(t, size, lb, extent, tlb, textent) \
    check_bounds(__FILE__, __LINE__, #t, t, size, lb, extent, tlb, textent)
static void check_bounds(const char *file, int line, const char *name, MPI_Datatype t, long size, long lb,
                         long extent, long tlb, long textent)
{
    int sz = -1;
    MPI_Count szx = -1, lbx = -1, exx = -1, tlbx = -1, texx = -1;
    MPI_Aint l = -1, e = -1, tl = -1, te = -1;
    MPI_Type_size(t, &sz);
    MPI_Type_size_x(t, &szx);
    MPI_Type_get_extent(t, &l, &e);
    MPI_Type_get_extent_x(t, &lbx, &exx);
    MPI_Type_get_true_extent(t, &tl, &te);
    MPI_Type_get_true_extent_x(t, &tlbx, &texx);
    if (sz != size || szx != size || l != lb || e != extent || lbx != lb || exx != extent || tl != tlb ||
        te != textent || tlbx != tlb || texx != textent) {
        char what[160];
        snprintf(what, sizeof what, "bounds of %s", name);
        mtest_report(file, line, what,
                     "size %d/%lld (want %ld), lb %ld/%lld (want %ld), extent %ld/%lld (want %ld), "
                     "true lb %ld/%lld (want %ld), true extent %ld/%lld (want %ld)",
                     sz, (long long)szx, size, (long)l, (long long)lbx, lb, (long)e, (long long)exx, extent,
                     (long)tl, (long long)tlbx, tlb, (long)te, (long long)texx, textent);
    }
}

/* The type map of `count` x t over ints: packing from the arena gives the int displacements in
 * type-map order; unpacking into a sentinel arena writes exactly those ints and nothing else. */
#define CHECK_MAP(t, count, ...)                                                    \
    do {                                                                            \
        const int want_[] = {__VA_ARGS__};                                          \
        check_map(__FILE__, __LINE__, #t, t, count, want_, (int)(sizeof want_ / sizeof want_[0])); \
    } while (0)
static void check_map(const char *file, int line, const char *name, MPI_Datatype t, int count, const int *want,
                      int n)
{
    int psize = -1, pos = 0, got[ARENA];
    char what[160];
    snprintf(what, sizeof what, "type map of %d x %s", count, name);
    fill_arena();
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    if (psize < n * (int)sizeof(int) || psize > (int)sizeof got) {
        mtest_report(file, line, what, "MPI_Pack_size %d, want >= %d", psize, n * (int)sizeof(int));
        return;
    }
    MPI_Pack(&arena[ORIGIN], count, t, got, (int)sizeof got, &pos, MPI_COMM_WORLD);
    if (pos != n * (int)sizeof(int)) {
        mtest_report(file, line, what, "packed %d bytes, want %d", pos, n * (int)sizeof(int));
        return;
    }
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            mtest_report(file, line, what, "element %d is int displacement %d, want %d", i, got[i], want[i]);
            return;
        }
    for (int i = 0; i < ARENA; i++)
        arena[i] = SENTINEL;
    pos = 0;
    MPI_Unpack(got, n * (int)sizeof(int), &pos, &arena[ORIGIN], count, t, MPI_COMM_WORLD);
    for (int i = 0; i < ARENA; i++) {
        int d = i - ORIGIN, expected = SENTINEL;
        for (int k = 0; k < n; k++)
            if (want[k] == d)
                expected = d;
        if (arena[i] != expected) {
            mtest_report(file, line, what, "after unpack, int at displacement %d is %d, want %d", d, arena[i],
                         expected);
            return;
        }
    }
}

/* get_envelope counts and combiner. */
#define CHECK_ENV(t, ni, na, nd, comb) check_env(__FILE__, __LINE__, #t, t, ni, na, nd, comb)
static void check_env(const char *file, int line, const char *name, MPI_Datatype t, int ni, int na, int nd, int comb)
{
    int i = -1, a = -1, d = -1, c = -1;
    MPI_Type_get_envelope(t, &i, &a, &d, &c);
    if (i != ni || a != na || d != nd || c != comb) {
        char what[160];
        snprintf(what, sizeof what, "envelope of %s", name);
        mtest_report(file, line, what, "(ints %d, addrs %d, types %d, combiner %d), want (%d, %d, %d, %d)", i, a, d,
                     c, ni, na, nd, comb);
    }
}

static int is_named(MPI_Datatype t)
{
    int i, a, d, c;
    MPI_Type_get_envelope(t, &i, &a, &d, &c);
    return c == MPI_COMBINER_NAMED;
}

/* get_contents: the integers, addresses and types must be the constructor's arguments. Types
 * are compared by handle for predefined ones; derived ones are compared with the given
 * (size, extent) and freed. */
struct contents {
    int ni, na, nd;
    int ints[MAXC];
    MPI_Aint addrs[MAXC];
    MPI_Datatype types[MAXC];
};

#define CHECK_CONTENTS(t, want) check_contents(__FILE__, __LINE__, #t, t, want)
static void check_contents(const char *file, int line, const char *name, MPI_Datatype t, const struct contents *w)
{
    int ints[MAXC];
    MPI_Aint addrs[MAXC];
    MPI_Datatype types[MAXC];
    char what[160];
    snprintf(what, sizeof what, "contents of %s", name);
    for (int k = 0; k < MAXC; k++)
        types[k] = MPI_DATATYPE_NULL;
    int rc = MPI_Type_get_contents(t, w->ni, w->na, w->nd, ints, addrs, types);
    if (rc != MPI_SUCCESS) {
        mtest_report(file, line, what, "MPI_Type_get_contents returned %d", rc);
        return;
    }
    for (int k = 0; k < w->ni; k++)
        if (ints[k] != w->ints[k])
            mtest_report(file, line, what, "integer %d is %d, want %d", k, ints[k], w->ints[k]);
    for (int k = 0; k < w->na; k++)
        if (addrs[k] != w->addrs[k])
            mtest_report(file, line, what, "address %d is %ld, want %ld", k, (long)addrs[k], (long)w->addrs[k]);
    for (int k = 0; k < w->nd; k++) {
        if (is_named(w->types[k])) {
            if (types[k] != w->types[k])
                mtest_report(file, line, what, "datatype %d is not the predefined type given", k);
            continue;
        }
        /* a derived type: an equivalent handle the caller must free */
        int s1 = -1, s2 = -2;
        MPI_Aint l1, e1, l2 = -1, e2 = -1;
        MPI_Type_size(w->types[k], &s1);
        MPI_Type_get_extent(w->types[k], &l1, &e1);
        if (types[k] == MPI_DATATYPE_NULL) {
            mtest_report(file, line, what, "datatype %d is MPI_DATATYPE_NULL", k);
            continue;
        }
        MPI_Type_size(types[k], &s2);
        MPI_Type_get_extent(types[k], &l2, &e2);
        if (s1 != s2 || l1 != l2 || e1 != e2)
            mtest_report(file, line, what, "datatype %d: size %d lb %ld extent %ld, want %d %ld %ld", k, s2, (long)l2,
                         (long)e2, s1, (long)l1, (long)e1);
        CALL(MPI_Type_free(&types[k]));
    }
}

#define commit(t) CALL(MPI_Type_commit(t))

static void test_simple(void)
{
    MPI_Datatype t;

    /* contiguous(3, int) */
    MPI_Type_contiguous(3, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 12, 0, 12, 0, 12);
    CHECK_MAP(t, 2, 0, 1, 2, 3, 4, 5);
    CHECK_ENV(t, 1, 0, 1, MPI_COMBINER_CONTIGUOUS);
    CHECK_CONTENTS(t, (&(struct contents){1, 0, 1, {3}, {0}, {MPI_INT}}));
    MPI_Type_free(&t);
    CHECK(t == MPI_DATATYPE_NULL, "Type_free must set the handle to MPI_DATATYPE_NULL");

    /* vector(3, 2, 4, int): ints 0 1, 4 5, 8 9; two of them: next starts at extent 10 */
    MPI_Type_vector(3, 2, 4, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 24, 0, 40, 0, 40);
    CHECK_MAP(t, 2, 0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19);
    CHECK_ENV(t, 3, 0, 1, MPI_COMBINER_VECTOR);
    CHECK_CONTENTS(t, (&(struct contents){3, 0, 1, {3, 2, 4}, {0}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* vector with a negative stride: blocks at 0, -4, -8 */
    MPI_Type_vector(3, 2, -4, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 24, -32, 40, -32, 40);
    CHECK_MAP(t, 1, 0, 1, -4, -3, -8, -7);
    CHECK_CONTENTS(t, (&(struct contents){3, 0, 1, {3, 2, -4}, {0}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* hvector(3, 2, 20 bytes, int): ints 0 1, 5 6, 10 11 */
    MPI_Type_create_hvector(3, 2, 20, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 24, 0, 48, 0, 48);
    CHECK_MAP(t, 1, 0, 1, 5, 6, 10, 11);
    CHECK_ENV(t, 2, 1, 1, MPI_COMBINER_HVECTOR);
    CHECK_CONTENTS(t, (&(struct contents){2, 1, 1, {3, 2}, {20}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* indexed with a zero-length block and a negative-free but unsorted layout */
    int bl[3] = {2, 0, 3}, dis[3] = {5, -2, 0};
    MPI_Type_indexed(3, bl, dis, MPI_INT, &t);
    commit(&t);
    /* the zero-length block at -2 has no entries, so it does not move the bounds */
    CHECK_BOUNDS(t, 20, 0, 28, 0, 28);
    CHECK_MAP(t, 1, 5, 6, 0, 1, 2);
    CHECK_MAP(t, 2, 5, 6, 0, 1, 2, 12, 13, 7, 8, 9);
    CHECK_ENV(t, 7, 0, 1, MPI_COMBINER_INDEXED);
    CHECK_CONTENTS(t, (&(struct contents){7, 0, 1, {3, 2, 0, 3, 5, -2, 0}, {0}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* hindexed with a negative byte displacement: ints -2, 3 4 */
    int hbl[2] = {1, 2};
    MPI_Aint hdis[2] = {-8, 12};
    MPI_Type_create_hindexed(2, hbl, hdis, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 12, -8, 28, -8, 28);
    CHECK_MAP(t, 1, -2, 3, 4);
    CHECK_ENV(t, 3, 2, 1, MPI_COMBINER_HINDEXED);
    CHECK_CONTENTS(t, (&(struct contents){3, 2, 1, {2, 1, 2}, {-8, 12}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* indexed_block(2, 2, {4, 1}): ints 4 5, 1 2 (type-map order follows the displacements given) */
    int ibd[2] = {4, 1};
    MPI_Type_create_indexed_block(2, 2, ibd, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 16, 4, 20, 4, 20);
    CHECK_MAP(t, 1, 4, 5, 1, 2);
    CHECK_ENV(t, 4, 0, 1, MPI_COMBINER_INDEXED_BLOCK);
    CHECK_CONTENTS(t, (&(struct contents){4, 0, 1, {2, 2, 4, 1}, {0}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* hindexed_block(3, 1, {8, 0, -4} bytes): ints 2, 0, -1 */
    MPI_Aint hbd[3] = {8, 0, -4};
    MPI_Type_create_hindexed_block(3, 1, hbd, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 12, -4, 16, -4, 16);
    CHECK_MAP(t, 1, 2, 0, -1);
    CHECK_ENV(t, 2, 3, 1, MPI_COMBINER_HINDEXED_BLOCK);
    CHECK_CONTENTS(t, (&(struct contents){2, 3, 1, {3, 1}, {8, 0, -4}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* zero-count types: empty, size 0, extent 0 */
    MPI_Type_contiguous(0, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 0, 0, 0, 0, 0);
    MPI_Type_free(&t);
    MPI_Type_vector(0, 3, 5, MPI_DOUBLE, &t);
    commit(&t);
    CHECK_BOUNDS(t, 0, 0, 0, 0, 0);
    MPI_Type_free(&t);
}

static void test_resized_dup(void)
{
    MPI_Datatype r, t, d;

    /* resized(int, lb -4, extent 16): one int at 0, a stride of 4 ints */
    MPI_Type_create_resized(MPI_INT, -4, 16, &r);
    commit(&r);
    CHECK_BOUNDS(r, 4, -4, 16, 0, 4);
    CHECK_ENV(r, 0, 2, 1, MPI_COMBINER_RESIZED);
    CHECK_CONTENTS(r, (&(struct contents){0, 2, 1, {0}, {-4, 16}, {MPI_INT}}));
    MPI_Type_contiguous(3, r, &t);
    commit(&t);
    CHECK_BOUNDS(t, 12, -4, 48, 0, 36);
    CHECK_MAP(t, 1, 0, 4, 8);
    CHECK_CONTENTS(t, (&(struct contents){1, 0, 1, {3}, {0}, {r}}));
    MPI_Type_free(&t);

    /* vector of the resized type uses its extent as the stride unit */
    MPI_Type_vector(2, 2, 3, r, &t);
    commit(&t);
    /* blocks at 0 (ints 0, 4) and 3 * 16 bytes (ints 12, 16); lb -4, ub 48 + 2 * 16 - 4 = 76 */
    CHECK_BOUNDS(t, 16, -4, 80, 0, 68);
    CHECK_MAP(t, 1, 0, 4, 12, 16);
    MPI_Type_free(&t);

    /* dup of a derived type: same bounds and map, combiner DUP, contents give the original */
    MPI_Type_dup(r, &d);
    CHECK_BOUNDS(d, 4, -4, 16, 0, 4);
    CHECK_ENV(d, 0, 0, 1, MPI_COMBINER_DUP);
    CHECK_CONTENTS(d, (&(struct contents){0, 0, 1, {0}, {0}, {r}}));
    CHECK_MAP(d, 3, 0, 4, 8);
    MPI_Type_free(&d);

    /* dup of a predefined type */
    MPI_Type_dup(MPI_DOUBLE, &d);
    CHECK_BOUNDS(d, 8, 0, 8, 0, 8);
    CHECK_ENV(d, 0, 0, 1, MPI_COMBINER_DUP);
    CHECK_CONTENTS(d, (&(struct contents){0, 0, 1, {0}, {0}, {MPI_DOUBLE}}));
    MPI_Type_free(&d);

    /* shrinking: resized to an extent smaller than the data makes copies overlap in memory */
    MPI_Type_create_resized(r, 8, 4, &t);
    commit(&t);
    CHECK_BOUNDS(t, 4, 8, 4, 0, 4);
    CHECK_MAP(t, 3, 0, 1, 2);
    MPI_Type_free(&t);
    MPI_Type_free(&r);

    /* freeing the inner type does not affect a type built from it */
    MPI_Type_contiguous(2, MPI_INT, &r);
    MPI_Type_vector(2, 1, 2, r, &t);
    MPI_Type_free(&r);
    commit(&t);
    CHECK_BOUNDS(t, 16, 0, 24, 0, 24);
    CHECK_MAP(t, 1, 0, 1, 4, 5);
    MPI_Type_free(&t);
}

struct cid {
    char c;
    int i;
    double d;
};
struct dc {
    double d;
    char c;
};

static void test_struct(void)
{
    MPI_Datatype t, u;

    /* {char, int, double} at their C offsets: size 13, extent sizeof = 16 */
    int bl[3] = {1, 1, 1};
    MPI_Aint dis[3] = {offsetof(struct cid, c), offsetof(struct cid, i), offsetof(struct cid, d)};
    MPI_Datatype ty[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(3, bl, dis, ty, &t);
    commit(&t);
    CHECK_BOUNDS(t, 13, 0, 16, 0, 16);
    CHECK_ENV(t, 4, 3, 3, MPI_COMBINER_STRUCT);
    CHECK_CONTENTS(t, (&(struct contents){4, 3, 3, {3, 1, 1, 1}, {0, 4, 8}, {MPI_CHAR, MPI_INT, MPI_DOUBLE}}));
    {
        /* packed bytes: c, i, d of element 0 then element 1 */
        struct cid in[2] = {{'x', -7, 2.5}, {'y', 1 << 20, -1e300}}, out[2];
        unsigned char packed[64], want[26];
        int pos = 0;
        MPI_Pack(in, 2, t, packed, sizeof packed, &pos, MPI_COMM_WORLD);
        CHECK_EQ(pos, 26);
        for (int k = 0; k < 2; k++) {
            memcpy(want + 13 * k, &in[k].c, 1);
            memcpy(want + 13 * k + 1, &in[k].i, 4);
            memcpy(want + 13 * k + 5, &in[k].d, 8);
        }
        CHECK(memcmp(packed, want, 26) == 0, "packed struct {char,int,double} x 2 differs");
        memset(out, 0x5a, sizeof out);
        pos = 0;
        MPI_Unpack(packed, 26, &pos, out, 2, t, MPI_COMM_WORLD);
        for (int k = 0; k < 2; k++) {
            CHECK(out[k].c == in[k].c && out[k].i == in[k].i && out[k].d == in[k].d, "unpacked struct %d differs", k);
            unsigned char *pad = (unsigned char *)&out[k] + 1;
            CHECK(pad[0] == 0x5a && pad[1] == 0x5a && pad[2] == 0x5a, "struct %d: padding bytes written", k);
        }
    }
    MPI_Type_free(&t);

    /* {double, char}: data ends at 9; MPICH pads the extent to the double alignment (16) as
     * MPI-3.1 4.1.6 describes, an implementation may also report 9 (alignment is
     * implementation-defined). Accept either; resized to sizeof fixes it to 16 for arrays. */
    int bl2[2] = {1, 1};
    MPI_Aint dis2[2] = {offsetof(struct dc, d), offsetof(struct dc, c)};
    MPI_Datatype ty2[2] = {MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(2, bl2, dis2, ty2, &t);
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    CHECK(lb == 0 && (ext == 9 || ext == 16), "{double,char}: lb %ld extent %ld, want 0 and 9 or 16", (long)lb,
          (long)ext);
    CHECK(tlb == 0 && text == 9, "{double,char}: true lb %ld true extent %ld, want 0 9", (long)tlb, (long)text);
    MPI_Type_create_resized(t, 0, sizeof(struct dc), &u);
    commit(&u);
    CHECK_BOUNDS(u, 9, 0, 16, 0, 9);
    MPI_Type_free(&u);
    MPI_Type_free(&t);

    /* struct with blocks of ints at negative and positive displacements, one zero-length */
    int bl3[3] = {2, 0, 1};
    MPI_Aint dis3[3] = {-12, 100, 20};
    MPI_Datatype ty3[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, bl3, dis3, ty3, &t);
    commit(&t);
    CHECK_BOUNDS(t, 12, -12, 36, -12, 36);
    CHECK_MAP(t, 2, -3, -2, 5, 6, 7, 14);
    MPI_Type_free(&t);

#ifndef OPEN_MPI
    /* MPI_LB / MPI_UB markers (MPI-1; removed in MPI-3.0, kept by MPICH and Reflex): they set
     * the bounds and carry no data. (Open MPI 4.1 removes them from mpi.h.) */
    int bl4[3] = {1, 1, 1};
    MPI_Aint dis4[3] = {-8, 0, 32};
    MPI_Datatype ty4[3] = {MPI_LB, MPI_INT, MPI_UB};
    MPI_Type_create_struct(3, bl4, dis4, ty4, &t);
    commit(&t);
    CHECK_BOUNDS(t, 4, -8, 40, 0, 4);
    CHECK_MAP(t, 3, 0, 10, 20);
    MPI_Type_free(&t);
#endif
}

/* Five levels: indexed -> vector -> hvector (negative stride) -> struct -> contiguous. */
static void test_nested(void)
{
    MPI_Datatype i1, v2, h3, s4, c5;
    int bl[2] = {1, 2}, dis[2] = {0, 3};
    MPI_Type_indexed(2, bl, dis, MPI_INT, &i1); /* ints 0, 3 4; extent 20 */
    MPI_Type_vector(2, 1, 2, i1, &v2);          /* + 10 ints: 0 3 4 10 13 14; extent 60 */
    MPI_Type_create_hvector(2, 1, -64, v2, &h3); /* + -16 ints; lb -64, ub 60 */
    int bl4[2] = {1, 1};
    MPI_Aint dis4[2] = {0, 200};
    MPI_Datatype ty4[2] = {h3, MPI_INT};
    MPI_Type_create_struct(2, bl4, dis4, ty4, &s4); /* + int 50; lb -64, ub 204 */
    MPI_Type_contiguous(2, s4, &c5);                /* second copy + 268 bytes = 67 ints */
    commit(&v2);
    commit(&c5);
    CHECK_BOUNDS(i1, 12, 0, 20, 0, 20);
    CHECK_BOUNDS(v2, 24, 0, 60, 0, 60);
    CHECK_MAP(v2, 1, 0, 3, 4, 10, 13, 14);
    CHECK_BOUNDS(h3, 48, -64, 124, -64, 124);
    CHECK_BOUNDS(s4, 52, -64, 268, -64, 268);
    CHECK_BOUNDS(c5, 104, -64, 536, -64, 536);
    CHECK_MAP(c5, 1, 0, 3, 4, 10, 13, 14, -16, -13, -12, -6, -3, -2, 50, 67, 70, 71, 77, 80, 81, 51, 54, 55, 61, 64,
              65, 117);
    CHECK_ENV(s4, 3, 2, 2, MPI_COMBINER_STRUCT);
    CHECK_CONTENTS(s4, (&(struct contents){3, 2, 2, {2, 1, 1}, {0, 200}, {h3, MPI_INT}}));
    CHECK_CONTENTS(h3, (&(struct contents){2, 1, 1, {2, 1}, {-64}, {v2}}));
    /* the inner handles stay valid after the outer types are freed, and vice versa */
    MPI_Type_free(&i1);
    MPI_Type_free(&v2);
    MPI_Type_free(&h3);
    MPI_Type_free(&s4);
    commit(&c5);
    CHECK_MAP(c5, 1, 0, 3, 4, 10, 13, 14, -16, -13, -12, -6, -3, -2, 50, 67, 70, 71, 77, 80, 81, 51, 54, 55, 61, 64,
              65, 117);
    MPI_Type_free(&c5);
}

static void test_subarray(void)
{
    MPI_Datatype t;
    int sizes[2] = {4, 5}, sub[2] = {2, 3}, starts[2] = {1, 1};

    /* C order: rows 1-2, columns 1-3 of a 4 x 5 int matrix */
    MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 24, 0, 80, 24, 32);
    CHECK_MAP(t, 1, 6, 7, 8, 11, 12, 13);
    CHECK_MAP(t, 2, 6, 7, 8, 11, 12, 13, 26, 27, 28, 31, 32, 33);
    CHECK_ENV(t, 8, 0, 1, MPI_COMBINER_SUBARRAY);
    CHECK_CONTENTS(t, (&(struct contents){8, 0, 1, {2, 4, 5, 2, 3, 1, 1, MPI_ORDER_C}, {0}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* Fortran order: element (i, j) at i + 4 j */
    MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 24, 0, 80, 20, 40);
    CHECK_MAP(t, 1, 5, 6, 9, 10, 13, 14);
    CHECK_CONTENTS(t, (&(struct contents){8, 0, 1, {2, 4, 5, 2, 3, 1, 1, MPI_ORDER_FORTRAN}, {0}, {MPI_INT}}));
    MPI_Type_free(&t);

    /* 3-D C order, 3 x 3 x 4, the 1 x 2 x 2 block at (2, 1, 2) */
    int s3[3] = {3, 3, 4}, u3[3] = {1, 2, 2}, st3[3] = {2, 1, 2};
    MPI_Type_create_subarray(3, s3, u3, st3, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    /* 2*12 + 1*4 + 2 = 30: 30 31, 34 35 */
    CHECK_BOUNDS(t, 16, 0, 144, 120, 24);
    CHECK_MAP(t, 1, 30, 31, 34, 35);
    MPI_Type_free(&t);
}

static void test_darray(void)
{
    MPI_Datatype t;
    int g1[1] = {10}, ps3[1] = {3};
    int dblock[1] = {MPI_DISTRIBUTE_BLOCK}, dcyc[1] = {MPI_DISTRIBUTE_CYCLIC};
    int dflt[1] = {MPI_DISTRIBUTE_DFLT_DARG}, two[1] = {2};

    /* 1-D block over 3 processes: blocks of ceil(10/3) = 4; rank 1 holds 4-7, rank 2 holds 8-9 */
    MPI_Type_create_darray(3, 1, 1, g1, dblock, dflt, ps3, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 16, 0, 40, 16, 16);
    CHECK_MAP(t, 1, 4, 5, 6, 7);
    CHECK_ENV(t, 8, 0, 1, MPI_COMBINER_DARRAY);
    CHECK_CONTENTS(t, (&(struct contents){8, 0, 1,
                                          {3, 1, 1, 10, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 3, MPI_ORDER_C},
                                          {0}, {MPI_INT}}));
    MPI_Type_free(&t);
    MPI_Type_create_darray(3, 2, 1, g1, dblock, dflt, ps3, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 8, 0, 40, 32, 8);
    CHECK_MAP(t, 1, 8, 9);
    MPI_Type_free(&t);

    /* cyclic(1): rank 1 of 3 holds 1, 4, 7; cyclic(2): 2 3, 8 9 */
    MPI_Type_create_darray(3, 1, 1, g1, dcyc, dflt, ps3, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 12, 0, 40, 4, 28);
    CHECK_MAP(t, 1, 1, 4, 7);
    MPI_Type_free(&t);
    MPI_Type_create_darray(3, 1, 1, g1, dcyc, two, ps3, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 16, 0, 40, 8, 32);
    CHECK_MAP(t, 1, 2, 3, 8, 9);
    MPI_Type_free(&t);

    /* 2-D C order 4 x 6 on a 2 x 2 grid, rows block, columns cyclic(1); rank 3 = grid (1, 1):
     * rows 2-3, columns 1 3 5 */
    int g2[2] = {4, 6}, d2[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int a2[2] = {MPI_DISTRIBUTE_DFLT_DARG, 1}, p2[2] = {2, 2};
    MPI_Type_create_darray(4, 3, 2, g2, d2, a2, p2, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 24, 0, 96, 52, 44);
    CHECK_MAP(t, 1, 13, 15, 17, 19, 21, 23);
    MPI_Type_free(&t);
    /* rank 2 = grid (1, 0): rows 2-3, columns 0 2 4 */
    MPI_Type_create_darray(4, 2, 2, g2, d2, a2, p2, MPI_ORDER_C, MPI_INT, &t);
    commit(&t);
    CHECK_MAP(t, 1, 12, 14, 16, 18, 20, 22);
    MPI_Type_free(&t);

    /* 2-D Fortran order 4 x 6 on a 2 x 1 grid, first dimension block, second not distributed;
     * rank 1 holds i = 2-3 of every column j: i + 4 j */
    int dn[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE}, an[2] = {MPI_DISTRIBUTE_DFLT_DARG,
                                                                     MPI_DISTRIBUTE_DFLT_DARG};
    int pn[2] = {2, 1};
    MPI_Type_create_darray(2, 1, 2, g2, dn, an, pn, MPI_ORDER_FORTRAN, MPI_INT, &t);
    commit(&t);
    CHECK_BOUNDS(t, 48, 0, 96, 8, 88);
    CHECK_MAP(t, 1, 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23);
    MPI_Type_free(&t);
}

static void test_names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    struct {
        MPI_Datatype t;
        const char *name;
    } predef[] = {{MPI_INT, "MPI_INT"}, {MPI_DOUBLE, "MPI_DOUBLE"}, {MPI_CHAR, "MPI_CHAR"}, {MPI_BYTE, "MPI_BYTE"},
                  {MPI_PACKED, "MPI_PACKED"}, {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"}};
    for (size_t k = 0; k < sizeof predef / sizeof predef[0]; k++) {
        name[0] = 0;
        MPI_Type_get_name(predef[k].t, name, &len);
        CHECK(strcmp(name, predef[k].name) == 0 && len == (int)strlen(predef[k].name),
              "default name '%s' (len %d), want '%s'", name, len, predef[k].name);
    }
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    name[0] = 'x';
    name[1] = 0;
    MPI_Type_get_name(t, name, &len);
    CHECK(len == 0 && name[0] == 0, "name of a new derived type: '%s' (len %d), want empty", name, len);
    CALL(MPI_Type_set_name(t, "my pair"));
    MPI_Type_get_name(t, name, &len);
    CHECK(strcmp(name, "my pair") == 0 && len == 7, "name '%s' (len %d), want 'my pair'", name, len);
    CALL(MPI_Type_set_name(t, "renamed"));
    MPI_Type_get_name(t, name, &len);
    CHECK(strcmp(name, "renamed") == 0 && len == 7, "name '%s' (len %d), want 'renamed'", name, len);
    MPI_Type_free(&t);
}

static void test_match_f90(void)
{
    MPI_Datatype t;
    int sz = -1;
    CALL(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t));
    MPI_Type_size(t, &sz);
    CHECK(sz == 4 && is_named(t), "match_size(INTEGER, 4): size %d", sz);
    CALL(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 8, &t));
    MPI_Type_size(t, &sz);
    CHECK(sz == 8 && is_named(t), "match_size(INTEGER, 8): size %d", sz);
    CALL(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
    MPI_Type_size(t, &sz);
    CHECK(sz == 8 && is_named(t), "match_size(REAL, 8): size %d", sz);
    CALL(MPI_Type_match_size(MPI_TYPECLASS_REAL, 4, &t));
    MPI_Type_size(t, &sz);
    CHECK(sz == 4 && is_named(t), "match_size(REAL, 4): size %d", sz);
    CALL(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t));
    MPI_Type_size(t, &sz);
    CHECK(sz == 16 && is_named(t), "match_size(COMPLEX, 16): size %d", sz);

    /* f90 parameterised types: size from precision/range; envelope F90_* with the arguments */
    int ints[4];
    MPI_Aint addrs[1];
    MPI_Datatype types[1];
    CALL(MPI_Type_create_f90_real(6, MPI_UNDEFINED, &t));
    MPI_Type_size(t, &sz);
    CHECK_EQ(sz, 4);
    CHECK_ENV(t, 2, 0, 0, MPI_COMBINER_F90_REAL);
    MPI_Type_get_contents(t, 2, 0, 0, ints, addrs, types);
    CHECK(ints[0] == 6 && ints[1] == MPI_UNDEFINED, "f90_real contents %d %d", ints[0], ints[1]);
    CALL(MPI_Type_create_f90_real(15, MPI_UNDEFINED, &t));
    MPI_Type_size(t, &sz);
    CHECK_EQ(sz, 8);
    CALL(MPI_Type_create_f90_real(MPI_UNDEFINED, 300, &t));
    MPI_Type_size(t, &sz);
    CHECK_EQ(sz, 8);
    CALL(MPI_Type_create_f90_integer(9, &t));
    MPI_Type_size(t, &sz);
    CHECK_EQ(sz, 4);
    CHECK_ENV(t, 1, 0, 0, MPI_COMBINER_F90_INTEGER);
    CALL(MPI_Type_create_f90_integer(18, &t));
    MPI_Type_size(t, &sz);
    CHECK_EQ(sz, 8);
    CALL(MPI_Type_create_f90_complex(15, MPI_UNDEFINED, &t));
    MPI_Type_size(t, &sz);
    CHECK_EQ(sz, 16);
    CHECK_ENV(t, 2, 0, 0, MPI_COMBINER_F90_COMPLEX);
}

/* ---- attributes ---- */
static int copies, deletes, last_deleted;

static int copy_cb(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag)
{
    (void)t;
    (void)key;
    CHECK(extra == (void *)&copies, "copy callback: extra_state %p, want %p", extra, (void *)&copies);
    copies++;
    *(void **)out = (char *)in + 1000; /* the copy gets a different value */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_cb(MPI_Datatype t, int key, void *val, void *extra)
{
    (void)t;
    (void)key;
    (void)extra;
    deletes++;
    last_deleted = (int)(intptr_t)val;
    return MPI_SUCCESS;
}

static void test_attrs(void)
{
    int key, key_nocopy, key_dup, flag = -1;
    void *val = NULL;
    MPI_Datatype t, d;
    CALL(MPI_Type_create_keyval(copy_cb, delete_cb, &key, &copies));
    CALL(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &key_nocopy, NULL));
    CALL(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &key_dup, NULL));
    MPI_Type_vector(2, 1, 3, MPI_INT, &t);

    MPI_Type_get_attr(t, key, &val, &flag);
    CHECK(flag == 0, "attribute found before set");
    CALL(MPI_Type_set_attr(t, key, (void *)(intptr_t)7));
    CALL(MPI_Type_set_attr(t, key_nocopy, (void *)(intptr_t)8));
    CALL(MPI_Type_set_attr(t, key_dup, (void *)(intptr_t)9));
    MPI_Type_get_attr(t, key, &val, &flag);
    CHECK(flag == 1 && val == (void *)(intptr_t)7, "get_attr: flag %d value %p, want 1 and 7", flag, val);

    /* set again: the old value is deleted first */
    CALL(MPI_Type_set_attr(t, key, (void *)(intptr_t)17));
    CHECK(deletes == 1 && last_deleted == 7, "replace: %d deletes, last %d; want 1 delete of 7", deletes,
          last_deleted);

    /* dup: copy callback gives 1017; NULL_COPY_FN drops; DUP_FN copies the value */
    CALL(MPI_Type_dup(t, &d));
    CHECK_EQ(copies, 1);
    MPI_Type_get_attr(d, key, &val, &flag);
    CHECK(flag == 1 && val == (void *)(intptr_t)1017, "dup'ed attribute: flag %d value %p, want 1017", flag, val);
    MPI_Type_get_attr(d, key_nocopy, &val, &flag);
    CHECK(flag == 0, "NULL_COPY_FN attribute copied on dup");
    MPI_Type_get_attr(d, key_dup, &val, &flag);
    CHECK(flag == 1 && val == (void *)(intptr_t)9, "DUP_FN attribute: flag %d value %p, want 9", flag, val);

    /* delete_attr calls the delete callback; free calls it for what is left */
    CALL(MPI_Type_delete_attr(d, key));
    CHECK(deletes == 2 && last_deleted == 1017, "delete_attr: %d deletes, last %d", deletes, last_deleted);
    MPI_Type_get_attr(d, key, &val, &flag);
    CHECK(flag == 0, "attribute still there after delete_attr");
    MPI_Type_free(&d);
    CHECK_EQ(deletes, 2);
    MPI_Type_free(&t);
    CHECK(deletes == 3 && last_deleted == 17, "Type_free: %d deletes, last %d; want 3, 17", deletes, last_deleted);

    /* attributes on a predefined type */
    CALL(MPI_Type_set_attr(MPI_INT, key, (void *)(intptr_t)5));
    MPI_Type_get_attr(MPI_INT, key, &val, &flag);
    CHECK(flag == 1 && val == (void *)(intptr_t)5, "attribute on MPI_INT: flag %d value %p", flag, val);
    CALL(MPI_Type_delete_attr(MPI_INT, key));
    CHECK(deletes == 4 && last_deleted == 5, "delete on MPI_INT: %d deletes, last %d", deletes, last_deleted);

    CALL(MPI_Type_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "Type_free_keyval must set MPI_KEYVAL_INVALID");
    MPI_Type_free_keyval(&key_nocopy);
    MPI_Type_free_keyval(&key_dup);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_simple();
    test_resized_dup();
    test_struct();
    test_nested();
    test_subarray();
    test_darray();
    test_names();
    test_match_f90();
    test_attrs();
    return MTest_Finalize();
}
