/* A process started by mpiexec (not spawned) has no parent: MPI_Comm_get_parent gives
 * MPI_COMM_NULL (MPI-3.1 10.3.2). */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm parent = MPI_COMM_WORLD;
    CALL(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "MPI_Comm_get_parent did not give MPI_COMM_NULL");
    return MTest_Finalize();
}
