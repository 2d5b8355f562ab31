//! Groups (MPI-3.1 section 6.3): queries, translation, comparison and the constructors
//! (`incl`/`excl`, their range forms, union, intersection, difference).
//!
//! A group is an ordered list of world ranks. The set operations follow the standard's order
//! rules: union keeps the first group's order and appends the second's new members in the
//! second's order; intersection and difference keep the first group's order. An empty result is
//! always `MPI_GROUP_EMPTY` (as in MPICH), so programs comparing handles to it work.

use crate::comm::{compare_groups, Comparison, Group, GroupId, GROUP_EMPTY};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::transport::Transport;

/// The set operations of `MPI_Group_union`, `_intersection` and `_difference`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// Members of either group.
    Union,
    /// Members of both groups.
    Intersection,
    /// Members of the first group only.
    Difference,
}

fn rank_error(r: i32, size: usize) -> MpiError {
    MpiError::new(
        ErrorClass::Rank,
        format!("rank {r} is out of range for a group of size {size}"),
    )
}

/// Group ranks `ranks` must be valid and distinct in a group of `size`; returns them as indices.
fn distinct_ranks(ranks: &[i32], size: usize) -> Result<Vec<usize>> {
    let mut seen = vec![false; size];
    ranks
        .iter()
        .map(|&r| {
            let i = usize::try_from(r)
                .ok()
                .filter(|&i| i < size)
                .ok_or_else(|| rank_error(r, size))?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(MpiError::new(
                    ErrorClass::Rank,
                    format!("rank {r} appears twice"),
                ));
            }
            Ok(i)
        })
        .collect()
}

/// The ranks a list of `(first, last, stride)` triplets names, in order.
pub fn expand_ranges(ranges: &[[i32; 3]], size: usize) -> Result<Vec<i32>> {
    let mut out = Vec::new();
    for (i, &[first, last, stride]) in ranges.iter().enumerate() {
        if stride == 0 {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!("range {i} has stride 0"),
            ));
        }
        for end in [first, last] {
            if end < 0 || end as usize >= size {
                // MPI_ERR_ARG, as MPICH reports a bad range (the standard names no class).
                return Err(MpiError::new(
                    ErrorClass::Arg,
                    format!("range {i} ({first}, {last}, {stride}) leaves a group of size {size}"),
                ));
            }
        }
        let steps = (i64::from(last) - i64::from(first)) / i64::from(stride);
        if steps < 0 {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!("range {i} ({first}, {last}, {stride}) runs away from its last rank"),
            ));
        }
        out.extend((0..=steps).map(|k| (i64::from(first) + k * i64::from(stride)) as i32));
        if out.len() > size {
            return Err(MpiError::new(
                ErrorClass::Rank,
                format!("the ranges name more than the {size} ranks of the group"),
            ));
        }
    }
    Ok(out)
}

/// The members of `a op b`, in the standard's order.
pub fn combine(a: &Group, b: &Group, op: SetOp) -> Vec<u32> {
    let in_b = |m: &u32| b.members.contains(m);
    match op {
        SetOp::Union => a
            .members
            .iter()
            .copied()
            .chain(b.members.iter().copied().filter(|m| !a.members.contains(m)))
            .collect(),
        SetOp::Intersection => a.members.iter().copied().filter(in_b).collect(),
        SetOp::Difference => a.members.iter().copied().filter(|m| !in_b(m)).collect(),
    }
}

impl<T: Transport> Engine<T> {
    /// The group behind `id`.
    pub fn group(&self, id: GroupId) -> Result<&Group> {
        self.groups.get(id)
    }

    /// This process's rank in `id`, if it is a member (`MPI_Group_rank`).
    pub fn group_rank(&self, id: GroupId) -> Result<Option<usize>> {
        Ok(self.groups.get(id)?.rank_of(self.core.me as u32))
    }

    /// `MPI_Group_free` (freeing `MPI_GROUP_EMPTY` is allowed and does nothing, as in MPICH).
    pub fn group_free(&mut self, id: GroupId) -> Result<()> {
        if id == GROUP_EMPTY {
            return Ok(());
        }
        self.groups.remove(id)
    }

    /// `MPI_Group_compare`.
    pub fn group_compare(&self, a: GroupId, b: GroupId) -> Result<Comparison> {
        Ok(compare_groups(self.groups.get(a)?, self.groups.get(b)?))
    }

    /// `MPI_Group_translate_ranks`: each rank of `a` as a rank of `b` (`None` = `MPI_UNDEFINED`).
    pub fn group_translate(
        &self,
        a: GroupId,
        ranks: &[i32],
        b: GroupId,
    ) -> Result<Vec<Option<usize>>> {
        let (ga, gb) = (self.groups.get(a)?, self.groups.get(b)?);
        ranks
            .iter()
            .map(|&r| {
                if r == crate::request::PROC_NULL {
                    return Ok(None);
                }
                let world = usize::try_from(r)
                    .ok()
                    .and_then(|r| ga.members.get(r))
                    .ok_or_else(|| rank_error(r, ga.size()))?;
                Ok(gb.rank_of(*world))
            })
            .collect()
    }

    /// A new group handle for `members` (`MPI_GROUP_EMPTY` when there are none).
    fn group_insert(&mut self, members: Vec<u32>) -> GroupId {
        if members.is_empty() {
            return GROUP_EMPTY;
        }
        self.groups.insert(Group {
            members: members.into(),
        })
    }

    /// `MPI_Group_incl` (`exclude = false`) and `MPI_Group_excl` (`exclude = true`).
    pub fn group_select(&mut self, id: GroupId, ranks: &[i32], exclude: bool) -> Result<GroupId> {
        let g = self.groups.get(id)?;
        let chosen = distinct_ranks(ranks, g.size())?;
        let members: Vec<u32> = if exclude {
            let mut keep = vec![true; g.size()];
            chosen.iter().for_each(|&i| keep[i] = false);
            (0..g.size())
                .filter(|&i| keep[i])
                .map(|i| g.members[i])
                .collect()
        } else {
            chosen.iter().map(|&i| g.members[i]).collect()
        };
        Ok(self.group_insert(members))
    }

    /// `MPI_Group_range_incl` and `MPI_Group_range_excl`.
    pub fn group_select_ranges(
        &mut self,
        id: GroupId,
        ranges: &[[i32; 3]],
        exclude: bool,
    ) -> Result<GroupId> {
        let ranks = expand_ranges(ranges, self.groups.get(id)?.size())?;
        self.group_select(id, &ranks, exclude)
    }

    /// `MPI_Group_union`, `MPI_Group_intersection`, `MPI_Group_difference`.
    pub fn group_combine(&mut self, a: GroupId, b: GroupId, op: SetOp) -> Result<GroupId> {
        let members = combine(self.groups.get(a)?, self.groups.get(b)?, op);
        Ok(self.group_insert(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(m: &[u32]) -> Group {
        Group {
            members: m.to_vec().into(),
        }
    }

    #[test]
    fn set_operations_keep_the_standard_order() {
        let (a, b) = (group(&[3, 1, 4]), group(&[5, 4, 1, 0]));
        assert_eq!(combine(&a, &b, SetOp::Union), vec![3, 1, 4, 5, 0]);
        assert_eq!(combine(&a, &b, SetOp::Intersection), vec![1, 4]);
        assert_eq!(combine(&a, &b, SetOp::Difference), vec![3]);
        assert_eq!(combine(&b, &a, SetOp::Intersection), vec![4, 1]);
    }

    #[test]
    fn ranges_expand_and_are_checked() {
        assert_eq!(
            expand_ranges(&[[0, 6, 3], [7, 5, -1]], 8).unwrap(),
            vec![0, 3, 6, 7, 6, 5]
        );
        assert_eq!(expand_ranges(&[[1, 1, 5]], 2).unwrap(), vec![1]);
        assert_eq!(
            expand_ranges(&[[0, 2, 0]], 4).unwrap_err().class,
            ErrorClass::Arg
        );
        assert_eq!(
            expand_ranges(&[[0, 4, 1]], 4).unwrap_err().class,
            ErrorClass::Arg
        );
        assert_eq!(
            expand_ranges(&[[3, 1, 1]], 4).unwrap_err().class,
            ErrorClass::Arg
        );
        assert_eq!(
            distinct_ranks(&[0, 3, 0], 4).unwrap_err().class,
            ErrorClass::Rank
        );
        assert_eq!(
            distinct_ranks(&[-1], 4).unwrap_err().class,
            ErrorClass::Rank
        );
    }
}
