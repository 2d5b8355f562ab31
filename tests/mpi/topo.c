/*
 * topo.c - process topologies (MPI-3.1 chapter 7). MPI_Dims_create balances a grid and keeps
 * fixed entries; a 2-D Cartesian grid (periodic in dimension 0) answers Cart_get, Cartdim_get,
 * Cart_coords/Cart_rank (round trip, periodic wrap), Cart_shift (PROC_NULL off the open edge),
 * carries messages between shift neighbours, splits into rows and columns with Cart_sub, and
 * survives MPI_Comm_dup; Cart_map and Graph_map; a ring as MPI_Graph_create (Graphdims_get,
 * Graph_get, Graph_neighbors) and as distributed graphs, adjacent and non-adjacent (rank 0
 * names every edge), with weights; MPI_Topo_test on each. Error paths under MPI_ERRORS_RETURN:
 * Cartesian queries on a communicator without a grid are MPI_ERR_TOPOLOGY, a grid larger than
 * the communicator fails, Dims_create with an impossible fixed entry
 * is MPI_ERR_DIMS. Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int n = mtest_size, me = mtest_rank, rc, status;

    /* Dims_create */
    int d3[3] = { 0, 0, 0 };
    CALL(MPI_Dims_create(16, 3, d3));
    CHECK(d3[0] == 4 && d3[1] == 2 && d3[2] == 2, "Dims_create(16,3) = %d %d %d", d3[0], d3[1], d3[2]);
    int dfix[3] = { 0, 3, 0 };
    CALL(MPI_Dims_create(12, 3, dfix));
    CHECK(dfix[0] == 2 && dfix[1] == 3 && dfix[2] == 2, "Dims_create(12,{0,3,0}) = %d %d %d", dfix[0], dfix[1], dfix[2]);
    int bad[2] = { 5, 0 };
    rc = MPI_Dims_create(12, 2, bad);
    CHECK_CLASS(rc, MPI_ERR_DIMS);
    int dims[2] = { 0, 0 };
    CALL(MPI_Dims_create(n, 2, dims));
    CHECK(dims[0] * dims[1] == n && dims[0] >= dims[1], "Dims_create(%d,2) = %d %d", n, dims[0], dims[1]);

    /* A 2-D grid, periodic in dimension 0. */
    int periods[2] = { 1, 0 }, coords[2], r, ndims, gd[2], gp[2], gc[2];
    MPI_Comm cart, dup, rows, cols;
    CALL(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    CALL(MPI_Topo_test(cart, &status));
    CHECK_EQ(status, MPI_CART);
    CALL(MPI_Cartdim_get(cart, &ndims));
    CHECK_EQ(ndims, 2);
    CALL(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0, "Cart_get dims/periods");
    CHECK(gc[0] == me / dims[1] && gc[1] == me % dims[1], "row-major coordinates (%d,%d)", gc[0], gc[1]);
    for (int i = 0; i < n; i++) {
        CALL(MPI_Cart_coords(cart, i, 2, coords));
        CALL(MPI_Cart_rank(cart, coords, &r));
        CHECK(r == i, "coords/rank round trip %d -> %d", i, r);
    }
    coords[0] = gc[0] + dims[0]; /* wraps */
    coords[1] = gc[1];
    CALL(MPI_Cart_rank(cart, coords, &r));
    CHECK_EQ(r, me);

    int src, dst;
    CALL(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK_EQ(dst, ((gc[0] + 1) % dims[0]) * dims[1] + gc[1]);
    CHECK_EQ(src, ((gc[0] + dims[0] - 1) % dims[0]) * dims[1] + gc[1]);
    /* messages along the shift */
    int out = me, in = -1;
    CALL(MPI_Sendrecv(&out, 1, MPI_INT, dst, 3, &in, 1, MPI_INT, src, 3, cart, MPI_STATUS_IGNORE));
    CHECK_EQ(in, src);
    CALL(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    CHECK_EQ(dst, gc[1] + 1 < dims[1] ? me + 1 : MPI_PROC_NULL);
    CHECK_EQ(src, gc[1] > 0 ? me - 1 : MPI_PROC_NULL);

    /* Cart_sub: rows (keep dimension 1) and columns (keep dimension 0). */
    int keep_rows[2] = { 0, 1 }, keep_cols[2] = { 1, 0 }, size;
    CALL(MPI_Cart_sub(cart, keep_rows, &rows));
    MPI_Comm_size(rows, &size);
    CHECK_EQ(size, dims[1]);
    MPI_Comm_rank(rows, &r);
    CHECK_EQ(r, gc[1]);
    CALL(MPI_Cartdim_get(rows, &ndims));
    CHECK_EQ(ndims, 1);
    CALL(MPI_Cart_sub(cart, keep_cols, &cols));
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, cols);
    CHECK_EQ(sum, dims[0]);

    CALL(MPI_Comm_dup(cart, &dup));
    CALL(MPI_Topo_test(dup, &status));
    CHECK_EQ(status, MPI_CART);

    /* Cart_map: a 1-D grid of n-1 processes leaves the last rank out. */
    if (n > 1) {
        int dm = n - 1, pm = 0;
        CALL(MPI_Cart_map(MPI_COMM_WORLD, 1, &dm, &pm, &r));
        CHECK(me < n - 1 ? r >= 0 && r < n - 1 : r == MPI_UNDEFINED, "Cart_map gave %d", r);
    }

    /* A ring as a graph. */
    int *index = mtest_malloc(n * sizeof(int)), *edges = mtest_malloc(2 * n * sizeof(int));
    for (int i = 0; i < n; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + n - 1) % n;
        edges[2 * i + 1] = (i + 1) % n;
    }
    MPI_Comm graph;
    CALL(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &graph));
    CALL(MPI_Topo_test(graph, &status));
    CHECK_EQ(status, MPI_GRAPH);
    int nn, ne, nb[2], cnt;
    CALL(MPI_Graphdims_get(graph, &nn, &ne));
    CHECK(nn == n && ne == 2 * n, "Graphdims_get %d %d", nn, ne);
    int *gi = mtest_malloc(n * sizeof(int)), *ge = mtest_malloc(2 * n * sizeof(int));
    CALL(MPI_Graph_get(graph, n, 2 * n, gi, ge));
    CHECK(!memcmp(gi, index, n * sizeof(int)) && !memcmp(ge, edges, 2 * n * sizeof(int)), "Graph_get differs");
    CALL(MPI_Graph_neighbors_count(graph, me, &cnt));
    CHECK_EQ(cnt, 2);
    CALL(MPI_Graph_neighbors(graph, me, 2, nb));
    CHECK(nb[0] == (me + n - 1) % n && nb[1] == (me + 1) % n, "Graph_neighbors %d %d", nb[0], nb[1]);
    CALL(MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &r));
    CHECK(r >= 0 && r < n, "Graph_map gave %d", r);

    /* The ring as an adjacent distributed graph with weights. */
    int prev = (me + n - 1) % n, next = (me + 1) % n, wprev = 10 * prev + me, wnext = 10 * me + next;
    MPI_Comm dg, dg2;
    CALL(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, &wprev, 1, &next, &wnext,
                                        MPI_INFO_NULL, 0, &dg));
    CALL(MPI_Topo_test(dg, &status));
    CHECK_EQ(status, MPI_DIST_GRAPH);
    int indeg, outdeg, weighted, s1, sw1, d1, dw1;
    CALL(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && weighted, "counts %d %d %d", indeg, outdeg, weighted);
    CALL(MPI_Dist_graph_neighbors(dg, 1, &s1, &sw1, 1, &d1, &dw1));
    CHECK(s1 == prev && sw1 == wprev && d1 == next && dw1 == wnext, "adjacent neighbours");
    CALL(MPI_Sendrecv(&out, 1, MPI_INT, next, 4, &in, 1, MPI_INT, prev, 4, dg, MPI_STATUS_IGNORE));
    CHECK_EQ(in, prev);

    /* Non-adjacent, unweighted: rank 0 names every edge i -> i+1. */
    int *srcs = mtest_malloc(n * sizeof(int)), *degs = mtest_malloc(n * sizeof(int)), *dsts = mtest_malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) {
        srcs[i] = i;
        degs[i] = 1;
        dsts[i] = (i + 1) % n;
    }
    CALL(MPI_Dist_graph_create(MPI_COMM_WORLD, me == 0 ? n : 0, srcs, degs, dsts, MPI_UNWEIGHTED,
                               MPI_INFO_NULL, 0, &dg2));
    CALL(MPI_Dist_graph_neighbors_count(dg2, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && !weighted, "counts %d %d %d", indeg, outdeg, weighted);
    CALL(MPI_Dist_graph_neighbors(dg2, 1, &s1, MPI_UNWEIGHTED, 1, &d1, MPI_UNWEIGHTED));
    CHECK(s1 == prev && d1 == next, "non-adjacent neighbours %d %d", s1, d1);

    /* Error paths. */
    rc = MPI_Cartdim_get(MPI_COMM_WORLD, &ndims);
    CHECK_CLASS(rc, MPI_ERR_TOPOLOGY);
    int big = n + 1, np = 0;
    MPI_Comm none;
    rc = MPI_Cart_create(MPI_COMM_WORLD, 1, &big, &np, 0, &none);
    CHECK(rc != MPI_SUCCESS, "a grid larger than the communicator was accepted");
    rc = MPI_Graph_neighbors_count(cart, 0, &cnt);
    CHECK_CLASS(rc, MPI_ERR_TOPOLOGY);
    CALL(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK_EQ(status, MPI_UNDEFINED);

    MPI_Comm_free(&dg2);
    MPI_Comm_free(&dg);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&cols);
    MPI_Comm_free(&rows);
    MPI_Comm_free(&cart);
    free(index); free(edges); free(gi); free(ge); free(srcs); free(degs); free(dsts);
    return MTest_Finalize();
}
