//! File views (MPI-3.1 §13.3): which bytes of a file a rank sees.
//!
//! A view is a displacement, an elementary type and a filetype; the filetype is tiled from the
//! displacement (copy `k` at `disp + k × extent`), and its data bytes, in typemap order, are the
//! view's data. Data offset `o` (in bytes; MPI offsets are in etypes) therefore lies in tile
//! `o / size`, at the position the datatype cursor finds for `o % size` — the same walk that packs
//! a message — so any derived filetype (vector, indexed, struct, resized, with holes) works
//! without flattening it here. Holes are skipped on reads and left untouched on writes.

use crate::datatype::cursor::Cursor;
use crate::datatype::{Basic, Datatype, ValueKind};
use crate::error::{ErrorClass, MpiError, Result};

/// A view: displacement, etype and filetype (the representation is always native).
#[derive(Debug, Clone)]
pub struct View {
    /// Absolute byte where the first tile starts.
    pub disp: u64,
    /// The unit of offsets.
    pub etype: Datatype,
    /// The tiled type.
    pub filetype: Datatype,
}

fn arg(message: String) -> MpiError {
    MpiError::new(ErrorClass::Arg, message)
}

/// Checks the typemap of an etype or filetype as MPI-3.1 §13.3 asks: displacements
/// non-negative and monotonically non-decreasing, and, in a file open for writing, no byte
/// reached twice. Walked as the type's runs in typemap order, adjacent runs merged (the blocks
/// of ROMIO's flattened types, which it checks the same way); errors are `MPI_ERR_IO`, as there.
fn check_typemap(dt: &Datatype, what: &str, writable: bool) -> Result<()> {
    let bad = |why: String| MpiError::new(ErrorClass::Io, format!("the {what} {why}"));
    if dt.bounds().true_lb < 0 {
        return Err(bad("has a negative displacement".into()));
    }
    let Some(program) = dt.program() else {
        return Ok(()); // a predefined type
    };
    let mut block: Option<(isize, usize)> = None;
    let mut fault = None;
    Cursor::new(&program, 1, dt.extent(), 0).runs(dt.size(), |at, n| match block {
        _ if fault.is_some() => {}
        Some((start, len)) if at == start + len as isize => block = Some((start, len + n)),
        Some((start, _)) if at < start => {
            fault = Some(format!(
                "has decreasing displacements (byte {at} after byte {start})"
            ));
        }
        Some((start, len)) if writable && at < start + len as isize => {
            fault = Some(format!(
                "reaches bytes {at}.. twice, which a file open for writing does not allow"
            ));
        }
        _ => block = Some((at, n)),
    });
    fault.map_or(Ok(()), |why| Err(bad(why)))
}

impl View {
    /// The view every file starts with: displacement 0, etype and filetype `MPI_BYTE`.
    pub fn bytes() -> Self {
        let byte = Datatype::Basic(Basic::plain(ValueKind::Byte, 1));
        Self {
            disp: 0,
            etype: byte.clone(),
            filetype: byte,
        }
    }

    /// A checked view: the filetype's data is a whole number of etypes (and not empty), and the
    /// typemaps of both types suit a file (see [`check_typemap`]; `writable`: the file is open
    /// for writing).
    pub fn new(disp: u64, etype: Datatype, filetype: Datatype, writable: bool) -> Result<Self> {
        let (e, f) = (etype.size(), filetype.size());
        if e == 0 {
            return Err(arg("the etype holds no data".into()));
        }
        if f == 0 || !f.is_multiple_of(e) {
            return Err(arg(format!(
                "the filetype ({f} bytes of data) is not made of etypes ({e} bytes)"
            )));
        }
        if filetype.extent() <= 0 {
            return Err(arg("the filetype has a non-positive extent".into()));
        }
        check_typemap(&etype, "etype", writable)?;
        check_typemap(&filetype, "filetype", writable)?;
        Ok(Self {
            disp,
            etype,
            filetype,
        })
    }

    /// Bytes of one etype.
    pub fn etype_size(&self) -> u64 {
        self.etype.size() as u64
    }

    /// The file runs `(offset, len)` behind data bytes `[offset, offset + len)`, in order,
    /// adjacent runs merged.
    pub fn runs(&self, offset: u64, len: usize) -> Vec<(u64, usize)> {
        let mut out: Vec<(u64, usize)> = Vec::new();
        let ft = &self.filetype;
        if ft.is_dense() && ft.bounds().true_lb == 0 {
            if len > 0 {
                out.push((self.disp + offset, len));
            }
            return out;
        }
        let Some(program) = ft.program() else {
            return out;
        };
        let size = ft.size();
        let tiles = usize::MAX / size;
        let Ok(start) = usize::try_from(offset) else {
            return out;
        };
        let mut cursor = Cursor::new(&program, tiles, ft.extent(), start);
        let disp = self.disp;
        cursor.runs(len, |d, n| {
            let at = disp + d as u64;
            match out.last_mut() {
                Some((o, l)) if *o + *l as u64 == at => *l += n,
                _ => out.push((at, n)),
            }
        });
        out
    }

    /// The absolute file byte of data byte `offset` (`MPI_File_get_byte_offset`).
    pub fn byte_offset(&self, offset: u64) -> u64 {
        self.runs(offset, 1).first().map_or(self.disp, |r| r.0)
    }

    /// Data bytes of the view that lie before file byte `end`, rounded down to whole etypes
    /// (where `MPI_SEEK_END` and `MPI_MODE_APPEND` put a file pointer).
    pub fn data_before(&self, end: u64) -> u64 {
        if end <= self.disp {
            return 0;
        }
        let ft = &self.filetype;
        let (size, extent) = (ft.size() as u64, ft.extent() as u64);
        let span = end - self.disp;
        let tiles = span / extent;
        let last = Self {
            disp: self.disp + tiles * extent,
            ..self.clone()
        };
        let partial: u64 = last
            .runs(0, size as usize)
            .iter()
            .map(|&(o, l)| end.saturating_sub(o).min(l as u64))
            .sum();
        let data = tiles * size + partial;
        data - data % self.etype_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{Block, Layout};

    fn int() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
    }

    /// Two ints out of every four (a vector of 2 blocks of 1, stride 8 bytes, resized to 16).
    fn strided() -> Datatype {
        let v = Datatype::derived(Layout::vector(2, 1, 8, int()).unwrap());
        Datatype::derived(Layout::resized(v, 0, 16).unwrap())
    }

    #[test]
    fn the_default_view_is_the_file_itself() {
        let v = View::bytes();
        assert_eq!(v.runs(10, 5), vec![(10, 5)]);
        assert_eq!(v.byte_offset(7), 7);
        assert_eq!(v.data_before(33), 33);
    }

    #[test]
    fn a_strided_filetype_is_tiled_from_the_displacement() {
        let v = View::new(100, int(), strided(), true).unwrap();
        // data bytes 0..16 = ints 0..4: tiles 0 and 1, each at +0 and +8
        assert_eq!(v.runs(0, 16), vec![(100, 4), (108, 4), (116, 4), (124, 4)]);
        // from the middle of an int
        assert_eq!(v.runs(6, 4), vec![(110, 2), (116, 2)]);
        assert_eq!(v.byte_offset(12), 124);
        assert_eq!(v.data_before(100), 0);
        assert_eq!(v.data_before(112), 8);
        assert_eq!(v.data_before(120), 12);
        assert_eq!(v.data_before(126), 12); // half an int is not an etype
    }

    #[test]
    fn struct_filetypes_with_a_leading_hole_work() {
        let blocks = vec![
            Block {
                count: 1,
                disp: 4,
                dt: int(),
            },
            Block {
                count: 2,
                disp: 12,
                dt: int(),
            },
        ];
        let s = Datatype::derived(Layout::blocks(blocks, false).unwrap());
        let v = View::new(0, int(), s.clone(), true).unwrap();
        let ext = s.extent() as u64;
        assert_eq!(v.runs(0, 12), vec![(4, 4), (12, 8)]);
        assert_eq!(v.runs(12, 4), vec![(ext + 4, 4)]);
    }

    #[test]
    fn bad_views_are_refused() {
        let byte = Datatype::Basic(Basic::plain(ValueKind::Byte, 1));
        assert_eq!(
            View::new(0, int(), byte, true).unwrap_err().class,
            ErrorClass::Arg
        );
    }

    /// Ints at the given int displacements, one each (an indexed type).
    fn ints_at(disps: &[isize], lens: &[usize]) -> Datatype {
        let blocks = disps.iter().zip(lens).map(|(&d, &count)| Block {
            count,
            disp: 4 * d,
            dt: int(),
        });
        Datatype::derived(Layout::blocks(blocks.collect(), false).unwrap())
    }

    /// The class `View::new` answers for filetype `ft` (and for it as the etype too), in a file
    /// open for writing or not.
    fn verdict(ft: &Datatype, writable: bool) -> [Option<ErrorClass>; 2] {
        let class = |r: Result<View>| r.err().map(|e| e.class);
        [
            class(View::new(0, int(), ft.clone(), writable)),
            class(View::new(0, ft.clone(), ft.clone(), writable)),
        ]
    }

    #[test]
    fn typemaps_must_suit_a_file() {
        let io = Some(ErrorClass::Io);
        // MPI-3.1 13.3: no negative displacement, none decreasing, whatever the mode.
        for writable in [false, true] {
            assert_eq!(verdict(&ints_at(&[-2, 2], &[1, 1]), writable), [io; 2]);
            assert_eq!(verdict(&ints_at(&[3, 0], &[1, 1]), writable), [io; 2]);
            assert_eq!(
                verdict(&ints_at(&[0, 2, 3], &[2, 1, 1]), writable),
                [None; 2]
            );
        }
        // Overlaps (ints 0..3, then int 1 again): only in a file open for reading only.
        let overlapping = ints_at(&[0, 1], &[3, 1]);
        assert_eq!(verdict(&overlapping, false), [None; 2]);
        assert_eq!(verdict(&overlapping, true), [io; 2]);
    }
}
