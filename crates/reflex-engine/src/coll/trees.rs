//! Broadcast trees over ranks relative to the root (the root is 0): the k-nomial tree of
//! fan-out r and the postal-model tree of Bar-Noy and Kipnis, and the broadcast schedule that
//! runs down any of them.
//!
//! **k-nomial.** Write a rank in base r; its parent clears the lowest non-zero digit, its
//! children set one digit below that to 1 … r − 1. With r = 2 it is the binomial tree; larger r
//! gives shallower trees (⌈log_r n⌉ levels) whose inner nodes send r − 1 times per level, the
//! trade-off of the reflective-memory paper's hierarchical notification broadcast.
//!
//! **Postal model.** A send occupies the sender for one time unit and arrives λ units after it
//! starts. The optimal tree is built greedily with two queues: every informed process sends to
//! a new process as soon as it is free, the earliest-free sender first (ties: the earlier
//! informed). The number of processes informed by time t follows N(t) = N(t − 1) + N(t − λ), so
//! λ = 1 gives the binomial tree and a large λ approaches a flat tree.

use super::sched::{Builder, Dst, Src};
use super::spec::RecvData;
use std::collections::BinaryHeap;

/// A rank's place in a tree (ranks relative to the root).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    /// Parent (none at the root).
    pub parent: Option<usize>,
    /// Children, in the order they are sent to.
    pub children: Vec<usize>,
}

/// Rank `rel`'s place in the k-nomial tree of fan-out `r` (≥ 2) over `n` ranks.
pub fn knomial(rel: usize, n: usize, r: usize) -> Node {
    let r = r.max(2);
    // The weight of the lowest non-zero digit of rel (n rounded up to a power of r at the root).
    let mut weight = 1;
    while weight < n && rel.is_multiple_of(weight * r) {
        weight *= r;
    }
    let parent = (rel != 0).then(|| rel - rel % (weight * r));
    let mut children = Vec::new();
    let mut w = weight / r;
    while w > 0 {
        for d in 1..r {
            let child = rel + d * w;
            if child < n {
                children.push(child);
            }
        }
        w /= r;
    }
    Node { parent, children }
}

/// Every rank's place in the postal-model tree over `n` ranks with latency `lambda` (≥ 1) send
/// times.
pub fn postal(n: usize, lambda: usize) -> Vec<Node> {
    let lambda = lambda.max(1);
    let mut nodes = vec![Node::default(); n];
    // (free at, informed order) of every informed rank, earliest free first.
    let mut senders = BinaryHeap::new();
    senders.push(std::cmp::Reverse((0usize, 0usize)));
    for next in 1..n {
        let Some(std::cmp::Reverse((free, sender))) = senders.pop() else {
            break;
        };
        nodes[next].parent = Some(sender);
        nodes[sender].children.push(next);
        senders.push(std::cmp::Reverse((free + 1, sender)));
        senders.push(std::cmp::Reverse((free + lambda, next)));
    }
    nodes
}

/// Broadcast of `data` from `root` down `node` (this rank's place, relative ranks).
pub(crate) fn bcast_down(b: &mut Builder, data: RecvData, root: usize, node: &Node) {
    let n = b.size;
    let abs = |rel: usize| (rel + root) % n;
    if let Some(parent) = node.parent {
        b.recv(abs(parent), 0, Dst::User(data.clone()));
        b.end_round();
    }
    for &child in &node.children {
        b.send(abs(child), 0, Src::User(data.as_send()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every non-root rank has exactly one parent, which lists it as a child.
    fn consistent(nodes: &[Node]) {
        assert_eq!(nodes[0].parent, None);
        for (rank, node) in nodes.iter().enumerate().skip(1) {
            let p = node.parent.expect("a parent");
            assert!(nodes[p].children.contains(&rank), "rank {rank}");
        }
        let edges: usize = nodes.iter().map(|n| n.children.len()).sum();
        assert_eq!(edges, nodes.len() - 1);
    }

    #[test]
    fn knomial_trees_are_trees_and_binomial_at_two() {
        for n in 1..40 {
            for r in 2..6 {
                let nodes: Vec<Node> = (0..n).map(|rel| knomial(rel, n, r)).collect();
                consistent(&nodes);
            }
        }
        assert_eq!(knomial(0, 8, 2).children, [4, 2, 1]);
        assert_eq!(knomial(6, 8, 2).parent, Some(4));
        assert_eq!(knomial(0, 9, 3).children, [3, 6, 1, 2]);
        assert_eq!(knomial(5, 9, 3).parent, Some(3));
    }

    #[test]
    fn postal_trees_follow_the_recurrence() {
        for n in 1..40 {
            for lambda in 1..5 {
                consistent(&postal(n, lambda));
            }
        }
        // lambda 1: the root informs one rank per unit and everybody informed does too.
        let t = postal(8, 1);
        assert_eq!(t[0].children, [1, 2, 4]);
        // lambda 2: N(t) = 1, 2, 3, 5, 8 ...: by time 4 (the root's fourth send) 8 ranks know.
        let t = postal(8, 2);
        assert_eq!(t[0].children.len(), 4);
        assert_eq!(t[1].children.len(), 2);
    }
}
