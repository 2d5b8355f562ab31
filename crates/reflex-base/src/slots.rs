//! [`Slots`]: a table of objects named by small integers, the lowest free one reused first.
//!
//! MPI hands out handles for sessions, files, info objects, user operations, windows and
//! communicators; each table keeps its objects in numbered slots so that a handle is an index
//! (no hashing on the way to the object) and a freed number comes back before the table grows.
//! The error a bad number deserves differs per table, so lookups return `Option` and the table's
//! owner builds the error.

/// Objects by number; `None` marks a free slot.
#[derive(Debug, Clone)]
pub struct Slots<T> {
    slots: Vec<Option<T>>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Self { slots: Vec::new() }
    }
}

impl<T> Slots<T> {
    /// Stores `value` in the lowest free slot and returns its number.
    pub fn insert(&mut self, value: T) -> usize {
        match self.slots.iter().position(Option::is_none) {
            Some(i) => {
                self.slots[i] = Some(value);
                i
            }
            None => {
                self.slots.push(Some(value));
                self.slots.len() - 1
            }
        }
    }

    /// As [`Slots::insert`], unless the number would be `limit` or more: then `value` comes
    /// back (the table is full).
    pub fn insert_below(&mut self, value: T, limit: usize) -> Result<usize, T> {
        let free = self.slots.iter().position(Option::is_none);
        match free.unwrap_or(self.slots.len()) {
            i if i >= limit => Err(value),
            _ => Ok(self.insert(value)),
        }
    }

    /// The object numbered `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        self.slots.get(i).and_then(Option::as_ref)
    }

    /// The object numbered `i`, to change.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.slots.get_mut(i).and_then(Option::as_mut)
    }

    /// Takes the object numbered `i` out, freeing its number.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        self.slots.get_mut(i).and_then(Option::take)
    }

    /// How many objects the table holds.
    pub fn count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// One past the highest number ever handed out (every number in use is below it).
    pub fn bound(&self) -> usize {
        self.slots.len()
    }

    /// The objects with their numbers, in number order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|v| (i, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_number_is_reused() {
        let mut s = Slots::default();
        assert_eq!((s.insert('a'), s.insert('b'), s.insert('c')), (0, 1, 2));
        assert_eq!(s.remove(1), Some('b'));
        assert_eq!(s.remove(1), None);
        assert_eq!(s.get(1), None);
        assert_eq!(s.count(), 2);
        assert_eq!(s.insert('d'), 1);
        *s.get_mut(2).unwrap() = 'e';
        let all: Vec<_> = s.iter().collect();
        assert_eq!(all, [(0, &'a'), (1, &'d'), (2, &'e')]);
        assert_eq!((s.bound(), s.get(7)), (3, None));
    }

    #[test]
    fn insert_below_stops_at_the_limit() {
        let mut s = Slots::default();
        assert_eq!(s.insert_below(1, 2), Ok(0));
        assert_eq!(s.insert_below(2, 2), Ok(1));
        assert_eq!(s.insert_below(3, 2), Err(3));
        s.remove(0);
        assert_eq!(s.insert_below(4, 2), Ok(0));
    }
}
