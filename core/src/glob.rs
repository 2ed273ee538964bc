//! Glob patterns as SCAN uses them (spec §3.1, Redis `MATCH` rules), byte-wise and
//! binary-safe: `*` any run of bytes, `?` one byte, `[abc]`, `[a-z]`, `[^a]` classes, and
//! `\` escaping the next byte (also inside a class). The corners follow Redis's
//! `stringmatchlen` exactly (see `class` below): `[!a]` is not a negation, `[]` is empty, a `[`
//! never closed makes a class of the rest of the pattern.
//!
//! Pure and allocation-free. Matching is linear in practice: one backtrack point (the last
//! `*`) is enough for globs, so no input makes it exponential.

/// Whether `key` matches the glob `pattern`.
pub fn matches(pattern: &[u8], key: &[u8]) -> bool {
    let (mut p, mut k) = (0, 0);
    // The position after the last `*` seen, and the key position it is retried from.
    let mut star: Option<(usize, usize)> = None;
    while k < key.len() {
        match step(pattern, p, key[k]) {
            Step::Star => {
                star = Some((p + 1, k));
                p += 1;
                continue;
            }
            Step::Matched(next) => {
                p = next;
                k += 1;
                continue;
            }
            Step::Failed => {}
        }
        match star {
            Some((after, from)) => {
                p = after;
                k = from + 1;
                star = Some((after, from + 1));
            }
            None => return false,
        }
    }
    // Only stars may be left.
    pattern[p..].iter().all(|&b| b == b'*')
}

/// The literal bytes every match starts with: the pattern up to its first `*`, `?` or
/// `[`, with escapes resolved. A store keeping its keys in order scans only this range.
pub fn literal_prefix(pattern: &[u8]) -> Vec<u8> {
    let mut prefix = Vec::new();
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'*' | b'?' | b'[' => break,
            b'\\' if i + 1 < pattern.len() => {
                prefix.push(pattern[i + 1]);
                i += 2;
            }
            b => {
                prefix.push(b);
                i += 1;
            }
        }
    }
    prefix
}

/// Escapes every glob metacharacter of `literal`, so that the result matches exactly it
/// (or, followed by `*`, every key that starts with it).
pub fn escape(literal: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(literal.len());
    for &b in literal {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

enum Step {
    /// A `*` at this position.
    Star,
    /// The byte matched; the pattern continues here.
    Matched(usize),
    Failed,
}

/// Tries the pattern element at `p` against one byte.
fn step(pattern: &[u8], p: usize, byte: u8) -> Step {
    let Some(&first) = pattern.get(p) else {
        return Step::Failed;
    };
    match first {
        b'*' => Step::Star,
        b'?' => Step::Matched(p + 1),
        b'[' => match class(pattern, p + 1, byte) {
            (true, next) => Step::Matched(next),
            (false, _) => Step::Failed,
        },
        b'\\' if p + 1 < pattern.len() => {
            if pattern[p + 1] == byte {
                Step::Matched(p + 2)
            } else {
                Step::Failed
            }
        }
        literal if literal == byte => Step::Matched(p + 1),
        _ => Step::Failed,
    }
}

/// Matches `byte` against the class whose body starts at `i` (after `[`), exactly as
/// Redis's `stringmatchlen` does: `^` first negates; `\` makes the next byte a member;
/// `x-y` is a range (either order) whenever a byte follows the `-`, even `]`; the first
/// `]` ends the class (so `[]` is empty); a class never closed runs to the end of the
/// pattern. Returns whether it matched and the position after the class.
fn class(pattern: &[u8], mut i: usize, byte: u8) -> (bool, usize) {
    let negated = pattern.get(i) == Some(&b'^');
    if negated {
        i += 1;
    }
    let mut hit = false;
    while let Some(&b) = pattern.get(i) {
        if b == b'\\' && i + 1 < pattern.len() {
            hit |= pattern[i + 1] == byte;
            i += 2;
        } else if b == b']' {
            return (hit != negated, i + 1);
        } else if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() {
            let (lo, hi) = (b.min(pattern[i + 2]), b.max(pattern[i + 2]));
            hit |= (lo..=hi).contains(&byte);
            i += 3;
        } else {
            hit |= b == byte;
            i += 1;
        }
    }
    (hit != negated, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_match_rules() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"*", b"", true),
            (b"*", b"anything", true),
            (b"key*", b"key", true),
            (b"key*", b"key1", true),
            (b"key*", b"ke", false),
            (b"k?y", b"key", true),
            (b"k?y", b"ky", false),
            (b"h[ae]llo", b"hallo", true),
            (b"h[ae]llo", b"hillo", false),
            (b"h[^e]llo", b"hallo", true),
            (b"h[^e]llo", b"hello", false),
            (b"h[!e]llo", b"hello", true),
            (b"h[!e]llo", b"hallo", false),
            (b"h[a-b]llo", b"hbllo", true),
            (b"h[b-a]llo", b"hallo", true),
            (b"h[a-b]llo", b"hcllo", false),
            (b"t[0-9]", b"t7", true),
            (b"a\\*b", b"a*b", true),
            (b"a\\*b", b"axb", false),
            (b"a\\?", b"a?", true),
            (b"[\\]]", b"]", true),
            (b"[]]", b"]", false),
            (b"[]", b"", false),
            (b"[^]", b"x", true),
            (b"[a-]", b"-", false),
            (b"[a-]", b"_", true),
            (b"[", b"[", false),
            (b"a[b", b"ab", true),
            (b"a[b", b"a[b", false),
            (b"a[\\", b"a\\", true),
            (b"[\\-x]", b"-", true),
            (b"\\", b"\\", true),
            (b"*a*b*c*", b"xxaxxbxxcxx", true),
            (b"*a*b*c*", b"xxaxxcxxbxx", false),
            (b"\xfe\r\n*", b"\xfe\r\nz", true),
            (b"s/*/t", b"s/a/b/t", true),
            (b"exact", b"exact", true),
            (b"exact", b"exactly", false),
            (b"**", b"ab", true),
            (b"a*", b"", false),
        ];
        for (pattern, key, expected) in cases {
            assert_eq!(
                matches(pattern, key),
                *expected,
                "{} vs {}",
                pattern.escape_ascii(),
                key.escape_ascii()
            );
        }
    }

    #[test]
    fn escaped_literals_match_only_themselves() {
        for literal in [&b"a*b?[c]\\d"[..], b"plain", b"", b"\\"] {
            let pattern = escape(literal);
            assert!(matches(&pattern, literal));
            assert_eq!(literal_prefix(&pattern), literal);
            let mut longer = literal.to_vec();
            longer.push(b'x');
            assert!(!matches(&pattern, &longer));
            let mut prefix = pattern.clone();
            prefix.push(b'*');
            assert!(matches(&prefix, &longer));
        }
    }

    #[test]
    fn prefix_stops_at_the_first_wildcard() {
        assert_eq!(literal_prefix(b"sensor/*"), b"sensor/");
        assert_eq!(literal_prefix(b"a?b"), b"a");
        assert_eq!(literal_prefix(b"[ab]"), b"");
        assert_eq!(literal_prefix(b"a\\*b*"), b"a*b");
    }

    #[test]
    fn long_stars_stay_linear() {
        let key = vec![b'a'; 10_000];
        let mut pattern = b"*".repeat(50);
        pattern.push(b'b');
        assert!(!matches(&pattern, &key));
    }
}
