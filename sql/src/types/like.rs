//! `LIKE` / `ILIKE` pattern matching.

use crate::error::{Error, Result};

/// One element of a compiled pattern.
#[derive(Clone, Copy, PartialEq)]
enum Token {
    /// A literal character.
    Char(char),
    /// `_`: exactly one character.
    One,
    /// `%`: any run of characters (consecutive `%` collapse into one).
    Any,
}

fn compile(pattern: &str, case_insensitive: bool) -> Vec<Token> {
    let mut tokens = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let t = match c {
            '%' if tokens.last() == Some(&Token::Any) => continue,
            '%' => Token::Any,
            '_' => Token::One,
            // A trailing backslash matches itself (PostgreSQL raises 22025 instead).
            '\\' => Token::Char(chars.next().unwrap_or('\\')),
            c => Token::Char(c),
        };
        tokens.push(match t {
            Token::Char(c) if case_insensitive => Token::Char(fold(c)),
            t => t,
        });
    }
    tokens
}

/// Simple case folding for ILIKE (the first character of the lowercase mapping).
fn fold(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_lowercase()
    } else {
        c.to_lowercase().next().unwrap_or(c)
    }
}

/// SQL `text LIKE pattern` (or `ILIKE` when `case_insensitive`): `%` matches any run of
/// characters, `_` exactly one character, and `\` makes the next character literal. Matching
/// is by characters with the C collation; it runs in O(len(text) × len(pattern)) time at worst
/// (the classic greedy algorithm that only ever backtracks to the last `%`), never
/// exponentially.
pub fn like(text: &str, pattern: &str, case_insensitive: bool) -> bool {
    let p = compile(pattern, case_insensitive);
    let t: Vec<char> =
        if case_insensitive { text.chars().map(fold).collect() } else { text.chars().collect() };
    let (mut ti, mut pi) = (0, 0);
    // Position after the last `%` seen and the text position it is currently matched up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(Token::Any) => {
                star = Some((pi + 1, ti));
                pi += 1;
            }
            Some(Token::One) => {
                ti += 1;
                pi += 1;
            }
            Some(Token::Char(c)) if *c == t[ti] => {
                ti += 1;
                pi += 1;
            }
            _ => match star {
                // Let the last `%` absorb one more character and retry from there.
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    pi = sp;
                    ti = st + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|t| *t == Token::Any)
}

/// A pattern written with escape character `escape` (`LIKE p ESCAPE e`) rewritten for the
/// default escape, `\\`; an empty `escape` turns escaping off. `22025` (invalid escape
/// sequence) for an escape of more than one character or a pattern that ends with its escape
/// (PostgreSQL raises the latter only when matching reaches it).
pub fn like_escape(pattern: &str, escape: &str) -> Result<String> {
    let mut chars = escape.chars();
    let esc = match (chars.next(), chars.next()) {
        (None, _) => None,
        (Some(c), None) => Some(c),
        _ => {
            return Err(Error::DataException {
                message: "invalid escape string".into(),
                sqlstate: "22025",
            })
        }
    };
    let mut out = String::with_capacity(pattern.len() + 2);
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if Some(c) == esc {
            let Some(n) = it.next() else {
                return Err(Error::DataException {
                    message: "LIKE pattern must not end with escape character".into(),
                    sqlstate: "22025",
                });
            };
            out.push('\\');
            out.push(n);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_postgres() {
        for (text, pattern, want) in [
            ("abc", "abc", true),
            ("abc", "a%", true),
            ("abc", "%c", true),
            ("abc", "%b%", true),
            ("abc", "a_c", true),
            ("abc", "a_", false),
            ("abc", "%", true),
            ("", "%", true),
            ("", "_", false),
            ("", "", true),
            ("abc", "", false),
            ("a%c", "a\\%c", true),
            ("abc", "a\\%c", false),
            ("a_c", "a\\_c", true),
            ("a\\c", "a\\\\c", true),
            ("éa", "_a", true),
            ("BARBARBAR", "BAR%BAR", true),
            ("mississippi", "%iss%ppi", true),
            ("mississippi", "%iss%ppx", false),
            ("abc", "ABC", false),
            ("ab\\", "ab\\", true),
        ] {
            assert_eq!(like(text, pattern, false), want, "{text:?} LIKE {pattern:?}");
        }
        assert!(like("ABC", "a_c", true));
        assert!(like("ÉCOLE", "éc%", true));
    }

    #[test]
    fn like_has_no_backtracking_explosion() {
        let text = "a".repeat(5000);
        let pattern = format!("{}b", "%a".repeat(50));
        let start = std::time::Instant::now();
        assert!(!like(&text, &pattern, false));
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn escape_rewrites() {
        use super::like_escape;
        assert_eq!(like_escape("a!%b", "!").unwrap(), "a\\%b");
        assert_eq!(like_escape("a\\b", "").unwrap(), "a\\\\b");
        assert_eq!(like_escape("a!!", "!").unwrap(), "a\\!");
        assert!(like_escape("a!", "!").is_err());
        assert!(like_escape("a", "ab").is_err());
        assert!(like("a%", &like_escape("a!%", "!").unwrap(), false));
        assert!(!like("ab", &like_escape("a!%", "!").unwrap(), false));
    }
}
