//! `date`, `timestamp` and `timestamp with time zone`: ISO text input and output, time zones,
//! and the PostgreSQL epoch (2000-01-01) used by the binary format.
//!
//! Accepted input (after trimming whitespace): `YYYY-MM-DD`, optionally followed by `T` or
//! spaces and `HH:MM[:SS[.fraction]]`, optionally followed by a time zone (`Z`, `UTC`, `GMT`,
//! `±HH`, `±HHMM`, `±HH:MM`, `±HH:MM:SS`, or a tz database name such as `Europe/Paris`).
//! `timestamp without time zone` ignores the zone, as PostgreSQL does; `timestamp with time
//! zone` converts to UTC with it, or with the session's [`Zone`] when there is none. Fractions
//! beyond microseconds round to the nearest microsecond; `24:00:00` is the next midnight. A
//! trailing ` BC` is honoured.
//!
//! A `timestamptz` value is the UTC instant (a `NaiveDateTime` in UTC); the session's `TimeZone`
//! setting ([`Zone`]) only decides how it is read and printed.

use chrono::{
    Datelike, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeDelta, TimeZone, Timelike,
};

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
    TimestampTz,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Date => "date",
            Kind::Timestamp => "timestamp",
            Kind::TimestampTz => "timestamp with time zone",
        }
    }
}

/// A session's time zone (the `TimeZone` setting): a tz database zone, or a fixed offset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Zone {
    /// Seconds east of UTC.
    Fixed(i32),
    /// A tz database zone (offsets change with the date: daylight saving, history).
    Named(chrono_tz::Tz),
}

impl Zone {
    /// Coordinated Universal Time.
    pub const UTC: Zone = Zone::Fixed(0);

    /// A `TimeZone` setting as PostgreSQL reads it, with the spelling `SHOW` gives back: a tz
    /// database name (any case; `SHOW` gives its own spelling), or a POSIX-style offset
    /// (`+05:30`, `UTC+3`, `<+05>-05`), which counts hours *west* of Greenwich. `None` if it
    /// is neither.
    pub fn from_setting(setting: &str) -> Option<(Zone, String)> {
        let s = setting.trim();
        if let Some(tz) = named_zone(s) {
            return Some((Zone::Named(tz), tz.name().to_string()));
        }
        // An optional abbreviation (three letters or more, or anything in <>), then the POSIX
        // offset.
        let rest = if let Some(r) = s.strip_prefix('<') {
            &r[r.find('>')? + 1..]
        } else {
            let letters = s.len() - s.trim_start_matches(|c: char| c.is_ascii_alphabetic()).len();
            if letters > 0 && letters < 3 {
                return None;
            }
            &s[letters..]
        };
        let mut c = Cursor { b: rest.as_bytes(), i: 0 };
        let west = parse_offset(&mut c, OffsetForm::Posix)?;
        if !c.at_end() {
            return None;
        }
        Some((Zone::Fixed(-west), s.to_string()))
    }

    /// The zone's offset from UTC (seconds east) at the UTC instant `utc`.
    pub fn offset_at(self, utc: NaiveDateTime) -> i32 {
        match self {
            Zone::Fixed(secs) => secs,
            Zone::Named(tz) => tz.offset_from_utc_datetime(&utc).fix().local_minus_utc(),
        }
    }

    /// The zone's abbreviation at the UTC instant `utc` (`CEST`, `EST`); empty for a fixed
    /// offset.
    pub fn abbreviation_at(self, utc: NaiveDateTime) -> String {
        use chrono_tz::OffsetName;
        match self {
            Zone::Fixed(_) => String::new(),
            Zone::Named(tz) => {
                tz.offset_from_utc_datetime(&utc).abbreviation().unwrap_or_default().to_string()
            }
        }
    }

    /// The local time of the UTC instant `utc`.
    pub fn to_local(self, utc: NaiveDateTime) -> Option<NaiveDateTime> {
        utc.checked_add_signed(TimeDelta::seconds(i64::from(self.offset_at(utc))))
    }

    /// The UTC instant of the local time `local`. A local time that happens twice (when the
    /// clocks go back) takes the later offset, standard time; one that never happens (when
    /// they go forward) takes the offset from before the change, as PostgreSQL does.
    pub fn to_utc(self, local: NaiveDateTime) -> Option<NaiveDateTime> {
        let offset = match self {
            Zone::Fixed(secs) => secs,
            Zone::Named(tz) => match tz.offset_from_local_datetime(&local) {
                chrono::LocalResult::Single(o) => o.fix().local_minus_utc(),
                chrono::LocalResult::Ambiguous(_, later) => later.fix().local_minus_utc(),
                chrono::LocalResult::None => {
                    let before = local.checked_sub_signed(TimeDelta::hours(3))?;
                    tz.offset_from_local_datetime(&before).earliest()?.fix().local_minus_utc()
                }
            },
        };
        local.checked_sub_signed(TimeDelta::seconds(i64::from(offset)))
    }
}

/// A tz database zone by name, in any case.
fn named_zone(name: &str) -> Option<chrono_tz::Tz> {
    if name.is_empty() || !name.is_ascii() {
        return None;
    }
    name.parse::<chrono_tz::Tz>().ok().or_else(|| {
        chrono_tz::TZ_VARIANTS.iter().copied().find(|tz| tz.name().eq_ignore_ascii_case(name))
    })
}

/// How an offset is written: after a time in a timestamp's text (`DecodeTimezone`: a sign,
/// then `H[H]`, `HHMM` run together, or `H:MM[:SS]`, at most 15 hours), or as a POSIX
/// `TimeZone` setting (an optional sign, hours up to 167, `[:MM[:SS]]`).
#[derive(Clone, Copy, PartialEq)]
enum OffsetForm {
    Input,
    Posix,
}

/// An offset as seconds (east as written, so west for a POSIX setting); `None` if malformed
/// or out of range.
fn parse_offset(c: &mut Cursor<'_>, form: OffsetForm) -> Option<i32> {
    let negative = match c.peek() {
        Some(b'+') => {
            c.i += 1;
            false
        }
        Some(b'-') => {
            c.i += 1;
            true
        }
        _ if form == OffsetForm::Input => return None,
        _ => false,
    };
    let (mut h, n) = c.digits(6)?;
    let (mut m, mut sec) = (0, 0);
    if c.eat(b':') {
        m = c.digits(2)?.0;
        if c.eat(b':') {
            sec = c.digits(2)?.0;
        }
    } else if form == OffsetForm::Input && n > 2 {
        (h, m) = (h / 100, h % 100);
    }
    let max_hours = if form == OffsetForm::Input { 15 } else { 167 };
    if h > max_hours || m > 59 || sec > 59 {
        return None;
    }
    let secs = (h * 3600 + m * 60 + sec) as i32;
    Some(if negative { -secs } else { secs })
}

/// The date and time units PostgreSQL knows, by any of their spellings (EXTRACT, date_trunc,
/// interval input), as one canonical name each.
pub fn datetime_unit(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => "microseconds",
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => "milliseconds",
        "second" | "seconds" | "s" | "sec" | "secs" => "second",
        "minute" | "minutes" | "m" | "min" | "mins" => "minute",
        "hour" | "hours" | "h" | "hr" | "hrs" => "hour",
        "day" | "days" | "d" => "day",
        "week" | "weeks" | "w" => "week",
        "month" | "months" | "mon" | "mons" => "month",
        "quarter" | "qtr" => "quarter",
        "year" | "years" | "y" | "yr" | "yrs" => "year",
        "decade" | "decades" | "dec" | "decs" => "decade",
        "century" | "centuries" | "c" | "cent" => "century",
        "millennium" | "millennia" | "mil" | "mils" => "millennium",
        "dow" => "dow",
        "isodow" => "isodow",
        "doy" => "doy",
        "isoyear" => "isoyear",
        "epoch" => "epoch",
        _ => return None,
    })
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
    parse_datetime_zoned(input, kind).map(|(t, _)| t)
}

/// Parses a `timestamp with time zone`: the UTC instant, read with the input's own zone or
/// else `zone`.
pub(crate) fn parse_timestamptz(input: &str, zone: Zone) -> Result<NaiveDateTime> {
    let (local, own) = parse_datetime_zoned(input, Kind::TimestampTz)?;
    own.unwrap_or(zone).to_utc(local).ok_or_else(|| Error::DatetimeFieldOverflow {
        message: format!("timestamp out of range: \"{input}\""),
    })
}

/// Parses a date or timestamp and the zone written after it, if any.
fn parse_datetime_zoned(input: &str, kind: Kind) -> Result<(NaiveDateTime, Option<Zone>)> {
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
    let mut zone = None;
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
            let (sec, frac_us) =
                if c.eat(b':') { seconds(&mut c).ok_or_else(invalid)? } else { (0, 0) };
            if h > 24 || m > 59 || sec > 60 || (h == 24 && (m > 0 || sec > 0 || frac_us > 0)) {
                return Err(range());
            }
            micros_of_day = ((h * 60 + m) * 60 + sec) * 1_000_000 + frac_us;
            c.skip_spaces();
        }
        zone = parse_zone(&mut c).ok_or_else(invalid)?;
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
    let t = t.checked_add_signed(TimeDelta::microseconds(micros_of_day)).ok_or_else(range)?;
    Ok((t, zone))
}

/// The `SS[.[fraction]]` after a time's second colon: the seconds, and the fraction in
/// microseconds (up to six digits exactly; more read as a double and rounded to the
/// microsecond, as PostgreSQL does). `None` if malformed.
fn seconds(c: &mut Cursor<'_>) -> Option<(i64, i64)> {
    let (sec, _) = c.digits(2)?;
    if !c.eat(b'.') {
        return Some((sec, 0));
    }
    let start = c.i;
    while c.peek().is_some_and(|d| d.is_ascii_digit()) {
        c.i += 1;
    }
    // A point with no digits after it is no fraction (`12:00:00.`), as in PostgreSQL.
    let digits = &c.b[start..c.i];
    let frac_us = if digits.len() <= 6 {
        let v = digits.iter().fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
        v * 10i64.pow(6 - digits.len() as u32)
    } else {
        let digits = std::str::from_utf8(digits).ok()?;
        let frac: f64 = format!("0.{digits}").parse().ok()?;
        (frac * 1_000_000.0).round_ties_even() as i64
    };
    Some((sec, frac_us))
}

/// Microseconds in a day: `time`'s values are `0 ..= USECS_PER_DAY` (`24:00:00` included).
pub(crate) const USECS_PER_DAY: i64 = 86_400_000_000;

/// Parses a `time` (without time zone), as PostgreSQL's `time_in`: `HH:MM[:SS[.ffffff]]`
/// with an optional AM/PM and zone (ignored), `allballs`, or a whole timestamp, whose time of
/// day it takes. More than six fraction digits round to the microsecond.
pub(crate) fn parse_time(input: &str) -> Result<i64> {
    let invalid = || Error::InvalidDatetimeFormat {
        message: format!("invalid input syntax for type time: \"{input}\""),
    };
    let range = || Error::DatetimeFieldOverflow {
        message: format!("date/time field value out of range: \"{input}\""),
    };
    let s = input.trim();
    if s.eq_ignore_ascii_case("allballs") {
        return Ok(0);
    }
    let mut c = Cursor { b: s.as_bytes(), i: 0 };
    let (h, n) = c.digits(4).ok_or_else(invalid)?;
    if n > 2 || !c.eat(b':') {
        // A date first (`2024-07-01 12:30`): the time of day of that timestamp, its zone
        // ignored.
        if s.contains('-') {
            let t = parse_datetime(input, Kind::Timestamp).map_err(|_| invalid())?;
            return Ok(timestamp_to_pg_micros(t).rem_euclid(USECS_PER_DAY));
        }
        return Err(invalid());
    }
    let (m, _) = c.digits(2).ok_or_else(invalid)?;
    let (sec, frac_us) = if c.eat(b':') { seconds(&mut c).ok_or_else(invalid)? } else { (0, 0) };
    c.skip_spaces();
    let mut h = h;
    let rest = std::str::from_utf8(&c.b[c.i..]).expect("from a str");
    let meridian =
        rest.get(..2).filter(|m| m.eq_ignore_ascii_case("am") || m.eq_ignore_ascii_case("pm"));
    if let Some(m) = meridian {
        if !(1..=12).contains(&h) {
            return Err(range());
        }
        h = match (h, m.eq_ignore_ascii_case("pm")) {
            (12, false) => 0,
            (12, true) => 12,
            (h, pm) => h + if pm { 12 } else { 0 },
        };
        c.i += 2;
        c.skip_spaces();
    }
    parse_zone(&mut c).ok_or_else(invalid)?;
    if !c.at_end() {
        return Err(invalid());
    }
    let micros = ((h * 60 + m) * 60 + sec) * 1_000_000 + frac_us;
    if h > 24 || m > 59 || sec > 60 || micros > USECS_PER_DAY {
        return Err(range());
    }
    Ok(micros)
}

/// Appends a `time`: `HH:MM:SS[.ffffff]` with trailing fraction zeros trimmed.
pub(crate) fn write_time(micros: i64, out: &mut String) {
    use std::fmt::Write;
    let secs = micros / 1_000_000;
    let _ = write!(out, "{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    let us = micros % 1_000_000;
    if us > 0 {
        let s = format!("{us:06}");
        out.push('.');
        out.push_str(s.trim_end_matches('0'));
    }
}

/// Reads an optional time zone suffix: `Some(None)` if there is none, `None` if it is
/// malformed.
fn parse_zone(c: &mut Cursor<'_>) -> Option<Option<Zone>> {
    match c.peek() {
        None => Some(None),
        Some(b'Z' | b'z') if c.b.len() == c.i + 1 => {
            c.i += 1;
            Some(Some(Zone::UTC))
        }
        Some(b'+' | b'-') => parse_offset(c, OffsetForm::Input).map(|secs| Some(Zone::Fixed(secs))),
        _ => {
            let rest = std::str::from_utf8(&c.b[c.i..]).ok()?;
            let tz = named_zone(rest)?;
            c.i = c.b.len();
            Some(Some(Zone::Named(tz)))
        }
    }
}

/// `make_date(year, month, day)` as PostgreSQL's: a negative year is BC (`-44` is 44 BC),
/// year 0 and invalid fields are `22008`.
pub(crate) fn make_date(year: i32, month: i32, day: i32) -> Result<NaiveDate> {
    // make_date's messages show the year as PostgreSQL holds it by then: astronomical.
    date_from_fields(year, month, day, if year < 0 { year + 1 } else { year })
}

/// The date of `make_date` and `make_timestamp`; `shown` is the year their messages print.
fn date_from_fields(year: i32, month: i32, day: i32, shown: i32) -> Result<NaiveDate> {
    let field_range = || Error::DatetimeFieldOverflow {
        message: format!("date field value out of range: {shown}-{month:02}-{day:02}"),
    };
    if year == 0 || !(1..=12).contains(&month) || day < 1 {
        return Err(field_range());
    }
    // Astronomical year: 1 BC is 0.
    let astronomical = if year < 0 { year + 1 } else { year };
    let last_day = NaiveDate::from_ymd_opt(
        if month == 12 { astronomical.saturating_add(1) } else { astronomical },
        if month == 12 { 1 } else { month as u32 + 1 },
        1,
    )
    .and_then(|next| next.pred_opt())
    .map(|d| d.day() as i32);
    match last_day {
        Some(last) if day > last => Err(field_range()),
        _ => NaiveDate::from_ymd_opt(astronomical, month as u32, day as u32).ok_or_else(|| {
            Error::DatetimeFieldOverflow {
                message: format!("date out of range: {shown}-{month:02}-{day:02}"),
            }
        }),
    }
}

/// `make_timestamp(year, month, day, hour, min, sec)` as PostgreSQL's: the date as
/// [`make_date`], then a time of day up to `24:00:00` (seconds up to 60, rounded to the
/// microsecond half to even), else `22008`.
pub(crate) fn make_timestamp(
    [year, month, day, hour, min]: [i32; 5],
    sec: f64,
) -> Result<NaiveDateTime> {
    let date = date_from_fields(year, month, day, year)?;
    let fields = || format!("{hour}:{min:02}:{}", printf_g2(sec));
    if !(0..=24).contains(&hour)
        || !(0..=59).contains(&min)
        || !(0.0..=60.0).contains(&sec)
        || (hour == 24 && (min > 0 || sec > 0.0))
    {
        return Err(Error::DatetimeFieldOverflow {
            message: format!("time field value out of range: {}", fields()),
        });
    }
    let micros = (i64::from(hour) * 60 + i64::from(min)) * 60 * 1_000_000
        + (sec * 1_000_000.0).round_ties_even() as i64;
    date.and_time(NaiveTime::MIN).checked_add_signed(TimeDelta::microseconds(micros)).ok_or_else(
        || Error::DatetimeFieldOverflow {
            message: format!("timestamp out of range: {year}-{month:02}-{day:02} {}", fields()),
        },
    )
}

/// C's `%02g` of a finite, non-negative value below a million, as PostgreSQL prints seconds in
/// its messages: six significant digits, trailing zeros dropped, at least two characters.
fn printf_g2(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    let magnitude = if v == 0.0 { 1 } else { v.abs().log10().floor() as i32 + 1 };
    let decimals = (6 - magnitude).max(0) as usize;
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s.len() < 2 {
        s.insert(0, '0');
    }
    s
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
    write_timestamp_offset(t, None, out)
}

/// Appends the UTC instant `utc` as local time in `zone` with its offset
/// (`2024-07-01 12:00:00+05:30`).
pub(crate) fn write_timestamptz(utc: NaiveDateTime, zone: Zone, out: &mut String) {
    let offset = zone.offset_at(utc);
    match zone.to_local(utc) {
        Some(local) => write_timestamp_offset(local, Some(offset), out),
        None => write_timestamp_offset(utc, Some(0), out),
    }
}

fn write_timestamp_offset(t: NaiveDateTime, offset: Option<i32>, out: &mut String) {
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
    if let Some(secs) = offset {
        let sign = if secs < 0 { '-' } else { '+' };
        let abs = secs.unsigned_abs();
        let _ = write!(out, "{sign}{:02}", abs / 3600);
        if abs % 3600 != 0 {
            let _ = write!(out, ":{:02}", abs / 60 % 60);
            if abs % 60 != 0 {
                let _ = write!(out, ":{:02}", abs % 60);
            }
        }
    }
    if bc {
        out.push_str(" BC");
    }
}

#[cfg(test)]
mod tests {
    /// Seconds in make_timestamp's messages, as C's `%02g` prints them (PostgreSQL's texts).
    #[test]
    fn seconds_print_as_printf_g() {
        let cases = [(0.0, "00"), (5.0, "05"), (45.887, "45.887"), (60.5, "60.5"), (0.5, "0.5")];
        for (v, want) in cases.into_iter().chain([(-1.0, "-1"), (f64::NAN, "NaN")]) {
            assert_eq!(printf_g2(v), want, "{v}");
        }
        assert_eq!(printf_g2(1.0000005), "01");
        assert_eq!(printf_g2(59.99999999), "60");
    }

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
    fn time_zones_read_and_print_as_postgres() {
        // Expected values are PostgreSQL 15's.
        let tz = |setting: &str, input: &str| {
            let (zone, _) = Zone::from_setting(setting).unwrap();
            let mut out = String::new();
            write_timestamptz(parse_timestamptz(input, zone).unwrap(), zone, &mut out);
            out
        };
        let ny = "america/new_york";
        assert_eq!(Zone::from_setting(ny).unwrap().1, "America/New_York");
        assert_eq!(tz(ny, "2024-11-03 01:30"), "2024-11-03 01:30:00-05");
        assert_eq!(tz(ny, "2024-03-10 02:30"), "2024-03-10 03:30:00-04");
        assert_eq!(tz(ny, "2024-07-01 12:00"), "2024-07-01 12:00:00-04");
        assert_eq!(tz(ny, "1850-01-01 12:00"), "1850-01-01 12:00:00-04:56:02");
        assert_eq!(tz("+05:30", "2024-07-01 12:00"), "2024-07-01 12:00:00-05:30");
        assert_eq!(tz("<+05>-05", "2024-07-01 12:00"), "2024-07-01 12:00:00+05");
        assert_eq!(tz("UTC+3", "2024-07-01 12:00"), "2024-07-01 12:00:00-03");
        assert_eq!(tz("UTC+100", "2024-07-01 12:00"), "2024-07-01 12:00:00-100");
        assert_eq!(tz("UTC", "2024-07-01 12:00+530"), "2024-07-01 06:30:00+00");
        assert_eq!(tz("UTC", "2024-07-01 12:00-100"), "2024-07-01 13:00:00+00");
        assert!(parse_timestamptz("2024-07-01 12:00+16", Zone::UTC).is_err());
        assert!(Zone::from_setting("UTC+168").is_none());
        assert_eq!(tz("Asia/Kolkata", "2024-07-01 12:00+02"), "2024-07-01 15:30:00+05:30");
        assert_eq!(tz("UTC", "2024-01-01 10:00:00.5-03:30"), "2024-01-01 13:30:00.5+00");
        assert_eq!(tz("UTC", "2024-01-01 10:00 Europe/Paris"), "2024-01-01 09:00:00+00");
        assert!(Zone::from_setting("Foo/Bar").is_none());
        assert!(Zone::from_setting("").is_none());
        let e = parse_timestamptz("2024-01-01 10:00 Nowhere", Zone::UTC).unwrap_err();
        assert_eq!(e.sqlstate(), "22007");
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
