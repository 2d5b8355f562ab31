/*
 * io.c - collective MPI-IO bandwidth with interleaved blocks (the access pattern of a
 * distributed array written to one file: rank r owns blocks r, r + n, r + 2n, ...).
 *
 * For each block size and each collective-buffering setting, every rank writes its blocks with
 * MPI_File_write_all through a strided view, then reads them back with MPI_File_read_all
 * (checking the data), each timed between barriers; the best of the repetitions is printed as
 * "<write|read> <cb> <block bytes> <MB/s of the whole file>". The cb setting goes to the hints
 * romio_cb_write and romio_cb_read ("automatic", "enable", "disable": ROMIO's, which MPICH and
 * Reflex read; Open MPI's ompio has its own choice and ignores them).
 *
 * Options: -b block sizes (default 64,4096,65536), -m MiB per rank (default 16),
 * -c cb settings (default automatic,disable), -r repetitions (default 3), -d directory
 * (default $TMPDIR or /tmp).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

static double timed_access(MPI_File fh, int write, unsigned char *buf, int bytes)
{
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    int rc = write ? MPI_File_write_at_all(fh, 0, buf, bytes, MPI_BYTE, &st)
                   : MPI_File_read_at_all(fh, 0, buf, bytes, MPI_BYTE, &st);
    if (write && rc == MPI_SUCCESS)
        rc = MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "io: rank %d: %s failed (%d)\n", rank, write ? "write" : "read", rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return t;
}

static void run(const char *path, const char *cb, int block, long bytes, int reps)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", cb);
    MPI_Info_set(info, "romio_cb_read", cb);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
    MPI_Datatype v, tile;
    MPI_Type_vector(1, block, block * size, MPI_BYTE, &v);
    MPI_Type_create_resized(v, 0, (MPI_Aint)block * size, &tile);
    MPI_Type_commit(&tile);
    MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, tile, "native", info);
    int n = (int)(bytes / block * block);
    unsigned char *buf = malloc(n), *back = malloc(n);
    for (int i = 0; i < n; i++)
        buf[i] = (unsigned char)(rank * 31 + i);
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; r++) {
        double w = timed_access(fh, 1, buf, n);
        memset(back, 0, n);
        double rd = timed_access(fh, 0, back, n);
        if (memcmp(buf, back, n) != 0) {
            fprintf(stderr, "io: rank %d: read back other data (cb %s, block %d)\n", rank, cb, block);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        best[0] = w < best[0] ? w : best[0];
        best[1] = rd < best[1] ? rd : best[1];
    }
    double total = (double)n * size / 1e6;
    if (rank == 0) {
        printf("write %s %d %.1f\n", cb, block, total / best[0]);
        printf("read %s %d %.1f\n", cb, block, total / best[1]);
        fflush(stdout);
    }
    free(buf);
    free(back);
    MPI_Type_free(&tile);
    MPI_Type_free(&v);
    MPI_File_close(&fh);
    MPI_Info_free(&info);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char blocks[256] = "64,4096,65536", cbs[256] = "automatic,disable", path[512];
    const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    long mib = 16;
    int reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-b"))
            snprintf(blocks, sizeof blocks, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "-c"))
            snprintf(cbs, sizeof cbs, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "-m"))
            mib = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-d"))
            dir = argv[i + 1];
    }
    snprintf(path, sizeof path, "%s/reflex-bench-io-%d", dir, (int)getpid());
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("# io: %d ranks, %ld MiB per rank, file %s\n", size, mib, path);
    for (char *b = strtok(blocks, ","); b; b = strtok(NULL, ",")) {
        char cbcopy[256];
        snprintf(cbcopy, sizeof cbcopy, "%s", cbs);
        char *save = NULL;
        for (char *c = strtok_r(cbcopy, ",", &save); c; c = strtok_r(NULL, ",", &save))
            run(path, c, atoi(b), mib << 20, reps);
    }
    MPI_Finalize();
    return 0;
}
