//! The one place that runs sqlparser (PostgreSqlDialect) and turns its errors into ours.

use std::collections::HashSet;

use sqlparser::ast::{Ident, ObjectName, ObjectNamePart, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::error::{Error, Result, Span};

/// Maximum expression nesting accepted by the parser. Deeper input gets `54001` instead of
/// exhausting the stack.
pub const MAX_NESTING: usize = 64;

/// Maximum number of operators in one statement (see `check_operator_count`).
pub const MAX_OPERATORS: usize = 3000;

/// Maximum statement text length in bytes (PostgreSQL's limit is 1 GB; ours keeps parse time
/// and memory bounded per connection).
pub const MAX_SQL_BYTES: usize = 64 << 20;

/// One parsed statement.
#[derive(Debug)]
pub enum Parsed {
    /// Anything sqlparser knows.
    Sql(Box<Statement>),
    /// PostgreSQL's `CHECKPOINT`, which sqlparser does not know.
    Checkpoint,
    /// One of pgjdbc's `DatabaseMetaData` queries (`crate::metadata`), recognised before
    /// parsing: Aspen answers it from the catalog instead of running its `pg_catalog` SQL.
    Metadata(crate::metadata::MetaQuery),
    /// `COPY … FROM STDIN` or `COPY … TO STDOUT` (`crate::copy`; sqlparser lacks options
    /// PostgreSQL takes).
    Copy(crate::copy::CopyStatement),
    /// `ALTER SEQUENCE [IF EXISTS] name action`, which sqlparser does not know.
    AlterSequence {
        /// IF EXISTS.
        if_exists: bool,
        /// The sequence.
        name: ObjectName,
        /// What to do.
        action: SequenceAction,
    },
    /// `SET CONSTRAINTS { ALL | name [, …] } { DEFERRED | IMMEDIATE }`, which sqlparser does
    /// not know.
    SetConstraints {
        /// The constraints named (`None`: ALL).
        names: Option<Vec<ObjectName>>,
        /// DEFERRED (else IMMEDIATE).
        deferred: bool,
    },
    /// `VACUUM` or `ANALYZE` (sqlparser knows neither in PostgreSQL's form): nothing to do in
    /// an in-memory engine whose old versions are freed as their last reader lets go, and
    /// with no planner statistics; the tables must exist.
    Maintenance {
        /// VACUUM (else ANALYZE).
        vacuum: bool,
        /// ANALYZE, or VACUUM with its ANALYZE option (a column list needs it).
        analyze: bool,
        /// The tables named (none: all), each with its column list.
        tables: Vec<(ObjectName, Vec<Ident>)>,
    },
}

/// What an ALTER SEQUENCE does (the forms Aspen takes).
#[derive(Debug, Clone, PartialEq)]
pub enum SequenceAction {
    /// `OWNED BY table.column` (`Some`: the name's parts, the column last) or `OWNED BY NONE`.
    OwnedBy(Option<ObjectName>),
    /// `OWNER TO role`.
    OwnerTo(Ident),
    /// `RESTART [[WITH] n]`.
    Restart(Option<i64>),
}

/// A syntax error at `at`, with its position, or at the end of the input (`None`).
fn syntax_error_at(sql: &str, at: Option<&&TokenWithSpan>) -> Error {
    match at {
        Some(t) => Error::Syntax {
            message: format!("syntax error at or near \"{}\"", t.token),
            span: offset_of(sql, t.span.start).map(|start| Span { start }),
        },
        None => Error::Syntax { message: "syntax error at end of input".into(), span: None },
    }
}

/// The identifier a word token is (keywords included, as PostgreSQL takes them in names).
fn word_ident(t: &TokenWithSpan) -> Option<Ident> {
    match &t.token {
        Token::Word(w) => {
            Some(Ident { value: w.value.clone(), quote_style: w.quote_style, span: t.span })
        }
        _ => None,
    }
}

/// A dotted name (identifiers separated by periods) at `words[*i]`, moving `*i` past it.
fn dotted_name(sql: &str, words: &[&TokenWithSpan], i: &mut usize) -> Result<ObjectName> {
    let mut parts = Vec::new();
    loop {
        let ident = words.get(*i).and_then(|t| word_ident(t));
        parts.push(ObjectNamePart::Identifier(
            ident.ok_or_else(|| syntax_error_at(sql, words.get(*i)))?,
        ));
        *i += 1;
        if words.get(*i).is_none_or(|t| t.token != Token::Period) {
            return Ok(ObjectName(parts));
        }
        *i += 1;
    }
}

/// Whether a token is the unquoted word `word`.
fn is_word(t: &TokenWithSpan, word: &str) -> bool {
    matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Parses `VACUUM [(options)] [FULL] [FREEZE] [VERBOSE] [ANALYZE] [table [(columns)] [, …]]`
/// or `ANALYZE [(options)] [VERBOSE] [table [(columns)] [, …]]` (tokens without whitespace).
fn parse_maintenance(sql: &str, words: &[&TokenWithSpan]) -> Result<Parsed> {
    let vacuum = is_word(words[0], "vacuum");
    let error = |at: Option<&&TokenWithSpan>| syntax_error_at(sql, at);
    let is_analyze = |t: &TokenWithSpan| is_word(t, "analyze") || is_word(t, "analyse");
    // A parenthesized list at `i`, if there is one: its items, each the words up to a comma.
    let list = |i: &mut usize| -> Result<Vec<Vec<&TokenWithSpan>>> {
        let mut items = Vec::new();
        if words.get(*i).is_none_or(|t| t.token != Token::LParen) {
            return Ok(items);
        }
        *i += 1;
        let mut item = Vec::new();
        loop {
            match words.get(*i) {
                None => return Err(error(None)),
                Some(t) if t.token == Token::RParen || t.token == Token::Comma => {
                    if item.is_empty() {
                        return Err(error(Some(t)));
                    }
                    items.push(std::mem::take(&mut item));
                    *i += 1;
                    if t.token == Token::RParen {
                        return Ok(items);
                    }
                }
                Some(t) => {
                    item.push(*t);
                    *i += 1;
                }
            }
        }
    };
    let mut i = 1;
    // ( option [value] [, …] ): any option is accepted, as there is nothing to tune; only
    // ANALYZE matters, for the column lists.
    let mut analyze = !vacuum;
    for option in list(&mut i)? {
        if is_analyze(option[0]) {
            let off = ["false", "off", "0"];
            analyze = !option.get(1).is_some_and(|v| match &v.token {
                Token::Word(w) => off.iter().any(|o| w.value.eq_ignore_ascii_case(o)),
                Token::Number(n, _) => n == "0",
                Token::SingleQuotedString(s) => off.iter().any(|o| s.eq_ignore_ascii_case(o)),
                _ => false,
            });
        }
    }
    let flags: &[&str] =
        if vacuum { &["full", "freeze", "verbose", "analyze", "analyse"] } else { &["verbose"] };
    while let Some(t) = words.get(i).filter(|t| flags.iter().any(|f| is_word(t, f))) {
        analyze |= is_analyze(t);
        i += 1;
    }
    let mut tables = Vec::new();
    // Table names, separated by commas (none: every table).
    while i < words.len() || words[i - 1].token == Token::Comma {
        let name = dotted_name(sql, words, &mut i)?;
        let mut columns = Vec::new();
        for item in list(&mut i)? {
            match item.as_slice() {
                [t] => columns.push(word_ident(t).ok_or_else(|| error(Some(t)))?),
                [_, t, ..] => return Err(error(Some(t))),
                [] => return Err(error(None)),
            }
        }
        tables.push((name, columns));
        match words.get(i) {
            None => break,
            Some(t) if t.token == Token::Comma => i += 1,
            other => return Err(error(other)),
        }
    }
    Ok(Parsed::Maintenance { vacuum, analyze, tables })
}

/// Parses `sql` into statements (possibly none, for an empty string or only `;`).
pub fn parse(sql: &str) -> Result<Vec<Parsed>> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(Error::ProgramLimitExceeded {
            message: format!("statement text of {} bytes is too long", sql.len()),
        });
    }
    if let Some(q) = crate::metadata::recognize(sql) {
        return Ok(vec![Parsed::Metadata(q)]);
    }
    let sql = crate::metadata::equivalent(sql).unwrap_or(sql);
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| convert_error(sql, ParserError::TokenizerError(e.to_string())))?;
    check_operator_count(&tokens)?;
    let tokens = expand_table_statements(tokens);
    let tokens = drop_index_concurrently(tokens);
    let tokens = key_lock_strengths(tokens);
    let tokens = create_user_as_role(tokens);
    let tokens = encrypted_password(tokens);
    let tokens = identity_sequence_name(tokens)?;
    let tokens = order_identity_options(tokens);
    refuse_unknown_statements(&tokens)?;
    // Statements sqlparser does not know in PostgreSQL's form.
    let ours = ["checkpoint", "copy", "vacuum", "analyze", "analyse", "sequence", "constraints"];
    if !tokens.iter().any(|t| ours.iter().any(|w| is_word(t, w))) {
        return parse_tokens(sql, tokens);
    }
    // Split at top-level semicolons (the tokenizer has already consumed strings, comments and
    // dollar quotes) and recognize a statement that is exactly `CHECKPOINT`, or starts with
    // COPY, VACUUM or ANALYZE.
    let mut out = Vec::new();
    let mut chunk = Vec::new();
    let mut rest = tokens.into_iter();
    loop {
        let next = rest.next();
        let end = matches!(next.as_ref().map(|t| &t.token), None | Some(Token::SemiColon));
        if !end {
            chunk.extend(next);
            continue;
        }
        let words: Vec<&TokenWithSpan> =
            chunk.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
        match words.as_slice() {
            [] => {}
            [w] if is_word(w, "checkpoint") => out.push(Parsed::Checkpoint),
            [w, ..] if is_word(w, "copy") => {
                out.push(Parsed::Copy(crate::copy::parse_copy(sql, &chunk)?))
            }
            [w, ..] if ["vacuum", "analyze", "analyse"].iter().any(|v| is_word(w, v)) => {
                out.push(parse_maintenance(sql, &words)?)
            }
            [a, s, ..] if is_word(a, "alter") && is_word(s, "sequence") => {
                out.push(parse_alter_sequence(sql, &words)?)
            }
            [s, c, ..] if is_word(s, "set") && is_word(c, "constraints") => {
                out.push(parse_set_constraints(sql, &words)?)
            }
            _ => out.extend(parse_tokens(sql, std::mem::take(&mut chunk))?),
        }
        chunk.clear();
        if next.is_none() {
            return Ok(out);
        }
    }
}

/// `SET CONSTRAINTS` then `ALL` or names separated by commas, then `DEFERRED` or `IMMEDIATE`
/// (`words`: the statement's tokens without whitespace).
fn parse_set_constraints(sql: &str, words: &[&TokenWithSpan]) -> Result<Parsed> {
    let mut i = 2;
    let names = if words.get(i).is_some_and(|t| is_word(t, "all")) {
        i += 1;
        None
    } else {
        let mut names = vec![dotted_name(sql, words, &mut i)?];
        while words.get(i).is_some_and(|t| t.token == Token::Comma) {
            i += 1;
            names.push(dotted_name(sql, words, &mut i)?);
        }
        Some(names)
    };
    let deferred = match words.get(i) {
        Some(t) if is_word(t, "deferred") => true,
        Some(t) if is_word(t, "immediate") => false,
        other => return Err(syntax_error_at(sql, other)),
    };
    if words.len() > i + 1 {
        return Err(syntax_error_at(sql, words.get(i + 1)));
    }
    Ok(Parsed::SetConstraints { names, deferred })
}

/// `ALTER SEQUENCE [IF EXISTS] name` then `OWNED BY table.column | NONE`, `OWNER TO role` or
/// `RESTART [[WITH] n]` (`words`: the statement's tokens without whitespace). Its other
/// forms (INCREMENT, MINVALUE, RENAME, …) are 0A000.
fn parse_alter_sequence(sql: &str, words: &[&TokenWithSpan]) -> Result<Parsed> {
    let error = |at: Option<&&TokenWithSpan>| syntax_error_at(sql, at);
    let mut i = 2;
    let if_exists = words.len() > 4 && is_word(words[2], "if") && is_word(words[3], "exists");
    if if_exists {
        i = 4;
    }
    let name = dotted_name(sql, words, &mut i)?;
    let action = match words.get(i) {
        Some(w) if is_word(w, "owned") => {
            if !words.get(i + 1).is_some_and(|t| is_word(t, "by")) {
                return Err(error(words.get(i + 1)));
            }
            i += 2;
            if words.get(i).is_some_and(|t| is_word(t, "none")) {
                i += 1;
                SequenceAction::OwnedBy(None)
            } else {
                SequenceAction::OwnedBy(Some(dotted_name(sql, words, &mut i)?))
            }
        }
        Some(w) if is_word(w, "owner") => {
            if !words.get(i + 1).is_some_and(|t| is_word(t, "to")) {
                return Err(error(words.get(i + 1)));
            }
            let role = words.get(i + 2).and_then(|t| word_ident(t));
            let role = role.ok_or_else(|| error(words.get(i + 2)))?;
            i += 3;
            SequenceAction::OwnerTo(role)
        }
        Some(w) if is_word(w, "restart") => {
            i += 1;
            if words.get(i).is_some_and(|t| is_word(t, "with")) {
                i += 1;
            }
            let negative = words.get(i).is_some_and(|t| t.token == Token::Minus);
            if negative {
                i += 1;
            }
            match words.get(i).map(|t| &t.token) {
                Some(Token::Number(n, _)) => {
                    let n: i64 = n.parse().map_err(|_| error(words.get(i)))?;
                    i += 1;
                    SequenceAction::Restart(Some(if negative { -n } else { n }))
                }
                _ if negative => return Err(error(words.get(i))),
                _ => SequenceAction::Restart(None),
            }
        }
        Some(w) => {
            let what = match &w.token {
                Token::Word(word) => word.value.to_uppercase(),
                other => other.to_string(),
            };
            return Err(Error::unsupported(format!("ALTER SEQUENCE … {what}")));
        }
        None => return Err(error(None)),
    };
    if i < words.len() {
        return Err(Error::unsupported("ALTER SEQUENCE with several actions"));
    }
    Ok(Parsed::AlterSequence { if_exists, name, action })
}

/// PostgreSQL's `TABLE name` statement is `SELECT * FROM name` (sqlparser does not know it):
/// a `TABLE` keyword that starts a statement is replaced by those three tokens, with its span,
/// so positions in errors still point into the original text.
fn expand_table_statements(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut at_start = true;
    for t in tokens {
        match &t.token {
            Token::Whitespace(_) => {}
            Token::SemiColon => at_start = true,
            Token::Word(w)
                if at_start && w.quote_style.is_none() && w.keyword == Keyword::TABLE =>
            {
                let span = t.span;
                let space = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
                for token in [
                    Token::make_keyword("SELECT"),
                    space.clone(),
                    Token::Mul,
                    space,
                    Token::make_keyword("FROM"),
                ] {
                    out.push(TokenWithSpan { token, span });
                }
                at_start = false;
                continue;
            }
            _ => at_start = false,
        }
        out.push(t);
    }
    out
}

/// `DROP INDEX CONCURRENTLY …`, which sqlparser cannot parse, is a plain `DROP INDEX …`: in
/// Aspen no drop blocks the table's readers and writers (a schema change only makes the
/// concurrent writers that saw the old schema retry). PostgreSQL also refuses it inside a
/// transaction block; Aspen does not.
fn drop_index_concurrently(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(t, "concurrently")) {
        return tokens;
    }
    let significant = significant_positions(&tokens);
    let mut drop = HashSet::new();
    for (n, w) in significant.windows(3).enumerate() {
        let starts = n == 0 || tokens[significant[n - 1]].token == Token::SemiColon;
        let [a, b, c] = [w[0], w[1], w[2]].map(|i| &tokens[i]);
        if starts && is_word(a, "drop") && is_word(b, "index") && is_word(c, "concurrently") {
            drop.insert(w[2]);
        }
    }
    without(tokens, &drop)
}

/// The positions of the tokens that are not whitespace.
fn significant_positions(tokens: &[TokenWithSpan]) -> Vec<usize> {
    (0..tokens.len()).filter(|i| !matches!(tokens[*i].token, Token::Whitespace(_))).collect()
}

/// `tokens` without the ones at the positions in `drop`.
fn without(tokens: Vec<TokenWithSpan>, drop: &HashSet<usize>) -> Vec<TokenWithSpan> {
    tokens.into_iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, t)| t).collect()
}

/// `FOR NO KEY UPDATE` and `FOR KEY SHARE`, which sqlparser cannot parse, lock as `FOR UPDATE`
/// and `FOR SHARE`: stronger than PostgreSQL's (they also conflict with writers that leave the
/// key alone), which under Aspen's optimistic engine can only mean a retry (40001), never a
/// wrong answer.
fn key_lock_strengths(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(t, "key")) {
        return tokens;
    }
    let significant = significant_positions(&tokens);
    let mut drop = HashSet::new();
    for w in significant.windows(4) {
        let [a, b, c, d] = [w[0], w[1], w[2], w[3]].map(|i| &tokens[i]);
        if is_word(a, "for") && is_word(b, "no") && is_word(c, "key") && is_word(d, "update") {
            drop.extend([w[1], w[2]]);
        }
    }
    for w in significant.windows(3) {
        let [a, b, c] = [w[0], w[1], w[2]].map(|i| &tokens[i]);
        if is_word(a, "for") && is_word(b, "key") && is_word(c, "share") {
            drop.insert(w[1]);
        }
    }
    without(tokens, &drop)
}

/// pg_dump's `ALTER TABLE t ALTER COLUMN c ADD GENERATED … AS IDENTITY (SEQUENCE NAME s …)`:
/// sqlparser does not know the SEQUENCE NAME option. When `s` is the name Aspen gives the
/// identity sequence anyway (`t_c_seq`, PostgreSQL's default too) the option is dropped;
/// another name is 0A000.
fn identity_sequence_name(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>> {
    if !tokens.iter().any(|t| is_word(t, "identity")) {
        return Ok(tokens);
    }
    let significant = significant_positions(&tokens);
    let at = |k: usize| significant.get(k).map(|&i| &tokens[i]);
    let word = |i: usize| match &at(i)?.token {
        Token::Word(w) if w.quote_style.is_some() => Some(w.value.clone()),
        Token::Word(w) => Some(w.value.to_lowercase()),
        _ => None,
    };
    // A dotted name at `k` (below `limit`), moving `k` past it: its last part.
    let dotted = |k: &mut usize, limit: usize| {
        let mut last = None;
        while let Some(w) = word(*k).filter(|_| *k < limit) {
            last = Some(w);
            *k += 1;
            if at(*k).is_some_and(|t| t.token == Token::Period) {
                *k += 1;
            } else {
                break;
            }
        }
        last
    };
    let mut drop = HashSet::new();
    for n in 0..significant.len() {
        if !(at(n).is_some_and(|t| is_word(t, "sequence"))
            && at(n + 1).is_some_and(|t| is_word(t, "name")))
        {
            continue;
        }
        let mut end = n + 2;
        let last = dotted(&mut end, significant.len());
        // The statement's table and column: ALTER TABLE [ONLY] [IF EXISTS] [schema.]t ALTER
        // [COLUMN] c.
        let start = (0..n)
            .rev()
            .find(|&k| k == 0 || tokens[significant[k - 1]].token == Token::SemiColon)
            .unwrap_or(0);
        let mut k = start;
        let expect = |w: &str, k: &mut usize| {
            let ok = at(*k).is_some_and(|t| is_word(t, w));
            if ok {
                *k += 1;
            }
            ok
        };
        let alter_table = expect("alter", &mut k) && expect("table", &mut k);
        expect("only", &mut k);
        if expect("if", &mut k) {
            expect("exists", &mut k);
        }
        let table = dotted(&mut k, n);
        let column = if expect("alter", &mut k) {
            expect("column", &mut k);
            word(k)
        } else {
            None
        };
        if !alter_table {
            // Not pg_dump's ALTER TABLE: sqlparser decides (a column `sequence` aliased `name`).
            continue;
        }
        let default = table.zip(column).map(|(t, c)| format!("{t}_{c}_seq"));
        if last.is_none() || last != default {
            return Err(Error::unsupported("SEQUENCE NAME of an identity column's sequence"));
        }
        drop.extend(significant[n..end].iter().copied());
    }
    Ok(without(tokens, &drop))
}

/// `ENCRYPTED PASSWORD 'x'` is `PASSWORD 'x'` (every password is kept as a verifier), which
/// sqlparser does not know.
fn encrypted_password(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(t, "encrypted")) {
        return tokens;
    }
    let significant = significant_positions(&tokens);
    let words: Vec<&TokenWithSpan> = significant.iter().map(|&i| &tokens[i]).collect();
    let mut drop = HashSet::new();
    for (n, w) in significant.windows(2).enumerate() {
        if is_word(&tokens[w[0]], "encrypted")
            && is_word(&tokens[w[1]], "password")
            && in_role_statement(&words, n)
        {
            drop.insert(w[0]);
        }
    }
    without(tokens, &drop)
}

/// Whether the significant token at `n` is in a CREATE or ALTER of a ROLE, USER or GROUP (a
/// column may be named `encrypted`, and aliased `password`).
fn in_role_statement(words: &[&TokenWithSpan], n: usize) -> bool {
    let start = (0..=n).rev().find(|&k| k == 0 || words[k - 1].token == Token::SemiColon);
    start.is_some_and(|k| {
        ["create", "alter"].iter().any(|w| is_word(words[k], w))
            && words
                .get(k + 1)
                .is_some_and(|t| ["role", "user", "group"].iter().any(|w| is_word(t, w)))
    })
}

/// PostgreSQL's `CREATE USER name …` is `CREATE ROLE name LOGIN …` (sqlparser reads `CREATE
/// USER` as Snowflake's): `USER` becomes `ROLE` (keeping its span), and `LOGIN` is added after
/// the name (and its `WITH`) unless the statement says LOGIN or NOLOGIN itself.
fn create_user_as_role(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(t, "user")) {
        return tokens;
    }
    let significant = significant_positions(&tokens);
    let mut rewrites = Vec::new();
    for (n, w) in significant.windows(3).enumerate() {
        let starts = n == 0 || tokens[significant[n - 1]].token == Token::SemiColon;
        if !(starts && is_word(&tokens[w[0]], "create") && is_word(&tokens[w[1]], "user")) {
            continue;
        }
        // The statement's remaining significant tokens, after `CREATE USER`.
        let rest: Vec<usize> = significant[n + 2..]
            .iter()
            .copied()
            .take_while(|&i| tokens[i].token != Token::SemiColon)
            .collect();
        let says_login = rest.iter().any(|&i| is_word(&tokens[i], "login"))
            || rest.iter().any(|&i| is_word(&tokens[i], "nologin"));
        // After `[IF NOT EXISTS] name [WITH]`.
        let mut at = 0;
        if rest.len() >= 3 && is_word(&tokens[rest[0]], "if") && is_word(&tokens[rest[1]], "not") {
            at = 3;
        }
        at += 1;
        if rest.get(at).is_some_and(|&i| is_word(&tokens[i], "with")) {
            at += 1;
        }
        let after = rest.get(at - 1).copied().filter(|_| !says_login);
        rewrites.push((w[1], after));
    }
    if rewrites.is_empty() {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len() + 2 * rewrites.len());
    for (i, mut t) in tokens.into_iter().enumerate() {
        let rewrite = rewrites.iter().find(|(user, _)| *user == i);
        if rewrite.is_some() {
            t.token = Token::make_keyword("ROLE");
        }
        let span = t.span;
        out.push(t);
        if rewrites.iter().any(|(_, after)| *after == Some(i)) {
            let space = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
            out.push(TokenWithSpan { token: space, span });
            out.push(TokenWithSpan { token: Token::make_keyword("LOGIN"), span });
        }
    }
    out
}

/// Statements and clauses of PostgreSQL's that sqlparser cannot parse (it would call them
/// syntax errors): `0A000` naming them instead.
fn refuse_unknown_statements(tokens: &[TokenWithSpan]) -> Result<()> {
    // A window frame's EXCLUDE clause (`… AND CURRENT ROW EXCLUDE TIES`).
    let significant: Vec<&TokenWithSpan> =
        tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    for w in significant.windows(3) {
        if ["preceding", "following", "row"].iter().any(|x| is_word(w[0], x))
            && is_word(w[1], "exclude")
            && ["current", "group", "ties", "no"].iter().any(|x| is_word(w[2], x))
        {
            return Err(Error::unsupported("window frame EXCLUDE"));
        }
        if is_word(w[0], "between") && ["symmetric", "asymmetric"].iter().any(|x| is_word(w[1], x))
        {
            return Err(Error::unsupported("BETWEEN SYMMETRIC / ASYMMETRIC"));
        }
    }
    for (n, w) in significant.windows(2).enumerate() {
        if is_word(w[0], "unencrypted")
            && is_word(w[1], "password")
            && in_role_statement(&significant, n)
        {
            return Err(Error::unsupported_msg("UNENCRYPTED PASSWORD is no longer supported"));
        }
    }
    // PostgreSQL 15's column list for a foreign key's `ON DELETE SET NULL (b)`.
    for w in significant.windows(4) {
        if is_word(w[0], "delete")
            && is_word(w[1], "set")
            && (is_word(w[2], "null") || is_word(w[2], "default"))
            && w[3].token == Token::LParen
        {
            return Err(Error::unsupported("ON DELETE SET NULL / SET DEFAULT of a column list"));
        }
    }
    Ok(())
}

/// PostgreSQL takes the options of `AS IDENTITY ( … )` and of `CREATE SEQUENCE` in any order;
/// sqlparser only in the order INCREMENT, MINVALUE, MAXVALUE, START, CACHE, CYCLE (then OWNED
/// BY). The options in each such list are put in that order (each keeping its tokens and their
/// spans). A list with anything else in it is left alone, for sqlparser to refuse.
fn order_identity_options(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(t, "identity") || is_word(t, "sequence")) {
        return tokens;
    }
    let significant = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_));
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut rest = tokens.into_iter().peekable();
    while let Some(t) = rest.next() {
        let identity = is_word(&t, "identity");
        let previous = out.iter().rev().find(|t| significant(t));
        let sequence = is_word(&t, "sequence")
            && previous
                .is_some_and(|p| ["create", "temp", "temporary"].iter().any(|w| is_word(p, w)));
        out.push(t);
        if identity {
            while rest.peek().is_some_and(|t| !significant(t)) {
                out.extend(rest.next());
            }
            if rest.peek().is_none_or(|t| t.token != Token::LParen) {
                continue;
            }
            out.extend(rest.next());
            // The list's significant tokens up to its `)`.
            let mut inner = Vec::new();
            let mut closed = None;
            for t in rest.by_ref() {
                match t.token {
                    Token::Whitespace(_) => {}
                    Token::RParen => {
                        closed = Some(t);
                        break;
                    }
                    _ => inner.push(t),
                }
            }
            out.extend(sorted_options(inner));
            out.extend(closed);
        } else if sequence {
            // `[IF NOT EXISTS] name [AS type]`, then the options up to the end of the statement.
            let mut all = Vec::new();
            while let Some(t) = rest.next_if(|t| t.token != Token::SemiColon) {
                if significant(&t) {
                    all.push(t);
                }
            }
            let word = |k: usize, w: &str| all.get(k).is_some_and(|t| is_word(t, w));
            let mut k = if word(0, "if") && word(1, "not") && word(2, "exists") { 3 } else { 0 };
            k += 1;
            while all.get(k).is_some_and(|t| t.token == Token::Period) {
                k += 2;
            }
            if word(k, "as") {
                k += 2;
            }
            let options = all.split_off(k.min(all.len()));
            let space = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
            for t in all {
                let span = t.span;
                out.push(TokenWithSpan { token: space.clone(), span });
                out.push(t);
            }
            out.push(TokenWithSpan { token: space, span: out.last().expect("pushed").span });
            out.extend(sorted_options(options));
        }
    }
    out
}

/// Sequence options (significant tokens) in sqlparser's order, with a space after each token.
fn sorted_options(inner: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let rank = |t: &TokenWithSpan| {
        ["increment", "minvalue", "maxvalue", "start", "cache", "cycle", "owned"]
            .iter()
            .position(|w| is_word(t, w))
    };
    // Split into options: each starts at its keyword (`NO` belongs to the one after it).
    let mut options: Vec<(usize, Vec<TokenWithSpan>)> = Vec::new();
    let mut understood = true;
    let mut pending_no = None;
    for t in inner {
        if is_word(&t, "no") && pending_no.is_none() {
            pending_no = Some(t);
        } else if let Some(r) = rank(&t) {
            let mut option: Vec<TokenWithSpan> = pending_no.take().into_iter().collect();
            option.push(t);
            options.push((r, option));
        } else if let (None, Some((_, option))) = (&pending_no, options.last_mut()) {
            option.push(t);
        } else {
            understood = false;
            options.push((usize::MAX, pending_no.take().into_iter().chain([t]).collect()));
        }
    }
    if understood {
        options.sort_by_key(|(r, _)| *r);
    }
    let space = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
    let mut out = Vec::new();
    for (_, option) in options {
        for t in option {
            let span = t.span;
            out.push(t);
            out.push(TokenWithSpan { token: space.clone(), span });
        }
    }
    out.extend(pending_no);
    out
}

fn parse_tokens(sql: &str, tokens: Vec<TokenWithSpan>) -> Result<Vec<Parsed>> {
    let dialect = PostgreSqlDialect {};
    let mut parser =
        Parser::new(&dialect).with_recursion_limit(MAX_NESTING).with_tokens_with_locations(tokens);
    let stmts = parser.parse_statements().map_err(|e| convert_error(sql, e))?;
    Ok(stmts.into_iter().map(|s| Parsed::Sql(Box::new(s))).collect())
}

/// Operator chains (`1 + 1 + … + 1`) parse without recursion but build trees as deep as the
/// chain is long, which every later pass walks recursively. Bound them per statement, as
/// PostgreSQL's stack depth limit does.
fn check_operator_count(tokens: &[TokenWithSpan]) -> Result<()> {
    let mut count = 0usize;
    for t in tokens {
        match &t.token {
            Token::SemiColon => count = 0,
            Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::Mod
            | Token::StringConcat
            | Token::Eq
            | Token::Neq
            | Token::Lt
            | Token::Gt
            | Token::LtEq
            | Token::GtEq
            | Token::DoubleColon => count += 1,
            Token::Word(w) if matches!(w.keyword, Keyword::AND | Keyword::OR | Keyword::NOT) => {
                count += 1
            }
            _ => {}
        }
        if count > MAX_OPERATORS {
            return Err(Error::StatementTooComplex {
                message: "stack depth limit exceeded".into(),
            });
        }
    }
    Ok(())
}

fn convert_error(sql: &str, e: ParserError) -> Error {
    match e {
        ParserError::RecursionLimitExceeded => {
            Error::StatementTooComplex { message: "stack depth limit exceeded".into() }
        }
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => {
            let (message, span) = split_location(sql, &m);
            Error::Syntax { message, span }
        }
    }
}

/// sqlparser appends " at Line: L, Column: C" to messages; turn that into a span and a message
/// in PostgreSQL's style (`syntax error at or near "x"`).
fn split_location(sql: &str, m: &str) -> (String, Option<Span>) {
    let Some(at) = m.rfind(" at Line: ") else {
        return (format!("syntax error: {m}"), None);
    };
    let loc = &m[at + " at Line: ".len()..];
    let mut parts = loc.split(", Column: ");
    let line = parts.next().and_then(|l| l.trim().parse::<u64>().ok());
    let column = parts.next().and_then(|c| c.trim().parse::<u64>().ok());
    let span = match (line, column) {
        (Some(line), Some(column)) => {
            offset_of(sql, Location { line, column }).map(|start| Span { start })
        }
        _ => None,
    };
    let near = span.and_then(|s| token_at(sql, s.start));
    let message = match near {
        Some(tok) if !tok.is_empty() => format!("syntax error at or near \"{tok}\""),
        _ if span.map(|s| s.start >= sql.trim_end().len()).unwrap_or(false) => {
            "syntax error at end of input".to_string()
        }
        _ => format!("syntax error: {}", &m[..at]),
    };
    (message, span)
}

fn token_at(sql: &str, start: usize) -> Option<String> {
    let rest = sql.get(start..)?;
    let tok: String = if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
    } else {
        rest.chars().take(1).collect()
    };
    Some(tok)
}

/// Converts a 1-based (line, column) location into a byte offset into `sql`.
pub fn offset_of(sql: &str, loc: Location) -> Option<usize> {
    if loc.line == 0 {
        return None;
    }
    let mut line = 1;
    let mut line_start = 0;
    for (i, c) in sql.char_indices() {
        if line == loc.line {
            break;
        }
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    if line != loc.line {
        return None;
    }
    let col = loc.column.saturating_sub(1) as usize;
    let offset = sql[line_start..].char_indices().nth(col).map(|(i, _)| line_start + i);
    Some(offset.unwrap_or(sql.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alter_sequence_forms_and_truncated_input() {
        let action = |sql: &str| match &parse(sql).unwrap()[..] {
            [Parsed::AlterSequence { action, if_exists, .. }] => (action.clone(), *if_exists),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            action("ALTER SEQUENCE s RESTART WITH -5"),
            (SequenceAction::Restart(Some(-5)), false)
        );
        assert_eq!(
            action("alter sequence if exists public.s restart"),
            (SequenceAction::Restart(None), true)
        );
        assert_eq!(
            action("ALTER SEQUENCE s OWNED BY NONE"),
            (SequenceAction::OwnedBy(None), false)
        );
        assert!(matches!(action("ALTER SEQUENCE s OWNED BY public.t.c").0,
            SequenceAction::OwnedBy(Some(n)) if n.0.len() == 3));
        for sql in [
            "ALTER SEQUENCE",
            "ALTER SEQUENCE s",
            "ALTER SEQUENCE s OWNED",
            "ALTER SEQUENCE s OWNED BY",
            "ALTER SEQUENCE s OWNER TO",
            "ALTER SEQUENCE s RESTART WITH -",
            "ALTER SEQUENCE s.",
            "ALTER TABLE t ALTER COLUMN c ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME",
            "ALTER TABLE t ALTER COLUMN c ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME x.",
            "CREATE TABLE t (c int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME t_c_seq))",
        ] {
            assert!(parse(sql).is_err(), "{sql}");
        }
        assert!(parse(
            "ALTER TABLE ONLY public.t ALTER COLUMN c ADD GENERATED BY DEFAULT AS IDENTITY \
             (SEQUENCE NAME public.t_c_seq START WITH 1)"
        )
        .is_ok());
        // Only in role statements: elsewhere these words are a column and its alias.
        for sql in ["SELECT encrypted password FROM t", "SELECT unencrypted password FROM t"] {
            let [Parsed::Sql(s)] = &parse(sql).unwrap()[..] else { panic!("{sql}") };
            assert!(s.to_string().to_lowercase().contains("crypted as password"), "{s}");
        }
        assert!(parse("ALTER ROLE r UNENCRYPTED PASSWORD 'x'").is_err());
        assert!(parse("SELECT sequence name, identity FROM t").is_ok());
    }

    #[test]
    fn create_user_is_create_role_with_login() {
        let login = |sql: &str| match &parse(sql).unwrap()[..] {
            [Parsed::Sql(s)] => match &**s {
                Statement::CreateRole(r) => (r.names[0].to_string(), r.login, r.password.is_some()),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(login("CREATE USER bob"), ("bob".into(), Some(true), false));
        assert_eq!(login("create user bob with password 'x'"), ("bob".into(), Some(true), true));
        assert_eq!(login("CREATE USER \"Bob\" PASSWORD 'x'"), ("\"Bob\"".into(), Some(true), true));
        assert_eq!(login("CREATE USER bob NOLOGIN"), ("bob".into(), Some(false), false));
        assert_eq!(login("CREATE USER bob WITH LOGIN"), ("bob".into(), Some(true), false));
        assert_eq!(login("CREATE ROLE bob"), ("bob".into(), None, false));
        // A column named user is left alone.
        assert!(matches!(&parse("SELECT 1 AS user; CREATE USER a").unwrap()[..], [_, _]));
    }

    #[test]
    fn vacuum_and_analyze() {
        let tables = |sql: &str| match parse(sql).unwrap().as_slice() {
            [Parsed::Maintenance { vacuum, tables, .. }] => {
                (*vacuum, tables.iter().map(|(t, _)| t.to_string()).collect::<Vec<_>>())
            }
            other => panic!("{sql}: {other:?}"),
        };
        let analyze_and_columns = |sql: &str| match parse(sql).unwrap().as_slice() {
            [Parsed::Maintenance { analyze, tables, .. }] => (
                *analyze,
                tables
                    .iter()
                    .map(|(_, c)| c.iter().map(|c| c.value.clone()).collect::<Vec<_>>())
                    .collect::<Vec<_>>(),
            ),
            other => panic!("{sql}: {other:?}"),
        };
        assert_eq!(analyze_and_columns("vacuum t (a)"), (false, vec![vec!["a".to_string()]]));
        assert_eq!(
            analyze_and_columns("VACUUM (VERBOSE, ANALYZE) a, b (x, \"Y\")"),
            (true, vec![vec![], vec!["x".to_string(), "Y".to_string()]])
        );
        assert!(!analyze_and_columns("vacuum (analyze off) t").0);
        assert!(analyze_and_columns("vacuum (analyze 'on') t").0);
        assert!(analyze_and_columns("vacuum full analyze t").0);
        assert!(analyze_and_columns("analyze t (a)").0);
        assert_eq!(
            tables("vacuum analyze pgbench_branches"),
            (true, vec!["pgbench_branches".into()])
        );
        assert_eq!(
            tables("VACUUM (VERBOSE, ANALYZE) a, public.b (x, y)"),
            (true, vec!["a".into(), "public.b".into()])
        );
        assert_eq!(tables("ANALYZE"), (false, vec![]));
        assert_eq!(tables("analyse verbose \"T\""), (false, vec!["\"T\"".into()]));
        for bad in [
            "VACUUM (FULL",
            "VACUUM t (a",
            "VACUUM t u",
            "ANALYZE t,",
            "VACUUM 1",
            "ANALYZE t ()",
            "ANALYZE t (a b)",
            "ANALYZE t (a,)",
            "VACUUM (,) t",
        ] {
            assert_eq!(parse(bad).unwrap_err().sqlstate(), "42601", "{bad}");
        }
    }

    #[test]
    fn syntax_error_has_position_and_token() {
        let err = parse("SELECT * FRM t").unwrap_err();
        assert_eq!(err.sqlstate(), "42601");
        assert!(err.to_string().contains("syntax error"), "{err}");
        assert!(err.position("SELECT * FRM t").is_some());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let sql = format!("SELECT {}1{}", "(".repeat(10_000), ")".repeat(10_000));
        let err = parse(&sql).unwrap_err();
        assert_eq!(err.sqlstate(), "54001");
    }

    #[test]
    fn long_operator_chains_are_an_error_not_a_crash() {
        let sql = format!("SELECT 1{}", " + 1".repeat(100_000));
        assert_eq!(parse(&sql).unwrap_err().sqlstate(), "54001");
        let ok = format!("SELECT 1{}", " + 1".repeat(1_000));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn empty_input_has_no_statements() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse(" ; ;").unwrap().is_empty());
    }
}
