//! Bulk synchronous message passing (BSMP): `bsp_send`, `bsp_qsize`, `bsp_get_tag`, `bsp_move`,
//! `bsp_hpmove`, `bsp_set_tagsize`.
//!
//! Messages sent in a superstep are delivered at its sync, into the queue of the next superstep.
//! Each message carries a tag of the tag size in force when it was sent (0 bytes at the start;
//! `bsp_set_tagsize` takes effect at the next sync, and every process must ask for the same
//! size). The outgoing messages for each process are laid end to end as
//! `[tag length u32][payload length u32][tag][payload]` (native byte order: the job runs on one
//! ABI), exchanged at the sync with one `MPI_Alltoallv` after the byte counts travelled in the
//! sync's control all-to-all. Received bytes are parsed with bounds checks. The queue keeps the
//! order of the senders' pids, then of sending.

use crate::loc::{usage, BspResult};
use std::ops::Range;

const HEADER: usize = 8;

/// One received message: where its tag and payload lie in the inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Message {
    tag: Range<usize>,
    payload: Range<usize>,
}

/// The message queues of this process.
#[derive(Debug, Default)]
pub struct Bsmp {
    tagsize: usize,
    next_tagsize: usize,
    /// Outgoing bytes, by destination pid.
    outbox: Vec<Vec<u8>>,
    inbox: Vec<u8>,
    queue: Vec<Message>,
    /// The first message not yet moved.
    next: usize,
}

impl Bsmp {
    pub fn new(nprocs: usize) -> Bsmp {
        Bsmp {
            outbox: vec![Vec::new(); nprocs],
            ..Bsmp::default()
        }
    }

    /// The tag size of messages sent in this superstep.
    pub fn tagsize(&self) -> usize {
        self.tagsize
    }

    /// The tag size from the next superstep on (what every process must agree on).
    pub fn next_tagsize(&self) -> usize {
        self.next_tagsize
    }

    /// Asks for a new tag size from the next sync on; returns the size in force now.
    pub fn set_tagsize(&mut self, size: usize) -> usize {
        self.next_tagsize = size;
        self.tagsize
    }

    /// Queues a message for `pid`; `tag` has the current tag size.
    pub fn send(&mut self, pid: usize, tag: &[u8], payload: &[u8]) -> BspResult {
        let (Ok(t), Ok(p)) = (u32::try_from(tag.len()), u32::try_from(payload.len())) else {
            return usage("the message is larger than 4 GiB");
        };
        let out = &mut self.outbox[pid];
        out.extend_from_slice(&t.to_ne_bytes());
        out.extend_from_slice(&p.to_ne_bytes());
        out.extend_from_slice(tag);
        out.extend_from_slice(payload);
        Ok(())
    }

    /// The outgoing bytes for every pid, laid end to end, with their lengths.
    pub fn outgoing(&self) -> (Vec<u8>, Vec<usize>) {
        let lens = self.outbox.iter().map(Vec::len).collect();
        (self.outbox.concat(), lens)
    }

    /// Whether this process sends any message in this superstep.
    pub fn has_outgoing(&self) -> bool {
        self.outbox.iter().any(|o| !o.is_empty())
    }

    /// Bytes queued for `pid`.
    pub fn outgoing_to(&self, pid: usize) -> usize {
        self.outbox[pid].len()
    }

    /// Ends the superstep: `received` becomes the new queue, the outboxes empty, and the new tag
    /// size takes effect.
    pub fn deliver(&mut self, received: Vec<u8>) -> BspResult {
        let queue = parse(&received)?;
        self.inbox = received;
        self.queue = queue;
        self.next = 0;
        self.outbox.iter_mut().for_each(Vec::clear);
        self.tagsize = self.next_tagsize;
        Ok(())
    }

    /// Messages not yet moved, and the sum of their payload sizes.
    pub fn qsize(&self) -> (usize, usize) {
        let left = &self.queue[self.next..];
        (left.len(), left.iter().map(|m| m.payload.len()).sum())
    }

    /// The tag and payload of the first message of the queue.
    pub fn peek(&self) -> Option<(&[u8], &[u8])> {
        let m = self.queue.get(self.next)?;
        Some((&self.inbox[m.tag.clone()], &self.inbox[m.payload.clone()]))
    }

    /// Removes the first message of the queue (its bytes stay valid until the sync).
    pub fn advance(&mut self) {
        self.next = (self.next + 1).min(self.queue.len());
    }
}

/// Splits received bytes into messages, checking every length against the buffer.
fn parse(bytes: &[u8]) -> BspResult<Vec<Message>> {
    let mut queue = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let field = |i: usize| -> Option<usize> {
            let b = bytes.get(at + 4 * i..at + 4 * i + 4)?;
            Some(u32::from_ne_bytes(b.try_into().ok()?) as usize)
        };
        let (Some(t), Some(p)) = (field(0), field(1)) else {
            return usage(format!("received message bytes are cut at offset {at}"));
        };
        let tag = at + HEADER..at + HEADER + t;
        let payload = tag.end..tag.end + p;
        if payload.end > bytes.len() {
            return usage(format!(
                "a received message at offset {at} runs past the end"
            ));
        }
        at = payload.end;
        queue.push(Message { tag, payload });
    }
    Ok(queue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_deliver_move() {
        let mut b = Bsmp::new(2);
        assert_eq!(b.set_tagsize(4), 0);
        b.send(1, &[], b"hello").unwrap();
        b.send(1, &[], b"").unwrap();
        let (bytes, lens) = b.outgoing();
        assert_eq!(lens, vec![0, bytes.len()]);
        b.deliver(bytes).unwrap();
        assert_eq!(b.tagsize(), 4, "new tag size after the sync");
        assert_eq!(b.qsize(), (2, 5));
        assert_eq!(b.peek(), Some((&b""[..], &b"hello"[..])));
        b.advance();
        assert_eq!(b.qsize(), (1, 0));
        b.advance();
        b.advance();
        assert_eq!(b.peek(), None);
        assert!(!b.has_outgoing());
    }

    #[test]
    fn tags_travel_with_messages() {
        let mut b = Bsmp::new(1);
        b.send(0, &7u32.to_ne_bytes(), &[1, 2, 3]).unwrap();
        b.deliver(b.outgoing().0).unwrap();
        assert_eq!(b.peek().unwrap().0, &7u32.to_ne_bytes());
    }

    #[test]
    fn cut_bytes_are_rejected() {
        let mut b = Bsmp::new(1);
        b.send(0, &[], &[1, 2, 3]).unwrap();
        let bytes = b.outgoing().0;
        assert!(parse(&bytes[..bytes.len() - 1]).is_err());
        assert!(parse(&bytes[..3]).is_err());
        assert_eq!(parse(&bytes).unwrap().len(), 1);
    }
}
