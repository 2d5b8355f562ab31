//! Partial Progressive Reconfiguration of the escape (up*/down*) tables, in a version designed
//! here because Paper C leaves PPR's internals to its reference [1] (seed000b.md §C.1.3):
//!
//! 1. Start from the old orientation restricted to the live links; a returning switch joins as a
//!    leaf (all of its links point up, away from it), which only adds turns that cannot close a
//!    cycle because nothing transits a leaf.
//! 2. While several roots (sinks) exist, keep the lowest-id root and let every other root
//!    ("false root") reverse all of its links, Gafni-Bertsekas full reversal, which terminates
//!    with a single sink and keeps the graph acyclic. False roots are never adjacent, so a round
//!    reverses them all at once.
//! 3. A reversal only *removes* turns at the reversing switch x (it becomes a leaf) and only
//!    *adds* turns at its neighbours. So each round is two partial updates: x installs its new
//!    rows first; after a drain interval (a granted VCT packet leaves within a bounded time) the
//!    neighbours install theirs. The live entries are thus always within the turns of one
//!    orientation.
//! 4. Finally every switch installs the rows of the final orientation (its turns did not change
//!    since its last update, only its shortest paths).
//!
//! Every step is checked mechanically: the CDG of the union of the tables before and after the
//! step (both may be in use while packets drain) must be acyclic.

use std::sync::Arc;

use crate::check::check_tables_union;
use crate::error::{Result, SimError};
use crate::routing::{Orientation, TableRouting};
use crate::topology::Topology;

/// One reversal round.
#[derive(Clone, Debug)]
pub struct Round {
    /// Switches that reverse their links (first update).
    pub reversing: Vec<usize>,
    /// Their neighbours (second update, after the drain).
    pub neighbours: Vec<usize>,
    /// Escape tables of the orientation after the round.
    pub table: Arc<TableRouting>,
}

/// The whole PPR schedule.
#[derive(Clone, Debug)]
pub struct PprPlan {
    /// Rounds in order.
    pub rounds: Vec<Round>,
    /// Final orientation (correct).
    pub orientation: Orientation,
    /// Escape tables of the final orientation.
    pub table: Arc<TableRouting>,
    /// Partial-update steps verified.
    pub steps_checked: u64,
}

/// Orientation for `topo` from `old`: links that were not oriented (new or returning) point up
/// away from `joining` (it becomes a leaf); any other returning link points the way that keeps
/// the orientation acyclic (towards its higher-numbered end when both ways do). Adding an arc
/// never creates a root, and the old turns stay legal, so the result is safe to install.
pub fn adapt_orientation(
    topo: &Topology,
    old: &Orientation,
    joining: Option<usize>,
) -> Orientation {
    let mut o = old.restrict_to_live(topo);
    let fresh: Vec<usize> = (0..topo.links())
        .filter(|&l| topo.link_live(l) && o.up_end(l).is_none())
        .collect();
    // Links of the joining switch first: they cannot close a cycle (it has no incoming arc).
    let (own, other): (Vec<usize>, Vec<usize>) = fresh.into_iter().partition(|&l| {
        let k = topo.link(l);
        joining == Some(k.a) || joining == Some(k.b)
    });
    for l in own {
        let k = topo.link(l);
        o.set_up_end(topo, l, if joining == Some(k.b) { k.a } else { k.b });
    }
    for l in other {
        let k = topo.link(l);
        o.set_up_end(topo, l, k.b);
        // The graph without `l` is acyclic, so at most one direction closes a cycle.
        if o.find_cycle(topo).is_some() {
            o.set_up_end(topo, l, k.a);
        }
    }
    o
}

/// Plans PPR from orientation `start` on the live `topo`; `installed` is the escape table in
/// use (dead channels already removed).
pub fn plan(topo: &Topology, start: &Orientation, installed: &TableRouting) -> Result<PprPlan> {
    let mut o = start.clone();
    if let Some(c) = o.find_cycle(topo) {
        return Err(SimError::Check(format!(
            "ppr: start orientation has a cycle through {c:?}"
        )));
    }
    let keep = *o
        .roots(topo)
        .first()
        .ok_or_else(|| SimError::Check("ppr: no root".into()))?;
    let mut composite = installed.clone();
    let (mut rounds, mut steps) = (Vec::new(), 0u64);
    loop {
        let false_roots: Vec<usize> = o.roots(topo).into_iter().filter(|&r| r != keep).collect();
        if false_roots.is_empty() {
            break;
        }
        if rounds.len() > 4 * topo.switches() {
            return Err(SimError::Check(
                "ppr: link reversal does not terminate".into(),
            ));
        }
        for &x in &false_roots {
            for nb in topo.adjacent(x) {
                if o.up_end(nb.link) == Some(x) {
                    o.flip(topo, nb.link);
                }
            }
        }
        let table = Arc::new(TableRouting::all_shortest(topo, &o, 1, true));
        let mut neighbours: Vec<usize> = false_roots
            .iter()
            .flat_map(|&x| topo.adjacent(x).iter().map(|nb| nb.switch))
            .collect();
        neighbours.sort_unstable();
        neighbours.dedup();
        for group in [&false_roots, &neighbours] {
            let before = composite.clone();
            for &x in group.iter() {
                composite.install_rows(topo, &table, x);
            }
            check_tables_union(topo, &[&before, &composite])
                .map_err(|e| SimError::Check(format!("ppr round {}: {e}", rounds.len() + 1)))?;
            steps += 1;
        }
        rounds.push(Round {
            reversing: false_roots,
            neighbours,
            table,
        });
    }
    o.validate(topo)?;
    let table = Arc::new(TableRouting::all_shortest(topo, &o, 1, true));
    let before = composite.clone();
    for x in (0..topo.switches()).filter(|&x| topo.switch_up(x)) {
        composite.install_rows(topo, &table, x);
    }
    check_tables_union(topo, &[&before, &composite])
        .map_err(|e| SimError::Check(format!("ppr final update: {e}")))?;
    steps += 1;
    Ok(PprPlan {
        rounds,
        orientation: o,
        table,
        steps_checked: steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;
    use crate::routing::trees::bfs_orientation;
    use crate::topology::generate::irregular;

    #[test]
    fn root_removal_is_repaired_safely_on_random_networks() {
        let mut rounds = 0;
        for seed in 0..12 {
            let mut t = irregular(16, 8, 4, &mut SimRng::new(seed)).unwrap();
            let old = bfs_orientation(&t, 0);
            let mut installed = TableRouting::all_shortest(&t, &old, 1, true);
            let dead: Vec<usize> = t
                .adjacent(0)
                .iter()
                .flat_map(|nb| [2 * nb.link, 2 * nb.link + 1])
                .collect();
            t.set_switch(0, false).unwrap();
            if !t.is_connected() {
                continue;
            }
            for c in dead {
                installed.remove_channel(c);
            }
            let start = adapt_orientation(&t, &old, None);
            let p = plan(&t, &start, &installed).unwrap();
            p.orientation.validate(&t).unwrap();
            assert_eq!(p.steps_checked, 2 * p.rounds.len() as u64 + 1);
            // The switch comes back as a leaf: the result stays correct and safe.
            t.set_switch(0, true).unwrap();
            let back = adapt_orientation(&t, &p.orientation, Some(0));
            let p2 = plan(&t, &back, &p.table).unwrap();
            p2.orientation.validate(&t).unwrap();
            assert!(p2.rounds.is_empty());
            rounds += p.rounds.len();
        }
        assert!(rounds > 0, "no network needed a reversal round");
    }

    #[test]
    fn link_failure_and_return_are_repaired_safely() {
        for seed in 0..8 {
            let mut t = irregular(16, 8, 4, &mut SimRng::new(seed)).unwrap();
            let mut o = bfs_orientation(&t, 0);
            let mut installed = TableRouting::all_shortest(&t, &o, 1, true);
            for l in 0..t.links() {
                t.set_link(l, false).unwrap();
                if !t.is_connected() {
                    t.set_link(l, true).unwrap();
                    continue;
                }
                installed.remove_channel(2 * l);
                installed.remove_channel(2 * l + 1);
                let p = plan(&t, &adapt_orientation(&t, &o, None), &installed).unwrap();
                // The link returns between two switches already in the network: its direction
                // must not close a cycle.
                t.set_link(l, true).unwrap();
                let back = adapt_orientation(&t, &p.orientation, None);
                back.validate(&t).unwrap();
                let p2 = plan(&t, &back, &p.table).unwrap();
                assert!(p2.rounds.is_empty());
                (o, installed) = (p2.orientation, (*p2.table).clone());
            }
        }
    }

    #[test]
    fn checker_rejects_unsafe_one_shot_switch() {
        // Installing a different orientation everywhere at once can close a cycle in the union:
        // this is what the step-wise design avoids.
        let t = crate::topology::tests::ring(4, 1);
        let a =
            TableRouting::all_shortest(&t, &Orientation::from_ranks(&t, &[3, 2, 1, 0]), 1, true);
        let b =
            TableRouting::all_shortest(&t, &Orientation::from_ranks(&t, &[1, 0, 3, 2]), 1, true);
        assert!(check_tables_union(&t, &[&a, &b]).is_err());
    }
}
