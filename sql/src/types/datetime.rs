//! `date` and `timestamp` (without time zone): ISO text input and output, and the PostgreSQL
//! epoch (2000-01-01) used by the binary format.
//!
//! Accepted input (after trimming whitespace): `YYYY-MM-DD`, optionally followed by `T` or
//! spaces and `HH:MM[:SS[.fraction]]`, optionally followed by a time zone (`Z`, `UTC`, `GMT`,
//! `±HH`, `±HHMM`, `±HH:MM`, `±HH:MM:SS`) that is ignored, as PostgreSQL ignores it for
//! `timestamp without time zone`. Fractions beyond microseconds round to the nearest
//! microsecond; `24:00:00` is the next midnight. A trailing ` BC` is honoured.

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, Timelike};

use crate::error::{Error, Result};

/// Days from 0001-01-01 (CE day 1) to 2000-01-01, the PostgreSQL epoch.
const PG_EPOCH_DAYS_FROM_CE: i32 = 730_120;

/// Microseconds from the Unix epoch to the PostgreSQL epoch.
const PG_EPOCH_UNIX_MICROS: i64 = 946_684_800_000_000;

/// Days since 2000-01-01 (the binary `date` format).
pub(crate) fn date_to_pg_days(d: NaiveDate) -> i32 {
    d.num_days_from_ce() - PG_EPOCH_DAYS_FROM_CE
}

/// Inverse of [`date_to_pg_days`]; `None` outside chrono's range.
pub(crate) fn pg_days_to_date(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days.checked_add(PG_EPOCH_DAYS_FROM_CE)?)
}

/// Microseconds since 2000-01-01 00:00:00 (the binary `timestamp` format).
pub(crate) fn timestamp_to_pg_micros(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros() - PG_EPOCH_UNIX_MICROS
}

/// Inverse of [`timestamp_to_pg_micros`]; `None` outside chrono's range.
pub(crate) fn pg_micros_to_timestamp(us: i64) -> Option<NaiveDateTime> {
    Some(
        chrono::DateTime::from_timestamp_micros(us.checked_add(PG_EPOCH_UNIX_MICROS)?)?.naive_utc(),
    )
}

/// Which type is being parsed; decides the error messages and whether a time is allowed.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Date,
    Timestamp,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Date => "date",
            Kind::Timestamp => "timestamp",
        }
    }
}

/// A tiny cursor over ASCII input.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Reads 1..=max digits; returns (value, count).
    fn digits(&mut self, max: usize) -> Option<(i64, usize)> {
        let start = self.i;
        let mut v = 0i64;
        while self.i - start < max {
            match self.peek() {
                Some(c @ b'0'..=b'9') => {
                    v = v * 10 + (c - b'0') as i64;
                    self.i += 1;
                }
                _ => break,
            }
        }
        (self.i > start).then_some((v, self.i - start))
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn at_end(&self) -> bool {
        self.i == self.b.len()
    }
}

/// Parses a date or timestamp; a date input ignores any time part, as PostgreSQL does.
pub(crate) fn parse_datetime(input: &str, kind: Kind) -> Result<NaiveDateTime> {
    let invalid = || Error::InvalidDatetimeFormat {
        message: format!("invalid input syntax for type {}: \"{input}\"", kind.name()),
    };
    let range = || Error::DatetimeFieldOverflow {
        message: format!("date/time field value out of range: \"{input}\""),
    };
    let trimmed = input.trim();
    let (s, bc) = match trimmed.len().checked_sub(3) {
        Some(n) if trimmed.is_char_boundary(n) && trimmed[n..].eq_ignore_ascii_case(" BC") => {
            (trimmed[..n].trim_end(), true)
        }
        _ => (trimmed, false),
    };
    let mut c = Cursor { b: s.as_bytes(), i: 0 };
    let (year, _) = c.digits(9).ok_or_else(invalid)?;
    if !c.eat(b'-') {
        return Err(invalid());
    }
    let (month, _) = c.digits(2).ok_or_else(invalid)?;
    if !c.eat(b'-') {
        return Err(invalid());
    }
    let (day, _) = c.digits(2).ok_or_else(invalid)?;
    let mut micros_of_day = 0i64;
    if !c.at_end() {
        if !c.eat(b'T') && !c.eat(b't') {
            if !matches!(c.peek(), Some(b' ' | b'\t')) {
                return Err(invalid());
            }
            c.skip_spaces();
        }
        if !c.at_end() && c.peek().is_some_and(|x| x.is_ascii_digit()) {
            let (h, _) = c.digits(2).ok_or_else(invalid)?;
            if !c.eat(b':') {
                return Err(invalid());
            }
            let (m, _) = c.digits(2).ok_or_else(invalid)?;
            let mut sec = 0i64;
            let mut frac_us = 0i64;
            if c.eat(b':') {
                sec = c.digits(2).ok_or_else(invalid)?.0;
                if c.eat(b'.') {
                    let start = c.i;
                    while c.peek().is_some_and(|d| d.is_ascii_digit()) {
                        c.i += 1;
                    }
                    if c.i == start {
                        return Err(invalid());
                    }
                    let digits = &c.b[start..c.i];
                    frac_us = if digits.len() <= 6 {
                        let v = digits.iter().fold(0i64, |acc, d| acc * 10 + (d - b'0') as i64);
                        v * 10i64.pow(6 - digits.len() as u32)
                    } else {
                        // As PostgreSQL: read the fraction as a double, then rint(frac * 1e6).
                        let digits = std::str::from_utf8(digits).expect("ASCII digits");
                        let frac: f64 = format!("0.{digits}").parse().map_err(|_| invalid())?;
                        (frac * 1_000_000.0).round_ties_even() as i64
                    };
                }
            }
            if h > 24 || m > 59 || sec > 60 || (h == 24 && (m > 0 || sec > 0 || frac_us > 0)) {
                return Err(range());
            }
            micros_of_day = ((h * 60 + m) * 60 + sec) * 1_000_000 + frac_us;
            c.skip_spaces();
        }
        parse_zone(&mut c).ok_or_else(invalid)?;
    }
    if !c.at_end() {
        return Err(invalid());
    }
    if year == 0 && !bc {
        return Err(range());
    }
    let year = if bc { 1 - year } else { year };
    let date = i32::try_from(year)
        .ok()
        .and_then(|y| NaiveDate::from_ymd_opt(y, month as u32, day as u32))
        .ok_or_else(range)?;
    let t = date.and_time(NaiveTime::MIN);
    t.checked_add_signed(TimeDelta::microseconds(micros_of_day)).ok_or_else(range)
}

/// Skips an optional time zone suffix; `None` if it is malformed.
fn parse_zone(c: &mut Cursor<'_>) -> Option<()> {
    match c.peek() {
        None => Some(()),
        Some(b'Z' | b'z') => {
            c.i += 1;
            Some(())
        }
        Some(b'+' | b'-') => {
            c.i += 1;
            c.digits(2)?;
            if c.eat(b':') {
                c.digits(2)?;
                if c.eat(b':') {
                    c.digits(2)?;
                }
            } else if c.peek().is_some_and(|x| x.is_ascii_digit()) {
                c.digits(2)?;
            }
            Some(())
        }
        _ => {
            let rest = &c.b[c.i..];
            if rest.eq_ignore_ascii_case(b"UTC") || rest.eq_ignore_ascii_case(b"GMT") {
                c.i = c.b.len();
                Some(())
            } else {
                None
            }
        }
    }
}

/// Appends `YYYY-MM-DD` (with ` BC` for years before 1), as PostgreSQL's ISO DateStyle.
pub(crate) fn write_date(d: NaiveDate, out: &mut String) {
    use std::fmt::Write;
    let y = d.year();
    let (y, bc) = if y <= 0 { (1 - y, true) } else { (y, false) };
    let _ = write!(out, "{y:04}-{:02}-{:02}", d.month(), d.day());
    if bc {
        out.push_str(" BC");
    }
}

/// Appends `YYYY-MM-DD HH:MM:SS[.ffffff]` with trailing fraction zeros trimmed.
pub(crate) fn write_timestamp(t: NaiveDateTime, out: &mut String) {
    use std::fmt::Write;
    let d = t.date();
    let y = d.year();
    let (yy, bc) = if y <= 0 { (1 - y, true) } else { (y, false) };
    let _ = write!(
        out,
        "{yy:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        d.month(),
        d.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let us = t.nanosecond() / 1000;
    if us > 0 {
        let s = format!("{us:06}");
        out.push('.');
        out.push_str(s.trim_end_matches('0'));
    }
    if bc {
        out.push_str(" BC");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> String {
        let mut out = String::new();
        write_timestamp(parse_datetime(s, Kind::Timestamp).unwrap(), &mut out);
        out
    }

    #[test]
    fn timestamp_input_matches_postgres() {
        for (input, want) in [
            ("2026-11-21 23:39:17.422+00", "2026-11-21 23:39:17.422"),
            ("2024-01-02T03:04:05Z", "2024-01-02 03:04:05"),
            ("2024-01-02 03:04:05.1234567", "2024-01-02 03:04:05.123457"),
            ("2024-01-02", "2024-01-02 00:00:00"),
            ("2024-01-02 03:04", "2024-01-02 03:04:00"),
            ("2024-01-02 03:04:05+05:30", "2024-01-02 03:04:05"),
            ("  2024-1-2 3:4:5.5 UTC ", "2024-01-02 03:04:05.5"),
            ("2024-01-02 03:04:05 -0800", "2024-01-02 03:04:05"),
            ("2024-12-31 24:00:00", "2025-01-01 00:00:00"),
            ("2024-01-02 03:04:05.9999995", "2024-01-02 03:04:06"),
            ("0044-03-15 BC", "0044-03-15 00:00:00 BC"),
        ] {
            assert_eq!(ts(input), want, "{input}");
        }
        for (bad, code) in [
            ("x", "22007"),
            ("2024-01", "22007"),
            ("2024-01-02 03", "22007"),
            ("2024-01-02 03:04:05 PST8", "22007"),
            ("2024-02-30", "22008"),
            ("2024-01-02 25:00", "22008"),
            ("2024-13-01", "22008"),
        ] {
            let e = parse_datetime(bad, Kind::Timestamp).unwrap_err();
            assert_eq!(e.sqlstate(), code, "{bad}");
        }
        let e = parse_datetime("2024-02-30", Kind::Date).unwrap_err();
        assert_eq!(e.to_string(), "date/time field value out of range: \"2024-02-30\"");
        let e = parse_datetime("abc", Kind::Date).unwrap_err();
        assert_eq!(e.to_string(), "invalid input syntax for type date: \"abc\"");
    }

    #[test]
    fn epoch_conversions() {
        let d = NaiveDate::from_ymd_opt(2000, 1, 1).unwrap();
        assert_eq!(date_to_pg_days(d), 0);
        assert_eq!(pg_days_to_date(-1), NaiveDate::from_ymd_opt(1999, 12, 31));
        let t = parse_datetime("2000-01-01 00:00:01.5", Kind::Timestamp).unwrap();
        assert_eq!(timestamp_to_pg_micros(t), 1_500_000);
        assert_eq!(pg_micros_to_timestamp(1_500_000), Some(t));
        assert_eq!(pg_micros_to_timestamp(i64::MAX), None);
    }
}
