/*
 * io_shared.c - MPI-IO shared file pointers: write_shared/read_shared by every rank (each block
 * lands exactly once), the ordered collective forms (rank order), their split forms,
 * seek_shared/get_position_shared, iwrite_shared, MPI_MODE_SEQUENTIAL (shared pointers only),
 * MPI_DISPLACEMENT_CURRENT (a view starting where the shared pointer is), and access with
 * atomicity on.
 */
#include "mtest.h"

#define N 64

static void fill(int *buf, int n, int tag)
{
    for (int i = 0; i < n; i++)
        buf[i] = tag * 10000 + i;
}

/* Each rank's block appears once among the P blocks of N ints at the start of the file. */
static void check_blocks(MPI_File fh, int tag0)
{
    int P = mtest_size, *all = mtest_malloc((size_t)P * N * sizeof(int)), *seen = calloc(P, sizeof(int));
    MPI_Status st;
    CALL(MPI_File_read_at(fh, 0, all, P * N, MPI_INT, &st));
    for (int b = 0; b < P; b++) {
        int r = all[b * N] / 10000 - tag0;
        if (r < 0 || r >= P) {
            FAIL("block %d starts with %d", b, all[b * N]);
            continue;
        }
        seen[r]++;
        for (int i = 0; i < N; i++)
            if (all[b * N + i] != (tag0 + r) * 10000 + i) {
                FAIL("block %d (rank %d) int %d is %d", b, r, i, all[b * N + i]);
                break;
            }
    }
    for (int r = 0; r < P; r++)
        CHECK(seen[r] == 1, "rank %d's block was written %d times", r, seen[r]);
    free(all);
    free(seen);
}

static void check_shared(MPI_File fh)
{
    int out[N], in[N], P = mtest_size;
    MPI_Status st;
    MPI_Offset pos = -1;
    CALL(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    fill(out, N, mtest_rank);
    CALL(MPI_File_write_shared(fh, out, N, MPI_INT, &st));
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_get_position_shared(fh, &pos));
    CHECK_EQ(pos, P * N);
    check_blocks(fh, 0);
    /* read_ordered from 0: rank r gets block r */
    CALL(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    CALL(MPI_File_read_ordered(fh, in, N, MPI_INT, &st));
    int want[N];
    CALL(MPI_File_read_at(fh, (MPI_Offset)mtest_rank * N, want, N, MPI_INT, &st));
    CHECK(memcmp(in, want, sizeof in) == 0, "read_ordered did not read block %d", mtest_rank);
    CALL(MPI_File_get_position_shared(fh, &pos));
    CHECK_EQ(pos, P * N);
    /* write_ordered: rank r writes r+1 ints after the blocks, in rank order */
    fill(out, N, 50 + mtest_rank);
    CALL(MPI_File_write_ordered_begin(fh, out, mtest_rank + 1, MPI_INT));
    CALL(MPI_File_write_ordered_end(fh, out, &st));
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_EQ(count, mtest_rank + 1);
    MPI_Offset at = P * N + mtest_rank * (mtest_rank + 1) / 2;
    CALL(MPI_File_read_at(fh, at, in, mtest_rank + 1, MPI_INT, &st));
    CHECK(memcmp(in, out, (mtest_rank + 1) * sizeof(int)) == 0, "write_ordered put rank %d elsewhere",
          mtest_rank);
    CALL(MPI_File_seek_shared(fh, P * N, MPI_SEEK_SET));
    CALL(MPI_File_read_ordered_begin(fh, in, mtest_rank + 1, MPI_INT));
    CALL(MPI_File_read_ordered_end(fh, in, &st));
    CHECK(memcmp(in, out, (mtest_rank + 1) * sizeof(int)) == 0, "read_ordered_begin/end of rank %d",
          mtest_rank);
    /* iread_shared of everything that is left: only the last rank's share... any rank may win */
    CALL(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
    MPI_Request req;
    CALL(MPI_File_iread_shared(fh, in, N, MPI_INT, &req));
    CALL(MPI_Wait(&req, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_EQ(count, 0);
}

static void check_sequential(const char *path)
{
    MPI_File fh;
    int out[N];
    MPI_Status st;
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_SEQUENTIAL,
                       MPI_INFO_NULL, &fh));
    fill(out, N, 20 + mtest_rank);
    int rc = MPI_File_write_at(fh, 0, out, N, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS, "write_at on a MPI_MODE_SEQUENTIAL file succeeded");
    MPI_Request req;
    CALL(MPI_File_iwrite_shared(fh, out, N, MPI_INT, &req));
    CALL(MPI_Wait(&req, &st));
    CALL(MPI_File_close(&fh));
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    CALL(MPI_File_set_atomicity(fh, 1));
    check_blocks(fh, 20);
    CALL(MPI_File_close(&fh));
}

/* A sequential file: rank 0 writes a header of 3 ints after a 4-byte gap (the first view's
 * displacement), then every rank's view starts where the shared pointer is (file byte 16) and
 * the ranks write themselves there in order. MPI_DISPLACEMENT_CURRENT is refused for a file
 * not opened sequential. */
static void check_displacement_current(const char *path)
{
    enum { HEAD = 3, GAP = 4 };
    MPI_File fh;
    MPI_Status st;
    int head[HEAD] = {7, 8, 9}, *back = mtest_malloc((HEAD + mtest_size) * sizeof(int));
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_SEQUENTIAL,
                       MPI_INFO_NULL, &fh));
    CALL(MPI_File_set_view(fh, GAP, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    if (mtest_rank == 0)
        CALL(MPI_File_write_shared(fh, head, HEAD, MPI_INT, &st));
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset disp = -1, pos = -1;
    MPI_Datatype etype, ftype;
    char rep[MPI_MAX_DATAREP_STRING];
    CALL(MPI_File_get_view(fh, &disp, &etype, &ftype, rep));
    CHECK_EQ(disp, (MPI_Offset)(GAP + HEAD * sizeof(int)));
    CALL(MPI_File_get_position_shared(fh, &pos));
    CHECK_EQ(pos, (MPI_Offset)0);
    CALL(MPI_File_write_ordered(fh, &mtest_rank, 1, MPI_INT, &st));
    CALL(MPI_File_close(&fh));

    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                       &fh));
    CALL(MPI_File_read_at(fh, GAP, back, HEAD + mtest_size, MPI_INT, &st));
    for (int i = 0; i < HEAD; i++)
        CHECK_EQ(back[i], head[i]);
    for (int r = 0; r < mtest_size; r++)
        CHECK_EQ(back[HEAD + r], r);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    int rc = MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native",
                               MPI_INFO_NULL);
    CHECK_CLASS(rc, MPI_ERR_ARG);
    CALL(MPI_File_close(&fh));
    free(back);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    char dir[256], path[300];
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "shared");
    MPI_File fh;
    MTEST_OPEN_SCRATCH(MPI_COMM_WORLD, path, &fh);
    CALL(MPI_File_set_atomicity(fh, 1));
    check_shared(fh);
    CALL(MPI_File_close(&fh));
    snprintf(path, sizeof path, "%s/sequential", dir);
    check_sequential(path);
    snprintf(path, sizeof path, "%s/current", dir);
    check_displacement_current(path);
    mtest_rmtmpdir(MPI_COMM_WORLD, dir);
    return MTest_Finalize();
}
