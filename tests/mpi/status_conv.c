/*
 * status_conv.c - MPI_Status_c2f / MPI_Status_f2c (MPI-3.1 section 17.2.5); the mpi_f08 forms
 * are in status_f08.c.
 *
 * A real receive status (from a message to self) goes C -> Fortran -> C: the Fortran array has MPI_F_STATUS_SIZE entries, with the source and tag at
 * MPI_F_SOURCE and MPI_F_TAG, and the round-tripped status gives the same MPI_Get_count and
 * MPI_Test_cancelled answers. MPI_STATUS_IGNORE and MPI_F_STATUS_IGNORE are not statuses: the
 * conversions fail on them.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int out[300], in[300], count = -1, flag = -1;
    MPI_Status st, back;
    MPI_Fint f[MPI_F_STATUS_SIZE + 1];

    for (int i = 0; i < 300; i++)
        out[i] = i;
    MPI_Sendrecv(out, 257, MPI_INT, mtest_rank, 17, in, 300, MPI_INT, mtest_rank, 17,
                 MPI_COMM_WORLD, &st);

    f[MPI_F_STATUS_SIZE] = 12345; /* the conversion writes MPI_F_STATUS_SIZE entries only */
    CALL(MPI_Status_c2f(&st, f));
    CHECK_EQ(f[MPI_F_SOURCE], mtest_rank);
    CHECK_EQ(f[MPI_F_TAG], 17);
    CHECK_EQ(f[MPI_F_STATUS_SIZE], 12345);
    memset(&back, 0xff, sizeof back);
    CALL(MPI_Status_f2c(f, &back));
    CHECK_EQ(back.MPI_SOURCE, mtest_rank);
    CHECK_EQ(back.MPI_TAG, 17);
    MPI_Get_count(&back, MPI_INT, &count);
    CHECK_EQ(count, 257);
    MPI_Test_cancelled(&back, &flag);
    CHECK_EQ(flag, 0);

    /* a cancelled, large status survives too */
    MPI_Status_set_cancelled(&st, 1);
    MPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)5 << 32);
    CALL(MPI_Status_c2f(&st, f));
    CALL(MPI_Status_f2c(f, &back));
    MPI_Count big = -1;
    MPI_Get_elements_x(&back, MPI_BYTE, &big);
    CHECK(big == (MPI_Count)5 << 32, "elements %lld", (long long)big);
    MPI_Test_cancelled(&back, &flag);
    CHECK_EQ(flag, 1);

    CHECK(MPI_Status_c2f(MPI_STATUS_IGNORE, f) != MPI_SUCCESS, "c2f accepted MPI_STATUS_IGNORE");
    CHECK(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back) != MPI_SUCCESS,
          "f2c accepted MPI_F_STATUS_IGNORE");
    return MTest_Finalize();
}
