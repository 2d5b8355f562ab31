//! Reflex base layer: the pieces every other crate of Reflex builds on.
//!
//! Nothing here knows about MPI. The modules are small and independent:
//! - [`transport`]: the contract every transport (shared memory, TCP) implements for the engine;
//! - [`buf`]: user buffers handed over the C ABI, wrapped so that the engine stays free of `unsafe`;
//! - [`copy`]: byte copies for the data paths (tiny ones inline, large ones clear of 4K aliasing);
//! - [`coop`]: the shared claim and done counters of a cooperative large-message copy;
//! - [`config`]: every `REFLEX_*` setting, typed and documented in one table;
//! - [`futex`], [`cache`], [`segment`]: the primitives of shared memory (doorbells, padding, mapped files);
//! - [`slots`]: numbered tables (the lowest free number reused first) behind MPI's handles;
//! - [`mutate`]: a seeded input mutator that runs the wire parsers' fuzz bodies under `cargo test`;
//! - [`x87`]: `long double` arithmetic for the reductions on `MPI_LONG_DOUBLE`.

pub mod buf;
pub mod cache;
pub mod config;
pub mod coop;
pub mod copy;
pub mod futex;
pub mod mutate;
pub mod segment;
pub mod slots;
pub mod stream_copy;
pub mod transport;
pub mod x87;
