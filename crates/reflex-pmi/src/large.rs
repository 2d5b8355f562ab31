//! Values longer than one PMI-1 line, split transparently over several keys.
//!
//! Hydra truncates values at 1023 bytes and Slurm hangs on lines over 1024 (launchers.md §2.2),
//! but business cards (addresses of several transports) can be longer. [`PmiClient::put_large`]
//! stores `key` = `<n>:<first piece>` and `key#1` .. `key#<n-1>` = the other pieces, each sized
//! to fit one line; [`PmiClient::get_large`] reads the header and reassembles. A value that
//! fits one line costs one key, as with a plain `put`.

use crate::{PmiClient, PmiError};

/// More pieces than this is surely a corrupt header (64 Ki pieces are tens of MiB).
const MAX_PIECES: usize = 1 << 16;

impl PmiClient {
    /// Stores a value of any length under `key` (read it back with [`PmiClient::get_large`]).
    pub fn put_large(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        if let Some(byte) = value
            .bytes()
            .find(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\0'))
        {
            let what = format!("value of key {key:?} contains the byte {byte:#04x}; hex-encode it");
            return Err(PmiError::Limit { what });
        }
        let pieces = self.split_pieces(key, value)?;
        let header = format!("{}:{}", pieces.len(), pieces[0]);
        self.put(key, &header)?;
        for (index, piece) in pieces.iter().enumerate().skip(1) {
            self.put(&piece_key(key, index), piece)?;
        }
        Ok(())
    }

    /// Reads a value stored with [`PmiClient::put_large`].
    pub fn get_large(&mut self, key: &str) -> Result<String, PmiError> {
        let bad = |reason: String| PmiError::BadLargeValue {
            key: key.to_owned(),
            reason,
        };
        let header = self.get(key)?;
        let (count, first) = header
            .split_once(':')
            .ok_or_else(|| bad("no piece count".to_owned()))?;
        let count: usize = count
            .parse()
            .ok()
            .filter(|&n| (1..=MAX_PIECES).contains(&n))
            .ok_or_else(|| bad(format!("bad piece count {count:?}")))?;
        let mut value = first.to_owned();
        for index in 1..count {
            let piece_key = piece_key(key, index);
            match self.get(&piece_key) {
                Ok(piece) => value.push_str(&piece),
                Err(PmiError::KeyNotFound { .. }) => {
                    return Err(bad(format!("piece {piece_key:?} is missing")))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(value)
    }

    /// Cuts `value` into pieces that each fit one `put` line, at character boundaries.
    pub(crate) fn split_pieces<'v>(
        &self,
        key: &str,
        value: &'v str,
    ) -> Result<Vec<&'v str>, PmiError> {
        // Room in the header line, minus the count and ':' (at most 6 bytes for MAX_PIECES).
        let first_room = self.max_value_len(key).saturating_sub(7);
        let longest_key = piece_key(key, MAX_PIECES);
        let room = self.max_value_len(&longest_key);
        if first_room == 0 || room < 4 {
            let what = format!("key {key:?} leaves no room for a value in a pmi line");
            return Err(PmiError::Limit { what });
        }
        let mut pieces = Vec::new();
        let mut rest = value;
        let mut limit = first_room;
        loop {
            let mut end = rest.len().min(limit);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            let (piece, tail) = rest.split_at(end);
            pieces.push(piece);
            rest = tail;
            limit = room;
            if rest.is_empty() {
                break;
            }
        }
        if pieces.len() > MAX_PIECES {
            let what = format!(
                "value of key {key:?} is {} bytes, too long even when split",
                value.len()
            );
            return Err(PmiError::Limit { what });
        }
        Ok(pieces)
    }
}

fn piece_key(key: &str, index: usize) -> String {
    format!("{key}#{index}")
}
