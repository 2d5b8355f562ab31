/*
 * io_nbcoll.c - nonblocking collective file accesses (MPI_File_iwrite_at_all, iread_at_all,
 * iwrite_all, iread_all) are nonblocking: a rank starts one and only then sends the message that
 * lets the next rank start its own (a chain through every rank), so an initiation that waits for
 * the other ranks hangs. Also: two such accesses on files of different communicators started in
 * opposite orders on even and odd ranks, the individual file pointer they advance, their
 * statuses, and an error on one rank (a negative offset) that is that rank's alone.
 */
#include "mtest.h"
#include <string.h>

#define N 64 /* ints per rank */

static int value(int rank, int i) { return rank * 1000 + i; }

static void fill(int *buf, int rank)
{
    for (int i = 0; i < N; i++)
        buf[i] = value(rank, i);
}

static void check_ints(const int *buf, int rank, const char *what)
{
    for (int i = 0; i < N; i++)
        if (buf[i] != value(rank, i)) {
            FAIL("%s: int %d of rank %d's block is %d, want %d", what, i, rank, buf[i], value(rank, i));
            return;
        }
}

static void check_count(MPI_Status *st, int want)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK_EQ(count, want);
}

/* Rank r starts its access only after rank r-1 has started its own and told it so. */
static void wait_for_previous(void)
{
    int token;
    if (mtest_rank > 0)
        MPI_Recv(&token, 1, MPI_INT, mtest_rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void tell_next(void)
{
    if (mtest_rank + 1 < mtest_size)
        MPI_Send(&mtest_rank, 1, MPI_INT, mtest_rank + 1, 0, MPI_COMM_WORLD);
}

static MPI_Offset block_at(int rank) { return (MPI_Offset)rank * N * sizeof(int); }

/* Explicit offsets: write in a chain, then read the next rank's block in a chain. */
static void check_chain_at(MPI_File fh)
{
    int out[N], in[N], peer = (mtest_rank + 1) % mtest_size;
    MPI_Request req;
    MPI_Status st;
    fill(out, mtest_rank);
    wait_for_previous();
    CALL(MPI_File_iwrite_at_all(fh, block_at(mtest_rank), out, N, MPI_INT, &req));
    tell_next();
    CALL(MPI_Wait(&req, &st));
    check_count(&st, N);
    MPI_Barrier(MPI_COMM_WORLD);
    memset(in, 0, sizeof in);
    wait_for_previous();
    CALL(MPI_File_iread_at_all(fh, block_at(peer), in, N, MPI_INT, &req));
    tell_next();
    CALL(MPI_Wait(&req, &st));
    check_count(&st, N);
    check_ints(in, peer, "iread_at_all");
}

/* The individual file pointer: each rank seeks to its block in the second half of the file. */
static void check_chain_pointer(MPI_File fh)
{
    int out[N], in[N], peer = (mtest_rank + 1) % mtest_size;
    MPI_Offset half = block_at(mtest_size), pos = -1;
    MPI_Request req;
    MPI_Status st;
    fill(out, mtest_rank + 50);
    CALL(MPI_File_seek(fh, half + block_at(mtest_rank), MPI_SEEK_SET));
    wait_for_previous();
    CALL(MPI_File_iwrite_all(fh, out, N, MPI_INT, &req));
    tell_next();
    CALL(MPI_Wait(&req, &st));
    check_count(&st, N);
    CALL(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, half + block_at(mtest_rank + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_seek(fh, half + block_at(peer), MPI_SEEK_SET));
    memset(in, 0, sizeof in);
    wait_for_previous();
    CALL(MPI_File_iread_all(fh, in, N, MPI_INT, &req));
    tell_next();
    CALL(MPI_Wait(&req, &st));
    check_count(&st, N);
    check_ints(in, peer + 50, "iread_all");
}

/* Two files on two communicators: even ranks start A then B, odd ranks B then A. */
static void check_two_files(MPI_File a, MPI_File b)
{
    int outa[N], outb[N], in[N];
    MPI_Request req[2];
    MPI_Status st[2];
    fill(outa, mtest_rank + 100);
    fill(outb, mtest_rank + 200);
    if (mtest_rank % 2 == 0) {
        CALL(MPI_File_iwrite_at_all(a, block_at(mtest_rank), outa, N, MPI_INT, &req[0]));
        CALL(MPI_File_iwrite_at_all(b, block_at(mtest_rank), outb, N, MPI_INT, &req[1]));
    } else {
        CALL(MPI_File_iwrite_at_all(b, block_at(mtest_rank), outb, N, MPI_INT, &req[1]));
        CALL(MPI_File_iwrite_at_all(a, block_at(mtest_rank), outa, N, MPI_INT, &req[0]));
    }
    CALL(MPI_Waitall(2, req, st));
    check_count(&st[0], N);
    check_count(&st[1], N);
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_File_read_at(a, block_at(mtest_rank), in, N, MPI_INT, &st[0]));
    check_ints(in, mtest_rank + 100, "file A");
    CALL(MPI_File_read_at(b, block_at(mtest_rank), in, N, MPI_INT, &st[0]));
    check_ints(in, mtest_rank + 200, "file B");
}

/* Rank 0 passes a negative offset: its call fails (MPI_ERR_ARG, on the file's handler, which
 * returns; Reflex at once), while the other ranks' accesses succeed without it. */
static void check_error_is_local(MPI_File fh)
{
    int out[N];
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    fill(out, mtest_rank + 300);
    MPI_Offset at = mtest_rank == 0 ? -1 : block_at(mtest_rank);
    int rc = MPI_File_iwrite_at_all(fh, at, out, N, MPI_INT, &req);
    if (mtest_rank == 0) {
        if (rc == MPI_SUCCESS) /* the standard lets the error come at completion instead */
            rc = MPI_Wait(&req, &st);
        CHECK_CLASS(rc, MPI_ERR_ARG);
        return;
    }
    CALL(rc);
    CALL(MPI_Wait(&req, &st));
    check_count(&st, N);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    char dir[256], path[300], path_b[300];
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "a");
    snprintf(path_b, sizeof path_b, "%s/b", dir);
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    MPI_File a, b;
    MTEST_OPEN_SCRATCH(MPI_COMM_WORLD, path, &a);
    MTEST_OPEN_SCRATCH(other, path_b, &b);
    check_chain_at(a);
    check_chain_pointer(a);
    check_two_files(a, b);
    check_error_is_local(b);
    CALL(MPI_File_close(&a));
    CALL(MPI_File_close(&b));
    MPI_Comm_free(&other);
    mtest_rmtmpdir(MPI_COMM_WORLD, dir);
    return MTest_Finalize();
}
