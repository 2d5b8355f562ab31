//! Mechanical deadlock and connectivity checks on the *actual* routing tables.
//!
//! - [`explore`] follows every reachable routing state (switch, input channel, input VC,
//!   destination; plus source and hop for source routing) from every source, builds the channel
//!   dependency graph (CDG; "a dependency from c_i to c_j if a message can hold c_i and request
//!   c_j", Paper A footnote 1) and records states without a route.
//! - [`check_deadlock_free`]: every pair connected and the CDG acyclic (Dally & Seitz); a cycle is
//!   printed as a counterexample.
//! - [`check_escape`]: Duato's condition for adaptive routing with an escape VC: every reachable
//!   state offers an escape candidate and the escape channels' direct-dependency graph is acyclic
//!   (sufficient for virtual cut-through; with the wormhole stay-on-escape rule the escape
//!   sub-network has no indirect dependencies).
//! - [`check_tables_union`]: the conservative check used at every reconfiguration step: the CDG of
//!   the union of all table entries of several table sets (old and new) must be acyclic.

pub mod cdg;

pub use cdg::{check_deadlock_free, check_escape, check_tables_union, explore, Cdg, Exploration};
