//! Dates as strings: `$dateToString`'s formats and `$dateFromString`'s parsing, with MongoDB's
//! specifiers (`%Y %m %d %H %M %S %L %j %w %u %U %V %G %z %Z %b %B %%`).

use super::{Civil, DAY_MS, Tz, days_from_civil_carried, days_from_iso};

/// A piece of a compiled format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// Text copied as is (`%%` is a `%`).
    Text(String),
    /// A specifier: the letter after `%`.
    Spec(char),
}

/// The specifiers `$dateToString` accepts.
const TO_STRING: &str = "bBdGHjLmMSwuUVYzZ";
/// The specifiers `$dateFromString` accepts.
const FROM_STRING: &str = "bBdGHjLmMSuVYzZ";

/// `$dateToString`'s format when none is given, in UTC.
pub(crate) const DEFAULT_UTC: &str = "%Y-%m-%dT%H:%M:%S.%LZ";
/// `$dateToString`'s format when none is given, in another zone.
pub(crate) const DEFAULT_ZONED: &str = "%Y-%m-%dT%H:%M:%S.%L";

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

/// Compiles a format string for `$dateToString` (`to_string`) or `$dateFromString`.
///
/// # Errors
/// MongoDB's code and message: 18535 for a `%` at the end, 18536 for a specifier not
/// supported.
pub(crate) fn compile(format: &str, to_string: bool) -> Result<Vec<Item>, (u32, String)> {
    let allowed = if to_string { TO_STRING } else { FROM_STRING };
    let mut items = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        match chars.next() {
            None => return Err((18535, "Unmatched '%' at end of format string".to_owned())),
            Some('%') => text.push('%'),
            Some(s) if allowed.contains(s) => {
                if !text.is_empty() {
                    items.push(Item::Text(std::mem::take(&mut text)));
                }
                items.push(Item::Spec(s));
            }
            Some(s) => {
                return Err((
                    18536,
                    format!("Invalid format character '%{s}' in format string"),
                ));
            }
        }
    }
    if !text.is_empty() {
        items.push(Item::Text(text));
    }
    Ok(items)
}

/// Formats instant `t` (ms) in zone `tz`.
///
/// # Errors
/// MongoDB's 18537 when a part to print is outside 0 ..= 9999 (a year before 0 or after 9999).
pub(crate) fn format(t: i64, tz: Tz, items: &[Item]) -> Result<String, (u32, String)> {
    let c = Civil::of(t, tz);
    let mut out = String::new();
    let padded = |out: &mut String, n: i64, width: usize| -> Result<(), (u32, String)> {
        if !(0..=9999).contains(&n) {
            return Err((
                18537,
                format!(
                    "Could not convert date to string: date component was outside the \
                     supported range of 0-9999: {n}"
                ),
            ));
        }
        out.push_str(&format!("{n:0width$}"));
        Ok(())
    };
    for item in items {
        match item {
            Item::Text(s) => out.push_str(s),
            Item::Spec(s) => match s {
                'Y' => padded(&mut out, c.year, 4)?,
                'G' => padded(&mut out, c.iso_week().0, 4)?,
                'm' => padded(&mut out, c.month, 2)?,
                'd' => padded(&mut out, c.day, 2)?,
                'H' => padded(&mut out, c.hour, 2)?,
                'M' => padded(&mut out, c.minute, 2)?,
                'S' => padded(&mut out, c.second, 2)?,
                'L' => padded(&mut out, c.millisecond, 3)?,
                'j' => padded(&mut out, c.day_of_year(), 3)?,
                'w' => padded(&mut out, c.day_of_week(), 1)?,
                'u' => padded(&mut out, c.iso_day_of_week(), 1)?,
                'U' => padded(&mut out, c.week(), 2)?,
                'V' => padded(&mut out, c.iso_week().1, 2)?,
                'b' | 'B' => {
                    let name = MONTHS[usize::try_from(c.month - 1).unwrap_or(0) % 12];
                    out.push_str(if *s == 'b' { &name[..3] } else { name });
                }
                'z' | 'Z' => {
                    let minutes = tz.offset_at(t) / 60_000;
                    out.push(if minutes < 0 { '-' } else { '+' });
                    let m = minutes.abs();
                    if *s == 'z' {
                        padded(&mut out, m / 60, 2)?;
                        padded(&mut out, m % 60, 2)?;
                    } else {
                        padded(&mut out, m, 3)?;
                    }
                }
                _ => {}
            },
        }
    }
    Ok(out)
}

/// Why a string is not a date (MongoDB's `ConversionFailure`).
pub(crate) type ParseError = String;

/// The fields read from a date string.
#[derive(Default)]
struct Fields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    iso_year: Option<i64>,
    iso_week: Option<i64>,
    iso_day: Option<i64>,
    hour: Option<i64>,
    minute: Option<i64>,
    second: Option<i64>,
    millisecond: i64,
    /// An offset given in the string (ms east of UTC).
    offset: Option<i64>,
}

/// A cursor over the string being parsed.
struct Input<'a> {
    s: &'a str,
    at: usize,
    whole: &'a str,
}

impl Input<'_> {
    fn error(&self, what: &str) -> ParseError {
        format!(
            "Error parsing date string '{}'; {}: {what}",
            self.whole, self.at
        )
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Between `min` and `max` digits.
    fn digits(&mut self, min: usize, max: usize, what: &str) -> Result<i64, ParseError> {
        let start = self.at;
        while self.at - start < max && self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        if self.at - start < min {
            return Err(self.error(&format!("Unexpected data found, expected {what}")));
        }
        self.s[start..self.at]
            .parse()
            .map_err(|_| self.error(&format!("Unexpected data found, expected {what}")))
    }

    /// A fraction of a second after the `.`: its ms (digits past the third are dropped).
    fn fraction(&mut self) -> Result<i64, ParseError> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let digits = &self.s[start..self.at];
        if digits.is_empty() {
            return Err(self.error("Unexpected data found, expected a fraction"));
        }
        let ms: String = digits.chars().chain("000".chars()).take(3).collect();
        ms.parse().map_err(|_| self.error("bad fraction"))
    }

    /// `Z`, `UTC`, `GMT`, `±HH`, `±HHMM` or `±HH:MM`.
    fn zone(&mut self) -> Result<i64, ParseError> {
        for name in ["Z", "UTC", "GMT"] {
            if self.s[self.at..].starts_with(name) {
                self.at += name.len();
                return Ok(0);
            }
        }
        let sign = if self.eat(b'+') {
            1
        } else if self.eat(b'-') {
            -1
        } else {
            return Err(self.error("Unexpected data found, expected a time zone offset"));
        };
        let h = self.digits(2, 2, "hours of an offset")?;
        self.eat(b':');
        let m = if self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.digits(2, 2, "minutes of an offset")?
        } else {
            0
        };
        Ok(sign * (h * 3_600_000 + m * 60_000))
    }

    fn month_name(&mut self, full: bool) -> Result<i64, ParseError> {
        let rest = &self.s[self.at..];
        for (i, name) in MONTHS.iter().enumerate() {
            let n = if full { *name } else { &name[..3] };
            if rest.len() >= n.len() && rest[..n.len()].eq_ignore_ascii_case(n) {
                self.at += n.len();
                return Ok(i64::try_from(i).unwrap_or(0) + 1);
            }
        }
        Err(self.error("Unexpected data found, expected a month name"))
    }
}

/// `$dateFromString`: the instant a date string names, read with `items` (a compiled format)
/// or, without one, as an ISO 8601 date (`2024-03-10`, `2024-03-10T02:30:00.000`, a `T` or a
/// space before the time, `/` allowed between the date's parts, an optional `Z`, `UTC`, `GMT`
/// or `±HH[:MM]` after it). A string without an offset is a local time of `tz`; one with an
/// offset may not be given a zone other than UTC.
///
/// # Errors
/// Why the string is not a date of that format (MongoDB's `ConversionFailure`).
pub(crate) fn parse(s: &str, items: Option<&[Item]>, tz: Tz) -> Result<i64, ParseError> {
    let mut input = Input { s, at: 0, whole: s };
    let mut f = Fields::default();
    match items {
        Some(items) => {
            for item in items {
                match item {
                    Item::Text(t) => {
                        if !input.s[input.at..].starts_with(t.as_str()) {
                            return Err(input.error("The separation symbol could not be found"));
                        }
                        input.at += t.len();
                    }
                    Item::Spec(c) => match c {
                        'Y' => f.year = Some(input.digits(4, 4, "a four digit year")?),
                        'G' => f.iso_year = Some(input.digits(4, 4, "a four digit year")?),
                        'm' => f.month = Some(input.digits(1, 2, "a two digit month")?),
                        'd' => f.day = Some(input.digits(1, 2, "a two digit day")?),
                        'H' => f.hour = Some(input.digits(1, 2, "a two digit hour")?),
                        'M' => f.minute = Some(input.digits(2, 2, "a two digit minute")?),
                        'S' => f.second = Some(input.digits(2, 2, "a two digit second")?),
                        'L' => f.millisecond = input.fraction()?,
                        'j' => f.day_of_year = Some(input.digits(3, 3, "a day of the year")?),
                        'u' => f.iso_day = Some(input.digits(1, 1, "a day of the week")?),
                        'V' => f.iso_week = Some(input.digits(1, 2, "a week")?),
                        'b' => f.month = Some(input.month_name(false)?),
                        'B' => f.month = Some(input.month_name(true)?),
                        'z' => f.offset = Some(input.zone()?),
                        'Z' => {
                            let sign = if input.eat(b'-') {
                                -1
                            } else {
                                input.eat(b'+');
                                1
                            };
                            f.offset =
                                Some(sign * input.digits(1, 4, "an offset in minutes")? * 60_000);
                        }
                        _ => {}
                    },
                }
            }
        }
        None => iso(&mut input, &mut f)?,
    }
    if input.at != input.s.len() {
        return Err(input.error("Trailing data"));
    }
    let days = if let (Some(y), Some(doy)) = (f.year, f.day_of_year) {
        days_from_civil_carried(y, 1, doy)
    } else if let (Some(y), Some(w)) = (f.iso_year, f.iso_week) {
        Some(days_from_iso(y, w, f.iso_day.unwrap_or(1)))
    } else {
        match (f.year, f.month, f.day) {
            (Some(y), Some(m), Some(d)) => {
                if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
                    return Err(input.error("The parsed date was invalid"));
                }
                days_from_civil_carried(y, m, d)
            }
            _ => None,
        }
    };
    let Some(days) = days else {
        return Err(format!(
            "an incomplete date/time string has been found, with elements missing: \"{s}\""
        ));
    };
    let (h, mi, sec) = match (f.hour, f.minute, f.second) {
        (None, None, None) => (0, 0, 0),
        (Some(h), m, sec) => (h, m.unwrap_or(0), sec.unwrap_or(0)),
        _ => {
            return Err(format!(
                "an incomplete date/time string has been found, with elements missing: \"{s}\""
            ));
        }
    };
    if h > 24 || mi > 59 || sec > 60 {
        return Err(input.error("The parsed time was invalid"));
    }
    let local = days * DAY_MS + h * 3_600_000 + mi * 60_000 + sec * 1_000 + f.millisecond;
    match f.offset {
        Some(_) if !tz.is_utc() => Err(
            "you cannot pass in a date/time string with GMT offset together with a timezone \
             argument"
                .to_owned(),
        ),
        Some(offset) => Ok(local - offset),
        None => tz
            .instant(local)
            .ok_or_else(|| input.error("The date is out of range")),
    }
}

/// An ISO 8601 date and optional time.
fn iso(input: &mut Input<'_>, f: &mut Fields) -> Result<(), ParseError> {
    let s = input.s.trim();
    input.s = s;
    f.year = Some(input.digits(4, 4, "a four digit year")?);
    let sep = input.peek();
    if !(input.eat(b'-') || input.eat(b'/')) {
        return Err(input.error("Unexpected character"));
    }
    f.month = Some(input.digits(1, 2, "a month")?);
    if sep.is_none_or(|c| !input.eat(c)) {
        return Err(input.error("Unexpected character"));
    }
    f.day = Some(input.digits(1, 2, "a day")?);
    if input.at == input.s.len() {
        return Ok(());
    }
    if !(input.eat(b'T') || input.eat(b' ')) {
        // A zone right after the date.
        f.offset = Some(input.zone()?);
        return Ok(());
    }
    f.hour = Some(input.digits(2, 2, "an hour")?);
    if !input.eat(b':') {
        return Err(input.error("Unexpected character"));
    }
    f.minute = Some(input.digits(2, 2, "a minute")?);
    if input.eat(b':') {
        f.second = Some(input.digits(2, 2, "a second")?);
        if input.eat(b'.') || input.eat(b',') {
            f.millisecond = input.fraction()?;
        }
    }
    if input.at < input.s.len() {
        input.eat(b' ');
        f.offset = Some(input.zone()?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::mql::dates::days_from_civil;

    fn utc(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64, ms: i64) -> i64 {
        days_from_civil(y, mo, d) * DAY_MS + h * 3_600_000 + mi * 60_000 + s * 1_000 + ms
    }

    fn fmt(t: i64, tz: &str, f: &str) -> String {
        format(
            t,
            Tz::parse(tz).expect("zone"),
            &compile(f, true).expect("format"),
        )
        .expect("formats")
    }

    #[test]
    fn formats_as_the_manual_shows() {
        // The manual's $dateToString example: 2014-01-01T08:15:39.736Z.
        let t = utc(2014, 1, 1, 8, 15, 39, 736);
        assert_eq!(fmt(t, "UTC", DEFAULT_UTC), "2014-01-01T08:15:39.736Z");
        assert_eq!(fmt(t, "UTC", "%H:%M:%S:%L%z"), "08:15:39:736+0000");
        assert_eq!(
            fmt(t, "America/New_York", "%H:%M:%S:%L%z"),
            "03:15:39:736-0500"
        );
        assert_eq!(fmt(t, "+04:30", "%Z"), "+270");
        assert_eq!(fmt(t, "UTC", "%j %w %u %U %V %G"), "001 4 3 00 01 2014");
        assert_eq!(fmt(t, "UTC", "%b %B 100%%"), "Jan January 100%");
        assert_eq!(
            fmt(t, "Asia/Kathmandu", DEFAULT_ZONED),
            "2014-01-01T14:00:39.736"
        );
        assert_eq!(compile("%Y%", true).map_err(|e| e.0), Err(18535));
        assert_eq!(compile("%Q", true).map_err(|e| e.0), Err(18536));
        assert_eq!(compile("%w", false).map_err(|e| e.0), Err(18536));
        let far = utc(10_000, 1, 1, 0, 0, 0, 0);
        assert_eq!(
            format(far, Tz::UTC, &compile("%Y", true).expect("format")).map_err(|e| e.0),
            Err(18537)
        );
    }

    #[test]
    fn parses_iso_dates_and_formats() {
        let ny = Tz::parse("America/New_York").expect("zone");
        assert_eq!(
            parse("2017-02-08T12:10:40.787", None, Tz::UTC),
            Ok(utc(2017, 2, 8, 12, 10, 40, 787))
        );
        assert_eq!(
            parse("2017-02-08T12:10:40.787", None, ny),
            Ok(utc(2017, 2, 8, 17, 10, 40, 787))
        );
        assert_eq!(
            parse("2017-02-08", None, Tz::UTC),
            Ok(utc(2017, 2, 8, 0, 0, 0, 0))
        );
        assert_eq!(
            parse("2017-02-08T12:10:40Z", None, Tz::UTC),
            Ok(utc(2017, 2, 8, 12, 10, 40, 0))
        );
        assert_eq!(
            parse("2017-02-08 12:10:40+05:30", None, Tz::UTC),
            Ok(utc(2017, 2, 8, 6, 40, 40, 0))
        );
        assert!(parse("2017-02-08T12:10:40+05:30", None, ny).is_err());
        // The manual's format examples.
        let dmy = compile("%d/%m/%Y", false).expect("format");
        assert_eq!(
            parse("15/06/2018", Some(&dmy), Tz::UTC),
            Ok(utc(2018, 6, 15, 0, 0, 0, 0))
        );
        let iso_week = compile("%G-W%V-%u", false).expect("format");
        assert_eq!(
            parse("2018-W24-5", Some(&iso_week), Tz::UTC),
            Ok(utc(2018, 6, 15, 0, 0, 0, 0))
        );
        for bad in [
            "",
            "2017",
            "2017-02",
            "2017-13-01",
            "yesterday",
            "2017-02-08T1",
        ] {
            assert!(parse(bad, None, Tz::UTC).is_err(), "{bad}");
        }
        assert!(parse("06/15/2018", Some(&dmy), Tz::UTC).is_err());
        assert!(parse("15/06/2018 and more", Some(&dmy), Tz::UTC).is_err());
    }

    proptest! {
        #[test]
        fn to_string_and_back_round_trips(
            // From 1950 on: before, some zones kept local mean time, whose offsets have
            // seconds that `%z` does not print.
            t in -631_152_000_000i64..253_000_000_000_000,
            zone in prop::sample::select(vec![
                "UTC", "+05:30", "-08:00", "America/New_York", "Europe/London",
                "Asia/Kathmandu", "Australia/Lord_Howe",
            ]),
        ) {
            let tz = Tz::parse(zone).expect("zone");
            // With its offset the string names the instant whatever the zone.
            let with_offset = compile("%Y-%m-%dT%H:%M:%S.%L%z", true).expect("format");
            let s = format(t, tz, &with_offset).expect("in range");
            let back = compile("%Y-%m-%dT%H:%M:%S.%L%z", false).expect("format");
            prop_assert_eq!(parse(&s, Some(&back), Tz::UTC), Ok(t));
            // The default format is local time: read in the same zone it gives the instant
            // back, except for the local times a zone repeats when its clocks go back.
            let local = format(t, tz, &compile(DEFAULT_ZONED, true).expect("format"))
                .expect("in range");
            let read = parse(&local, None, tz).expect("parses");
            prop_assert!(read == t || tz.offset_at(read) != tz.offset_at(t), "{} {}", local, read);
        }
    }
}
