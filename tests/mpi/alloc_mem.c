/* MPI_Alloc_mem / MPI_Free_mem: blocks are usable, distinct, aligned at least for any basic type,
 * usable as message buffers, and freed; size 0 works. */
#include "mtest.h"
#include <stdint.h>

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double *a = NULL, *b = NULL;
    CALL(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &a));
    CALL(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &b));
    CHECK(a && b && a != b, "two blocks: %p %p", (void *)a, (void *)b);
    CHECK((uintptr_t)a % 16 == 0, "block %p is not 16-byte aligned", (void *)a);
    for (int i = 0; i < 1000; i++)
        a[i] = mtest_rank + i;
    CALL(MPI_Allreduce(a, b, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double ranks = (double)mtest_size * (mtest_size - 1) / 2;
    for (int i = 0; i < 1000; i++)
        CHECK(b[i] == ranks + (double)mtest_size * i, "b[%d] = %g", i, b[i]);
    CALL(MPI_Free_mem(a));
    CALL(MPI_Free_mem(b));
    void *none = NULL;
    CALL(MPI_Alloc_mem(0, MPI_INFO_NULL, &none));
    CALL(MPI_Free_mem(none));
    return MTest_Finalize();
}
