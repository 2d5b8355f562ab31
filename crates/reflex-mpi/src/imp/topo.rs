//! Process topologies (MPI-3.1 chapter 7): Cartesian grids, graphs, distributed graphs,
//! `MPI_Dims_create` and `MPI_Topo_test`. The topologies and their arithmetic are the engine's
//! (`reflex_engine::topo`, `topo_ops`); this file checks and converts the C arrays. Output arrays
//! sized by a `max*` argument receive at most that many entries.

use super::util::{int_array, write, write_ints};
use crate::extras::is_unweighted;
use crate::ffi::*;
use crate::handles;
use crate::info::InfoId;
use crate::state::Mpi;
use reflex_engine::topo::{dims_create as engine_dims_create, Cart, DistGraph, Topology};
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::c_int;
use std::sync::Arc;

fn no_topology(what: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Topology,
        format!("the communicator has no {what} topology"),
    )
}

fn cart_of(w: &Mpi, comm: CommId) -> Result<Arc<Topology>> {
    w.world.engine.cart(comm)
}

/// Runs `f` on the Cartesian topology of `comm`.
fn with_cart<R>(w: &Mpi, comm: CommId, f: impl FnOnce(&Cart) -> Result<R>) -> Result<R> {
    match &*cart_of(w, comm)? {
        Topology::Cart(c) => f(c),
        _ => Err(no_topology("Cartesian")),
    }
}

/// The graph topology of `comm`: (cumulative index, edges).
fn graph_of(w: &Mpi, comm: CommId) -> Result<(Vec<usize>, Vec<usize>)> {
    match w.world.engine.topology(comm)?.as_deref() {
        Some(Topology::Graph { index, edges }) => Ok((index.clone(), edges.clone())),
        _ => Err(no_topology("graph")),
    }
}

/// The distributed-graph topology of `comm`.
fn dist_graph_of(w: &Mpi, comm: CommId) -> Result<DistGraph> {
    match w.world.engine.topology(comm)?.as_deref() {
        Some(Topology::DistGraph(g)) => Ok(g.clone()),
        _ => Err(no_topology("distributed graph")),
    }
}

fn count(n: c_int, what: &str) -> Result<usize> {
    usize::try_from(n)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("{what} {n} is negative")))
}

fn write_comm(out: *mut MPI_Comm, id: Option<CommId>) -> Result<()> {
    write(out, id.map_or(handles::COMM_NULL, handles::comm_handle));
    Ok(())
}

/// A grid from the C arrays of `MPI_Cart_create` / `MPI_Cart_map`.
fn grid(ndims: c_int, dims: *const c_int, periods: *const c_int) -> Result<Cart> {
    count(ndims, "ndims")?;
    Cart::new(
        int_array(dims, ndims, "dims")?,
        int_array(periods, ndims, "periods")?,
    )
}

/// `MPI_Cart_create` (never reorders).
pub fn cart_create(
    w: &mut Mpi,
    comm_old: CommId,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> Result<()> {
    let cart = grid(ndims, dims, periods)?;
    let id = w.world.engine.cart_create(comm_old, cart)?;
    write_comm(comm_cart, id)
}

/// `MPI_Cart_map`: the rank this process would have in the grid, or `MPI_UNDEFINED`.
pub fn cart_map(
    w: &mut Mpi,
    comm: CommId,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> Result<()> {
    let cart = grid(ndims, dims, periods)?;
    map_rank(w, comm, cart.size(), newrank)
}

/// Ranks below `n` keep their rank, the others get `MPI_UNDEFINED` (Reflex does not reorder).
fn map_rank(w: &Mpi, comm: CommId, n: usize, newrank: *mut c_int) -> Result<()> {
    let c = w.world.engine.comm(comm)?;
    if n > c.size() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!(
                "the topology has {n} processes, more than the communicator's {}",
                c.size()
            ),
        ));
    }
    let rank = c.rank as usize;
    write(newrank, if rank < n { rank as c_int } else { UNDEFINED });
    Ok(())
}

/// `MPI_Cartdim_get`.
pub fn cartdim_get(w: &mut Mpi, comm: CommId, ndims: *mut c_int) -> Result<()> {
    let n = with_cart(w, comm, |c| Ok(c.dims.len()))?;
    write(ndims, n as c_int);
    Ok(())
}

fn check_max(max: c_int, n: usize, what: &str) -> Result<()> {
    if count(max, what)? < n {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("{what} {max} is smaller than the {n} dimensions"),
        ));
    }
    Ok(())
}

/// `MPI_Cart_get`: extents, periodicity and this process's coordinates.
pub fn cart_get(
    w: &mut Mpi,
    comm: CommId,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> Result<()> {
    let rank = w.world.engine.comm(comm)?.rank as usize;
    with_cart(w, comm, |c| {
        check_max(maxdims, c.dims.len(), "maxdims")?;
        write_ints(dims, c.dims.iter().map(|&d| d as c_int))?;
        write_ints(periods, c.periods.iter().map(|&p| c_int::from(p)))?;
        write_ints(coords, c.coords(rank).into_iter().map(|x| x as c_int))?;
        Ok(())
    })
}

/// `MPI_Cart_coords`.
pub fn cart_coords(
    w: &mut Mpi,
    comm: CommId,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> Result<()> {
    with_cart(w, comm, |c| {
        check_max(maxdims, c.dims.len(), "maxdims")?;
        write_ints(
            coords,
            c.coords(rank as usize).into_iter().map(|x| x as c_int),
        )?;
        Ok(())
    })
}

/// `MPI_Cart_rank`: periodic coordinates wrap; others out of range are `MPI_ERR_ARG`.
pub fn cart_rank(w: &mut Mpi, comm: CommId, coords: *const c_int, rank: *mut c_int) -> Result<()> {
    let r = with_cart(w, comm, |c| {
        let coords = int_array(coords, c.dims.len() as c_int, "coords")?;
        c.rank(coords)
    })?;
    write(rank, r as c_int);
    Ok(())
}

/// `MPI_Cart_shift`.
pub fn cart_shift(
    w: &mut Mpi,
    comm: CommId,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> Result<()> {
    let rank = w.world.engine.comm(comm)?.rank as usize;
    let (source, dest) = with_cart(w, comm, |c| c.shift(rank, direction, disp))?;
    write(rank_source, source);
    write(rank_dest, dest);
    Ok(())
}

/// `MPI_Cart_sub`.
pub fn cart_sub(
    w: &mut Mpi,
    comm: CommId,
    remain_dims: *const c_int,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let ndims = with_cart(w, comm, |c| Ok(c.dims.len()))?;
    let remain: Vec<bool> = int_array(remain_dims, ndims as c_int, "remain_dims")?
        .iter()
        .map(|&r| r != 0)
        .collect();
    let id = w.world.engine.cart_sub(comm, &remain)?;
    write_comm(newcomm, Some(id))
}

/// `MPI_Dims_create`.
pub fn dims_create(_w: &mut Mpi, nnodes: c_int, ndims: c_int, dims: *mut c_int) -> Result<()> {
    count(ndims, "ndims")?;
    let filled = engine_dims_create(nnodes, int_array(dims.cast_const(), ndims, "dims")?)?;
    write_ints(dims, filled)?;
    Ok(())
}

/// A graph from `MPI_Graph_create`'s / `MPI_Graph_map`'s arrays.
fn graph(nnodes: c_int, indx: *const c_int, edges: *const c_int) -> Result<Topology> {
    count(nnodes, "nnodes")?;
    let index = int_array(indx, nnodes, "indx")?;
    let nedges = index.last().copied().unwrap_or(0);
    Topology::graph(index, int_array(edges, nedges, "edges")?)
}

/// `MPI_Graph_create` (never reorders).
pub fn graph_create(
    w: &mut Mpi,
    comm_old: CommId,
    nnodes: c_int,
    indx: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut MPI_Comm,
) -> Result<()> {
    let topo = graph(nnodes, indx, edges)?;
    let id = w.world.engine.graph_create(comm_old, topo)?;
    write_comm(comm_graph, id)
}

/// `MPI_Graph_map`.
pub fn graph_map(
    w: &mut Mpi,
    comm: CommId,
    nnodes: c_int,
    indx: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> Result<()> {
    graph(nnodes, indx, edges)?;
    map_rank(w, comm, nnodes as usize, newrank)
}

/// `MPI_Graphdims_get`.
pub fn graphdims_get(
    w: &mut Mpi,
    comm: CommId,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> Result<()> {
    let (index, edges) = graph_of(w, comm)?;
    write(nnodes, index.len() as c_int);
    write(nedges, edges.len() as c_int);
    Ok(())
}

/// `MPI_Graph_get`.
pub fn graph_get(
    w: &mut Mpi,
    comm: CommId,
    maxindex: c_int,
    maxedges: c_int,
    indx: *mut c_int,
    edges: *mut c_int,
) -> Result<()> {
    let (index, list) = graph_of(w, comm)?;
    let (mi, me) = (count(maxindex, "maxindex")?, count(maxedges, "maxedges")?);
    write_ints(indx, index.iter().take(mi).map(|&x| x as c_int))?;
    write_ints(edges, list.iter().take(me).map(|&x| x as c_int))?;
    Ok(())
}

fn graph_neighbors_of(w: &Mpi, comm: CommId, rank: c_int) -> Result<Vec<usize>> {
    let (index, edges) = graph_of(w, comm)?;
    let topo = Topology::Graph { index, edges };
    Ok(topo.graph_neighbors(rank as usize).unwrap_or_default())
}

/// `MPI_Graph_neighbors_count`.
pub fn graph_neighbors_count(
    w: &mut Mpi,
    comm: CommId,
    rank: c_int,
    nneighbors: *mut c_int,
) -> Result<()> {
    let n = graph_neighbors_of(w, comm, rank)?.len();
    write(nneighbors, n as c_int);
    Ok(())
}

/// `MPI_Graph_neighbors`.
pub fn graph_neighbors(
    w: &mut Mpi,
    comm: CommId,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> Result<()> {
    let list = graph_neighbors_of(w, comm, rank)?;
    let max = count(maxneighbors, "maxneighbors")?;
    write_ints(neighbors, list.iter().take(max).map(|&x| x as c_int))?;
    Ok(())
}

/// Pairs `ranks` with `weights` (all 1 when unweighted).
fn weighted_edges(
    ranks: &[c_int],
    weights: *const c_int,
    what: &str,
) -> Result<Vec<(c_int, c_int)>> {
    if is_unweighted(weights) {
        return Ok(ranks.iter().map(|&r| (r, 1)).collect());
    }
    let weights = int_array(weights, ranks.len() as c_int, what)?;
    if let Some(w) = weights.iter().find(|&&w| w < 0) {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("{what} has a negative weight {w}"),
        ));
    }
    Ok(ranks.iter().copied().zip(weights.iter().copied()).collect())
}

/// `MPI_Dist_graph_create_adjacent` (never reorders).
pub fn dist_graph_create_adjacent(
    w: &mut Mpi,
    comm_old: CommId,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: Option<InfoId>,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> Result<()> {
    let ins = weighted_edges(
        int_array(sources, indegree, "sources")?,
        sourceweights,
        "sourceweights",
    )?;
    let outs = weighted_edges(
        int_array(destinations, outdegree, "destinations")?,
        destweights,
        "destweights",
    )?;
    let weighted = !is_unweighted(sourceweights) && !is_unweighted(destweights);
    let id = w
        .world
        .engine
        .dist_graph_create_adjacent(comm_old, &ins, &outs, weighted)?;
    write_comm(comm_dist_graph, Some(id))
}

/// `MPI_Dist_graph_create`: process `sources[i]` has `degrees[i]` edges to the next entries of
/// `destinations` (never reorders).
pub fn dist_graph_create(
    w: &mut Mpi,
    comm_old: CommId,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
    _info: Option<InfoId>,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> Result<()> {
    let sources = int_array(sources, n, "sources")?;
    let degrees = int_array(degrees, n, "degrees")?;
    let mut total = 0usize;
    for &d in degrees {
        total += count(d, "degree")?;
    }
    let total = c_int::try_from(total)
        .map_err(|_| MpiError::new(ErrorClass::Arg, "the degrees add up to more than an int"))?;
    let dests = weighted_edges(
        int_array(destinations, total, "destinations")?,
        weights,
        "weights",
    )?;
    let mut edges = Vec::with_capacity(dests.len());
    let mut next = dests.iter();
    for (&s, &d) in sources.iter().zip(degrees) {
        for &(dest, weight) in next.by_ref().take(d as usize) {
            if s < 0 || dest < 0 {
                return Err(MpiError::new(
                    ErrorClass::Rank,
                    format!("edge {s} -> {dest} names a negative rank"),
                ));
            }
            edges.push((s as u32, dest as u32, weight));
        }
    }
    let id = w
        .world
        .engine
        .dist_graph_create(comm_old, &edges, !is_unweighted(weights))?;
    write_comm(comm_dist_graph, Some(id))
}

/// `MPI_Dist_graph_neighbors_count`.
pub fn dist_graph_neighbors_count(
    w: &mut Mpi,
    comm: CommId,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> Result<()> {
    let g = dist_graph_of(w, comm)?;
    write(indegree, g.sources.len() as c_int);
    write(outdegree, g.destinations.len() as c_int);
    write(weighted, c_int::from(g.weighted));
    Ok(())
}

/// `MPI_Dist_graph_neighbors`: weights are written when the graph has them and the caller
/// did not pass `MPI_UNWEIGHTED`.
pub fn dist_graph_neighbors(
    w: &mut Mpi,
    comm: CommId,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> Result<()> {
    let g = dist_graph_of(w, comm)?;
    let (mi, mo) = (
        count(maxindegree, "maxindegree")?,
        count(maxoutdegree, "maxoutdegree")?,
    );
    let put = |list: &[(usize, i32)], max: usize, ranks: *mut c_int, weights: *mut c_int| {
        write_ints(ranks, list.iter().take(max).map(|&(r, _)| r as c_int))?;
        if g.weighted && !weights.is_null() && !is_unweighted(weights.cast_const()) {
            write_ints(weights, list.iter().take(max).map(|&(_, wt)| wt))?;
        }
        Ok(())
    };
    put(&g.sources, mi, sources, sourceweights)?;
    put(&g.destinations, mo, destinations, destweights)
}

/// `MPI_Topo_test`: `MPI_GRAPH`, `MPI_CART`, `MPI_DIST_GRAPH` or `MPI_UNDEFINED`.
pub fn topo_test(w: &mut Mpi, comm: CommId, status: *mut c_int) -> Result<()> {
    let kind = w
        .world
        .engine
        .topology(comm)?
        .map_or(UNDEFINED, |t| t.kind());
    write(status, kind);
    Ok(())
}
