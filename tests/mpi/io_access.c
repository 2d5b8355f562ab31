/*
 * io_access.c - MPI-IO data access: explicit offsets, individual file pointers, collective,
 * nonblocking and split collective forms, statuses (short reads at the end of the file with
 * MPI_Get_count/MPI_Get_elements), and interleaved blocks written collectively by P ranks
 * through a strided view, then read back by P-1 ranks (another layout) and by one rank.
 */
#include "mtest.h"

#define N 100 /* ints per rank per region */
#define B 7   /* ints per interleaved block */
#define K 5   /* blocks per rank */

static int value(int rank, int i) { return rank * 100000 + i; }

static void fill(int *buf, int n, int rank)
{
    for (int i = 0; i < n; i++)
        buf[i] = value(rank, i);
}

static void check_ints(const int *buf, int n, int rank, const char *what)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != value(rank, i)) {
            FAIL("%s: int %d is %d, want %d", what, i, buf[i], value(rank, i));
            return;
        }
}

static void check_count(MPI_Status *st, MPI_Datatype dt, int want)
{
    int count = -1, elements = -1;
    MPI_Get_count(st, dt, &count);
    MPI_Get_elements(st, dt, &elements);
    CHECK_EQ(count, want);
    CHECK_EQ(elements, want);
}

/* Region 0: write_at/read_at; region 1: the file pointer; region 2: collective forms. */
static void check_blocking(MPI_File fh)
{
    int out[N], in[N], peer = (mtest_rank + 1) % mtest_size;
    MPI_Offset region = (MPI_Offset)mtest_size * N * sizeof(int), pos = -1;
    MPI_Status st;
    fill(out, N, mtest_rank);
    CALL(MPI_File_write_at(fh, mtest_rank * N * sizeof(int), out, N, MPI_INT, &st));
    check_count(&st, MPI_INT, N);
    CALL(MPI_File_seek(fh, region + mtest_rank * N * sizeof(int), MPI_SEEK_SET));
    CALL(MPI_File_write(fh, out, N, MPI_INT, &st));
    CALL(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, region + (mtest_rank + 1) * N * sizeof(int));
    CALL(MPI_File_write_at_all(fh, 2 * region + mtest_rank * N * sizeof(int), out, N, MPI_INT, &st));
    check_count(&st, MPI_INT, N);
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_read_at(fh, peer * N * sizeof(int), in, N, MPI_INT, &st));
    check_count(&st, MPI_INT, N);
    check_ints(in, N, peer, "read_at");
    CALL(MPI_File_seek(fh, region + peer * N * sizeof(int), MPI_SEEK_SET));
    CALL(MPI_File_read(fh, in, N, MPI_INT, &st));
    check_ints(in, N, peer, "read");
    CALL(MPI_File_seek(fh, -(MPI_Offset)(N * sizeof(int)), MPI_SEEK_CUR));
    CALL(MPI_File_read_all(fh, in, N, MPI_INT, &st));
    check_ints(in, N, peer, "read_all after SEEK_CUR");
    CALL(MPI_File_read_at_all(fh, 2 * region + peer * N * sizeof(int), in, N, MPI_INT, &st));
    check_ints(in, N, peer, "read_at_all");
}

static void check_short_reads(MPI_File fh)
{
    int in[10];
    MPI_Status st;
    MPI_Offset size = 0;
    CALL(MPI_File_get_size(fh, &size));
    CALL(MPI_File_seek(fh, -2 * (MPI_Offset)sizeof(int), MPI_SEEK_END));
    CALL(MPI_File_read(fh, in, 10, MPI_INT, &st));
    check_count(&st, MPI_INT, 2);
    CHECK_EQ(in[1], value(mtest_size - 1, N - 1));
    CALL(MPI_File_read(fh, in, 10, MPI_INT, &st));
    check_count(&st, MPI_INT, 0);
    CALL(MPI_File_read_at(fh, size + 100, in, 10, MPI_INT, &st));
    check_count(&st, MPI_INT, 0);
    /* 6 bytes: one whole int and half of another */
    CALL(MPI_File_read_at(fh, size - 6, in, 2, MPI_INT, &st));
    int count = 0, bytes = 0;
    MPI_Get_count(&st, MPI_INT, &count);
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    CHECK_EQ(count, MPI_UNDEFINED);
    CHECK_EQ(bytes, 6);
}

static void check_nonblocking(MPI_File fh)
{
    int out[N], in[N], peer = (mtest_rank + 1) % mtest_size;
    MPI_Offset base = 3 * (MPI_Offset)mtest_size * N * sizeof(int);
    MPI_Request req[2];
    MPI_Status st[2];
    fill(out, N, mtest_rank + 7);
    CALL(MPI_File_iwrite_at(fh, base + mtest_rank * N * sizeof(int), out, N, MPI_INT, &req[0]));
    CALL(MPI_Wait(&req[0], &st[0]));
    check_count(&st[0], MPI_INT, N);
    CALL(MPI_File_seek(fh, base + mtest_rank * N * sizeof(int), MPI_SEEK_SET));
    CALL(MPI_File_iwrite_all(fh, out, N, MPI_INT, &req[0]));
    CALL(MPI_Waitall(1, req, st));
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_iread_at(fh, base + peer * N * sizeof(int), in, N, MPI_INT, &req[0]));
    CALL(MPI_Wait(&req[0], &st[0]));
    check_count(&st[0], MPI_INT, N);
    check_ints(in, N, peer + 7, "iread_at");
    memset(in, 0, sizeof in);
    CALL(MPI_File_iread_at_all(fh, base + peer * N * sizeof(int), in, N, MPI_INT, &req[1]));
    CALL(MPI_Wait(&req[1], &st[1]));
    check_ints(in, N, peer + 7, "iread_at_all");
    CALL(MPI_File_seek(fh, base + peer * N * sizeof(int), MPI_SEEK_SET));
    CALL(MPI_File_iread(fh, in, N / 2, MPI_INT, &req[0]));
    CALL(MPI_File_iread_all(fh, in + N / 2, N - N / 2, MPI_INT, &req[1]));
    CALL(MPI_Waitall(2, req, st));
    check_count(&st[1], MPI_INT, N - N / 2);
    check_ints(in, N, peer + 7, "iread + iread_all");
}

static void check_split(MPI_File fh)
{
    int out[N], in[N], peer = (mtest_rank + 1) % mtest_size;
    MPI_Offset base = 4 * (MPI_Offset)mtest_size * N * sizeof(int);
    MPI_Status st;
    fill(out, N, mtest_rank + 11);
    CALL(MPI_File_write_at_all_begin(fh, base + mtest_rank * N * sizeof(int), out, N, MPI_INT));
    CHECK_CLASS(MPI_File_write_at_all_begin(fh, 0, out, N, MPI_INT), MPI_ERR_IO);
    CALL(MPI_File_write_at_all_end(fh, out, &st));
    check_count(&st, MPI_INT, N);
    CHECK_CLASS(MPI_File_read_all_end(fh, in, &st), MPI_ERR_IO);
    CALL(MPI_File_seek(fh, base + peer * N * sizeof(int), MPI_SEEK_SET));
    CALL(MPI_File_read_all_begin(fh, in, N, MPI_INT));
    CALL(MPI_File_read_all_end(fh, in, &st));
    check_count(&st, MPI_INT, N);
    check_ints(in, N, peer + 11, "read_all_begin/end");
    CALL(MPI_File_read_at_all_begin(fh, base, in, N, MPI_INT));
    CALL(MPI_File_read_at_all_end(fh, in, &st));
    check_ints(in, N, 11, "read_at_all_begin/end");
}

/* The int at global index g of the interleaved file. */
static int interleaved(int g, int writers)
{
    int block = g / B;
    return value(block % writers, (block / writers) * B + g % B);
}

static void check_interleaved(const char *path)
{
    MPI_File fh;
    MPI_Datatype vec, tile;
    int out[K * B], P = mtest_size;
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_Type_vector(1, B, B * P, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)B * P * sizeof(int), &tile);
    MPI_Type_commit(&tile);
    CALL(MPI_File_set_view(fh, mtest_rank * B * sizeof(int), MPI_INT, tile, "native", MPI_INFO_NULL));
    MPI_Offset disp = -1;
    CALL(MPI_File_get_byte_offset(fh, B + 1, &disp));
    CHECK_EQ(disp, (MPI_Offset)(mtest_rank * B + B * P + 1) * sizeof(int));
    fill(out, K * B, mtest_rank);
    CALL(MPI_File_write_all(fh, out, K * B, MPI_INT, MPI_STATUS_IGNORE));
    CALL(MPI_File_close(&fh));
    MPI_Type_free(&vec);
    MPI_Type_free(&tile);

    /* P-1 ranks (1 when P is 1) read contiguous shares collectively */
    int Q = P > 1 ? P - 1 : 1, total = K * B * P;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, mtest_rank < Q ? 0 : MPI_UNDEFINED, mtest_rank, &sub);
    if (sub != MPI_COMM_NULL) {
        int share = total / Q, first = mtest_rank * share;
        if (mtest_rank == Q - 1)
            share = total - first;
        int *in = mtest_malloc(share * sizeof(int));
        MPI_Status st;
        CALL(MPI_File_open(sub, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        CALL(MPI_File_read_at_all(fh, (MPI_Offset)first * sizeof(int), in, share, MPI_INT, &st));
        check_count(&st, MPI_INT, share);
        for (int i = 0; i < share; i++)
            if (in[i] != interleaved(first + i, P)) {
                FAIL("int %d of the interleaved file is %d, want %d", first + i, in[i],
                     interleaved(first + i, P));
                break;
            }
        CALL(MPI_File_close(&fh));
        free(in);
        MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0)
        CALL(MPI_File_delete(path, MPI_INFO_NULL));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    char dir[256], path[300];
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "data");
    MPI_File fh;
    MTEST_OPEN_SCRATCH(MPI_COMM_WORLD, path, &fh);
    MPI_Aint extent = 0;
    CALL(MPI_File_get_type_extent(fh, MPI_DOUBLE, &extent));
    CHECK_EQ(extent, sizeof(double));
    check_blocking(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    check_short_reads(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    check_nonblocking(fh);
    check_split(fh);
    CALL(MPI_File_close(&fh));
    snprintf(path, sizeof path, "%s/interleaved", dir);
    check_interleaved(path);
    mtest_rmtmpdir(MPI_COMM_WORLD, dir);
    return MTest_Finalize();
}
