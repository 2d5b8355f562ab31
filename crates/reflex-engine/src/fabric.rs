//! The transports a process can use, as one enum (static dispatch, chosen at start-up).

use reflex_base::transport::{Transport, WouldBlock};
use reflex_shm::ShmTransport;
use std::time::Duration;

/// Every transport of Reflex. A job of one process needs none (`Alone`: all traffic is loopback).
#[derive(Debug)]
pub enum Fabric {
    /// Shared memory between the ranks of one node.
    Shm(ShmTransport),
    /// No peers.
    Alone,
}

impl Transport for Fabric {
    #[inline]
    fn max_packet(&self) -> usize {
        match self {
            Fabric::Shm(t) => t.max_packet(),
            Fabric::Alone => 1 << 20,
        }
    }

    #[inline]
    fn try_send<F: FnOnce(&mut [u8])>(
        &mut self,
        dest: usize,
        len: usize,
        fill: F,
    ) -> Result<(), WouldBlock> {
        match self {
            Fabric::Shm(t) => t.try_send(dest, len, fill),
            Fabric::Alone => unreachable!("a job of one process has no peer {dest}"),
        }
    }

    #[inline]
    fn poll<H: FnMut(usize, &[u8])>(&mut self, handler: H) -> usize {
        match self {
            Fabric::Shm(t) => t.poll(handler),
            Fabric::Alone => 0,
        }
    }

    fn sleep(&mut self, timeout: Duration) {
        match self {
            Fabric::Shm(t) => t.sleep(timeout),
            Fabric::Alone => std::thread::sleep(timeout),
        }
    }
}
