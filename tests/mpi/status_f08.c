/*
 * status_f08.c - the MPI-4.0 mpi_f08 status conversions (MPI_Status_c2f08, _f082c, _f082f,
 * _f2f08) on a real receive status: C -> f08 -> Fortran -> f08 -> C keeps source, tag and count.
 * (MPICH 4.0.2 built without Fortran has none of them: Reflex only, see testlist.)
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int out[300], in[300], count = -1;
    MPI_Status st, back;
    MPI_Fint f[MPI_F_STATUS_SIZE];
    MPI_F08_status f08, f08b;

    for (int i = 0; i < 300; i++)
        out[i] = i;
    MPI_Sendrecv(out, 257, MPI_INT, mtest_rank, 17, in, 300, MPI_INT, mtest_rank, 17,
                 MPI_COMM_WORLD, &st);
    CALL(MPI_Status_c2f08(&st, &f08));
    CHECK_EQ(f08.MPI_SOURCE, mtest_rank);
    CHECK_EQ(f08.MPI_TAG, 17);
    memset(f, 0, sizeof f);
    CALL(MPI_Status_f082f(&f08, f));
    CHECK_EQ(f[MPI_F_TAG], 17);
    memset(&f08b, 0, sizeof f08b);
    CALL(MPI_Status_f2f08(f, &f08b));
    CHECK_EQ(f08b.MPI_SOURCE, mtest_rank);
    memset(&back, 0, sizeof back);
    CALL(MPI_Status_f082c(&f08b, &back));
    count = -1;
    MPI_Get_count(&back, MPI_INT, &count);
    CHECK_EQ(count, 257);
    CHECK_EQ(back.MPI_TAG, 17);

    CHECK(MPI_Status_c2f08(MPI_STATUS_IGNORE, &f08) != MPI_SUCCESS,
          "c2f08 accepted MPI_STATUS_IGNORE");
    return MTest_Finalize();
}
