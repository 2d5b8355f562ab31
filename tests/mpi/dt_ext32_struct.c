/*
 * dt_ext32_struct.c - "external32" (MPI-3.1 section 4.3) of a struct of mixed types: two
 * struct {char, int, double} (C padding 3 bytes after the char) pack to 2 x 13 big-endian
 * bytes with no padding, Pack_external_size says 26, and Unpack_external restores the values
 * without touching the padding.
 * Separate from dt_pack.c because MPICH 4.0.2 dies with SIGILL inside MPI_Pack_external and
 * MPI_Pack_external_size for any struct type (xfail=mpich in the testlist); Open MPI passes.
 */
#include "mtest.h"
#include <stddef.h>

struct cid {
    char c;
    int i;
    double d;
};

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bl[3] = {1, 1, 1};
    MPI_Aint d[3] = {offsetof(struct cid, c), offsetof(struct cid, i), offsetof(struct cid, d)};
    MPI_Datatype ty[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE}, s, t;
    MPI_Type_create_struct(3, bl, d, ty, &s);
    MPI_Type_create_resized(s, 0, sizeof(struct cid), &t);
    MPI_Type_free(&s);
    CALL(MPI_Type_commit(&t));

    struct cid in[2] = {{'A', 258, -2.0}, {'z', -1, 1.0}}, back[2];
    const unsigned char want[26] = {0x41, 0, 0, 0x01, 0x02, 0xc0, 0, 0, 0, 0, 0, 0, 0,
                                    0x7a, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
    unsigned char out[64];
    MPI_Aint size = -1, pos = 0;
    CALL(MPI_Pack_external_size("external32", 2, t, &size));
    CHECK_EQ(size, 26);
    memset(out, 0xee, sizeof out);
    CALL(MPI_Pack_external("external32", in, 2, t, out, sizeof out, &pos));
    CHECK_EQ(pos, 26);
    for (int i = 0; i < 26; i++)
        CHECK(out[i] == want[i], "external32 byte %d is 0x%02x, want 0x%02x", i, out[i], want[i]);
    CHECK(out[26] == 0xee, "Pack_external wrote past its 26 bytes");
    memset(back, 0x5a, sizeof back);
    pos = 0;
    CALL(MPI_Unpack_external("external32", out, 26, &pos, back, 2, t));
    CHECK_EQ(pos, 26);
    for (int k = 0; k < 2; k++) {
        CHECK(back[k].c == in[k].c && back[k].i == in[k].i && back[k].d == in[k].d, "struct %d differs after Unpack_external", k);
        const unsigned char *pad = (const unsigned char *)&back[k] + 1;
        CHECK(pad[0] == 0x5a && pad[1] == 0x5a && pad[2] == 0x5a, "struct %d: padding written by Unpack_external", k);
    }
    MPI_Type_free(&t);
    return MTest_Finalize();
}
