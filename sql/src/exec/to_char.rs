//! `to_char(timestamp | timestamptz | date, text)`: PostgreSQL 15's datetime template patterns
//! (`YYYY`, `MM`, `DD`, `HH24`, `Month`, `Dy`, `TZ`, …) with the `FM` / `TM` / `FX` prefixes
//! and the `TH` / `th` suffixes, double-quoted literal text and `\"`. Anything that is not a
//! pattern is copied, as PostgreSQL copies it. The C locale's English names; `TM` only drops
//! the padding, as it does there.

use chrono::{Datelike, NaiveDateTime, Timelike};

/// The zone of a timestamptz being formatted: its offset (seconds east) and abbreviation.
pub(crate) struct ZoneInfo {
    pub offset: i32,
    pub abbreviation: String,
}

/// How a matched pattern was spelled: it decides the case of names (`MONTH`, `Month`,
/// `month`).
#[derive(Clone, Copy, PartialEq)]
enum Case {
    Upper,
    Capital,
    Lower,
}

/// The patterns, longest first where one is a prefix of another (PostgreSQL's order).
const PATTERNS: &[&str] = &[
    "A.D.", "A.M.", "AD", "AM", "B.C.", "BC", "CC", "DAY", "DDD", "DD", "DY", "D", "FF1", "FF2",
    "FF3", "FF4", "FF5", "FF6", "HH24", "HH12", "HH", "IDDD", "ID", "IW", "IYYY", "IYY", "IY", "I",
    "J", "MI", "MM", "MONTH", "MON", "MS", "OF", "P.M.", "PM", "Q", "RM", "SSSSS", "SSSS", "SS",
    "TZH", "TZM", "TZ", "US", "WW", "W", "Y,YYY", "YYYY", "YYY", "YY", "Y",
];

/// Patterns that also have a capitalized spelling (`Month`, `Mon`, `Day`, `Dy`).
const CAPITALIZED: &[&str] = &["DAY", "DY", "MONTH", "MON"];

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] =
    ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const ROMAN: [&str; 12] =
    ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// The pattern at the start of `s`, with its spelling's case.
fn pattern_at(s: &str) -> Option<(&'static str, Case)> {
    PATTERNS.iter().find_map(|&p| {
        let written = s.get(..p.len())?;
        if written == p {
            Some((p, Case::Upper))
        } else if written == p.to_ascii_lowercase() {
            Some((p, Case::Lower))
        } else if CAPITALIZED.contains(&p)
            && written.starts_with(&p[..1])
            && written[1..] == p[1..].to_ascii_lowercase()
        {
            Some((p, Case::Capital))
        } else {
            None
        }
    })
}

fn cased(name: &str, case: Case) -> String {
    match case {
        Case::Upper => name.to_ascii_uppercase(),
        Case::Lower => name.to_ascii_lowercase(),
        Case::Capital => name.to_string(),
    }
}

/// English ordinal suffix of `n` (`st`, `nd`, `rd`, `th`).
fn ordinal(n: i64) -> &'static str {
    let n = n.unsigned_abs();
    match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    }
}

/// Formats `t` (local time) with `template`; `zone` for a timestamptz.
pub(crate) fn to_char(t: NaiveDateTime, zone: Option<&ZoneInfo>, template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            // Literal text up to the closing quote; `\"` inside is a quote.
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((i, ch)) = chars.next() {
                match ch {
                    '\\' if rest[1 + i + 1..].starts_with('"') => {
                        out.push('"');
                        chars.next();
                    }
                    '"' => {
                        end = 1 + i + 1;
                        break;
                    }
                    other => out.push(other),
                }
            }
            rest = &rest[end..];
            continue;
        }
        if c == '\\' && rest[1..].starts_with('"') {
            out.push('"');
            rest = &rest[2..];
            continue;
        }
        // Prefixes: FM (fill mode: no padding), TM (names without padding), FX (ignored).
        let mut fill = false;
        let mut after = rest;
        loop {
            match after.get(..2) {
                Some("FM" | "fm") => fill = true,
                Some("TM" | "tm") => fill = true,
                Some("FX" | "fx") => {}
                _ => break,
            }
            after = &after[2..];
        }
        let Some((pattern, case)) = pattern_at(after) else {
            if after.len() < rest.len() {
                // Prefixes before no pattern are dropped, as PostgreSQL drops them.
                rest = after;
            } else {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
            continue;
        };
        after = &after[pattern.len()..];
        let suffix = match after.get(..2) {
            Some("TH") => Some(true),
            Some("th") => Some(false),
            _ => None,
        };
        if suffix.is_some() {
            after = &after[2..];
        }
        let number = field(t, zone, pattern, case, fill, &mut out);
        if let (Some(upper), Some(n)) = (suffix, number) {
            let o = ordinal(n);
            out.push_str(&if upper { o.to_ascii_uppercase() } else { o.to_string() });
        }
        rest = after;
    }
    out
}

/// Appends one pattern's field; returns its number for a numeric one (for `TH`).
fn field(
    t: NaiveDateTime,
    zone: Option<&ZoneInfo>,
    pattern: &str,
    case: Case,
    fill: bool,
    out: &mut String,
) -> Option<i64> {
    use std::fmt::Write;
    let year = i64::from(t.year());
    // Years before 1 AD count as 1 BC, 2 BC, … in the year patterns.
    let display_year = if year <= 0 { 1 - year } else { year };
    let pad = |out: &mut String, n: i64, width: usize| {
        if fill {
            let _ = write!(out, "{n}");
        } else if n < 0 {
            let _ = write!(out, "-{:0width$}", -n);
        } else {
            let _ = write!(out, "{n:0width$}");
        }
    };
    let name = |out: &mut String, name: &str, width: usize| {
        let s = cased(name, case);
        if fill {
            out.push_str(&s);
        } else {
            let _ = write!(out, "{s:<width$}");
        }
    };
    let hour12 = match t.hour() % 12 {
        0 => 12,
        h => i64::from(h),
    };
    let pm = t.hour() >= 12;
    let micros = i64::from(t.nanosecond() / 1000);
    let iso = t.iso_week();
    let n = |out: &mut String, v: i64, width: usize| {
        pad(out, v, width);
        Some(v)
    };
    match pattern {
        "HH24" => n(out, i64::from(t.hour()), 2),
        "HH" | "HH12" => n(out, hour12, 2),
        "MI" => n(out, i64::from(t.minute()), 2),
        "SS" => n(out, i64::from(t.second()), 2),
        "MS" => n(out, micros / 1000, 3),
        "US" => n(out, micros, 6),
        "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
            let digits = usize::from(pattern.as_bytes()[2] - b'0');
            n(out, micros / 10i64.pow(6 - digits as u32), digits)
        }
        "SSSS" | "SSSSS" => {
            let secs = i64::from(t.num_seconds_from_midnight());
            let _ = write!(out, "{secs}");
            Some(secs)
        }
        "AM" | "PM" => {
            out.push_str(&cased(if pm { "PM" } else { "AM" }, case));
            None
        }
        "A.M." | "P.M." => {
            out.push_str(&cased(if pm { "P.M." } else { "A.M." }, case));
            None
        }
        "AD" | "BC" => {
            out.push_str(&cased(if year <= 0 { "BC" } else { "AD" }, case));
            None
        }
        "A.D." | "B.C." => {
            out.push_str(&cased(if year <= 0 { "B.C." } else { "A.D." }, case));
            None
        }
        "Y,YYY" => {
            let _ = write!(out, "{},{:03}", display_year / 1000, display_year % 1000);
            Some(display_year)
        }
        "YYYY" => n(out, display_year, 4),
        "YYY" => n(out, display_year % 1000, 3),
        "YY" => n(out, display_year % 100, 2),
        "Y" => n(out, display_year % 10, 1),
        "IYYY" => n(out, i64::from(iso.year()), 4),
        "IYY" => n(out, i64::from(iso.year()) % 1000, 3),
        "IY" => n(out, i64::from(iso.year()) % 100, 2),
        "I" => n(out, i64::from(iso.year()) % 10, 1),
        "MONTH" => {
            name(out, MONTHS[t.month0() as usize], 9);
            None
        }
        "MON" => {
            name(out, &MONTHS[t.month0() as usize][..3], 3);
            None
        }
        "MM" => n(out, i64::from(t.month()), 2),
        "DAY" => {
            name(out, DAYS[t.weekday().num_days_from_sunday() as usize], 9);
            None
        }
        "DY" => {
            name(out, &DAYS[t.weekday().num_days_from_sunday() as usize][..3], 3);
            None
        }
        "DDD" => n(out, i64::from(t.ordinal()), 3),
        "IDDD" => {
            let day = (i64::from(iso.week()) - 1) * 7 + i64::from(t.weekday().number_from_monday());
            n(out, day, 3)
        }
        "DD" => n(out, i64::from(t.day()), 2),
        "D" => n(out, i64::from(t.weekday().number_from_sunday()), 1),
        "ID" => n(out, i64::from(t.weekday().number_from_monday()), 1),
        "W" => n(out, i64::from((t.day() - 1) / 7 + 1), 1),
        "WW" => n(out, i64::from((t.ordinal() - 1) / 7 + 1), 2),
        "IW" => n(out, i64::from(iso.week()), 2),
        "CC" => {
            let cc = if year > 0 { (year + 99) / 100 } else { -((99 - (year - 1)) / 100) };
            n(out, cc, 2)
        }
        "J" => {
            let j = i64::from(t.date().num_days_from_ce()) + 1_721_425;
            let _ = write!(out, "{j}");
            Some(j)
        }
        "Q" => n(out, i64::from(t.month0() / 3 + 1), 1),
        "RM" => {
            name(out, ROMAN[t.month0() as usize], 4);
            None
        }
        "TZ" => {
            if let Some(z) = zone {
                out.push_str(&cased(&z.abbreviation, case));
            }
            None
        }
        "OF" | "TZH" | "TZM" => {
            let offset = zone.map_or(0, |z| z.offset);
            let sign = if offset < 0 { '-' } else { '+' };
            let abs = offset.unsigned_abs();
            let (h, m) = (abs / 3600, abs / 60 % 60);
            match pattern {
                "OF" => {
                    let _ = write!(out, "{sign}{h:02}");
                    if m != 0 {
                        let _ = write!(out, ":{m:02}");
                    }
                }
                "TZH" => {
                    let _ = write!(out, "{sign}{h:02}");
                }
                _ => {
                    let _ = write!(out, "{m:02}");
                }
            }
            None
        }
        _ => unreachable!("every pattern is handled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::test_rng::Rng;
    use crate::types::{parse_text_zoned, Zone};
    use catalog::DataType;

    /// Random input never panics the datetime parsers and formatters: interval and timestamptz
    /// text, time zone settings and to_char templates, over an alphabet of the characters they
    /// look at (digits, signs, separators, unit letters, quotes, a multi-byte character).
    #[test]
    fn random_input_never_panics() {
        let alphabet: Vec<char> =
            "0123456789+-.:, @PTYMWDHSdayhourmintesc<>\"\\/éZIJQRFXOf AB".chars().collect();
        let mut rng = Rng(0x5EED_1234_ABCD_0001);
        let t = chrono::NaiveDate::from_ymd_opt(2024, 2, 29)
            .and_then(|d| d.and_hms_micro_opt(23, 59, 59, 999_999))
            .expect("a valid timestamp");
        let zone = ZoneInfo { offset: -16_200, abbreviation: "X".into() };
        for _ in 0..20_000 {
            let n = rng.below(14) as usize;
            let s: String =
                (0..n).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize]).collect();
            let _ = parse_text_zoned(&s, &DataType::Interval, Zone::UTC);
            let _ = parse_text_zoned(
                &format!("2024-01-01 10:00{s}"),
                &DataType::TimestampTz,
                Zone::UTC,
            );
            let _ = Zone::from_setting(&s);
            let _ = to_char(t, Some(&zone), &s);
            let _ = to_char(t, None, &s);
        }
    }
}
