//! Time zones of the date expressions: MongoDB's `timezone` argument, an Olson name of the IANA
//! database (`"America/New_York"`, `"UTC"`, case-sensitive) or a UTC offset (`"+05"`,
//! `"+0530"`, `"+05:30"`, `"-08:00"`). Names are resolved with `chrono-tz`, whose database is
//! compiled in.

use chrono::{DateTime, LocalResult, Offset, TimeZone};

/// A time zone: a fixed offset from UTC or a zone of the IANA database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tz {
    /// A fixed offset east of UTC, in ms (UTC is `Fixed(0)`).
    Fixed(i64),
    /// A zone of the IANA database, whose offset depends on the instant.
    Named(chrono_tz::Tz),
}

/// The instants chrono can represent are within ±262,000 years; the offsets of a zone
/// outside ±200,000 years are those at the bounds.
const LOOKUP_BOUND_MS: i64 = 200_000 * 365 * 86_400_000;

const DAY_MS: i64 = 86_400_000;

impl Tz {
    /// UTC.
    pub(crate) const UTC: Tz = Tz::Fixed(0);

    /// Parses MongoDB's `timezone` argument; `None` when it is neither a zone name nor an
    /// offset `±HH`, `±HHMM` or `±HH:MM`.
    pub(crate) fn parse(s: &str) -> Option<Tz> {
        if let Some(offset) = parse_offset(s) {
            return Some(Tz::Fixed(offset));
        }
        match s.parse::<chrono_tz::Tz>() {
            Ok(chrono_tz::Tz::UTC | chrono_tz::Tz::Etc__UTC) => Some(Tz::UTC),
            Ok(tz) => Some(Tz::Named(tz)),
            Err(_) => None,
        }
    }

    /// Whether the zone is UTC.
    pub(crate) fn is_utc(self) -> bool {
        self == Tz::UTC
    }

    /// The zone's offset from UTC (ms, east positive) at instant `t` (ms since the epoch).
    pub(crate) fn offset_at(self, t: i64) -> i64 {
        match self {
            Tz::Fixed(ms) => ms,
            Tz::Named(tz) => {
                let t = t.clamp(-LOOKUP_BOUND_MS, LOOKUP_BOUND_MS);
                DateTime::from_timestamp_millis(t).map_or(0, |d| {
                    i64::from(
                        tz.offset_from_utc_datetime(&d.naive_utc())
                            .fix()
                            .local_minus_utc(),
                    ) * 1_000
                })
            }
        }
    }

    /// The local time of instant `t`, as ms since 1970-01-01T00:00 local (saturating at the
    /// ends of the range).
    pub(crate) fn local(self, t: i64) -> i64 {
        t.saturating_add(self.offset_at(t))
    }

    /// The instant of local time `local` (ms since 1970-01-01T00:00 local). A local time that
    /// occurs twice (the hour repeated when daylight-saving time ends) is the earlier instant;
    /// one that does not occur (skipped when it starts) is read with the offset in force
    /// before the change, so it lands as far after the change as it is after the skipped
    /// hour's start (02:30 on the day New York springs forward is 03:30 EDT). `None` when out
    /// of range.
    pub(crate) fn instant(self, local: i64) -> Option<i64> {
        match self {
            Tz::Fixed(ms) => local.checked_sub(ms),
            Tz::Named(tz) => {
                let clamped = local.clamp(-LOOKUP_BOUND_MS, LOOKUP_BOUND_MS);
                let naive = DateTime::from_timestamp_millis(clamped)?.naive_utc();
                let offset = match tz.offset_from_local_datetime(&naive) {
                    LocalResult::Single(o) => seconds_ms(o.fix().local_minus_utc()),
                    LocalResult::Ambiguous(a, b) => {
                        let (a, b) = (
                            seconds_ms(a.fix().local_minus_utc()),
                            seconds_ms(b.fix().local_minus_utc()),
                        );
                        a.max(b)
                    }
                    // A gap: the offset a day before (every zone's changes are days apart).
                    LocalResult::None => self.offset_at(clamped - DAY_MS),
                };
                local.checked_sub(offset)
            }
        }
    }
}

fn seconds_ms(s: i32) -> i64 {
    i64::from(s) * 1_000
}

/// A UTC offset `±HH`, `±HHMM` or `±HH:MM`, in ms.
fn parse_offset(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let sign = match b.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        (part.bytes().all(|c| c.is_ascii_digit())).then(|| part.parse().ok())?
    };
    let (h, m) = match b.len() {
        3 => (digits(1..3)?, 0),
        5 => (digits(1..3)?, digits(3..5)?),
        6 if b[3] == b':' => (digits(1..3)?, digits(4..6)?),
        _ => return None,
    };
    Some(sign * (h * 3_600_000 + m * 60_000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mql::dates::days_from_civil;

    fn utc(y: i64, mo: i64, d: i64, h: i64, mi: i64) -> i64 {
        days_from_civil(y, mo, d) * DAY_MS + h * 3_600_000 + mi * 60_000
    }

    #[test]
    fn offsets_and_names_parse_as_mongodb_reads_them() {
        assert_eq!(Tz::parse("+05"), Some(Tz::Fixed(5 * 3_600_000)));
        assert_eq!(Tz::parse("+0530"), Some(Tz::Fixed(19_800_000)));
        assert_eq!(Tz::parse("+05:30"), Some(Tz::Fixed(19_800_000)));
        assert_eq!(Tz::parse("-08:00"), Some(Tz::Fixed(-8 * 3_600_000)));
        assert_eq!(Tz::parse("UTC"), Some(Tz::UTC));
        assert!(matches!(Tz::parse("Asia/Kathmandu"), Some(Tz::Named(_))));
        for bad in [
            "",
            "+5",
            "+05:3",
            "05:30",
            "+05-30",
            "Mars/Olympus",
            "america/new_york",
        ] {
            assert_eq!(Tz::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn offsets_follow_daylight_saving_time() {
        let ny = Tz::parse("America/New_York").expect("zone");
        // 2024-03-10: 02:00 EST becomes 03:00 EDT at 07:00Z.
        assert_eq!(ny.offset_at(utc(2024, 3, 10, 6, 59)), -5 * 3_600_000);
        assert_eq!(ny.offset_at(utc(2024, 3, 10, 7, 0)), -4 * 3_600_000);
        // 2024-11-03: 02:00 EDT becomes 01:00 EST at 06:00Z.
        assert_eq!(ny.offset_at(utc(2024, 11, 3, 5, 59)), -4 * 3_600_000);
        assert_eq!(ny.offset_at(utc(2024, 11, 3, 6, 0)), -5 * 3_600_000);
        let kathmandu = Tz::parse("Asia/Kathmandu").expect("zone");
        assert_eq!(kathmandu.offset_at(utc(2024, 6, 1, 0, 0)), 20_700_000);
        let lord_howe = Tz::parse("Australia/Lord_Howe").expect("zone");
        // +10:30 in winter, +11:00 in summer (a 30-minute change).
        assert_eq!(lord_howe.offset_at(utc(2024, 6, 1, 0, 0)), 37_800_000);
        assert_eq!(lord_howe.offset_at(utc(2024, 12, 1, 0, 0)), 39_600_000);
        // Far dates: the offsets at the bounds, no panic.
        let _ = ny.offset_at(i64::MIN);
        let _ = ny.offset_at(i64::MAX);
        let _ = ny.instant(i64::MIN);
        assert_eq!(ny.instant(i64::MAX), None);
    }

    #[test]
    fn local_times_map_back_to_instants() {
        let ny = Tz::parse("America/New_York").expect("zone");
        let local = |y, mo, d, h, mi| utc(y, mo, d, h, mi);
        // Midnight of an ordinary day.
        assert_eq!(
            ny.instant(local(2024, 3, 10, 0, 0)),
            Some(utc(2024, 3, 10, 5, 0))
        );
        // 02:30 does not exist on 2024-03-10: read as EST, 07:30Z (03:30 EDT).
        assert_eq!(
            ny.instant(local(2024, 3, 10, 2, 30)),
            Some(utc(2024, 3, 10, 7, 30))
        );
        // 01:30 occurs twice on 2024-11-03: the earlier, EDT (05:30Z).
        assert_eq!(
            ny.instant(local(2024, 11, 3, 1, 30)),
            Some(utc(2024, 11, 3, 5, 30))
        );
        let london = Tz::parse("Europe/London").expect("zone");
        // 2024-03-31 01:30 is skipped in London (01:00 GMT becomes 02:00 BST).
        assert_eq!(
            london.instant(local(2024, 3, 31, 1, 30)),
            Some(utc(2024, 3, 31, 1, 30))
        );
        assert_eq!(
            london.local(utc(2024, 7, 1, 12, 0)),
            local(2024, 7, 1, 13, 0)
        );
    }
}
