//! Model checks of the ring protocol with loom (`RUSTFLAGS="--cfg loom"`, see the crate README).
//!
//! The ring is shrunk to 8 cells (the minimum) so that a handful of packets exercise the full
//! protocol: publication, the lazily published tail, a full ring, and wrap-around through a skip
//! marker. Loom explores the interleavings and the weak-memory outcomes of the atomics, and fails if
//! a payload read is not ordered after its write (the `track_*` hooks) or content comes out wrong.

use super::*;
use loom::thread;

const NCELLS: u64 = 8;

/// The two endpoints of a fresh model ring.
fn model_ring() -> (Producer, Consumer) {
    let mem = RingMem::new_model(NCELLS);
    // SAFETY: a fresh ring with exactly these two endpoints.
    unsafe { (Producer::new(mem.clone()), Consumer::new(mem)) }
}

/// Sends `lens` in order (spinning through loom on WouldBlock) while the main thread receives them
/// and checks length and bytes.
fn run(lens: &'static [usize], preemption_bound: usize) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemption_bound);
    builder.check(move || {
        let (mut p, mut c) = model_ring();
        let producer = thread::spawn(move || {
            for (seq, &len) in lens.iter().enumerate() {
                while p.try_push(len, |b| b.fill(seq as u8 + 1)).is_err() {
                    thread::yield_now();
                }
            }
        });
        for (seq, &len) in lens.iter().enumerate() {
            loop {
                if let Some(slot) = c.recv_begin() {
                    assert_eq!(slot.len(), len);
                    assert!(
                        slot.iter().all(|&b| b == seq as u8 + 1),
                        "packet {seq} corrupt"
                    );
                    break;
                }
                thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert!(c.recv_begin().is_none());
    });
}

#[test]
fn loom_publish_then_consume() {
    // One-cell and two-cell (maximum) packets.
    run(&[20, 120], 3);
}

#[test]
fn loom_full_ring_waits_for_the_published_tail() {
    // 3 x 2 cells + 1 cell fill the ring; the last packet needs the consumer's published tail.
    run(&[120, 120, 120, 8, 120], 3);
}

#[test]
fn loom_wrap_through_a_skip_marker() {
    // Cells 0-1, 2-3, 4-5, 6; the fifth packet does not fit in cell 7 and skips to cell 0.
    run(&[100, 100, 100, 1, 100, 60], 4);
}

#[test]
fn loom_two_laps_of_mixed_sizes() {
    // Over two laps: skips at different cells, and the producer clearing headers ahead of itself.
    run(&[56, 120, 0, 120, 57, 120, 120, 8, 100], 2);
}
