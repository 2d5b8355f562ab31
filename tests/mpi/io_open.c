/*
 * io_open.c - MPI-IO file handles: MPI_File_open's access-mode checks and all-or-nothing
 * outcome, close, DELETE_ON_CLOSE, delete, sizes, amode, group, info, atomicity, the file
 * error handlers (MPI_ERRORS_RETURN by default, set on MPI_FILE_NULL), c2f/f2c.
 */
#include "mtest.h"
#include <sys/stat.h>

/* Reflex makes stricter promises than the standard (checked only there): every rank of a failed
 * open gets the failing rank's class, messages name the file, hints are kept as given, and
 * misuse has the class one would expect. */
static int on_reflex = 0;
static int handler_calls = 0;
static int handler_code = 0;

static void file_handler(MPI_File *fh, int *code, ...)
{
    (void)fh;
    handler_calls++;
    handler_code = *code;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void check_amodes(const char *path)
{
    const int bad[] = {0,
                       MPI_MODE_RDONLY | MPI_MODE_RDWR,
                       MPI_MODE_RDONLY | MPI_MODE_WRONLY,
                       MPI_MODE_RDONLY | MPI_MODE_CREATE,
                       MPI_MODE_RDONLY | MPI_MODE_EXCL,
                       MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        MPI_File fh = MPI_FILE_NULL;
        int rc = MPI_File_open(MPI_COMM_WORLD, path, bad[i], MPI_INFO_NULL, &fh);
        CHECK_CLASS(rc, MPI_ERR_AMODE);
        CHECK(fh == MPI_FILE_NULL, "amode %#x left a handle", bad[i]);
    }
    CHECK(!exists(path), "a refused open created %s", path);
}

/* Missing file, EXCL on an existing one, and one rank failing: every rank gets the error. */
static void check_open_errors(const char *dir, const char *path)
{
    MPI_File fh = MPI_FILE_NULL;
    int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK_CLASS(rc, MPI_ERR_NO_SUCH_FILE);
    if (rc != MPI_SUCCESS && on_reflex) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        CHECK(strstr(text, "missing") != NULL, "message does not name the file: %s", text);
    }
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    CALL(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not reset the handle");
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL,
                       MPI_INFO_NULL, &fh);
    CHECK_CLASS(rc, MPI_ERR_FILE_EXISTS);
    /* the last rank names a file that does not exist (erroneous, but it must not hang or leak) */
    char other[300];
    snprintf(other, sizeof other, "%s/%s", dir, mtest_rank == mtest_size - 1 ? "nothere" : "missing");
    rc = MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    if (on_reflex || mtest_rank == mtest_size - 1)
        CHECK_CLASS(rc, MPI_ERR_NO_SUCH_FILE);
    else
        CHECK(rc != MPI_SUCCESS, "open succeeded although another rank failed");
    CHECK(fh == MPI_FILE_NULL, "a failed open left a handle");
    MPI_Barrier(MPI_COMM_WORLD);
    if (mtest_rank == 0)
        CALL(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_CLASS(MPI_File_delete(path, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);
}

static void check_queries(const char *path)
{
    MPI_File fh;
    int amode = MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE;
    CALL(MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &fh));
    int got = 0, flag = -1, cmp = -1;
    CALL(MPI_File_get_amode(fh, &got));
    CHECK_EQ(got, amode);
    MPI_Group g, wg;
    CALL(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK_EQ(cmp, MPI_IDENT);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    CALL(MPI_File_get_atomicity(fh, &flag));
    CHECK_EQ(flag, 0);
    CALL(MPI_File_set_atomicity(fh, 1));
    CALL(MPI_File_get_atomicity(fh, &flag));
    CHECK_EQ(flag, 1);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "access_style", "write_once");
    CALL(MPI_File_set_info(fh, info));
    MPI_Info_free(&info);
    CALL(MPI_File_get_info(fh, &info));
    char value[64] = "";
    MPI_Info_get(info, "access_style", sizeof value - 1, value, &flag);
    if (on_reflex)
        CHECK(flag && strcmp(value, "write_once") == 0, "hint lost: %s", value);
    MPI_Info_free(&info);
    MPI_Offset size = -1;
    CALL(MPI_File_set_size(fh, 1000));
    CALL(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, 1000);
    CALL(MPI_File_preallocate(fh, 500)); /* never shrinks */
    CALL(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, 1000);
    CALL(MPI_File_preallocate(fh, 4096));
    CALL(MPI_File_set_size(fh, 10));
    CALL(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, 10);
    CALL(MPI_File_sync(fh));
    MPI_Fint f = MPI_File_c2f(fh);
    CHECK(MPI_File_f2c(f) == fh, "c2f/f2c does not round-trip");
    CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "null handle c2f/f2c");
    CALL(MPI_File_close(&fh));
    CHECK(!exists(path), "MPI_MODE_DELETE_ON_CLOSE left %s", path);
}

static void check_access_errors(const char *path)
{
    MPI_File fh;
    char buf[8] = "abcdefg";
    MPI_Status st;
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    CHECK_CLASS(MPI_File_read_at(fh, 0, buf, 8, MPI_CHAR, &st), MPI_ERR_ACCESS);
    CALL(MPI_File_close(&fh));
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE,
                       MPI_INFO_NULL, &fh));
    CHECK_CLASS(MPI_File_write_at(fh, 0, buf, 8, MPI_CHAR, &st), MPI_ERR_READ_ONLY);
    int rc = MPI_File_set_size(fh, 5), rc2 = MPI_File_seek(fh, -1, MPI_SEEK_SET);
    if (on_reflex) { /* the standard names no class for these */
        CHECK_CLASS(rc, MPI_ERR_READ_ONLY);
        CHECK_CLASS(rc2, MPI_ERR_ARG);
    } else {
        CHECK(rc != MPI_SUCCESS && rc2 != MPI_SUCCESS, "set_size on RDONLY or seek to -1 succeeded");
    }
    CALL(MPI_File_close(&fh));
    CHECK(!exists(path), "MPI_MODE_DELETE_ON_CLOSE left %s", path);
}

static void check_errhandlers(const char *path)
{
    MPI_Errhandler eh, got;
    CALL(MPI_File_get_errhandler(MPI_FILE_NULL, &got));
    CHECK(got == MPI_ERRORS_RETURN, "MPI_FILE_NULL's handler is not MPI_ERRORS_RETURN");
    CALL(MPI_File_create_errhandler(file_handler, &eh));
    MPI_File fh;
    CALL(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                       MPI_INFO_NULL, &fh));
    CALL(MPI_File_get_errhandler(fh, &got));
    CHECK(got == MPI_ERRORS_RETURN, "a new file's handler is not MPI_ERRORS_RETURN");
    CALL(MPI_File_set_errhandler(fh, eh));
    int rc = MPI_File_seek(fh, 0, 12345);
    CHECK_CLASS(rc, MPI_ERR_ARG);
    CHECK_EQ(handler_calls, 1);
    CHECK_EQ(handler_code, rc);
    CALL(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK_EQ(handler_calls, 2);
    CHECK_EQ(handler_code, MPI_ERR_IO);
    CALL(MPI_File_close(&fh));
    /* MPI_FILE_NULL's handler gets the errors of open and becomes the default of new files */
    CALL(MPI_File_set_errhandler(MPI_FILE_NULL, eh));
    rc = MPI_File_open(MPI_COMM_WORLD, path, 0, MPI_INFO_NULL, &fh);
    CHECK_CLASS(rc, MPI_ERR_AMODE);
    CHECK_EQ(handler_calls, 3);
    char mine[320];
    snprintf(mine, sizeof mine, "%s-%d", path, mtest_rank);
    CALL(MPI_File_open(MPI_COMM_SELF, mine, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                       MPI_INFO_NULL, &fh));
    CALL(MPI_File_get_errhandler(fh, &got));
    CHECK(got == eh, "a new file did not take MPI_FILE_NULL's handler");
    CALL(MPI_File_close(&fh));
    CALL(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    MPI_Errhandler_free(&eh);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    on_reflex = strstr(lib, "Reflex") != NULL;
    char dir[256], path[300];
    mtest_tmpdir(MPI_COMM_WORLD, dir, path, "missing");
    check_amodes(path);
    check_open_errors(dir, path);
    snprintf(path, sizeof path, "%s/queries", dir);
    check_queries(path);
    snprintf(path, sizeof path, "%s/access", dir);
    check_access_errors(path);
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/errh", dir);
    check_errhandlers(path);
    mtest_rmtmpdir(MPI_COMM_WORLD, dir);
    return MTest_Finalize();
}
