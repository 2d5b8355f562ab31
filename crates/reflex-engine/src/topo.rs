//! Process topologies (MPI-3.1 chapter 7) as data: Cartesian grids, general graphs and
//! distributed graphs, and the pure computations on them.
//!
//! A topology is immutable once attached to a communicator (shared through an `Arc`, so
//! `MPI_Comm_dup` copies it for free). Ranks are laid out in row-major order (the last
//! coordinate varies fastest), as the standard requires of `MPI_Cart_create` without reordering.
//! `MPI_Dims_create` searches the non-increasing factorisations of the free part of the node
//! count and keeps the most balanced one (smallest largest-minus-smallest), which is what "as
//! close to each other as possible" asks for; the search is small because it only visits
//! non-increasing divisor sequences.

use crate::error::{ErrorClass, MpiError, Result};
use crate::request::PROC_NULL;

/// A process topology attached to a communicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    /// `MPI_Cart_create`: a grid of `dims`, periodic where `periods` says so.
    Cart(Cart),
    /// `MPI_Graph_create`: `index[i]` is the number of edges of nodes `0..=i` together.
    Graph {
        /// Cumulative degrees.
        index: Vec<usize>,
        /// Neighbours of every node, node after node.
        edges: Vec<usize>,
    },
    /// `MPI_Dist_graph_create(_adjacent)`: this process's own edges only.
    DistGraph(DistGraph),
}

/// `MPI_CART`, `MPI_GRAPH` and `MPI_DIST_GRAPH` (MPICH's values) for `MPI_Topo_test`.
impl Topology {
    /// The `MPI_Topo_test` value.
    pub fn kind(&self) -> i32 {
        match self {
            Topology::Graph { .. } => 1,
            Topology::Cart(_) => 2,
            Topology::DistGraph(_) => 3,
        }
    }
}

/// A Cartesian grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cart {
    /// Extent of every dimension (each ≥ 1).
    pub dims: Vec<usize>,
    /// Whether every dimension wraps around.
    pub periods: Vec<bool>,
}

/// This process's edges in a distributed graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistGraph {
    /// Ranks with an edge to this process, and the weight of each edge.
    pub sources: Vec<(usize, i32)>,
    /// Ranks this process has an edge to, and the weight of each edge.
    pub destinations: Vec<(usize, i32)>,
    /// Whether the graph was created with weights (`MPI_UNWEIGHTED` otherwise).
    pub weighted: bool,
}

fn err(class: ErrorClass, message: String) -> MpiError {
    MpiError::new(class, message)
}

impl Cart {
    /// Checks and builds a grid description.
    pub fn new(dims: &[i32], periods: &[i32]) -> Result<Cart> {
        let dims = dims
            .iter()
            .map(|&d| {
                usize::try_from(d).ok().filter(|&d| d > 0).ok_or_else(|| {
                    err(
                        ErrorClass::Dims,
                        format!("dimension extent {d} is not positive"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Cart {
            dims,
            periods: periods.iter().map(|&p| p != 0).collect(),
        })
    }

    /// Number of processes in the grid.
    pub fn size(&self) -> usize {
        self.dims.iter().product()
    }

    /// Coordinates of `rank` (row-major).
    pub fn coords(&self, rank: usize) -> Vec<usize> {
        let mut rest = rank;
        let mut coords = vec![0; self.dims.len()];
        for (c, &d) in coords.iter_mut().zip(&self.dims).rev() {
            *c = rest % d;
            rest /= d;
        }
        coords
    }

    /// Rank of `coords`; periodic dimensions wrap, others must be in range (`MPI_ERR_ARG`).
    pub fn rank(&self, coords: &[i32]) -> Result<usize> {
        let mut rank = 0usize;
        for (i, (&c, &d)) in coords.iter().zip(&self.dims).enumerate() {
            let c = i64::from(c);
            let d = d as i64;
            let c = if self.periods[i] {
                c.rem_euclid(d)
            } else if (0..d).contains(&c) {
                c
            } else {
                return Err(err(
                    ErrorClass::Arg,
                    format!("coordinate {c} of non-periodic dimension {i} is outside 0..{d}"),
                ));
            };
            rank = rank * d as usize + c as usize;
        }
        Ok(rank)
    }

    /// `MPI_Cart_shift`: (source, destination) of a shift by `disp` along `direction`, with
    /// `MPI_PROC_NULL` off the edge of a non-periodic dimension.
    pub fn shift(&self, rank: usize, direction: i32, disp: i32) -> Result<(i32, i32)> {
        let dir = usize::try_from(direction)
            .ok()
            .filter(|&d| d < self.dims.len())
            .ok_or_else(|| {
                err(
                    ErrorClass::Arg,
                    format!(
                        "shift direction {direction} is outside 0..{} (the number of dimensions)",
                        self.dims.len()
                    ),
                )
            })?;
        let coords = self.coords(rank);
        let neighbour = |delta: i64| -> i32 {
            let d = self.dims[dir] as i64;
            let c = coords[dir] as i64 + delta;
            if !self.periods[dir] && !(0..d).contains(&c) {
                return PROC_NULL;
            }
            let mut moved: Vec<i32> = coords.iter().map(|&x| x as i32).collect();
            moved[dir] = c.rem_euclid(d) as i32;
            self.rank(&moved).map_or(PROC_NULL, |r| r as i32)
        };
        let disp = i64::from(disp);
        Ok((neighbour(-disp), neighbour(disp)))
    }

    /// The sub-grid of the dimensions where `remain` is true, and the color (the coordinates in the
    /// dropped dimensions, as a rank of that grid) that selects this process's sub-grid.
    pub fn sub(&self, rank: usize, remain: &[bool]) -> (Cart, usize) {
        let coords = self.coords(rank);
        let mut kept = Cart {
            dims: Vec::new(),
            periods: Vec::new(),
        };
        let mut color = 0;
        for (i, &keep) in remain.iter().enumerate() {
            if keep {
                kept.dims.push(self.dims[i]);
                kept.periods.push(self.periods[i]);
            } else {
                color = color * self.dims[i] + coords[i];
            }
        }
        (kept, color)
    }
}

impl Topology {
    /// Checks `MPI_Graph_create`'s arrays (`index` cumulative, edges within `0..nnodes`).
    pub fn graph(index: &[i32], edges: &[i32]) -> Result<Topology> {
        let nnodes = index.len();
        let mut prev = 0;
        let mut cumulative = Vec::with_capacity(nnodes);
        for (i, &x) in index.iter().enumerate() {
            let x = usize::try_from(x)
                .ok()
                .filter(|&x| x >= prev)
                .ok_or_else(|| {
                    err(
                        ErrorClass::Arg,
                        format!(
                            "index[{i}] = {x} is negative or smaller than index[{}]",
                            i.max(1) - 1
                        ),
                    )
                })?;
            cumulative.push(x);
            prev = x;
        }
        let edges = edges
            .iter()
            .map(|&e| {
                usize::try_from(e)
                    .ok()
                    .filter(|&e| e < nnodes)
                    .ok_or_else(|| {
                        err(
                            ErrorClass::Arg,
                            format!("edge to node {e} is outside 0..{nnodes}"),
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Topology::Graph {
            index: cumulative,
            edges,
        })
    }

    /// Neighbours of `rank` in a graph or distributed graph (out-edges), `None` for a grid.
    pub fn graph_neighbors(&self, rank: usize) -> Option<Vec<usize>> {
        match self {
            Topology::Graph { index, edges } => {
                let start = if rank == 0 { 0 } else { index[rank - 1] };
                Some(edges[start..index[rank]].to_vec())
            }
            Topology::DistGraph(g) => Some(g.destinations.iter().map(|&(r, _)| r).collect()),
            Topology::Cart(_) => None,
        }
    }
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the product is `nnodes`.
pub fn dims_create(nnodes: i32, dims: &[i32]) -> Result<Vec<i32>> {
    if nnodes <= 0 {
        return Err(err(
            ErrorClass::Arg,
            format!("nnodes {nnodes} is not positive"),
        ));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(err(ErrorClass::Dims, format!("dimension {d} is negative")));
    }
    let fixed: i64 = dims
        .iter()
        .filter(|&&d| d > 0)
        .map(|&d| i64::from(d))
        .product();
    let free = dims.iter().filter(|&&d| d == 0).count();
    let nnodes = i64::from(nnodes);
    if (free == 0 && fixed != nnodes) || nnodes % fixed != 0 {
        return Err(err(
            ErrorClass::Dims,
            format!("{nnodes} nodes do not fit the given dimensions (product {fixed})"),
        ));
    }
    let n = nnodes / fixed;
    let mut divisors: Vec<i64> = (1..)
        .take_while(|d| d * d <= n)
        .filter(|d| n % d == 0)
        .collect();
    let large: Vec<i64> = divisors.iter().rev().map(|d| n / d).collect();
    divisors.extend(large);
    divisors.sort_unstable_by(|a, b| b.cmp(a));
    divisors.dedup();
    let mut best = None;
    let mut prefix = Vec::with_capacity(free);
    balanced(&divisors, n, free, n, &mut prefix, &mut best);
    let mut filled = best.unwrap_or_default().into_iter();
    Ok(dims
        .iter()
        .map(|&d| {
            if d == 0 {
                filled.next().unwrap_or(1) as i32
            } else {
                d
            }
        })
        .collect())
}

/// Depth-first search over non-increasing factorisations of `n` into `k` factors ≤ `max`, taken
/// from `divisors` (all divisors of the original count, descending); keeps the smallest spread.
fn balanced(
    divisors: &[i64],
    n: i64,
    k: usize,
    max: i64,
    prefix: &mut Vec<i64>,
    best: &mut Option<Vec<i64>>,
) {
    if k == 0 {
        let spread = |v: &[i64]| v.first().map_or(0, |f| f - v.last().copied().unwrap_or(*f));
        if n == 1 && best.as_ref().is_none_or(|b| spread(prefix) < spread(b)) {
            *best = Some(prefix.clone());
        }
        return;
    }
    for &f in divisors.iter().filter(|&&f| f <= max && n % f == 0) {
        // The largest of k factors of n is at least the k-th root of n.
        if f.checked_pow(k as u32).is_some_and(|p| p < n) {
            break;
        }
        prefix.push(f);
        balanced(divisors, n / f, k - 1, f, prefix, best);
        prefix.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_create_balances_and_keeps_fixed_entries() {
        assert_eq!(dims_create(16, &[0, 0, 0]).unwrap(), vec![4, 2, 2]);
        assert_eq!(dims_create(12, &[0, 0]).unwrap(), vec![4, 3]);
        assert_eq!(dims_create(60, &[0, 0]).unwrap(), vec![10, 6]);
        assert_eq!(dims_create(7, &[0, 0]).unwrap(), vec![7, 1]);
        assert_eq!(dims_create(12, &[0, 3, 0]).unwrap(), vec![2, 3, 2]);
        assert_eq!(dims_create(1, &[0, 0, 0]).unwrap(), vec![1, 1, 1]);
        assert_eq!(dims_create(6, &[2, 3]).unwrap(), vec![2, 3]);
        assert_eq!(dims_create(1 << 20, &[0; 20]).unwrap(), vec![2; 20]);
        assert_eq!(dims_create(0, &[]).unwrap_err().class, ErrorClass::Arg);
        assert_eq!(dims_create(5, &[]).unwrap_err().class, ErrorClass::Dims);
        assert_eq!(
            dims_create(2_147_483_647, &[0, 0]).unwrap(),
            vec![2_147_483_647, 1]
        );
        assert_eq!(
            dims_create(10, &[3, 0]).unwrap_err().class,
            ErrorClass::Dims
        );
        assert_eq!(
            dims_create(10, &[-1, 0]).unwrap_err().class,
            ErrorClass::Dims
        );
        assert_eq!(dims_create(-1, &[0]).unwrap_err().class, ErrorClass::Arg);
    }

    #[test]
    fn cart_coords_rank_and_shift() {
        let c = Cart::new(&[2, 3], &[0, 1]).unwrap();
        assert_eq!(c.size(), 6);
        assert_eq!(c.coords(5), vec![1, 2]);
        assert_eq!(c.rank(&[1, 2]).unwrap(), 5);
        assert_eq!(c.rank(&[1, -1]).unwrap(), 5); // periodic wrap
        assert_eq!(c.rank(&[2, 0]).unwrap_err().class, ErrorClass::Arg);
        // Non-periodic dimension 0: off the edge is PROC_NULL.
        assert_eq!(c.shift(0, 0, 1).unwrap(), (PROC_NULL, 3));
        // Periodic dimension 1 wraps.
        assert_eq!(c.shift(0, 1, 1).unwrap(), (2, 1));
        assert_eq!(c.shift(0, 1, -4).unwrap(), (1, 2));
        assert_eq!(c.shift(0, 2, 1).unwrap_err().class, ErrorClass::Arg);
        let (sub, color) = c.sub(4, &[false, true]);
        assert_eq!((sub.dims, color), (vec![3], 1));
        assert_eq!(Cart::new(&[0], &[0]).unwrap_err().class, ErrorClass::Dims);
    }

    #[test]
    fn graph_checks_and_neighbors() {
        let g = Topology::graph(&[2, 3, 4], &[1, 2, 0, 0]).unwrap();
        assert_eq!(g.graph_neighbors(0), Some(vec![1, 2]));
        assert_eq!(g.graph_neighbors(2), Some(vec![0]));
        assert_eq!(g.kind(), 1);
        assert!(Topology::graph(&[2, 1], &[1, 0]).is_err());
        assert!(Topology::graph(&[1], &[3]).is_err());
    }
}
