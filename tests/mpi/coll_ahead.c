/*
 * coll_ahead.c - back-to-back small collectives with no synchronisation between them, so that
 * roots and fast ranks run ahead of slow ones (on Reflex's shared-memory board, up to a ring of
 * slots ahead; more iterations than slots, so every slot is reused while others still read).
 * Each iteration changes the data and the root: Bcast, Reduce (sum, to the root), Allreduce
 * (a non-commutative user operation, which must combine in rank order), Allgather and
 * Alltoall, each checked right away. Rank 0 sleeps now and then so that the others pile up.
 * Then a stream of Bcast and Reduce alone (MPI_IN_PLACE at the root of the Reduce), whose root
 * stays put for a while: with nothing in between to synchronise, the root runs ahead and the
 * readers mostly find its data already there (the board's no-waiting paths).
 * Runs with any number of ranks.
 */
#include "mtest.h"
#include <time.h>

#define ITERS 300

/* inout = in o inout for affine maps x -> a*x + b (pairs of ints, mod 2^31): not commutative. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++, x += 2, y += 2) {
        long long a = (long long)x[0] * y[0] % 2147483647;
        long long b = ((long long)x[0] * y[1] + x[1]) % 2147483647;
        y[0] = (int)a;
        y[1] = (int)b;
    }
}

static void nap(void)
{
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int P = mtest_size, me = mtest_rank;
    MPI_Op op;
    MPI_Datatype pair;
    CALL(MPI_Op_create(compose, 0, &op));
    CALL(MPI_Type_contiguous(2, MPI_INT, &pair));
    CALL(MPI_Type_commit(&pair));
    int *all = mtest_malloc(sizeof(int) * 2 * P), *back = mtest_malloc(sizeof(int) * 2 * P);
    for (int it = 0; it < ITERS; it++) {
        int root = it % P;
        if (me == 0 && it % 37 == 0)
            nap();
        int v = me == root ? 1000 + it : -1;
        CALL(MPI_Bcast(&v, 1, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(v == 1000 + it, "iteration %d: bcast from %d gave %d", it, root, v);

        int mine = it * 7 + me, sum = -1;
        CALL(MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (me == root)
            CHECK(sum == P * it * 7 + P * (P - 1) / 2, "iteration %d: reduce gave %d", it, sum);

        int map[2] = {2 + (me + it) % 5, me + it}, got[2];
        CALL(MPI_Allreduce(map, got, 1, pair, op, MPI_COMM_WORLD));
        long long a = 1, b = 0; /* x0 o (x1 o (... o x[P-1])), applied right to left */
        for (int r = P - 1; r >= 0; r--) {
            long long ra = 2 + (r + it) % 5, rb = r + it;
            b = (ra * b + rb) % 2147483647;
            a = ra * a % 2147483647;
        }
        CHECK(got[0] == a && got[1] == b, "iteration %d: allreduce gave (%d, %d), want (%lld, %lld)",
              it, got[0], got[1], a, b);

        int block[2] = {me, it};
        CALL(MPI_Allgather(block, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < P; r++)
            CHECK(all[2 * r] == r && all[2 * r + 1] == it, "iteration %d: allgather block %d", it, r);

        for (int r = 0; r < P; r++)
            all[2 * r] = me * 100 + r, all[2 * r + 1] = it;
        CALL(MPI_Alltoall(all, 2, MPI_INT, back, 2, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < P; r++)
            CHECK(back[2 * r] == r * 100 + me && back[2 * r + 1] == it,
                  "iteration %d: alltoall block from %d", it, r);
    }
    for (int it = 0; it < 2 * ITERS; it++) {
        int root = it / 50 % P;
        if (me == it / 25 % P && it % 23 == 0)
            nap();
        double x[3] = {-1, -1, -1};
        if (me == root)
            x[0] = it + 0.5, x[1] = -it, x[2] = 2.0 * it;
        CALL(MPI_Bcast(x, 3, MPI_DOUBLE, root, MPI_COMM_WORLD));
        CHECK(x[0] == it + 0.5 && x[1] == -it && x[2] == 2.0 * it, "stream %d: bcast from %d", it, root);
        long m[3] = {it + me, it - me, me % 2 ? it : -it};
        if (me == root)
            CALL(MPI_Reduce(MPI_IN_PLACE, m, 3, MPI_LONG, MPI_MAX, root, MPI_COMM_WORLD));
        else
            CALL(MPI_Reduce(m, NULL, 3, MPI_LONG, MPI_MAX, root, MPI_COMM_WORLD));
        if (me == root)
            CHECK(m[0] == it + P - 1 && m[1] == it && m[2] == (P > 1 ? it : -it),
                  "stream %d: reduce to %d gave (%ld, %ld, %ld)", it, root, m[0], m[1], m[2]);
    }
    free(all);
    free(back);
    CALL(MPI_Type_free(&pair));
    CALL(MPI_Op_free(&op));
    return MTest_Finalize();
}
