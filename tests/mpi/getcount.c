/*
 * getcount.c - MPI_Get_count and MPI_Get_elements (MPI-3.1 sections 3.2.5 and 4.1.11): the count
 * of a received message in units of the receive type, including 0; MPI_UNDEFINED when the
 * received bytes are not a whole number of elements of the type asked about; MPI_Get_elements_x
 * and MPI_Get_count agree; MPI_Status_set_elements sets what they report.
 * Runs with any number of ranks (partner or self).
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner();
    MPI_Status st;
    MPI_Request r;
    int n;
    MPI_Count nx;
    int ints[100];
    double dbl[10] = {0};
    char bytes[64] = {0}, inbytes[64];

    for (int i = 0; i < 100; i++)
        ints[i] = i;

    /* 1. whole counts, 0 to 100 ints */
    const int counts[] = {0, 1, 10, 100};
    for (int k = 0; k < 4; k++) {
        int in[100];
        MPI_Isend(ints, counts[k], MPI_INT, peer, 1, MPI_COMM_WORLD, &r);
        MPI_Recv(in, 100, MPI_INT, peer, 1, MPI_COMM_WORLD, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK_EQ(n, counts[k]);
        MPI_Get_elements(&st, MPI_INT, &n);
        CHECK_EQ(n, counts[k]);
        MPI_Get_elements_x(&st, MPI_INT, &nx);
        CHECK_EQ(nx, counts[k]);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK_EQ(n, counts[k] * (int)sizeof(int));
    }

    /* 2. 7 bytes asked about as MPI_INT (4 bytes) and MPI_DOUBLE: not a multiple -> MPI_UNDEFINED */
    MPI_Isend(bytes, 7, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r);
    MPI_Recv(inbytes, 64, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &st);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK_EQ(n, 7);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK_EQ(n, MPI_UNDEFINED);
    MPI_Get_elements(&st, MPI_INT, &n);
    CHECK_EQ(n, MPI_UNDEFINED);
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    CHECK_EQ(n, MPI_UNDEFINED);

    /* 3. 16 bytes as MPI_DOUBLE: exactly 2 */
    MPI_Isend(bytes, 16, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &r);
    MPI_Recv(dbl, 10, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &st);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    CHECK_EQ(n, 2);

    /* 4. MPI_Status_set_elements */
    MPI_Status_set_elements(&st, MPI_INT, 12);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK_EQ(n, 12);
    MPI_Get_elements(&st, MPI_INT, &n);
    CHECK_EQ(n, 12);
    MPI_Status_set_elements_x(&st, MPI_DOUBLE, 3);
    MPI_Get_elements_x(&st, MPI_DOUBLE, &nx);
    CHECK_EQ(nx, 3);

    return MTest_Finalize();
}
