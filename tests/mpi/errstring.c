/*
 * errstring.c - error classes and strings (MPI-3.1 section 8.4): every predefined error class
 * is its own class under MPI_Error_class, lies in [MPI_SUCCESS, MPI_ERR_LASTCODE], and has a
 * non-empty MPI_Error_string whose reported length matches strlen and fits in
 * MPI_MAX_ERROR_STRING; the classes are distinct. Runs with any number of ranks.
 */
#include "mtest.h"

#define C(x) {x, #x}
static const struct { int code; const char *name; } classes[] = {
    C(MPI_SUCCESS), C(MPI_ERR_BUFFER), C(MPI_ERR_COUNT), C(MPI_ERR_TYPE), C(MPI_ERR_TAG),
    C(MPI_ERR_COMM), C(MPI_ERR_RANK), C(MPI_ERR_REQUEST), C(MPI_ERR_ROOT), C(MPI_ERR_GROUP),
    C(MPI_ERR_OP), C(MPI_ERR_TOPOLOGY), C(MPI_ERR_DIMS), C(MPI_ERR_ARG), C(MPI_ERR_UNKNOWN),
    C(MPI_ERR_TRUNCATE), C(MPI_ERR_OTHER), C(MPI_ERR_INTERN), C(MPI_ERR_IN_STATUS),
    C(MPI_ERR_PENDING), C(MPI_ERR_KEYVAL), C(MPI_ERR_NO_MEM), C(MPI_ERR_BASE), C(MPI_ERR_INFO_KEY),
    C(MPI_ERR_INFO_VALUE), C(MPI_ERR_INFO_NOKEY), C(MPI_ERR_SPAWN), C(MPI_ERR_PORT),
    C(MPI_ERR_SERVICE), C(MPI_ERR_NAME), C(MPI_ERR_WIN), C(MPI_ERR_SIZE), C(MPI_ERR_DISP),
    C(MPI_ERR_INFO), C(MPI_ERR_LOCKTYPE), C(MPI_ERR_ASSERT), C(MPI_ERR_RMA_CONFLICT),
    C(MPI_ERR_RMA_SYNC), C(MPI_ERR_RMA_RANGE), C(MPI_ERR_RMA_ATTACH), C(MPI_ERR_RMA_SHARED),
    C(MPI_ERR_RMA_FLAVOR), C(MPI_ERR_FILE), C(MPI_ERR_NOT_SAME), C(MPI_ERR_AMODE),
    C(MPI_ERR_UNSUPPORTED_DATAREP), C(MPI_ERR_UNSUPPORTED_OPERATION), C(MPI_ERR_NO_SUCH_FILE),
    C(MPI_ERR_FILE_EXISTS), C(MPI_ERR_BAD_FILE), C(MPI_ERR_ACCESS), C(MPI_ERR_NO_SPACE),
    C(MPI_ERR_QUOTA), C(MPI_ERR_READ_ONLY), C(MPI_ERR_FILE_IN_USE), C(MPI_ERR_DUP_DATAREP),
    C(MPI_ERR_CONVERSION), C(MPI_ERR_IO),
};
#define NCLASSES ((int)(sizeof classes / sizeof classes[0]))

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    for (int i = 0; i < NCLASSES; i++) {
        int code = classes[i].code, cls = -1, len = -1;
        char s[MPI_MAX_ERROR_STRING];
        CHECK(code >= MPI_SUCCESS && code <= MPI_ERR_LASTCODE, "%s = %d outside [0, MPI_ERR_LASTCODE=%d]",
              classes[i].name, code, MPI_ERR_LASTCODE);
        MPI_Error_class(code, &cls);
        CHECK(cls == code, "MPI_Error_class(%s) = %d", classes[i].name, cls);
        s[0] = 0;
        MPI_Error_string(code, s, &len);
        CHECK(len > 0 && len < MPI_MAX_ERROR_STRING, "%s: string length %d", classes[i].name, len);
        if (len > 0 && len < MPI_MAX_ERROR_STRING)
            CHECK((int)strlen(s) == len, "%s: strlen %d != %d", classes[i].name, (int)strlen(s), len);
        for (int j = 0; j < i; j++)
            CHECK(classes[j].code != code, "%s and %s are both %d", classes[j].name, classes[i].name, code);
    }
    CHECK(MPI_SUCCESS == 0, "MPI_SUCCESS is %d", MPI_SUCCESS);
    /* A code returned by a failing call maps onto its class. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Send(NULL, 0, MPI_INT, mtest_size, 0, MPI_COMM_WORLD);
    CHECK_CLASS(rc, MPI_ERR_RANK);
    return MTest_Finalize();
}
