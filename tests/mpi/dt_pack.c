/*
 * dt_pack.c - MPI_Pack/MPI_Unpack/MPI_Pack_size (MPI-3.1 section 4.2) and the canonical
 * "external32" representation (section 4.3, MPI_Pack_external/Unpack_external/Pack_external_size).
 *
 * 1. Several values packed one after another into one buffer (an int, a vector of doubles with
 *    gaps, two structs {char, int, double}, a subarray), positions advancing by exactly the data
 *    size, Pack_size an upper bound; unpacked in the same order into sentinel-filled buffers:
 *    the same values, the same positions, gaps untouched.
 * 2. Packed data sent as MPI_PACKED and received with the derived type, and a derived type
 *    received as MPI_PACKED and unpacked (partner, or self when unpaired).
 * 3. external32, byte-exact against big-endian vectors written here by hand: int, negative int,
 *    short, float, double, long long, a vector of ints; sizes from Pack_external_size; and back
 *    through Unpack_external. (A struct of mixed types is in dt_ext32_struct.c: MPICH 4.0.2
 *    dies with SIGILL in MPI_Pack_external(_size) of such a type.)
 */
#include "mtest.h"
#include <stddef.h>

struct cid {
    char c;
    int i;
    double d;
};

static MPI_Datatype cid_type(void)
{
    int bl[3] = {1, 1, 1};
    MPI_Aint d[3] = {offsetof(struct cid, c), offsetof(struct cid, i), offsetof(struct cid, d)};
    MPI_Datatype ty[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE}, s, r;
    MPI_Type_create_struct(3, bl, d, ty, &s);
    MPI_Type_create_resized(s, 0, sizeof(struct cid), &r);
    MPI_Type_free(&s);
    MPI_Type_commit(&r);
    return r;
}

static void test_sequence(void)
{
    MPI_Datatype vec, st = cid_type(), sub;
    MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &vec); /* doubles 0 1, 3 4, 6 7, 9 10 */
    MPI_Type_commit(&vec);
    int sizes[2] = {4, 4}, subs[2] = {2, 2}, starts[2] = {1, 2};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_SHORT, &sub); /* 6 7, 10 11 */
    MPI_Type_commit(&sub);

    int ival = -12345;
    double dv[11];
    for (int i = 0; i < 11; i++)
        dv[i] = 0.5 + i;
    struct cid sv[2] = {{'p', 7, -3.25}, {'q', -8, 1e-300}};
    short sh[16];
    for (int i = 0; i < 16; i++)
        sh[i] = (short)(1000 + i);

    int s1, s2, s3, s4;
    MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &s1);
    MPI_Pack_size(1, vec, MPI_COMM_WORLD, &s2);
    MPI_Pack_size(2, st, MPI_COMM_WORLD, &s3);
    MPI_Pack_size(1, sub, MPI_COMM_WORLD, &s4);
    CHECK(s1 >= 4 && s2 >= 64 && s3 >= 26 && s4 >= 8, "Pack_size %d %d %d %d, want >= 4 64 26 8", s1, s2, s3, s4);
    int total = s1 + s2 + s3 + s4;
    char *buf = mtest_malloc(total);
    int pos = 0;
    CALL(MPI_Pack(&ival, 1, MPI_INT, buf, total, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, 4);
    CALL(MPI_Pack(dv, 1, vec, buf, total, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, 4 + 64);
    CALL(MPI_Pack(sv, 2, st, buf, total, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, 4 + 64 + 26);
    CALL(MPI_Pack(sh, 1, sub, buf, total, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, 4 + 64 + 26 + 8);
    int packed = pos;

    /* homogeneous: the packed bytes are the data in type-map order */
    {
        char want[102];
        int p = 0;
        memcpy(want, &ival, 4);
        p = 4;
        const int di[8] = {0, 1, 3, 4, 6, 7, 9, 10};
        for (int i = 0; i < 8; i++, p += 8)
            memcpy(want + p, &dv[di[i]], 8);
        for (int k = 0; k < 2; k++) {
            memcpy(want + p, &sv[k].c, 1);
            memcpy(want + p + 1, &sv[k].i, 4);
            memcpy(want + p + 5, &sv[k].d, 8);
            p += 13;
        }
        const int si[4] = {6, 7, 10, 11};
        for (int i = 0; i < 4; i++, p += 2)
            memcpy(want + p, &sh[si[i]], 2);
        CHECK(packed == 102 && memcmp(want, buf, 102) == 0, "packed sequence differs from the type-map order bytes");
    }

    int ival2 = 0;
    double dv2[11];
    struct cid sv2[2];
    short sh2[16];
    for (int i = 0; i < 11; i++)
        dv2[i] = -1;
    memset(sv2, 0x5a, sizeof sv2);
    for (int i = 0; i < 16; i++)
        sh2[i] = -1;
    pos = 0;
    CALL(MPI_Unpack(buf, packed, &pos, &ival2, 1, MPI_INT, MPI_COMM_WORLD));
    CHECK_EQ(pos, 4);
    CALL(MPI_Unpack(buf, packed, &pos, dv2, 1, vec, MPI_COMM_WORLD));
    CHECK_EQ(pos, 68);
    CALL(MPI_Unpack(buf, packed, &pos, sv2, 2, st, MPI_COMM_WORLD));
    CHECK_EQ(pos, 94);
    CALL(MPI_Unpack(buf, packed, &pos, sh2, 1, sub, MPI_COMM_WORLD));
    CHECK_EQ(pos, 102);
    CHECK_EQ(ival2, ival);
    for (int i = 0; i < 11; i++) {
        double want = (i % 3 == 2) ? -1 : 0.5 + i;
        CHECK(dv2[i] == want, "unpacked vector double %d is %g, want %g", i, dv2[i], want);
    }
    for (int k = 0; k < 2; k++) {
        CHECK(sv2[k].c == sv[k].c && sv2[k].i == sv[k].i && sv2[k].d == sv[k].d, "unpacked struct %d differs", k);
        const unsigned char *pad = (const unsigned char *)&sv2[k] + 1;
        CHECK(pad[0] == 0x5a && pad[1] == 0x5a && pad[2] == 0x5a, "struct %d: padding written by unpack", k);
    }
    for (int i = 0; i < 16; i++) {
        int in = (i == 6 || i == 7 || i == 10 || i == 11);
        CHECK(sh2[i] == (in ? 1000 + i : -1), "unpacked subarray short %d is %d", i, sh2[i]);
    }

    free(buf);
    MPI_Type_free(&vec);
    MPI_Type_free(&st);
    MPI_Type_free(&sub);
}

static void test_send_packed(void)
{
    int peer = mtest_partner();
    MPI_Datatype vec;
    MPI_Type_vector(100, 3, 5, MPI_INT, &vec); /* 300 ints out of 498 */
    MPI_Type_commit(&vec);
    int out[500], in[500], cnt;
    for (int i = 0; i < 500; i++)
        out[i] = mtest_rank * 100000 + i;
    char pk[2000];
    MPI_Status st;

    /* pack -> MPI_PACKED -> vector */
    int pos = 0;
    MPI_Pack(out, 1, vec, pk, sizeof pk, &pos, MPI_COMM_WORLD);
    CHECK_EQ(pos, 1200);
    for (int i = 0; i < 500; i++)
        in[i] = -7;
    CALL(MPI_Sendrecv(pk, pos, MPI_PACKED, peer, 70, in, 1, vec, peer, 70, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, vec, &cnt);
    CHECK_EQ(cnt, 1);
    for (int i = 0; i < 500; i++) {
        int want = (i < 498 && i % 5 < 3) ? peer * 100000 + i : -7;
        if (in[i] != want) {
            FAIL("MPI_PACKED -> vector: int %d is %d, want %d", i, in[i], want);
            break;
        }
    }

    /* vector -> MPI_PACKED -> unpack */
    memset(pk, 0, sizeof pk);
    CALL(MPI_Sendrecv(out, 1, vec, peer, 71, pk, sizeof pk, MPI_PACKED, peer, 71, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_PACKED, &cnt);
    CHECK_EQ(cnt, 1200);
    for (int i = 0; i < 500; i++)
        in[i] = -7;
    pos = 0;
    CALL(MPI_Unpack(pk, cnt, &pos, in, 1, vec, MPI_COMM_WORLD));
    CHECK_EQ(pos, 1200);
    for (int i = 0; i < 500; i++) {
        int want = (i < 498 && i % 5 < 3) ? peer * 100000 + i : -7;
        if (in[i] != want) {
            FAIL("vector -> MPI_PACKED -> Unpack: int %d is %d, want %d", i, in[i], want);
            break;
        }
    }
    MPI_Type_free(&vec);
}

/* Pack one item in external32, compare with the hand-written bytes, unpack and compare back. */
#define EXT32(buf, count, type, ...)                                                  \
    do {                                                                              \
        const unsigned char want_[] = {__VA_ARGS__};                                  \
        check_ext32(__FILE__, __LINE__, #buf " as " #type, buf, count, type, want_, sizeof want_); \
    } while (0)
static void check_ext32(const char *file, int line, const char *what, const void *data, int count, MPI_Datatype t,
                        const unsigned char *want, int n)
{
    unsigned char out[256];
    MPI_Aint size = -1, pos = 0;
    MPI_Pack_external_size("external32", count, t, &size);
    if (size != n)
        mtest_report(file, line, what, "Pack_external_size %ld, want %d", (long)size, n);
    memset(out, 0xee, sizeof out);
    int rc = MPI_Pack_external("external32", data, count, t, out, sizeof out, &pos);
    if (rc != MPI_SUCCESS || pos != n) {
        mtest_report(file, line, what, "Pack_external rc %d position %ld, want %d", rc, (long)pos, n);
        return;
    }
    if (memcmp(out, want, n) != 0) {
        char got[200] = "", exp[200] = "";
        for (int i = 0; i < n && i < 32; i++) {
            snprintf(got + strlen(got), sizeof got - strlen(got), "%02x ", out[i]);
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%02x ", want[i]);
        }
        mtest_report(file, line, what, "external32 bytes %s, want %s", got, exp);
    }
    {
        /* unpack into a zeroed copy, then compare only with a re-pack (gaps are not data) */
        char zero[256];
        memset(zero, 0, sizeof zero);
        pos = 0;
        rc = MPI_Unpack_external("external32", out, n, &pos, zero, count, t);
        if (rc != MPI_SUCCESS || pos != n)
            mtest_report(file, line, what, "Unpack_external rc %d position %ld, want %d", rc, (long)pos, n);
        unsigned char again[256];
        MPI_Aint p2 = 0;
        MPI_Pack_external("external32", zero, count, t, again, sizeof again, &p2);
        if (p2 != n || memcmp(again, want, n) != 0)
            mtest_report(file, line, what, "Unpack_external then Pack_external does not give the same bytes");
    }
}

static void test_external32(void)
{
    int one = 1, m2 = -2, ints3[3] = {0x01020304, 7, -1};
    short s = 0x1234;
    float f = 1.5f;
    double d1 = 1.0, dm = -2.0, dpi = 3.141592653589793;
    long long ll = 0x0102030405060708LL;
    unsigned char uc = 0xab;

    EXT32(&one, 1, MPI_INT, 0x00, 0x00, 0x00, 0x01);
    EXT32(&m2, 1, MPI_INT, 0xff, 0xff, 0xff, 0xfe);
    EXT32(ints3, 3, MPI_INT, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff);
    EXT32(&s, 1, MPI_SHORT, 0x12, 0x34);
    EXT32(&f, 1, MPI_FLOAT, 0x3f, 0xc0, 0x00, 0x00);
    EXT32(&d1, 1, MPI_DOUBLE, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);
    EXT32(&dm, 1, MPI_DOUBLE, 0xc0, 0x00, 0, 0, 0, 0, 0, 0);
    EXT32(&dpi, 1, MPI_DOUBLE, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18);
    EXT32(&ll, 1, MPI_LONG_LONG, 1, 2, 3, 4, 5, 6, 7, 8);
    EXT32(&uc, 1, MPI_UNSIGNED_CHAR, 0xab);

    /* vector(2, 1, 2, int) over {1, 9, 0x100, 9}: 00000001 00000100 */
    int vi[4] = {1, 9, 0x100, 9};
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    EXT32(vi, 1, v, 0, 0, 0, 1, 0, 0, 1, 0);
    MPI_Type_free(&v);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_sequence();
    test_send_packed();
    test_external32();
    return MTest_Finalize();
}
