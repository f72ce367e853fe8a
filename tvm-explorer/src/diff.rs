//! Line counts of a diff: how many lines one text adds to and removes from another
//! (`similar`'s Myers diff of their lines, with a deadline for huge texts, after which
//! the diff it has is coarser but still a diff). The page draws the diff itself; these
//! are the ± of the pass list.

use similar::{Algorithm, DiffTag, TextDiff};
use std::time::Duration;

/// `(added, removed)`: lines of `new` not matched in `old`, and the reverse.
pub fn counts(old: &str, new: &str) -> (usize, usize) {
    let diff = TextDiff::configure().algorithm(Algorithm::Myers).timeout(Duration::from_secs(2)).diff_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {}
            DiffTag::Delete => removed += old_range.len(),
            DiffTag::Insert => added += new_range.len(),
            DiffTag::Replace => {
                removed += old_range.len();
                added += new_range.len();
            }
        }
    }
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::counts;

    #[test]
    fn counts_added_and_removed_lines() {
        assert_eq!(counts("a\nb\nc\n", "a\nb\nc\n"), (0, 0));
        assert_eq!(counts("a\nb\nc\n", "a\nx\nb\nc\n"), (1, 0));
        assert_eq!(counts("a\nb\nc\n", "a\nc\n"), (0, 1));
        assert_eq!(counts("a\nb\nc\n", "a\nB\nc\n"), (1, 1));
        assert_eq!(counts("", "x\ny\n"), (2, 0));
        // A moved line is one removal and one addition.
        assert_eq!(counts("a\nb\nc\nd\n", "b\nc\nd\na\n"), (1, 1));
        // Repeated lines are matched once each.
        assert_eq!(counts("x\nx\ny\n", "x\ny\nx\nx\n"), (2, 1));
    }
}
