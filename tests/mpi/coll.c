/*
 * coll.c - simple correctness of the basic collectives (MPI-3.1 chapter 5): MPI_Barrier,
 * MPI_Bcast, MPI_Reduce, MPI_Allreduce (also MPI_IN_PLACE), MPI_Gather and MPI_Allgather on
 * MPI_INT and MPI_DOUBLE with MPI_SUM, MPI_MAX, MPI_MIN and MPI_PROD, at every root (up to 4
 * roots), with 1 and 1000 elements (and 100,000 for MPI_Bcast). Values are small integers so
 * every result is exact. Runs with any number of ranks.
 */
#include "mtest.h"

#define NOPS 4
static const MPI_Op ops[NOPS] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
static const char *op_names[NOPS] = {"SUM", "MAX", "MIN", "PROD"};

/* Element i of rank r's contribution: 1..3, so a product over 8 ranks stays exact. */
static int val(int r, int i) { return 1 + (r + i) % 3; }

static double expected(int op, int i)
{
    double acc = op == 3 ? 1 : op == 2 ? 1e9 : op == 1 ? -1e9 : 0;
    for (int r = 0; r < mtest_size; r++) {
        double v = val(r, i);
        acc = op == 0 ? acc + v : op == 1 ? (v > acc ? v : acc) : op == 2 ? (v < acc ? v : acc) : acc * v;
    }
    return acc;
}

static void reductions(int count, int root)
{
    int *ia = mtest_malloc(count * sizeof(int)), *ib = mtest_malloc(count * sizeof(int));
    double *da = mtest_malloc(count * sizeof(double)), *db = mtest_malloc(count * sizeof(double));
    for (int op = 0; op < NOPS; op++) {
        for (int i = 0; i < count; i++) {
            ia[i] = val(mtest_rank, i);
            da[i] = val(mtest_rank, i);
            ib[i] = -1;
            db[i] = -1;
        }
        MPI_Reduce(ia, ib, count, MPI_INT, ops[op], root, MPI_COMM_WORLD);
        MPI_Reduce(da, db, count, MPI_DOUBLE, ops[op], root, MPI_COMM_WORLD);
        if (mtest_rank == root)
            for (int i = 0; i < count; i++)
                if (ib[i] != (int)expected(op, i) || db[i] != expected(op, i)) {
                    FAIL("Reduce %s root %d count %d: element %d int %d double %g, want %g",
                          op_names[op], root, count, i, ib[i], db[i], expected(op, i));
                    break;
                }
        MPI_Allreduce(ia, ib, count, MPI_INT, ops[op], MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, da, count, MPI_DOUBLE, ops[op], MPI_COMM_WORLD);
        for (int i = 0; i < count; i++)
            if (ib[i] != (int)expected(op, i) || da[i] != expected(op, i)) {
                FAIL("Allreduce %s count %d: element %d int %d double %g, want %g", op_names[op],
                      count, i, ib[i], da[i], expected(op, i));
                break;
            }
    }
    free(ia);
    free(ib);
    free(da);
    free(db);
}

static void bcast(int count, int root)
{
    int *ib = mtest_malloc(count * sizeof(int));
    double *db = mtest_malloc(count * sizeof(double));
    for (int i = 0; i < count; i++) {
        ib[i] = mtest_rank == root ? i * 3 + root : -1;
        db[i] = mtest_rank == root ? i * 0.5 + root : -1;
    }
    MPI_Bcast(ib, count, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Bcast(db, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; i < count; i++)
        if (ib[i] != i * 3 + root || db[i] != i * 0.5 + root) {
            FAIL("Bcast root %d count %d: element %d is %d / %g", root, count, i, ib[i], db[i]);
            break;
        }
    free(ib);
    free(db);
}

static void gathers(int count, int root)
{
    int n = count * mtest_size;
    int *mine = mtest_malloc(count * sizeof(int)), *all = mtest_malloc(n * sizeof(int));
    double *dmine = mtest_malloc(count * sizeof(double)), *dall = mtest_malloc(n * sizeof(double));
    for (int i = 0; i < count; i++) {
        mine[i] = mtest_rank * 10000 + i;
        dmine[i] = mtest_rank + i * 0.25;
    }
    for (int allg = 0; allg < 2; allg++) {
        for (int i = 0; i < n; i++) {
            all[i] = -1;
            dall[i] = -1;
        }
        if (allg) {
            MPI_Allgather(mine, count, MPI_INT, all, count, MPI_INT, MPI_COMM_WORLD);
            MPI_Allgather(dmine, count, MPI_DOUBLE, dall, count, MPI_DOUBLE, MPI_COMM_WORLD);
        } else {
            MPI_Gather(mine, count, MPI_INT, all, count, MPI_INT, root, MPI_COMM_WORLD);
            MPI_Gather(dmine, count, MPI_DOUBLE, dall, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
        }
        if (allg || mtest_rank == root)
            for (int r = 0; r < mtest_size; r++)
                for (int i = 0; i < count; i++)
                    if (all[r * count + i] != r * 10000 + i || dall[r * count + i] != r + i * 0.25) {
                        FAIL("%s root %d count %d: block %d element %d is %d / %g",
                              allg ? "Allgather" : "Gather", root, count, r, i, all[r * count + i],
                              dall[r * count + i]);
                        r = mtest_size;
                        break;
                    }
    }
    free(mine);
    free(all);
    free(dmine);
    free(dall);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    int nroots = mtest_size < 4 ? mtest_size : 4;
    for (int k = 0; k < nroots; k++) {
        int root = (k * (mtest_size - 1)) / (nroots > 1 ? nroots - 1 : 1); /* spread, incl. last */
        bcast(1, root);
        bcast(100000, root);
        reductions(1, root);
        reductions(1000, root);
        gathers(1, root);
        gathers(1000, root);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return MTest_Finalize();
}
