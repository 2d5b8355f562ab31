/* MPI_Comm_spawn of two copies of this program, which find the parent with
 * MPI_Comm_get_parent; then the shared intercommunicator checks between the parent job and the
 * children. DYNPROC_SPAWN=multiple: MPI_Comm_spawn_multiple of two commands of one process each
 * (appnum 0 and 1). DYNPROC_SPAWN=refused: a program that does not exist, which the launcher
 * refuses to start, so the call must fail with MPI_ERR_SPAWN and every error code must say so. */
#include "mtest_dynproc.h"

#define CHILDREN 2

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm parent = MPI_COMM_NULL, children = MPI_COMM_NULL;
    CALL(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) {
        int rsize = 0, appnum = -1, flag = 0, *value;
        MPI_Comm_remote_size(parent, &rsize);
        int multi = argc == 2 && strcmp(argv[1], "child-multi") == 0;
        CHECK(argc == 2 && (multi || strcmp(argv[1], "child") == 0), "the child's arguments");
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &value, &flag);
        if (flag)
            appnum = *value;
        CHECK_EQ(appnum, multi ? mtest_rank : 0);
        CHECK_EQ(mtest_size, CHILDREN);
        dp_exercise(&parent, 1, MPI_COMM_WORLD);
        CALL(MPI_Comm_get_parent(&parent));
        CHECK(parent == MPI_COMM_NULL, "the parent after MPI_Comm_disconnect");
        return MTest_Finalize();
    }
    const char *expect = getenv("DYNPROC_SPAWN");
    int refused = expect && strcmp(expect, "refused") == 0;
    int codes[CHILDREN] = {-1, -1}, rc;
    if (expect && strcmp(expect, "multiple") == 0) {
        char *args[] = {"child-multi", NULL}, *cmds[] = {argv[0], argv[0]}, **argvs[] = {args, args};
        int procs[] = {1, 1};
        MPI_Info infos[] = {MPI_INFO_NULL, MPI_INFO_NULL};
        rc = MPI_Comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, &children, codes);
    } else {
        char *args[] = {"child", NULL};
        const char *program = refused ? "./dynproc-no-such-program" : argv[0];
        rc = MPI_Comm_spawn(program, args, CHILDREN, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, codes);
    }
    if (refused) {
        CHECK_CLASS(rc, MPI_ERR_SPAWN);
        CHECK(children == MPI_COMM_NULL, "a refused spawn set the intercommunicator");
        for (int i = 0; i < CHILDREN; i++) {
            int cls = -1;
            MPI_Error_class(codes[i], &cls);
            CHECK(cls == MPI_ERR_SPAWN, "error code %d of a refused spawn is %d", i, codes[i]);
        }
    } else {
        CALL(rc);
        for (int i = 0; i < CHILDREN; i++)
            CHECK_EQ(codes[i], MPI_SUCCESS);
        if (children != MPI_COMM_NULL) {
            int rsize = 0;
            MPI_Comm_remote_size(children, &rsize);
            CHECK_EQ(rsize, CHILDREN);
            dp_exercise(&children, 0, MPI_COMM_WORLD);
        }
    }
    return MTest_Finalize();
}
