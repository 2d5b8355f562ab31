// hello.cxx -- the C++ program of the build-system tests: mpi.h from C++ (extern "C" linkage),
// a point-to-point ring and one line per rank ("buildsys c++ rank R of N: ok") for run.sh.
#include <mpi.h>

#include <cstdio>
#include <vector>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> token(4, rank);
    std::vector<int> got(4, -1);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Sendrecv(token.data(), 4, MPI_INT, next, 7, got.data(), 4, MPI_INT, prev, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int value : got) {
        if (value != prev) {
            std::printf("buildsys c++ rank %d: got %d from %d\n", rank, value, prev);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    std::printf("buildsys c++ rank %d of %d: ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
