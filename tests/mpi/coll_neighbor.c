/*
 * coll_neighbor.c - the neighbourhood collectives of MPI-3.1 7.6 against a reference computed
 * from the topology queries (MPI_Cart_shift, MPI_Graph_neighbors, the dist-graph lists), in the
 * blocking and the nonblocking form:
 *  - a 2-D grid, periodic in dimension 0 only: Neighbor_allgather, _alltoall, _allgatherv
 *    (displacements backwards), _alltoallv (uneven counts) and _alltoallw (byte
 *    displacements); a block whose neighbour is MPI_PROC_NULL (off the non-periodic edge) is
 *    neither sent nor received and keeps its sentinel;
 *  - a periodic ring (1-D grid): with 1 or 2 ranks both neighbours are the same process, and
 *    the block sent "up" must arrive as the one "from below";
 *  - a graph (ring with both directions, 3+ ranks) and a non-symmetric distributed graph
 *    (sources rank-1, rank-3; destinations rank+1, rank+3) with allgather and alltoall.
 * Runs with any number of ranks.
 */
#include "mtest.h"

#define SENT (-66)
#define C 3 /* elements per block */

static int P, me, nb;

#define COLL(blocking, nonblocking, ...)                                  \
    do {                                                                  \
        if (nb) {                                                         \
            MPI_Request r_ = MPI_REQUEST_NULL;                            \
            CALL(nonblocking(__VA_ARGS__, &r_));                          \
            CALL(MPI_Wait(&r_, MPI_STATUS_IGNORE));                       \
        } else                                                            \
            CALL(blocking(__VA_ARGS__));                                  \
    } while (0)

/* Element k of the block `from` sends as its block number `blk` (-1: the allgather block). */
static int val(int from, int blk, int k) { return 1 + from * 1000 + (blk + 1) * 10 + k; }

/*
 * One topology's view: in-neighbours src[i] and, for each, the index under which src[i] sends
 * to us (its out-block number); out-degree outdeg.
 */
struct view {
    const char *name;
    MPI_Comm comm;
    int indeg, outdeg, src[16], srcblk[16];
};

static void check_block(const struct view *t, const char *coll, const int *got, int i, int want_from, int blk,
                        int n)
{
    for (int k = 0; k < n; k++) {
        int want = want_from == MPI_PROC_NULL ? SENT : val(want_from, blk, k);
        if (got[k] != want) {
            FAIL("%s %s (%s): block %d (neighbour %d) element %d is %d, want %d", t->name, coll,
                 nb ? "nonblocking" : "blocking", i, want_from, k, got[k], want);
            return;
        }
    }
}

static void allgather_alltoall(const struct view *t)
{
    int mine[C], *sbuf = mtest_malloc((t->outdeg * C + 1) * sizeof(int));
    int *rbuf = mtest_malloc((t->indeg * C + 1) * sizeof(int));
    for (int k = 0; k < C; k++)
        mine[k] = val(me, -1, k);
    for (int i = 0; i < t->indeg * C; i++)
        rbuf[i] = SENT;
    COLL(MPI_Neighbor_allgather, MPI_Ineighbor_allgather, mine, C, MPI_INT, rbuf, C, MPI_INT, t->comm);
    for (int i = 0; i < t->indeg; i++)
        check_block(t, "Neighbor_allgather", rbuf + i * C, i, t->src[i], -1, C);
    for (int j = 0; j < t->outdeg; j++)
        for (int k = 0; k < C; k++)
            sbuf[j * C + k] = val(me, j, k);
    for (int i = 0; i < t->indeg * C; i++)
        rbuf[i] = SENT;
    COLL(MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, sbuf, C, MPI_INT, rbuf, C, MPI_INT, t->comm);
    for (int i = 0; i < t->indeg; i++)
        check_block(t, "Neighbor_alltoall", rbuf + i * C, i, t->src[i], t->srcblk[i], C);
    free(sbuf);
    free(rbuf);
}

/* v and w forms on a grid: out-block j carries j % 2 + 1 elements; on a grid in-block i comes
 * from the neighbour's out-block i ^ 1. */
static void vw(const struct view *t)
{
    int n = t->indeg; /* = outdeg on a grid */
    int sc[16], sd[16], rc[16], rd[16], sbuf[64], rbuf[64], mine[C];
    MPI_Aint sdb[16], rdb[16];
    MPI_Datatype types[16];
    int at = 0;
    for (int i = n - 1; i >= 0; i--) { /* backwards, one free element between blocks */
        rc[i] = (i ^ 1) % 2 + 1;
        rd[i] = at;
        rdb[i] = at * (MPI_Aint)sizeof(int);
        at += rc[i] + 1;
    }
    int sat = 0;
    for (int j = 0; j < n; j++) {
        sc[j] = j % 2 + 1;
        sd[j] = sat;
        sdb[j] = sat * (MPI_Aint)sizeof(int);
        sat += sc[j];
        for (int k = 0; k < sc[j]; k++)
            sbuf[sd[j] + k] = val(me, j, k);
        types[j] = MPI_INT;
    }
    for (int w = 0; w < 2; w++) {
        for (int i = 0; i < at; i++)
            rbuf[i] = SENT;
        if (w)
            COLL(MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, sbuf, sc, sdb, types, rbuf, rc,
                 rdb, types, t->comm);
        else
            COLL(MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT,
                 t->comm);
        for (int i = 0; i < n; i++) {
            check_block(t, w ? "Neighbor_alltoallw" : "Neighbor_alltoallv", rbuf + rd[i], i, t->src[i], t->srcblk[i],
                        rc[i]);
            CHECK(rbuf[rd[i] + rc[i]] == SENT, "%s: gap after block %d written", t->name, i);
        }
    }
    /* allgatherv: every neighbour sends 2 elements; receive counts 2, displacements backwards */
    for (int k = 0; k < C; k++)
        mine[k] = val(me, -1, k);
    at = 0;
    for (int i = n - 1; i >= 0; i--) {
        rc[i] = 2;
        rd[i] = at;
        at += 3;
    }
    for (int i = 0; i < at; i++)
        rbuf[i] = SENT;
    COLL(MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv, mine, 2, MPI_INT, rbuf, rc, rd, MPI_INT, t->comm);
    for (int i = 0; i < n; i++) {
        check_block(t, "Neighbor_allgatherv", rbuf + rd[i], i, t->src[i], -1, 2);
        CHECK(rbuf[rd[i] + 2] == SENT, "%s: Neighbor_allgatherv gap after block %d written", t->name, i);
    }
}

/* A grid's view: per dimension the neighbour below, then the one above. */
static void cart_view(struct view *t, const char *name, int ndims, const int *periods)
{
    int dims[2] = {0, 0};
    MPI_Dims_create(P, ndims, dims);
    CALL(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &t->comm));
    t->name = name;
    t->indeg = t->outdeg = 2 * ndims;
    for (int d = 0; d < ndims; d++) {
        int lo, hi;
        CALL(MPI_Cart_shift(t->comm, d, 1, &lo, &hi));
        t->src[2 * d] = lo; /* it sent "up": its block 2d + 1 */
        t->srcblk[2 * d] = 2 * d + 1;
        t->src[2 * d + 1] = hi; /* it sent "down": its block 2d */
        t->srcblk[2 * d + 1] = 2 * d;
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    P = mtest_size;
    me = mtest_rank;
    struct view grid, ring, graph, dist;
    int periods2[2] = {1, 0}, periods1[1] = {1};
    cart_view(&grid, "2-D grid", 2, periods2);
    cart_view(&ring, "periodic ring", 1, periods1);

    /* graph: ring in both directions (3+ ranks, so that no edge is doubled) */
    graph.comm = MPI_COMM_NULL;
    if (P >= 3) {
        int *index = mtest_malloc(P * sizeof(int)), *edges = mtest_malloc(2 * P * sizeof(int));
        for (int r = 0; r < P; r++) {
            index[r] = 2 * (r + 1);
            edges[2 * r] = (r + 1) % P;
            edges[2 * r + 1] = (r + P - 1) % P;
        }
        CALL(MPI_Graph_create(MPI_COMM_WORLD, P, index, edges, 0, &graph.comm));
        free(index);
        free(edges);
        int nn = 0, nbrs[2];
        CALL(MPI_Graph_neighbors_count(graph.comm, me, &nn));
        CHECK_EQ(nn, 2);
        CALL(MPI_Graph_neighbors(graph.comm, me, 2, nbrs));
        graph.name = "graph";
        graph.indeg = graph.outdeg = 2;
        graph.src[0] = nbrs[0]; /* me + 1: I am its neighbour number 1 */
        graph.srcblk[0] = 1;
        graph.src[1] = nbrs[1]; /* me - 1: I am its neighbour number 0 */
        graph.srcblk[1] = 0;
    }

    /* dist graph: from me - 1 and me - 3, to me + 1 and me + 3 (not symmetric) */
    int srcs[2] = {(me + 3 * P - 1) % P, (me + 3 * P - 3) % P};
    int dsts[2] = {(me + 1) % P, (me + 3) % P};
    CALL(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED,
                                        MPI_INFO_NULL, 0, &dist.comm));
    dist.name = "dist graph";
    dist.indeg = dist.outdeg = 2;
    dist.src[0] = srcs[0]; /* me is its destination number 0 */
    dist.srcblk[0] = 0;
    dist.src[1] = srcs[1]; /* me is its destination number 1 */
    dist.srcblk[1] = 1;

    for (nb = 0; nb < 2; nb++) {
        allgather_alltoall(&grid);
        vw(&grid);
        allgather_alltoall(&ring);
        vw(&ring);
        if (graph.comm != MPI_COMM_NULL)
            allgather_alltoall(&graph);
        allgather_alltoall(&dist);
    }
    MPI_Comm_free(&grid.comm);
    MPI_Comm_free(&ring.comm);
    if (graph.comm != MPI_COMM_NULL)
        MPI_Comm_free(&graph.comm);
    MPI_Comm_free(&dist.comm);
    return MTest_Finalize();
}
