/*
 * io_view.c - MPI-IO file views: displacement, etype and derived, non-contiguous filetypes
 * (vector, indexed, struct with holes), tiled from the displacement. Each rank writes through
 * its view; the file is then read whole through the default view and compared with the bytes
 * the view should have touched (holes keep their old contents). Also MPI_File_get_view, offsets
 * in etypes, the representations ("internal" accepted, "external32" refused), and etypes and
 * filetypes whose typemaps a file cannot have (negative or decreasing displacements, overlaps in
 * a writable file: MPI_ERR_IO, or MPI_ERR_TYPE as Open MPI says).
 */
#include "mtest.h"

#define FILE_BYTES 4096
#define FILL 0x5a

/* Byte offsets (relative to the tile) the filetype selects, in typemap order. */
typedef struct {
    const char *name;
    MPI_Datatype type;
    int nbytes; /* data bytes per tile */
    int offsets[64];
    MPI_Aint extent;
} Tile;

static void add_run(Tile *t, int at, int len)
{
    for (int i = 0; i < len; i++)
        t->offsets[t->nbytes++] = at + i;
}

static Tile vector_tile(void)
{
    Tile t = {"vector", MPI_DATATYPE_NULL, 0, {0}, 0};
    MPI_Type_vector(3, 2, 4, MPI_INT, &t.type); /* ints 0,1, 4,5, 8,9 */
    for (int b = 0; b < 3; b++)
        add_run(&t, b * 16, 8);
    t.extent = 40;
    return t;
}

static Tile indexed_tile(void)
{
    Tile t = {"indexed", MPI_DATATYPE_NULL, 0, {0}, 0};
    int lens[3] = {1, 3, 2}, disps[3] = {1, 4, 10}; /* ints */
    MPI_Datatype idx;
    MPI_Type_indexed(3, lens, disps, MPI_INT, &idx);
    MPI_Type_create_resized(idx, 0, 64, &t.type); /* trailing hole */
    MPI_Type_free(&idx);
    for (int b = 0; b < 3; b++)
        add_run(&t, disps[b] * 4, lens[b] * 4);
    t.extent = 64;
    return t;
}

static Tile struct_tile(void)
{
    Tile t = {"struct", MPI_DATATYPE_NULL, 0, {0}, 0};
    int lens[2] = {2, 1};
    MPI_Aint disps[2] = {8, 24};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Datatype s;
    MPI_Type_create_struct(2, lens, disps, types, &s);
    MPI_Type_create_resized(s, 0, 32, &t.type);
    MPI_Type_free(&s);
    add_run(&t, 8, 8);
    add_run(&t, 24, 4);
    t.extent = 32;
    return t;
}

/* Every rank writes `tiles` tiles of its own data through `t` at displacement disp(rank). */
static void check_tile(const char *path, Tile *t)
{
    const int tiles = 3;
    MPI_Offset disp = 16 + (MPI_Offset)mtest_rank * tiles * t->extent;
    MPI_File fh;
    MPI_Status st;
    MPI_Type_commit(&t->type);
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    if (mtest_rank == 0) {
        unsigned char fill[FILE_BYTES];
        memset(fill, FILL, sizeof fill);
        CALL(MPI_File_write_at(fh, 0, fill, FILE_BYTES, MPI_BYTE, &st));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_set_view(fh, disp, MPI_INT, t->type, "native", MPI_INFO_NULL));
    int n = tiles * t->nbytes / 4, data[64 * 3];
    for (int i = 0; i < n; i++)
        data[i] = mtest_rank * 1000 + i;
    /* in two pieces: half through explicit offsets (in etypes), half through the pointer */
    CALL(MPI_File_write_at_all(fh, 0, data, n / 2, MPI_INT, &st));
    CALL(MPI_File_seek(fh, n / 2, MPI_SEEK_SET));
    CALL(MPI_File_write_all(fh, data + n / 2, n - n / 2, MPI_INT, &st));
    MPI_Offset pos = -1;
    CALL(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, n);
    int back[64 * 3];
    CALL(MPI_File_read_at(fh, 1, back, n - 1, MPI_INT, &st));
    for (int i = 0; i < n - 1; i++)
        if (back[i] != data[i + 1]) {
            FAIL("%s: view int %d reads %d, want %d", t->name, i + 1, back[i], data[i + 1]);
            break;
        }
    /* get_view hands back what was set (a derived filetype as a new handle) */
    MPI_Offset d;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    CALL(MPI_File_get_view(fh, &d, &et, &ft, rep));
    CHECK_EQ(d, disp);
    CHECK(et == MPI_INT, "%s: etype is not MPI_INT", t->name);
    CHECK(strcmp(rep, "native") == 0, "datarep %s", rep);
    int ftsize = 0;
    MPI_Type_size(ft, &ftsize);
    CHECK_EQ(ftsize, t->nbytes);
    MPI_Type_free(&ft);
    /* the whole file through the default view: data where the views are, FILL elsewhere */
    CALL(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned char want[FILE_BYTES], got[FILE_BYTES];
    memset(want, FILL, sizeof want);
    for (int r = 0; r < mtest_size; r++)
        for (int k = 0; k < tiles; k++)
            for (int b = 0; b < t->nbytes; b++) {
                int i = (k * t->nbytes + b) / 4, v = r * 1000 + i;
                size_t at = 16 + (size_t)r * tiles * t->extent + k * t->extent + t->offsets[b];
                memcpy(&want[at], (unsigned char *)&v + b % 4, 1);
            }
    CALL(MPI_File_read_at(fh, 0, got, FILE_BYTES, MPI_BYTE, &st));
    for (int i = 0; i < FILE_BYTES; i++)
        if (got[i] != want[i]) {
            FAIL("%s: file byte %d is %#x, want %#x", t->name, i, got[i], want[i]);
            break;
        }
    CALL(MPI_File_close(&fh));
    MPI_Type_free(&t->type);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0)
        CALL(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void check_representations(const char *path)
{
    MPI_File fh;
    MTEST_OPEN_SCRATCH(MPI_COMM_WORLD, path, &fh);
    /* Reflex has no external32 files yet: refused with the right class (MPICH accepts it) */
    int rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL);
    if (rc != MPI_SUCCESS)
        CHECK_CLASS(rc, MPI_ERR_UNSUPPORTED_DATAREP);
    CHECK_CLASS(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL),
                MPI_ERR_UNSUPPORTED_DATAREP);
    /* "internal" is optional (Open MPI refuses it); Reflex takes it as native */
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "internal", MPI_INFO_NULL);
    if (rc != MPI_SUCCESS)
        CHECK_CLASS(rc, MPI_ERR_UNSUPPORTED_DATAREP);
    /* a filetype that is not made of etypes */
    CHECK_CLASS(MPI_File_set_view(fh, 0, MPI_INT, MPI_CHAR, "native", MPI_INFO_NULL), MPI_ERR_ARG);
    CALL(MPI_File_close(&fh));
}

/* an indexed type of ints at these int displacements, committed */
static MPI_Datatype ints_at(int d0, int len0, int d1, int len1)
{
    int disps[2] = {d0, d1}, lens[2] = {len0, len1};
    MPI_Datatype t;
    CALL(MPI_Type_indexed(2, lens, disps, MPI_INT, &t));
    CALL(MPI_Type_commit(&t));
    return t;
}

/* MPI-3.1 13.3: etypes and filetypes with a negative or decreasing displacement, or (in a file
 * open for writing) a byte reached twice, are refused; the standard names no class: Reflex says
 * MPI_ERR_IO as MPICH does, Open MPI MPI_ERR_TYPE */
static void check_typemaps(const char *path)
{
    MPI_File fh;
    MTEST_OPEN_SCRATCH(MPI_COMM_WORLD, path, &fh);
    MPI_Datatype bad[3] = {ints_at(-2, 1, 2, 1), ints_at(3, 1, 0, 1), ints_at(0, 3, 1, 1)};
    for (int i = 0; i < 3; i++) {
        CHECK_CLASS2(MPI_File_set_view(fh, 0, MPI_INT, bad[i], "native", MPI_INFO_NULL), MPI_ERR_IO, MPI_ERR_TYPE);
        CHECK_CLASS2(MPI_File_set_view(fh, 0, bad[i], bad[i], "native", MPI_INFO_NULL), MPI_ERR_IO, MPI_ERR_TYPE);
        MPI_Type_free(&bad[i]);
    }
    MPI_Datatype fine = ints_at(0, 2, 3, 1);
    CALL(MPI_File_set_view(fh, 0, MPI_INT, fine, "native", MPI_INFO_NULL));
    MPI_Type_free(&fine);
    CALL(MPI_File_close(&fh));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    char dir[256], path[300];
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "view");
    Tile tiles[3] = {vector_tile(), indexed_tile(), struct_tile()};
    for (int i = 0; i < 3; i++)
        check_tile(path, &tiles[i]);
    check_typemaps(path);
    check_representations(path);
    mtest_rmtmpdir(MPI_COMM_WORLD, dir);
    return MTest_Finalize();
}
