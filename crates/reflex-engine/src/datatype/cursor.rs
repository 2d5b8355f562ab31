//! A resumable position in `count` elements of a compiled datatype, and pack/unpack on top of it.
//!
//! A [`Cursor`] is placed at any byte offset of the packed stream ([`Cursor::new`] descends the
//! program arithmetically: whole elements and loop iterations are skipped by division, not walked)
//! and then yields the memory runs behind the next bytes of the stream, stopping anywhere, even in
//! the middle of a run: packets and ring cells never line up with blocks. It keeps one frame per
//! active loop in a vector sized once from the program's depth, so producing runs allocates
//! nothing and never recurses. A loop whose body is a single run is walked in a tight loop (the
//! regular-stride fast path).

use super::program::{Instr, Program};
use reflex_base::copy::copy_bytes;

#[derive(Debug, Clone, Copy)]
struct Frame {
    /// First instruction of the body.
    start: usize,
    /// One past the last instruction of the body.
    end: usize,
    /// Iterations left, the current one included.
    left: usize,
    stride: isize,
    /// Displacement of the current iteration.
    base: isize,
    /// Data bytes of one iteration.
    body_size: usize,
    /// The body is runs only.
    flat: bool,
}

/// A cursor's position detached from its program, kept between packets of one message so that
/// each chunk continues where the last one stopped instead of seeking from the start.
#[derive(Debug, Clone, Default)]
pub struct Resume {
    frames: Vec<Frame>,
    pc: usize,
    skip: usize,
    /// Packed offset of the position.
    offset: usize,
}

/// A position in the packed stream of `count` elements of a program.
#[derive(Debug)]
pub struct Cursor<'p> {
    program: &'p Program,
    frames: Vec<Frame>,
    pc: usize,
    /// Bytes of the current `Copy` already produced.
    skip: usize,
    /// Packed offset of the position.
    offset: usize,
}

impl<'p> Cursor<'p> {
    /// A cursor at byte `offset` of the packed stream of `count` elements `extent` bytes apart.
    pub fn new(program: &'p Program, count: usize, extent: isize, offset: usize) -> Self {
        let mut cursor = Self {
            program,
            frames: Vec::with_capacity(program.depth + 1),
            pc: 0,
            skip: 0,
            offset,
        };
        let size = program.size;
        if size == 0 || count == 0 || offset / size >= count {
            return cursor;
        }
        let element = offset / size;
        cursor.frames.push(Frame {
            start: 0,
            end: program.instrs.len(),
            left: count - element,
            stride: extent,
            base: extent.wrapping_mul(element as isize),
            body_size: size,
            flat: program.flat_top,
        });
        cursor.descend(offset % size);
        cursor
    }

    /// Continues from a saved position when it is at `offset`, else places a new cursor there.
    pub fn resume(
        program: &'p Program,
        count: usize,
        extent: isize,
        offset: usize,
        saved: Option<Resume>,
    ) -> Self {
        match saved {
            Some(r) if r.offset == offset => Self {
                program,
                frames: r.frames,
                pc: r.pc,
                skip: r.skip,
                offset,
            },
            _ => Self::new(program, count, extent, offset),
        }
    }

    /// Detaches the position from the program.
    pub fn save(self) -> Resume {
        Resume {
            frames: self.frames,
            pc: self.pc,
            skip: self.skip,
            offset: self.offset,
        }
    }

    fn loop_frame(&self, pc: usize, base: isize, skipped: usize) -> Frame {
        let Instr::Loop {
            count,
            stride,
            body,
            body_size,
        } = self.program.instrs[pc]
        else {
            unreachable!("loop_frame is called on loops");
        };
        Frame {
            start: pc + 1,
            end: pc + 1 + body,
            left: count - skipped,
            stride,
            base: base.wrapping_add(stride.wrapping_mul(skipped as isize)),
            body_size,
            flat: self.program.flat[pc],
        }
    }

    /// Moves from the start of the current element to `rest` bytes into it.
    fn descend(&mut self, mut rest: usize) {
        loop {
            let base = self.frames.last().map_or(0, |f| f.base);
            match self.program.instrs[self.pc] {
                Instr::Copy { len, .. } if rest < len => {
                    self.skip = rest;
                    return;
                }
                Instr::Copy { len, .. } => {
                    rest -= len;
                    self.pc += 1;
                }
                Instr::Loop {
                    count,
                    body,
                    body_size,
                    ..
                } => {
                    let total = count * body_size;
                    if rest >= total {
                        rest -= total;
                        self.pc += 1 + body;
                        continue;
                    }
                    let skipped = rest / body_size;
                    rest -= skipped * body_size;
                    let frame = self.loop_frame(self.pc, base, skipped);
                    self.frames.push(frame);
                    self.pc += 1;
                }
            }
        }
    }

    /// Calls `f(displacement, len)` for the runs behind the next `limit` bytes of the stream (or
    /// up to its end); returns the bytes produced.
    #[inline]
    pub fn runs(&mut self, limit: usize, mut f: impl FnMut(isize, usize)) -> usize {
        self.feed(limit, &mut f)
    }

    /// Hands the runs behind the next `limit` bytes to `sink`; returns the bytes produced. Whole
    /// iterations of a loop whose body is runs only go in a batch (one run: [`Sink::strided`]).
    #[inline]
    pub fn feed(&mut self, limit: usize, sink: &mut impl Sink) -> usize {
        let mut done = 0;
        while done < limit {
            let Some(top) = self.frames.len().checked_sub(1) else {
                break;
            };
            let frame = self.frames[top];
            if self.pc == frame.end {
                self.next_iteration(top);
                continue;
            }
            if self.pc == frame.start && self.skip == 0 && frame.flat {
                let n = ((limit - done) / frame.body_size).min(frame.left);
                if n > 0 {
                    self.whole_iterations(&frame, n, sink);
                    done += n * frame.body_size;
                    let f = &mut self.frames[top];
                    f.left -= n - 1;
                    f.base = f
                        .base
                        .wrapping_add(frame.stride.wrapping_mul(n as isize - 1));
                    self.pc = frame.end;
                    continue;
                }
            }
            match self.program.instrs[self.pc] {
                Instr::Copy { disp, len } => {
                    let take = (len - self.skip).min(limit - done);
                    sink.run(frame.base.wrapping_add(disp + self.skip as isize), take);
                    done += take;
                    self.skip += take;
                    if self.skip == len {
                        self.skip = 0;
                        self.pc += 1;
                    }
                }
                Instr::Loop { .. } => {
                    let frame = self.loop_frame(self.pc, frame.base, 0);
                    self.frames.push(frame);
                    self.pc += 1;
                }
            }
        }
        self.offset += done;
        done
    }

    /// Produces `n` whole iterations of a flat body.
    #[inline]
    fn whole_iterations(&self, frame: &Frame, n: usize, sink: &mut impl Sink) {
        let body = &self.program.instrs[frame.start..frame.end];
        if let [Instr::Copy { disp, len }] = *body {
            return sink.strided(frame.base.wrapping_add(disp), frame.stride, n, len);
        }
        let mut base = frame.base;
        for _ in 0..n {
            for instr in body {
                if let Instr::Copy { disp, len } = *instr {
                    sink.run(base.wrapping_add(disp), len);
                }
            }
            base = base.wrapping_add(frame.stride);
        }
    }

    /// The body of frame `top` ended: start its next iteration or leave the loop.
    fn next_iteration(&mut self, top: usize) {
        let frame = &mut self.frames[top];
        frame.left -= 1;
        if frame.left > 0 {
            frame.base = frame.base.wrapping_add(frame.stride);
            self.pc = frame.start;
        } else {
            self.frames.pop();
        }
    }
}

/// What consumes the runs of a cursor.
pub trait Sink {
    /// One run of `len` bytes at displacement `disp`.
    fn run(&mut self, disp: isize, len: usize);

    /// `n` runs of `len` bytes, the first at `disp`, `stride` apart: the regular-stride fast path,
    /// which a sink may implement with a tighter loop.
    #[inline]
    fn strided(&mut self, disp: isize, stride: isize, n: usize, len: usize) {
        let mut at = disp;
        for _ in 0..n {
            self.run(at, len);
            at = at.wrapping_add(stride);
        }
    }
}

impl<F: FnMut(isize, usize)> Sink for F {
    #[inline]
    fn run(&mut self, disp: isize, len: usize) {
        self(disp, len)
    }
}

/// Copies runs between the application's buffer and packed bytes: gathers from `from` (the
/// application's buffer) into `to` (packed) when `GATHER`, else scatters packed `from` into `to`.
struct Mover<'a, const GATHER: bool> {
    from: &'a [u8],
    to: &'a mut [u8],
    /// Next packed byte.
    at: usize,
    origin: usize,
}

impl<const GATHER: bool> Mover<'_, GATHER> {
    /// Copies one run at buffer index `index`; `L > 0` is its length known at compile time.
    #[inline(always)]
    fn one<const L: usize>(&mut self, index: usize, len: usize) {
        let n = if L == 0 { len } else { L };
        if GATHER {
            copy_bytes(
                &mut self.to[self.at..self.at + n],
                &self.from[index..index + n],
            );
        } else {
            copy_bytes(
                &mut self.to[index..index + n],
                &self.from[self.at..self.at + n],
            );
        }
        self.at += n;
    }

    #[inline(always)]
    fn batch<const L: usize>(&mut self, disp: isize, stride: isize, n: usize, len: usize) {
        let mut index = self.origin.wrapping_add_signed(disp);
        for _ in 0..n {
            self.one::<L>(index, len);
            index = index.wrapping_add_signed(stride);
        }
    }
}

impl<const GATHER: bool> Sink for Mover<'_, GATHER> {
    #[inline]
    fn run(&mut self, disp: isize, len: usize) {
        let index = self.origin.wrapping_add_signed(disp);
        match len {
            4 => self.one::<4>(index, len),
            8 => self.one::<8>(index, len),
            _ => self.one::<0>(index, len),
        }
    }

    #[inline]
    fn strided(&mut self, disp: isize, stride: isize, n: usize, len: usize) {
        // Fixed sizes turn each copy into a load and a store instead of a call to `memcpy`.
        match len {
            4 => self.batch::<4>(disp, stride, n, len),
            8 => self.batch::<8>(disp, stride, n, len),
            16 => self.batch::<16>(disp, stride, n, len),
            32 => self.batch::<32>(disp, stride, n, len),
            64 => self.batch::<64>(disp, stride, n, len),
            _ => self.batch::<0>(disp, stride, n, len),
        }
    }
}

/// Where `count` elements of a program lie in a buffer: the buffer starts `origin` bytes before
/// the address the application passed (the lowest byte any element touches).
#[derive(Debug, Clone, Copy)]
pub struct Placement<'p> {
    /// The compiled type.
    pub program: &'p Program,
    /// Elements.
    pub count: usize,
    /// Bytes between elements.
    pub extent: isize,
    /// Offset of the application's address inside the buffer.
    pub origin: usize,
}

impl Placement<'_> {
    /// Buffer index of a displacement (the placement guarantees it is inside the buffer).
    #[inline]
    fn index(&self, disp: isize) -> usize {
        self.origin.wrapping_add_signed(disp)
    }

    /// Gathers the packed bytes `[offset, offset + dst.len())` from `src` into `dst`; returns how
    /// many there were. `saved` carries the position from one call to the next.
    pub fn pack(
        &self,
        src: &[u8],
        offset: usize,
        dst: &mut [u8],
        saved: &mut Option<Resume>,
    ) -> usize {
        let limit = dst.len();
        let mover = Mover::<true> {
            from: src,
            to: dst,
            at: 0,
            origin: self.origin,
        };
        self.drive(offset, limit, mover, saved)
    }

    /// Scatters `src`, the packed bytes from `offset` on, into `dst`; returns how many fitted.
    pub fn unpack(
        &self,
        dst: &mut [u8],
        offset: usize,
        src: &[u8],
        saved: &mut Option<Resume>,
    ) -> usize {
        let mover = Mover::<false> {
            from: src,
            to: dst,
            at: 0,
            origin: self.origin,
        };
        self.drive(offset, src.len(), mover, saved)
    }

    fn drive<const G: bool>(
        &self,
        offset: usize,
        limit: usize,
        mut mover: Mover<'_, G>,
        saved: &mut Option<Resume>,
    ) -> usize {
        let mut cursor =
            Cursor::resume(self.program, self.count, self.extent, offset, saved.take());
        let n = cursor.feed(limit, &mut mover);
        *saved = Some(cursor.save());
        n
    }

    /// The `(buffer index, len)` runs behind packed bytes `[offset, offset + limit)`.
    pub fn runs(&self, offset: usize, limit: usize, out: &mut Vec<(usize, usize)>) -> usize {
        let mut cursor = Cursor::new(self.program, self.count, self.extent, offset);
        cursor.runs(limit, |disp, len| out.push((self.index(disp), len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::layout::{Block, Layout};
    use crate::datatype::{Basic, Datatype, ValueKind};
    use std::sync::Arc;

    fn int() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
    }

    fn runs_of(
        p: &Program,
        count: usize,
        extent: isize,
        offset: usize,
        limit: usize,
    ) -> Vec<(isize, usize)> {
        let mut v = Vec::new();
        Cursor::new(p, count, extent, offset).runs(limit, |d, l| v.push((d, l)));
        v
    }

    #[test]
    fn vector_runs_from_any_offset() {
        let v = Layout::vector(3, 2, 16, int()).unwrap();
        let p = v.program();
        assert_eq!(runs_of(p, 1, 40, 0, 100), vec![(0, 8), (16, 8), (32, 8)]);
        assert_eq!(runs_of(p, 1, 40, 5, 100), vec![(5, 3), (16, 8), (32, 8)]);
        assert_eq!(runs_of(p, 1, 40, 5, 7), vec![(5, 3), (16, 4)]);
        assert_eq!(runs_of(p, 2, 40, 20, 12), vec![(36, 4), (40, 8)]);
    }

    #[test]
    fn resuming_in_pieces_gives_the_same_runs() {
        let inner = Datatype::Derived(Arc::new(Layout::vector(2, 1, 12, int()).unwrap()));
        let blocks = vec![
            Block {
                count: 2,
                disp: -40,
                dt: inner.clone(),
            },
            Block {
                count: 1,
                disp: 100,
                dt: int(),
            },
        ];
        let l = Layout::blocks(blocks, false).unwrap();
        let p = l.program();
        let whole: Vec<_> = runs_of(p, 3, 200, 0, usize::MAX);
        let total: usize = whole.iter().map(|r| r.1).sum();
        assert_eq!(total, 3 * l.size());
        for step in [1, 3, 5, 7] {
            let mut pieces = Vec::new();
            let mut off = 0;
            while off < total {
                let mut c = Cursor::new(p, 3, 200, off);
                off += c.runs(step, |d, len| pieces.push((d, len)));
            }
            let bytes = |v: &[(isize, usize)]| -> Vec<isize> {
                v.iter()
                    .flat_map(|&(d, l)| (0..l as isize).map(move |i| d + i))
                    .collect()
            };
            assert_eq!(bytes(&pieces), bytes(&whole), "step {step}");
        }
    }

    #[test]
    fn pack_and_unpack_round_trip() {
        let v = Layout::vector(2, 1, 8, int()).unwrap();
        let place = Placement {
            program: v.program(),
            count: 2,
            extent: 12,
            origin: 0,
        };
        let src: Vec<u8> = (0..24).collect();
        let mut packed = [0u8; 16];
        assert_eq!(place.pack(&src, 0, &mut packed, &mut None), 16);
        assert_eq!(
            packed,
            [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23]
        );
        let mut back = vec![0xffu8; 24];
        let mut saved = None;
        assert_eq!(place.unpack(&mut back, 0, &packed[..10], &mut saved), 10);
        assert_eq!(place.unpack(&mut back, 10, &packed[10..], &mut saved), 6);
        // A saved position elsewhere than the requested offset is ignored (fresh seek).
        let mut again = [0u8; 6];
        assert_eq!(place.pack(&src, 10, &mut again, &mut saved), 6);
        assert_eq!(again, packed[10..]);
        assert_eq!(&back[..4], &src[..4]);
        assert_eq!(&back[4..8], &[0xff; 4]);
        assert_eq!(&back[20..24], &src[20..24]);
    }
}
