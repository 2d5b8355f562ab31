/* hdf5.c -- parallel HDF5 (Debian's libhdf5-mpich, built on MPICH's MPI-IO) on Reflex.
 *
 * Built with h5pcc.mpich. Every rank writes its block of rows of a 2-D dataset, once with
 * collective and once with independent transfers, into a file opened through the MPI-IO driver
 * (H5Pset_fapl_mpio); the file is closed, reopened read-only, and every rank reads the whole
 * dataset back and checks each element. Also an attribute written by all ranks. Usage: hdf5 DIR
 * (the file is created in DIR and removed). Prints "apps hdf5 rank R of N: ok" on success.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS_PER_RANK 5
#define COLS 7

static int rank, size;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("apps hdf5 rank %d: FAILED %s\n", rank, what);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static double value(int set, hsize_t row, hsize_t col)
{
    return set * 1000000.0 + (double)row * 100.0 + (double)col;
}

/* Writes dataset NAME: rows [rank*R, rank*R + R) from this rank, with transfer mode MODE. */
static void write_rows(hid_t file, const char *name, int set, H5FD_mpio_xfer_t mode)
{
    hsize_t dims[2] = {(hsize_t)size * ROWS_PER_RANK, COLS};
    hsize_t start[2] = {(hsize_t)rank * ROWS_PER_RANK, 0}, count[2] = {ROWS_PER_RANK, COLS};
    double block[ROWS_PER_RANK][COLS];
    for (hsize_t r = 0; r < ROWS_PER_RANK; r++)
        for (hsize_t c = 0; c < COLS; c++)
            block[r][c] = value(set, start[0] + r, c);
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t set_id = H5Dcreate2(file, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT);
    check(set_id >= 0, "H5Dcreate2");
    hid_t mem = H5Screate_simple(2, count, NULL);
    check(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0, "hyperslab");
    hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(xfer, mode);
    check(H5Dwrite(set_id, H5T_NATIVE_DOUBLE, mem, space, xfer, block) >= 0, "H5Dwrite");
    H5Pclose(xfer);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(set_id);
}

static void read_all(hid_t file, const char *name, int set)
{
    hsize_t rows = (hsize_t)size * ROWS_PER_RANK;
    double *all = malloc(sizeof(double) * rows * COLS);
    hid_t set_id = H5Dopen2(file, name, H5P_DEFAULT);
    check(set_id >= 0, "H5Dopen2");
    check(H5Dread(set_id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) >= 0, "H5Dread");
    for (hsize_t r = 0; r < rows; r++)
        for (hsize_t c = 0; c < COLS; c++)
            check(all[r * COLS + c] == value(set, r, c), name);
    H5Dclose(set_id);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check(argc == 2, "usage: hdf5 DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/reflex-apps.h5", argv[1]);

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(file >= 0, "H5Fcreate through the MPI-IO driver");
    write_rows(file, "collective", 1, H5FD_MPIO_COLLECTIVE);
    write_rows(file, "independent", 2, H5FD_MPIO_INDEPENDENT);
    int ranks = size;
    hid_t scalar = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, "ranks", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
    check(attr >= 0 && H5Awrite(attr, H5T_NATIVE_INT, &ranks) >= 0, "attribute");
    H5Aclose(attr);
    H5Sclose(scalar);
    check(H5Fclose(file) >= 0, "H5Fclose");

    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    check(file >= 0, "H5Fopen");
    read_all(file, "collective", 1);
    read_all(file, "independent", 2);
    attr = H5Aopen(file, "ranks", H5P_DEFAULT);
    ranks = -1;
    check(attr >= 0 && H5Aread(attr, H5T_NATIVE_INT, &ranks) >= 0 && ranks == size, "attribute");
    H5Aclose(attr);
    H5Fclose(file);
    H5Pclose(fapl);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        remove(path);
    printf("apps hdf5 rank %d of %d: ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
