//! Line counts of a diff: how many lines one text adds to and removes from another, from
//! the length of their longest common subsequence of lines (Myers' O((N+M)D) search for
//! the edit distance D). The page draws the diff itself; these are the ± of the pass list.

use std::collections::HashMap;

/// Beyond this many edits the count is taken from the lines' multisets instead (an
/// upper bound on the matched lines, so a lower bound on the edits).
const MAX_D: usize = 20_000;

/// `(added, removed)`: lines of `new` not matched in `old`, and the reverse.
pub fn counts(old: &str, new: &str) -> (usize, usize) {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut a = Vec::new();
    let mut b = Vec::new();
    for (text, out) in [(old, &mut a), (new, &mut b)] {
        for l in text.lines() {
            let n = ids.len() as u32;
            out.push(*ids.entry(l).or_insert(n));
        }
    }
    // Common prefix and suffix first: passes usually change a few lines.
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..].iter().rev().zip(b[pre..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let d = edit_distance(a, b).unwrap_or_else(|| multiset_distance(a, b));
    // D = (N - L) + (M - L), so L = (N + M - D) / 2.
    let common = (a.len() + b.len() - d) / 2;
    (b.len() - common, a.len() - common)
}

/// Myers' shortest edit script length (insertions plus deletions), if at most `MAX_D`.
fn edit_distance(a: &[u32], b: &[u32]) -> Option<usize> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    if max == 0 {
        return Some(0);
    }
    let off = max as isize + 1;
    let mut v = vec![0isize; 2 * max + 3];
    for d in 0..=max.min(MAX_D) as isize {
        let mut k = -d;
        while k <= d {
            let down = k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]);
            let mut x = if down { v[(off + k + 1) as usize] } else { v[(off + k - 1) as usize] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                return Some(d as usize);
            }
            k += 2;
        }
    }
    None
}

fn multiset_distance(a: &[u32], b: &[u32]) -> usize {
    let mut count: HashMap<u32, isize> = HashMap::new();
    for x in a {
        *count.entry(*x).or_default() += 1;
    }
    let mut common = 0;
    for y in b {
        let c = count.entry(*y).or_default();
        if *c > 0 {
            *c -= 1;
            common += 1;
        }
    }
    a.len() + b.len() - 2 * common
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
    }
}
