/*
 * io_crash.c - a job that uses a shared file pointer and then aborts leaves nothing behind.
 * Every rank writes through the shared file pointer (which makes its sidecar), then rank 0
 * checks that the sidecar is not in the file's directory (its ranks share one node, so it lives
 * with the job's shared segments), removes the file and the directory, and the last rank calls
 * MPI_Abort with code 7 when every check passed (1 otherwise). The testlist's check=cleanup then
 * finds no /dev/shm/reflex-* file left: the launcher removed the sidecar with the job's segments.
 * Needs the ranks on one node (any number from 2).
 */
#include "mtest.h"
#include <dirent.h>
#include <string.h>
#include <unistd.h>

/* Entries of `dir` other than `file`, "." and "..". */
static int others_in(const char *dir, const char *file)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) {
        FAIL("cannot list %s", dir);
        return -1;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, file)) {
            fprintf(stderr, "unexpected entry %s/%s\n", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    char dir[256], path[300];
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "data");
    MPI_File fh;
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    int x = mtest_rank;
    MPI_Status st;
    CALL(MPI_File_write_shared(fh, &x, 1, MPI_INT, &st));
    MPI_Offset pos = -1;
    CALL(MPI_File_get_position_shared(fh, &pos));
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0) {
        CHECK_EQ(others_in(dir, "data"), 0);
        CHECK(unlink(path) == 0, "unlink %s", path);
        CHECK(rmdir(dir) == 0, "rmdir %s (a sidecar left in it?)", dir);
    }
    int errs = 0;
    MPI_Allreduce(&mtest_errs, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mtest_rank == mtest_size - 1) {
        if (errs)
            fprintf(stderr, " Found %d errors\n", errs);
        MPI_Abort(MPI_COMM_WORLD, errs ? 1 : 7);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the abort ends the job here */
    return 0;
}
