//! Times written as text or numbers, read as BSON dates: RFC 3339 (and its common
//! relaxations), seconds to nanoseconds since the Unix epoch, or a layout, given as a
//! strftime format (`%d/%m/%Y %H:%M`, chrono's dialect) or, for `mongoimport`'s typed CSV
//! headers, as a Go layout (`2006-01-02 15:04:05`), a Microsoft one (`yyyy-MM-dd HH:mm:ss`)
//! or an Oracle one (`YYYY-MM-DD HH24:MI:SS`), each turned into the strftime format it
//! stands for.
//!
//! A layout without an offset reads its times as UTC, and one without a time of day as
//! midnight UTC.

use bson::{Bson, DateTime, Document};
use chrono::format::{Item, StrftimeItems};

/// Units of epoch times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EpochUnit {
    /// Seconds, possibly with a fraction.
    Seconds,
    /// Milliseconds.
    Millis,
    /// Microseconds.
    Micros,
    /// Nanoseconds.
    Nanos,
}

/// How a time is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TimeFormat {
    /// RFC 3339 (`2016-05-02T00:00:00Z`, `2016-05-02T08:00:00+08:00`); also accepted: a space
    /// instead of `T`, no offset (taken as UTC), a bare date (midnight UTC) and an ISO 8601
    /// expanded year, a sign and four or more digits (`+010000-01-01T00:00:00.000Z`,
    /// `-000001-12-31T00:00:00Z`: what `find --format csv` writes outside the years 0 to 9999).
    Rfc3339,
    /// A number of units since the Unix epoch (an integer, or for seconds a decimal), kept to
    /// the millisecond (rounded down).
    Epoch(EpochUnit),
    /// A strftime format (chrono's dialect), checked when it is made.
    Layout(String),
}

/// The names `--time-format` takes besides a strftime format.
const NAMES: &str = "rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns, or a strftime format such \
                     as '%d/%m/%Y %H:%M:%S'";

impl TimeFormat {
    /// Parses a format name: `rfc3339` (`iso8601`), `epoch-s`, `epoch-ms`, `epoch-us`,
    /// `epoch-ns`, or a strftime format (any text with a `%`).
    ///
    /// # Errors
    /// Any other name, or a strftime format chrono does not know.
    pub(crate) fn parse(name: &str) -> Result<TimeFormat, String> {
        Ok(match name {
            "rfc3339" | "iso8601" => TimeFormat::Rfc3339,
            "epoch-s" => TimeFormat::Epoch(EpochUnit::Seconds),
            "epoch-ms" => TimeFormat::Epoch(EpochUnit::Millis),
            "epoch-us" => TimeFormat::Epoch(EpochUnit::Micros),
            "epoch-ns" => TimeFormat::Epoch(EpochUnit::Nanos),
            layout if layout.contains('%') => TimeFormat::layout(layout)?,
            other => return Err(format!("unknown time format '{other}' (expected {NAMES})")),
        })
    }

    /// A strftime format.
    ///
    /// # Errors
    /// A directive chrono does not know.
    pub(crate) fn layout(format: &str) -> Result<TimeFormat, String> {
        if StrftimeItems::new(format).any(|item| matches!(item, Item::Error)) {
            return Err(format!("'{format}' is not a valid strftime format"));
        }
        Ok(TimeFormat::Layout(format.to_owned()))
    }

    /// The format of a `mongoimport` typed header: `date(LAYOUT)` and `date_go(LAYOUT)` (Go),
    /// `date_ms(LAYOUT)` (Microsoft) and `date_oracle(LAYOUT)` (Oracle); `kind` is the type
    /// name and `layout` the argument.
    ///
    /// # Errors
    /// An unknown kind, or a layout that does not convert.
    pub(crate) fn typed_header(kind: &str, layout: &str) -> Result<TimeFormat, String> {
        let strftime = match kind {
            "date" | "date_go" => from_tokens(layout, GO, false),
            "date_ms" => from_tokens(layout, MICROSOFT, false),
            "date_oracle" => from_tokens(layout, ORACLE, true),
            other => return Err(format!("'{other}' is not a date type")),
        };
        TimeFormat::layout(&strftime).map_err(|_| format!("{kind}({layout}) is not a layout"))
    }

    /// Reads a time written as text.
    ///
    /// # Errors
    /// The text is not a time of this format; the message quotes it and names the format.
    pub(crate) fn parse_time(&self, text: &str) -> Result<DateTime, String> {
        let text = text.trim();
        let bad = || format!("cannot parse time '{text}' as {}", self.name());
        match self {
            TimeFormat::Rfc3339 => parse_rfc3339_lenient(text).ok_or_else(bad),
            TimeFormat::Epoch(unit) => {
                if let Ok(n) = text.parse::<i64>() {
                    return epoch_ms(*unit, n)
                        .map(DateTime::from_millis)
                        .ok_or_else(bad);
                }
                let ms = match unit {
                    EpochUnit::Seconds => text.parse::<f64>().map_err(|_| bad())? * 1000.0,
                    _ => return Err(bad()),
                };
                // The range check also rejects NaN and the infinities.
                if (-9.0e18..9.0e18).contains(&ms) {
                    #[expect(clippy::cast_possible_truncation, reason = "range checked")]
                    Ok(DateTime::from_millis(ms.round() as i64))
                } else {
                    Err(bad())
                }
            }
            TimeFormat::Layout(format) => parse_layout(text, format).ok_or_else(bad),
        }
    }

    /// Field `field` of `doc` as a date: a string read with this format, or for an epoch
    /// format a number; a date stays as it is, and a document without the field is left as
    /// it is (the insert reports it).
    ///
    /// # Errors
    /// The value is not a time of this format, or of a type no format reads; the message
    /// names the field.
    pub(crate) fn read_field(&self, doc: &mut Document, field: &str) -> Result<(), String> {
        let Some(value) = doc.get_mut(field) else {
            return Ok(());
        };
        let number = match value {
            Bson::DateTime(_) => return Ok(()),
            Bson::String(text) => {
                *value = Bson::DateTime(
                    self.parse_time(text)
                        .map_err(|e| format!("'{field}': {e}"))?,
                );
                return Ok(());
            }
            Bson::Int32(n) => n.to_string(),
            Bson::Int64(n) => n.to_string(),
            Bson::Double(x) => x.to_string(),
            other => {
                return Err(format!(
                    "'{field}' is a {:?}, not a time (a date, a string or an epoch number)",
                    other.element_type()
                ));
            }
        };
        if !matches!(self, TimeFormat::Epoch(_)) {
            return Err(format!(
                "'{field}' is a number ({number}), not a time as {} (epoch-s, epoch-ms, \
                 epoch-us and epoch-ns read numbers)",
                self.name()
            ));
        }
        *value = Bson::DateTime(
            self.parse_time(&number)
                .map_err(|e| format!("'{field}': {e}"))?,
        );
        Ok(())
    }

    /// The format's name, for messages.
    pub(crate) fn name(&self) -> String {
        match self {
            TimeFormat::Rfc3339 => "rfc3339".to_owned(),
            TimeFormat::Epoch(EpochUnit::Seconds) => "epoch-s".to_owned(),
            TimeFormat::Epoch(EpochUnit::Millis) => "epoch-ms".to_owned(),
            TimeFormat::Epoch(EpochUnit::Micros) => "epoch-us".to_owned(),
            TimeFormat::Epoch(EpochUnit::Nanos) => "epoch-ns".to_owned(),
            TimeFormat::Layout(format) => format!("'{format}'"),
        }
    }
}

/// `n` units since the epoch in ms (rounded down); `None` out of range.
fn epoch_ms(unit: EpochUnit, n: i64) -> Option<i64> {
    match unit {
        EpochUnit::Seconds => n.checked_mul(1000),
        EpochUnit::Millis => Some(n),
        EpochUnit::Micros => Some(n.div_euclid(1000)),
        EpochUnit::Nanos => Some(n.div_euclid(1_000_000)),
    }
}

/// RFC 3339, plus the common relaxations and expanded years listed at
/// [`TimeFormat::Rfc3339`].
fn parse_rfc3339_lenient(text: &str) -> Option<DateTime> {
    if let Ok(t) = DateTime::parse_rfc3339_str(text) {
        return Some(t);
    }
    if let Some(unsigned) = text.strip_prefix(['+', '-']) {
        return parse_expanded_year(text.starts_with('-'), unsigned);
    }
    let mut s = text.to_owned();
    if s.len() == 10 {
        s.push_str("T00:00:00");
    }
    if s.as_bytes().get(10) == Some(&b' ') {
        s.replace_range(10..11, "T");
    }
    let time_part = s.get(11..).unwrap_or("");
    let has_offset = time_part.ends_with(['Z', 'z']) || time_part.contains(['+', '-']);
    if !has_offset {
        s.push('Z');
    }
    DateTime::parse_rfc3339_str(&s).ok()
}

/// A time with an ISO 8601 expanded year: `unsigned` is the text after the sign, four or more
/// digits of year, then the rest of an RFC 3339 time (relaxed as
/// [`parse_rfc3339_lenient`]). `None` when it is not one, or is outside the dates' range.
fn parse_expanded_year(negative: bool, unsigned: &str) -> Option<DateTime> {
    /// Days in 400 Gregorian years: the calendar repeats after them.
    const CYCLE_MS: i128 = 146_097 * 86_400_000;
    let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    if digits < 4 {
        return None;
    }
    let (year, rest) = unsigned.split_at(digits);
    let year: i64 = year.parse().ok()?;
    let year = if negative { -year } else { year };
    // The same day of a year from 2000 to 2399, moved by whole 400-year cycles.
    let cycles = year.div_euclid(400) - 5;
    let same = parse_rfc3339_lenient(&format!("{}{rest}", year.rem_euclid(400) + 2000))?;
    let ms = i128::from(same.timestamp_millis()) + i128::from(cycles) * CYCLE_MS;
    i64::try_from(ms).ok().map(DateTime::from_millis)
}

/// `text` read with strftime `format`: with an offset, as a local time and date without
/// one (UTC), or as a date alone (midnight UTC).
fn parse_layout(text: &str, format: &str) -> Option<DateTime> {
    let ms = if let Ok(t) = chrono::DateTime::parse_from_str(text, format) {
        t.timestamp_millis()
    } else if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, format) {
        t.and_utc().timestamp_millis()
    } else {
        chrono::NaiveDate::parse_from_str(text, format)
            .ok()?
            .and_hms_opt(0, 0, 0)?
            .and_utc()
            .timestamp_millis()
    };
    Some(DateTime::from_millis(ms))
}

/// A layout's tokens and the strftime directives they stand for, longest first where one is
/// the start of another.
type Tokens = &'static [(&'static str, &'static str)];

/// Go's reference time `Mon Jan 2 15:04:05 MST 2006` (package `time`).
const GO: Tokens = &[
    ("January", "%B"),
    ("Jan", "%b"),
    ("Monday", "%A"),
    ("Mon", "%a"),
    ("2006", "%Y"),
    ("-07:00:00", "%:z"),
    ("-070000", "%z"),
    ("-07:00", "%:z"),
    ("-0700", "%z"),
    ("-07", "%#z"),
    ("Z07:00", "%#z"),
    ("Z0700", "%#z"),
    ("Z07", "%#z"),
    ("002", "%j"),
    ("01", "%m"),
    ("02", "%d"),
    ("03", "%I"),
    ("04", "%M"),
    ("05", "%S"),
    ("06", "%y"),
    ("_2", "%e"),
    ("15", "%H"),
    (".000000000", "%.9f"),
    (".000000", "%.6f"),
    (".000", "%.3f"),
    (".999999999", "%.f"),
    (".999999", "%.f"),
    (".999", "%.f"),
    ("1", "%m"),
    ("2", "%d"),
    ("3", "%I"),
    ("4", "%M"),
    ("5", "%S"),
    ("PM", "%p"),
    ("pm", "%P"),
];

/// .NET custom date and time format strings (SQL Server's `FORMAT`).
const MICROSOFT: Tokens = &[
    ("yyyy", "%Y"),
    ("yy", "%y"),
    ("MMMM", "%B"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("M", "%m"),
    ("dddd", "%A"),
    ("ddd", "%a"),
    ("dd", "%d"),
    ("d", "%d"),
    ("HH", "%H"),
    ("H", "%H"),
    ("hh", "%I"),
    ("h", "%I"),
    ("mm", "%M"),
    ("m", "%M"),
    ("ss", "%S"),
    ("s", "%S"),
    ("fffffffff", "%.9f"),
    ("ffffff", "%.6f"),
    ("fff", "%.3f"),
    ("tt", "%p"),
    ("zzz", "%:z"),
    ("zz", "%#z"),
    ("z", "%#z"),
];

/// Oracle datetime format models (`TO_DATE`), matched in any case.
const ORACLE: Tokens = &[
    ("YYYY", "%Y"),
    ("YY", "%y"),
    ("MONTH", "%B"),
    ("MON", "%b"),
    ("MM", "%m"),
    ("DAY", "%A"),
    ("DDD", "%j"),
    ("DD", "%d"),
    ("DY", "%a"),
    ("HH24", "%H"),
    ("HH12", "%I"),
    ("HH", "%I"),
    ("MI", "%M"),
    ("SS", "%S"),
    ("FF9", "%.9f"),
    ("FF6", "%.6f"),
    ("FF3", "%.3f"),
    ("FF", "%.f"),
    ("AM", "%p"),
    ("PM", "%p"),
    ("TZH:TZM", "%:z"),
    ("TZHTZM", "%z"),
];

/// The strftime format of `layout` written with `tokens` (matched in any case when
/// `any_case`); any other character is literal (as `T` in `2006-01-02T15:04:05`). A `.` or
/// `,` before fractional seconds belongs to them.
fn from_tokens(layout: &str, tokens: Tokens, any_case: bool) -> String {
    let mut out = String::with_capacity(layout.len() * 2);
    let mut rest = layout;
    while let Some(c) = rest.chars().next() {
        let found = tokens.iter().find(|(token, _)| {
            rest.get(..token.len()).is_some_and(|head| {
                if any_case {
                    head.eq_ignore_ascii_case(token)
                } else {
                    head == *token
                }
            })
        });
        if let Some((token, directive)) = found {
            // `%.3f` reads its own dot: a separator just before it goes.
            if directive.starts_with("%.") && (out.ends_with('.') || out.ends_with(',')) {
                out.pop();
            }
            out.push_str(directive);
            rest = &rest[token.len()..];
            continue;
        }
        if c == '%' {
            out.push('%');
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(format: &TimeFormat, text: &str) -> Result<i64, String> {
        format.parse_time(text).map(|t| t.timestamp_millis())
    }

    #[test]
    fn names_epochs_and_strftime() {
        let at = 1_462_147_200_000; // 2016-05-02T00:00:00Z
        let f = |name: &str| TimeFormat::parse(name).expect(name);
        assert_eq!(ms(&f("rfc3339"), "2016-05-02"), Ok(at));
        assert_eq!(ms(&f("epoch-s"), "1462147200.5"), Ok(at + 500));
        assert_eq!(ms(&f("epoch-ms"), &at.to_string()), Ok(at));
        assert_eq!(ms(&f("epoch-us"), "1462147200000999"), Ok(at));
        assert_eq!(ms(&f("epoch-ns"), "1462147200001000000"), Ok(at + 1));
        assert_eq!(
            ms(&f("%d/%m/%Y %H:%M"), "02/05/2016 00:01"),
            Ok(at + 60_000)
        );
        assert_eq!(ms(&f("%d/%m/%Y"), "02/05/2016"), Ok(at));
        assert_eq!(
            ms(&f("%Y-%m-%d %H:%M:%S%z"), "2016-05-02 02:00:00+0200"),
            Ok(at)
        );
        let e = ms(&f("%d/%m/%Y"), "2016-05-02").expect_err("other layout");
        assert_eq!(e, "cannot parse time '2016-05-02' as '%d/%m/%Y'");
        let e = TimeFormat::parse("unix").expect_err("unknown");
        assert!(e.contains("epoch-ns") && e.contains("strftime"), "{e}");
        assert!(TimeFormat::parse("%Q").is_err());
        let mut doc = bson::doc! { "a": "2016-05-02", "b": 1_462_147_200_i64, "c": 1.5, "d": true };
        let date = |ms| Some(Bson::DateTime(DateTime::from_millis(ms)));
        f("rfc3339").read_field(&mut doc, "a").expect("string");
        assert_eq!(doc.get("a").cloned(), date(at));
        f("rfc3339")
            .read_field(&mut doc, "a")
            .expect("a date stays");
        let e = f("rfc3339")
            .read_field(&mut doc, "b")
            .expect_err("a number");
        assert!(e.starts_with("'b' is a number (1462147200)"), "{e}");
        f("epoch-s").read_field(&mut doc, "b").expect("epoch");
        assert_eq!(doc.get("b").cloned(), date(at));
        f("epoch-s").read_field(&mut doc, "c").expect("fraction");
        assert_eq!(doc.get("c").cloned(), date(1500));
        assert!(f("epoch-s").read_field(&mut doc, "d").is_err());
        f("epoch-s")
            .read_field(&mut doc, "missing")
            .expect("left to the insert");
        let e = f("%d/%m/%Y")
            .read_field(&mut bson::doc! { "t": "x" }, "t")
            .expect_err("bad");
        assert_eq!(e, "'t': cannot parse time 'x' as '%d/%m/%Y'");
    }

    #[test]
    fn mongoimport_layouts() {
        let at = 865_265_040_000; // 1997-06-02T15:24:00Z
        let layout = |kind: &str, l: &str| TimeFormat::typed_header(kind, l).expect(l);
        let cases = [
            ("date", "2006-01-02 15:04:05", "1997-06-02 15:24:00"),
            ("date_go", "Jan _2, 2006 3:04PM", "Jun  2, 1997 3:24PM"),
            (
                "date",
                "2006/01/02T15:04:05.000Z07:00",
                "1997/06/02T17:24:00.000+02:00",
            ),
            ("date_ms", "yyyy-MM-dd HH:mm:ss", "1997-06-02 15:24:00"),
            ("date_ms", "dd/MM/yyyy hh:mm tt", "02/06/1997 03:24 PM"),
            (
                "date_oracle",
                "Month dd, yyyy HH24:mi:ss",
                "June 02, 1997 15:24:00",
            ),
            (
                "date_oracle",
                "YYYY-MM-DD HH24:MI:SS.FF3",
                "1997-06-02 15:24:00.000",
            ),
        ];
        for (kind, l, text) in cases {
            assert_eq!(ms(&layout(kind, l), text), Ok(at), "{kind}({l}) {text}");
        }
        assert_eq!(
            ms(&layout("date", "2006/01/02"), "1997/06/02"),
            Ok(at - 55_440_000)
        );
        let iso = layout("date", "2006-01-02T15:04:05Z07:00");
        assert_eq!(ms(&iso, "1997-06-02T15:24:00Z"), Ok(at));
        assert_eq!(ms(&iso, "1997-06-02T16:24:00+01:00"), Ok(at));
        let e = ms(&layout("date", "2006-01-02"), "02/06/1997").expect_err("other layout");
        assert_eq!(e, "cannot parse time '02/06/1997' as '%Y-%m-%d'");
    }
}
