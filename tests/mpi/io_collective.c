/*
 * io_collective.c - collective MPI-IO through aggregators (two-phase I/O) and without them.
 * Each rank owns every size-th block of a file (a strided view: the interleaved pattern that
 * collective buffering exists for) and writes and reads it with MPI_File_write_all/read_all
 * under several hint sets: automatic, enabled with a small buffer (many rounds) and one
 * aggregator, disabled. Checked: the file's bytes (read whole through the default view),
 * bytes no rank owns keep their old contents, the individual file pointer, the count of a
 * collective read that runs past the end of the file, and an error on one rank reaching all.
 */
#include "mtest.h"

#define BLOCK 12 /* bytes per block: not a power of two, so blocks straddle windows */
#define BLOCKS 700 /* blocks per rank */
#define FILL 0x5a

static unsigned char byte_of(int rank, int i)
{
    return (unsigned char)(rank * 37 + i * 11 + 1);
}

/* Blocks r, r + size, ... of BLOCK bytes, with every (size + 1)-th slot left to nobody. */
static MPI_Datatype strided_view(void)
{
    MPI_Datatype v, t;
    MPI_Type_vector(1, BLOCK, BLOCK * (mtest_size + 1), MPI_BYTE, &v);
    MPI_Type_create_resized(v, 0, BLOCK * (mtest_size + 1), &t);
    MPI_Type_free(&v);
    MPI_Type_commit(&t);
    return t;
}

static MPI_Info hints(const char *cb, const char *nodes, const char *buffer)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", cb);
    MPI_Info_set(info, "romio_cb_read", cb);
    if (nodes)
        MPI_Info_set(info, "cb_nodes", nodes);
    if (buffer)
        MPI_Info_set(info, "cb_buffer_size", buffer);
    return info;
}

/* The whole file as rank 0 reads it through the default view, compared with the pattern. */
static void check_file(MPI_File fh, const char *label)
{
    int n = BLOCKS * BLOCK * (mtest_size + 1);
    unsigned char *all = mtest_malloc(n);
    MPI_Status st;
    CALL(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    if (mtest_rank == 0) {
        CALL(MPI_File_read_at(fh, 0, all, n, MPI_BYTE, &st));
        long bad = 0;
        for (int i = 0; i < n && bad < 3; i++) {
            int slot = (i / BLOCK) % (mtest_size + 1), k = i / BLOCK / (mtest_size + 1);
            unsigned char want = slot == mtest_size ? FILL : byte_of(slot, k * BLOCK + i % BLOCK);
            if (all[i] != want && ++bad)
                FAIL("%s: file byte %d is %d, expected %d", label, i, all[i], want);
        }
    }
    free(all);
}

static void round_trip(const char *path, MPI_Info info, const char *label)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype view = strided_view();
    int n = BLOCKS * BLOCK, count;
    unsigned char *mine = mtest_malloc(n), *back = mtest_malloc(n + BLOCK);
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
    if (mtest_rank == 0) {
        int total = n * (mtest_size + 1);
        unsigned char *fill = mtest_malloc(total);
        memset(fill, FILL, total);
        CALL(MPI_File_write_at(fh, 0, fill, total, MPI_BYTE, &st));
        free(fill);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        mine[i] = byte_of(mtest_rank, i);
    CALL(MPI_File_set_view(fh, mtest_rank * BLOCK, MPI_BYTE, view, "native", info));
    CALL(MPI_File_write_all(fh, mine, n, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == n, "%s: write_all count %d, expected %d", label, count, n);
    MPI_Offset pos;
    CALL(MPI_File_get_position(fh, &pos));
    CHECK(pos == n, "%s: position after write_all %lld, expected %d", label, (long long)pos, n);
    CALL(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_sync(fh));
    /* Read back from offset 0, asking for one block more than there is. */
    memset(back, 0, n + BLOCK);
    CALL(MPI_File_read_at_all(fh, 0, back, n + BLOCK, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    /* Every rank's next block would lie past the end of the file. */
    CHECK(count == n, "%s: read_at_all count %d, expected %d", label, count, n);
    long long bad = 0;
    for (int i = 0; i < n && bad < 3; i++)
        if (back[i] != mine[i] && ++bad)
            FAIL("%s: data byte %d read back %d, expected %d", label, i, back[i], mine[i]);
    check_file(fh, label);
    CALL(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0)
        CALL(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Type_free(&view);
    free(mine);
    free(back);
}

/* Each rank reads through its strided view from a file that ends in the middle of the data:
 * the count is the bytes before the end. */
static void short_read(const char *path, MPI_Info info, const char *label)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype view = strided_view();
    int stride = BLOCK * (mtest_size + 1), tiles = 10, count;
    int total = tiles * stride + 5; /* 5 bytes into tile 10 */
    CALL(MPI_File_open(MPI_COMM_WORLD, path,
                       MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, info, &fh));
    if (mtest_rank == 0) {
        unsigned char *fill = mtest_malloc(total);
        memset(fill, FILL, total);
        CALL(MPI_File_write_at(fh, 0, fill, total, MPI_BYTE, &st));
        free(fill);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_set_view(fh, mtest_rank * BLOCK, MPI_BYTE, view, "native", info));
    unsigned char buf[BLOCK * 20];
    CALL(MPI_File_read_all(fh, buf, sizeof buf, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    int expect = tiles * BLOCK + (mtest_rank == 0 ? 5 : 0);
    CHECK(count == expect, "%s: short read_all count %d, expected %d", label, count, expect);
    MPI_Offset pos;
    CALL(MPI_File_get_position(fh, &pos));
    CHECK(pos == expect, "%s: position %lld after the short read, expected %d", label,
          (long long)pos, expect);
    CALL(MPI_File_close(&fh));
    MPI_Type_free(&view);
}

/* MPI_File_get_info reports the collective-buffering hints in effect: the defaults where none
 * was given (ROMIO's names and default buffer size), the given ones otherwise. */
static void hints_reported(const char *path)
{
    MPI_File fh;
    MPI_Info given = hints("enable", NULL, NULL), used;
    char value[64];
    int flag;
    CALL(MPI_File_open(MPI_COMM_WORLD, path,
                       MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, given, &fh));
    CALL(MPI_File_get_info(fh, &used));
    MPI_Info_get(used, "romio_cb_write", sizeof value - 1, value, &flag);
    CHECK(flag && strcmp(value, "enable") == 0, "romio_cb_write reported as '%s'", flag ? value : "");
    MPI_Info_get(used, "cb_buffer_size", sizeof value - 1, value, &flag);
    CHECK(flag && strcmp(value, "16777216") == 0, "cb_buffer_size reported as '%s'",
          flag ? value : "");
    MPI_Info_get(used, "cb_nodes", sizeof value - 1, value, &flag);
    CHECK(flag && atoi(value) >= 1, "cb_nodes reported as '%s'", flag ? value : "");
    MPI_Info_free(&used);
    MPI_Info_free(&given);
    CALL(MPI_File_close(&fh));
}

/* A wrong count on one rank (not a whole number of etypes) is an error on every rank, and
 * nobody hangs. */
static void error_everywhere(const char *path)
{
    MPI_File fh;
    MPI_Status st;
    int data[8] = {0};
    CALL(MPI_File_open(MPI_COMM_WORLD, path,
                       MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                       MPI_INFO_NULL, &fh));
    CALL(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int bytes = mtest_rank == mtest_size - 1 ? 6 : 8;
    int rc = MPI_File_write_at_all(fh, mtest_rank * 2, data, bytes, MPI_BYTE, &st);
    if (mtest_rank == mtest_size - 1)
        CHECK_CLASS(rc, MPI_ERR_TYPE);
    else if (mtest_size > 1)
        CHECK(rc != MPI_SUCCESS, "rank %d: write_at_all succeeded although rank %d failed",
              mtest_rank, mtest_size - 1);
    CALL(MPI_File_close(&fh));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    char dir[256], path[300];
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "coll");
    struct {
        const char *label, *cb, *nodes, *buffer;
    } sets[] = {
        {"automatic", "automatic", NULL, NULL},
        {"enabled, 1 aggregator, 4 KiB rounds", "enable", "1", "4096"},
        {"enabled, 2 aggregators, 5000-byte rounds", "enable", "2", "5000"},
        {"disabled", "disable", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        MPI_Info info = hints(sets[i].cb, sets[i].nodes, sets[i].buffer);
        round_trip(path, info, sets[i].label);
        short_read(path, info, sets[i].label);
        MPI_Info_free(&info);
    }
    hints_reported(path);
    error_everywhere(path);
    mtest_rmtmpdir(MPI_COMM_WORLD, dir);
    return MTest_Finalize();
}
