/* MPI_Comm_accept / MPI_Comm_connect between two separate mpiexec jobs (run.py pair=N): job 0's
 * rank 0 opens a port and writes its name to a file in the shared directory, job 1's rank 0
 * reads it; all of both jobs accept/connect, then traffic both ways, intercommunicator and
 * merged collectives, MPI_Intercomm_create across the jobs, disconnect, close. */
#include "mtest_dynproc.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int role;
    const char *dir = dp_pair(&role);
    if (!dir) {
        if (mtest_rank == 0)
            fprintf(stderr, "dynproc_jobs runs as two jobs: a pair=N line of the testlist\n");
        mtest_errs++;
        return MTest_Finalize();
    }
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter = MPI_COMM_NULL;
    if (role == 0) {
        if (mtest_rank == 0) {
            CALL(MPI_Open_port(MPI_INFO_NULL, port));
            dp_put_file(dir, "port", port);
        }
        CALL(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    } else {
        if (mtest_rank == 0)
            dp_get_file(dir, "port", port, sizeof port);
        CALL(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    }
    if (inter != MPI_COMM_NULL)
        dp_exercise(&inter, role, MPI_COMM_WORLD);
    if (role == 0 && mtest_rank == 0)
        CALL(MPI_Close_port(port));
    return MTest_Finalize();
}
