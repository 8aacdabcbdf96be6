//! Calendar arithmetic on BSON dates (ms since the Unix epoch, UTC), as MongoDB's date
//! expressions (`$dateTrunc`, `$dateAdd`, `$dateDiff`, `$year` ...) compute it: the
//! proleptic Gregorian calendar, in a time zone ([`Tz`]). `format.rs` formats and parses
//! dates (`$dateToString`, `$dateFromString`).

pub(crate) mod format;
pub(crate) mod tz;

pub(crate) use tz::Tz;

/// A unit of time of the date expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Unit {
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

const DAY_MS: i64 = 86_400_000;

/// MongoDB's reference point of `$dateTrunc` bins: 2000-01-01T00:00:00Z (ms).
pub(crate) const REFERENCE_MS: i64 = 946_684_800_000;

impl Unit {
    /// Parses MongoDB's unit names (`"hour"`, `"day"` ...).
    pub(crate) fn parse(s: &str) -> Option<Unit> {
        Some(match s {
            "millisecond" => Unit::Millisecond,
            "second" => Unit::Second,
            "minute" => Unit::Minute,
            "hour" => Unit::Hour,
            "day" => Unit::Day,
            "week" => Unit::Week,
            "month" => Unit::Month,
            "quarter" => Unit::Quarter,
            "year" => Unit::Year,
            _ => return None,
        })
    }

    /// The unit's length in ms when fixed (up to a week), `None` for months, quarters and
    /// years.
    pub(crate) fn fixed_ms(self) -> Option<i64> {
        Some(match self {
            Unit::Millisecond => 1,
            Unit::Second => 1_000,
            Unit::Minute => 60_000,
            Unit::Hour => 3_600_000,
            Unit::Day => DAY_MS,
            Unit::Week => 7 * DAY_MS,
            Unit::Month | Unit::Quarter | Unit::Year => return None,
        })
    }

    /// Months in the unit (months, quarters, years).
    fn months(self) -> i64 {
        match self {
            Unit::Quarter => 3,
            Unit::Year => 12,
            _ => 1,
        }
    }
}

/// Days since 1970-01-01 of a civil date (month 1..=12).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month 1..=12, day 1..=31)` of a day count since 1970-01-01.
pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    let next = if m == 12 {
        days_from_civil(y + 1, 1, 1)
    } else {
        days_from_civil(y, m + 1, 1)
    };
    next - days_from_civil(y, m, 1)
}

/// Months since 2000-01 of a date.
fn month_index(t: i64) -> i64 {
    let (y, m, _) = civil_from_days(t.div_euclid(DAY_MS));
    (y - 2000) * 12 + (m - 1)
}

fn month_start(index: i64) -> Option<i64> {
    let y = 2000 + index.div_euclid(12);
    // Dates of ms in an i64 lie within ±292 million years.
    if y.abs() > 300_000_000 {
        return None;
    }
    let m = index.rem_euclid(12) + 1;
    days_from_civil(y, m, 1).checked_mul(DAY_MS)
}

/// Days since 1970-01-01 of the first day of the week on or after 2000-01-01 (a Saturday) for
/// weeks starting on `start_of_week` (0 = Sunday ... 6 = Saturday).
fn week_reference_day(start_of_week: i64) -> i64 {
    // 2000-01-01 is day 6 of the week (Sunday = 0).
    REFERENCE_MS / DAY_MS + (start_of_week - 6).rem_euclid(7)
}

/// `$dateTrunc`: the start of the bin of `bin_size` units holding `t` in zone `tz`. As in
/// MongoDB, bins are counted from 2000-01-01T00:00 local time (weeks from the first
/// `start_of_week` on or after it): units up to the hour are lengths of absolute time from that
/// instant, days and longer units are counted on the local calendar and start at local
/// midnight. `None` on overflow.
pub(crate) fn trunc(t: i64, unit: Unit, bin_size: i64, start_of_week: i64, tz: Tz) -> Option<i64> {
    if unit <= Unit::Hour {
        let ms = unit.fixed_ms()?;
        let reference = REFERENCE_MS - tz.offset_at(REFERENCE_MS);
        let bin = ms.checked_mul(bin_size)?;
        let offset = t.checked_sub(reference)?;
        return t.checked_sub(offset.rem_euclid(bin));
    }
    let local = tz.local(t);
    let day = local.div_euclid(DAY_MS);
    let start_day = match unit {
        Unit::Day | Unit::Week => {
            let (reference, days) = if unit == Unit::Week {
                (week_reference_day(start_of_week), 7)
            } else {
                (REFERENCE_MS / DAY_MS, 1)
            };
            let bin = bin_size.checked_mul(days)?;
            let from = day.checked_sub(reference)?;
            reference.checked_add(from.checked_sub(from.rem_euclid(bin))?)?
        }
        _ => {
            let index = month_index(local);
            let bin = unit.months().checked_mul(bin_size)?;
            let first = month_start(index.checked_sub(index.rem_euclid(bin))?)?;
            return tz.instant(first);
        }
    };
    tz.instant(start_day.checked_mul(DAY_MS)?)
}

/// `$dateAdd`: `t` plus `amount` units in zone `tz`. Units up to the hour are absolute time;
/// days and weeks move on the local calendar and keep the local time of day (so a day across
/// a daylight-saving change is 23 or 25 hours); months, quarters and years also clamp the day
/// to the end of a shorter month. `None` on overflow.
pub(crate) fn add(t: i64, unit: Unit, amount: i64, tz: Tz) -> Option<i64> {
    if unit <= Unit::Hour {
        return t.checked_add(unit.fixed_ms()?.checked_mul(amount)?);
    }
    let local = tz.local(t);
    let moved = match unit {
        Unit::Day | Unit::Week => local.checked_add(unit.fixed_ms()?.checked_mul(amount)?)?,
        _ => {
            let days = local.div_euclid(DAY_MS);
            let time_of_day = local.rem_euclid(DAY_MS);
            let (y, m, d) = civil_from_days(days);
            let index = (y * 12 + m - 1).checked_add(unit.months().checked_mul(amount)?)?;
            let (ny, nm) = (index.div_euclid(12), index.rem_euclid(12) + 1);
            // Dates of ms in an i64 lie within ±292 million years.
            if ny.abs() > 300_000_000 {
                return None;
            }
            let nd = d.min(days_in_month(ny, nm));
            days_from_civil(ny, nm, nd)
                .checked_mul(DAY_MS)?
                .checked_add(time_of_day)?
        }
    };
    tz.instant(moved)
}

/// `$dateDiff`: how many unit boundaries of zone `tz` lie between `start` and `end` (negative
/// when `end` is earlier). As in MongoDB: milliseconds are the difference of the instants; days
/// and longer units count the boundaries of the local calendar; hours, minutes and seconds count
/// local boundaries corrected by the change of the zone's offset between the two instants (so
/// hours across a daylight-saving change count elapsed hours).
pub(crate) fn diff(start: i64, end: i64, unit: Unit, start_of_week: i64, tz: Tz) -> Option<i64> {
    if unit == Unit::Millisecond {
        return end.checked_sub(start);
    }
    let (oa, ob) = (tz.offset_at(start), tz.offset_at(end));
    let (a, b) = (start.checked_add(oa)?, end.checked_add(ob)?);
    match unit {
        Unit::Second | Unit::Minute | Unit::Hour => {
            let ms = unit.fixed_ms()?;
            Some(b.div_euclid(ms) - a.div_euclid(ms) + (oa - ob) / ms)
        }
        Unit::Day => Some(b.div_euclid(DAY_MS) - a.div_euclid(DAY_MS)),
        Unit::Week => {
            let reference = week_reference_day(start_of_week);
            let week = |l: i64| (l.div_euclid(DAY_MS) - reference).div_euclid(7);
            Some(week(b) - week(a))
        }
        _ => {
            let (a, b) = (month_index(a), month_index(b));
            Some(b.div_euclid(unit.months()) - a.div_euclid(unit.months()))
        }
    }
}

/// The local calendar date and time of an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Civil {
    /// Days since 1970-01-01 (local).
    pub(crate) days: i64,
    pub(crate) year: i64,
    /// 1 ..= 12.
    pub(crate) month: i64,
    /// 1 ..= 31.
    pub(crate) day: i64,
    pub(crate) hour: i64,
    pub(crate) minute: i64,
    pub(crate) second: i64,
    pub(crate) millisecond: i64,
}

impl Civil {
    /// The local date and time of instant `t` (ms) in zone `tz`.
    pub(crate) fn of(t: i64, tz: Tz) -> Civil {
        let local = tz.local(t);
        let days = local.div_euclid(DAY_MS);
        let ms = local.rem_euclid(DAY_MS);
        let (year, month, day) = civil_from_days(days);
        Civil {
            days,
            year,
            month,
            day,
            hour: ms / 3_600_000,
            minute: ms / 60_000 % 60,
            second: ms / 1_000 % 60,
            millisecond: t.rem_euclid(1_000),
        }
    }

    /// 1 = Sunday ... 7 = Saturday.
    pub(crate) fn day_of_week(&self) -> i64 {
        // 1970-01-01 was a Thursday (day 5 counting Sunday as 1).
        (self.days + 4).rem_euclid(7) + 1
    }

    /// 1 ..= 366.
    pub(crate) fn day_of_year(&self) -> i64 {
        self.days - days_from_civil(self.year, 1, 1) + 1
    }

    /// MongoDB's `$week`: 0 ..= 53, weeks starting on Sunday, week 1 starting on the year's
    /// first Sunday.
    pub(crate) fn week(&self) -> i64 {
        (self.day_of_year() - self.day_of_week() + 7) / 7
    }

    /// 1 = Monday ... 7 = Sunday.
    pub(crate) fn iso_day_of_week(&self) -> i64 {
        (self.days + 3).rem_euclid(7) + 1
    }

    /// The ISO 8601 week-numbering year and week (1 ..= 53): the week's Thursday decides.
    pub(crate) fn iso_week(&self) -> (i64, i64) {
        let thursday = self.days + 4 - self.iso_day_of_week();
        let (y, _, _) = civil_from_days(thursday);
        (y, (thursday - days_from_civil(y, 1, 1)) / 7 + 1)
    }
}

/// Days since 1970-01-01 of ISO 8601 day `iso_day` (1 = Monday) of week `week` of
/// week-numbering year `year` (out-of-range weeks and days carried into the next or previous
/// ones).
pub(crate) fn days_from_iso(year: i64, week: i64, iso_day: i64) -> i64 {
    let jan4 = days_from_civil(year, 1, 4);
    let jan4_dow = (jan4 + 3).rem_euclid(7) + 1;
    let week1_monday = jan4 - (jan4_dow - 1);
    week1_monday + (week - 1) * 7 + (iso_day - 1)
}

/// Days since 1970-01-01 of a civil date whose month and day may be out of range (month 14 is
/// February of the next year, day 0 the last day of the previous month), as MongoDB's
/// `$dateFromParts` carries them. `None` out of range.
pub(crate) fn days_from_civil_carried(y: i64, m: i64, d: i64) -> Option<i64> {
    let index = y.checked_mul(12)?.checked_add(m.checked_sub(1)?)?;
    let (y, m) = (index.div_euclid(12), index.rem_euclid(12) + 1);
    if y.abs() > 300_000_000 {
        return None;
    }
    days_from_civil(y, m, 1).checked_add(d.checked_sub(1)?)
}

/// A part of a date (`$year`, `$month` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Year,
    Month,
    DayOfMonth,
    Hour,
    Minute,
    Second,
    Millisecond,
    /// 1 = Sunday ... 7 = Saturday.
    DayOfWeek,
    /// 1 ..= 366.
    DayOfYear,
    /// 0 ..= 53 (weeks start on Sunday).
    Week,
    /// ISO 8601 week, 1 ..= 53.
    IsoWeek,
    /// ISO 8601 week-numbering year.
    IsoWeekYear,
    /// 1 = Monday ... 7 = Sunday.
    IsoDayOfWeek,
}

impl Part {
    /// Parses the operator name (`"$year"` ...).
    pub(crate) fn parse(op: &str) -> Option<Part> {
        Some(match op {
            "$year" => Part::Year,
            "$month" => Part::Month,
            "$dayOfMonth" => Part::DayOfMonth,
            "$hour" => Part::Hour,
            "$minute" => Part::Minute,
            "$second" => Part::Second,
            "$millisecond" => Part::Millisecond,
            "$dayOfWeek" => Part::DayOfWeek,
            "$dayOfYear" => Part::DayOfYear,
            "$week" => Part::Week,
            "$isoWeek" => Part::IsoWeek,
            "$isoWeekYear" => Part::IsoWeekYear,
            "$isoDayOfWeek" => Part::IsoDayOfWeek,
            _ => return None,
        })
    }

    /// The part of date `t` (ms) in zone `tz`.
    pub(crate) fn of(self, t: i64, tz: Tz) -> i64 {
        let c = Civil::of(t, tz);
        match self {
            Part::Year => c.year,
            Part::Month => c.month,
            Part::DayOfMonth => c.day,
            Part::Hour => c.hour,
            Part::Minute => c.minute,
            Part::Second => c.second,
            Part::Millisecond => c.millisecond,
            Part::DayOfWeek => c.day_of_week(),
            Part::DayOfYear => c.day_of_year(),
            Part::Week => c.week(),
            Part::IsoWeek => c.iso_week().1,
            Part::IsoWeekYear => c.iso_week().0,
            Part::IsoDayOfWeek => c.iso_day_of_week(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2021-03-14T15:09:26.535Z
    const T: i64 = 1_615_734_566_535;

    #[test]
    fn civil_dates_round_trip() {
        for days in [-800_000, -1, 0, 1, 10_957, 18_700, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 1, 1) * DAY_MS, REFERENCE_MS);
    }

    #[test]
    fn trunc_add_diff_and_parts_match_the_calendar() {
        let day = days_from_civil(2021, 3, 14) * DAY_MS;
        assert_eq!(trunc(T, Unit::Day, 1, 0, Tz::UTC), Some(day));
        assert_eq!(
            trunc(T, Unit::Hour, 6, 0, Tz::UTC),
            Some(day + 12 * 3_600_000)
        );
        assert_eq!(
            trunc(T, Unit::Month, 1, 0, Tz::UTC),
            Some(days_from_civil(2021, 3, 1) * DAY_MS)
        );
        assert_eq!(
            trunc(T, Unit::Quarter, 1, 0, Tz::UTC),
            Some(days_from_civil(2021, 1, 1) * DAY_MS)
        );
        assert_eq!(
            trunc(T, Unit::Year, 1, 0, Tz::UTC),
            Some(days_from_civil(2021, 1, 1) * DAY_MS)
        );
        // 2021-03-14 is a Sunday; weeks starting Monday begin on the 8th.
        assert_eq!(trunc(T, Unit::Week, 1, 0, Tz::UTC), Some(day));
        assert_eq!(trunc(T, Unit::Week, 1, 1, Tz::UTC), Some(day - 6 * DAY_MS));
        assert_eq!(Part::DayOfWeek.of(T, Tz::UTC), 1);
        assert_eq!(Part::DayOfYear.of(T, Tz::UTC), 31 + 28 + 14);
        assert_eq!(
            (
                Part::Hour.of(T, Tz::UTC),
                Part::Minute.of(T, Tz::UTC),
                Part::Second.of(T, Tz::UTC),
                Part::Millisecond.of(T, Tz::UTC)
            ),
            (15, 9, 26, 535)
        );
        // Jan 31 + 1 month clamps to Feb 28.
        let jan31 = days_from_civil(2021, 1, 31) * DAY_MS;
        assert_eq!(
            add(jan31, Unit::Month, 1, Tz::UTC),
            Some(days_from_civil(2021, 2, 28) * DAY_MS)
        );
        assert_eq!(add(jan31, Unit::Hour, -1, Tz::UTC), Some(jan31 - 3_600_000));
        assert_eq!(diff(jan31, T, Unit::Month, 0, Tz::UTC), Some(2));
        assert_eq!(diff(T - 1, T + 3_600_000, Unit::Hour, 0, Tz::UTC), Some(1));
        // Far out of range: no value, no panic.
        assert_eq!(add(T, Unit::Year, i64::MAX / 12, Tz::UTC), None);
        assert_eq!(add(T, Unit::Month, i64::MAX, Tz::UTC), None);
        assert_eq!(add(T, Unit::Day, i64::MAX, Tz::UTC), None);
        // The bins holding the extreme dates start outside the range (or the offset from 2000
        // overflows): no value, no panic.
        assert_eq!(trunc(i64::MIN, Unit::Year, 1, 0, Tz::UTC), None);
        assert_eq!(trunc(i64::MIN, Unit::Week, 3, 0, Tz::UTC), None);
        assert_eq!(trunc(i64::MIN + 5, Unit::Hour, 1, 0, Tz::UTC), None);
        let year_of_max =
            trunc(i64::MAX, Unit::Year, 1, 0, Tz::UTC).expect("the last year starts in range");
        assert_eq!(
            (
                Part::Month.of(year_of_max, Tz::UTC),
                Part::DayOfMonth.of(year_of_max, Tz::UTC)
            ),
            (1, 1)
        );
    }

    fn at(y: i64, mo: i64, d: i64, h: i64, mi: i64) -> i64 {
        days_from_civil(y, mo, d) * DAY_MS + h * 3_600_000 + mi * 60_000
    }

    fn zone(name: &str) -> Tz {
        Tz::parse(name).expect("zone")
    }

    #[test]
    fn trunc_in_a_zone_starts_local_days_and_counts_hours_from_local_2000() {
        let ny = zone("America/New_York");
        // 2024-03-10 (clocks spring forward): the day starts at 00:00 EST.
        assert_eq!(
            trunc(at(2024, 3, 10, 12, 0), Unit::Day, 1, 0, ny),
            Some(at(2024, 3, 10, 5, 0))
        );
        // 2024-11-03 (clocks fall back): the day starts at 00:00 EDT.
        assert_eq!(
            trunc(at(2024, 11, 3, 12, 0), Unit::Day, 1, 0, ny),
            Some(at(2024, 11, 3, 4, 0))
        );
        // Both 01:30s of 2024-11-03 are in their own hour (hours are absolute time).
        assert_eq!(
            trunc(at(2024, 11, 3, 5, 30), Unit::Hour, 1, 0, ny),
            Some(at(2024, 11, 3, 5, 0))
        );
        assert_eq!(
            trunc(at(2024, 11, 3, 6, 30), Unit::Hour, 1, 0, ny),
            Some(at(2024, 11, 3, 6, 0))
        );
        // Months start at local midnight, in EDT after the change.
        assert_eq!(
            trunc(at(2024, 4, 15, 0, 0), Unit::Month, 1, 0, ny),
            Some(at(2024, 4, 1, 4, 0))
        );
        // Kathmandu is +05:45: its hours start at a quarter past the hour UTC.
        let kathmandu = zone("Asia/Kathmandu");
        assert_eq!(
            trunc(at(2024, 6, 1, 0, 0), Unit::Hour, 1, 0, kathmandu),
            Some(at(2024, 5, 31, 23, 15))
        );
        assert_eq!(
            trunc(at(2024, 6, 1, 0, 0), Unit::Day, 1, 0, kathmandu),
            Some(at(2024, 5, 31, 18, 15))
        );
        // Lord Howe moves 30 minutes (+10:30 to +11:00) on 2024-10-06 at 02:00 local.
        let lord_howe = zone("Australia/Lord_Howe");
        assert_eq!(
            trunc(at(2024, 10, 6, 12, 0), Unit::Day, 1, 0, lord_howe),
            Some(at(2024, 10, 5, 13, 30))
        );
        // A fixed offset: weeks starting Monday, at local midnight.
        assert_eq!(
            trunc(at(2024, 3, 10, 12, 0), Unit::Week, 1, 1, zone("+05:30")),
            Some(at(2024, 3, 3, 18, 30))
        );
    }

    #[test]
    fn add_is_absolute_up_to_hours_and_local_from_days() {
        let ny = zone("America/New_York");
        // 2021-03-13T12:00Z is 07:00 EST; a day later it is 07:00 EDT, 23 hours later.
        assert_eq!(
            add(at(2021, 3, 13, 12, 0), Unit::Day, 1, ny),
            Some(at(2021, 3, 14, 11, 0))
        );
        assert_eq!(
            add(at(2021, 3, 13, 12, 0), Unit::Hour, 24, ny),
            Some(at(2021, 3, 14, 12, 0))
        );
        // MongoDB's own example: an hour after 2020-11-01T05:50:02Z in New York is 06:50:02Z.
        let t = at(2020, 11, 1, 5, 50) + 2_000;
        assert_eq!(add(t, Unit::Hour, 1, ny), Some(t + 3_600_000));
        // Months keep the local time of day across the change, and clamp the day.
        assert_eq!(
            add(at(2024, 3, 1, 5, 0), Unit::Month, 1, ny),
            Some(at(2024, 4, 1, 4, 0))
        );
        assert_eq!(
            add(at(2024, 1, 31, 5, 0), Unit::Month, 1, ny),
            Some(at(2024, 2, 29, 5, 0))
        );
        // Europe/London: a week after a Saturday noon before the change is noon BST.
        assert_eq!(
            add(at(2024, 3, 30, 12, 0), Unit::Week, 1, zone("Europe/London")),
            Some(at(2024, 4, 6, 11, 0))
        );
    }

    #[test]
    fn diff_counts_local_boundaries() {
        let ny = zone("America/New_York");
        // 00:00 EST to 04:00 EDT on 2024-03-10: three hours have passed.
        assert_eq!(
            diff(
                at(2024, 3, 10, 5, 0),
                at(2024, 3, 10, 8, 0),
                Unit::Hour,
                0,
                ny
            ),
            Some(3)
        );
        // Noon to noon across the change is a day, though 23 hours.
        assert_eq!(
            diff(
                at(2024, 3, 9, 17, 0),
                at(2024, 3, 10, 16, 0),
                Unit::Day,
                0,
                ny
            ),
            Some(1)
        );
        // 23:30 to 00:30 local is a day in New York, none in UTC.
        let (a, b) = (at(2024, 6, 2, 3, 30), at(2024, 6, 2, 4, 30));
        assert_eq!(diff(a, b, Unit::Day, 0, ny), Some(1));
        assert_eq!(diff(a, b, Unit::Day, 0, Tz::UTC), Some(0));
        // A year boundary crossed in local time only.
        let (a, b) = (at(2024, 12, 31, 18, 0), at(2024, 12, 31, 18, 30));
        assert_eq!(diff(a, b, Unit::Year, 0, zone("Asia/Kathmandu")), Some(1));
        assert_eq!(
            diff(a, b, Unit::Minute, 0, zone("Asia/Kathmandu")),
            Some(30)
        );
    }

    #[test]
    fn parts_in_a_zone() {
        // The manual's $dateToParts example: 2017-01-01T01:29:09.123Z.
        let t = at(2017, 1, 1, 1, 29) + 9_123;
        let c = Civil::of(t, zone("America/New_York"));
        assert_eq!(
            (
                c.year,
                c.month,
                c.day,
                c.hour,
                c.minute,
                c.second,
                c.millisecond
            ),
            (2016, 12, 31, 20, 29, 9, 123)
        );
        let c = Civil::of(t, Tz::UTC);
        assert_eq!((c.iso_week(), c.iso_day_of_week()), ((2016, 52), 7));
        // The manual's $week / $isoWeek examples: 2014-01-01 (a Wednesday).
        let t = at(2014, 1, 1, 8, 15);
        assert_eq!(Part::Week.of(t, Tz::UTC), 0);
        assert_eq!(Part::IsoWeek.of(t, Tz::UTC), 1);
        assert_eq!(Part::IsoWeekYear.of(t, Tz::UTC), 2014);
        assert_eq!(Part::IsoDayOfWeek.of(t, Tz::UTC), 3);
        assert_eq!(
            Part::Hour.of(at(2024, 7, 1, 12, 0), zone("Europe/London")),
            13
        );
        assert_eq!(
            Part::Hour.of(at(2024, 1, 1, 12, 0), zone("Europe/London")),
            12
        );
        assert_eq!(
            Part::Minute.of(at(2024, 1, 1, 12, 0), zone("Asia/Kathmandu")),
            45
        );
        // ISO week 1 of 2018 starts on Monday 2018-01-01; week 53 of 2020 exists.
        assert_eq!(days_from_iso(2018, 1, 1), days_from_civil(2018, 1, 1));
        assert_eq!(days_from_iso(2020, 53, 5), days_from_civil(2021, 1, 1));
        assert_eq!(
            days_from_civil_carried(2017, 14, 1),
            Some(days_from_civil(2018, 2, 1))
        );
        assert_eq!(
            days_from_civil_carried(2017, 3, 0),
            Some(days_from_civil(2017, 2, 28))
        );
    }

    proptest::proptest! {
        /// In any zone a bin holds its own start, starts at or before the date, and days and
        /// longer units start in the first hour of a local day: at midnight, or where a zone
        /// skipped its midnight, at the first local time after it (Asia/Kathmandu moved from
        /// +05:30 to +05:45 at midnight on 1986-01-01, so that day began at 00:15).
        #[test]
        fn bins_in_zones_start_at_local_boundaries(
            t in 0i64..4_102_444_800_000,
            name in proptest::sample::select(vec![
                "America/New_York", "Europe/London", "Asia/Kathmandu", "Australia/Lord_Howe",
                "-03:30",
            ]),
            unit in proptest::sample::select(vec![
                Unit::Minute, Unit::Hour, Unit::Day, Unit::Week, Unit::Month, Unit::Year,
            ]),
            bin in 1i64..5,
        ) {
            let tz = zone(name);
            let start = trunc(t, unit, bin, 1, tz).expect("in range");
            proptest::prop_assert!(start <= t);
            proptest::prop_assert_eq!(trunc(start, unit, bin, 1, tz), Some(start));
            if unit >= Unit::Day {
                let c = Civil::of(start, tz);
                proptest::prop_assert_eq!(c.hour, 0);
                if (c.hour, c.minute) != (0, 0) {
                    // A skipped midnight: the instant before the start is on the day before.
                    let before = Civil::of(start - 1, tz);
                    proptest::prop_assert!(before.hour == 23, "{before:?} before {c:?}");
                }
                proptest::prop_assert!(diff(start, t, unit, 1, tz).expect("in range") < bin);
            }
        }
    }

    #[test]
    fn every_date_and_unit_gives_a_value_or_none_never_a_panic() {
        let units = [
            Unit::Millisecond,
            Unit::Second,
            Unit::Minute,
            Unit::Hour,
            Unit::Day,
            Unit::Week,
            Unit::Month,
            Unit::Quarter,
            Unit::Year,
        ];
        let mut times = vec![
            i64::MIN,
            i64::MIN + 1,
            -DAY_MS - 1,
            -1,
            0,
            1,
            T,
            i64::MAX - 1,
            i64::MAX,
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            times.push(x as i64);
        }
        for &t in &times {
            for &unit in &units {
                for bin in [1, 3, 7, 1000, i64::MAX] {
                    if let Some(start) = trunc(t, unit, bin, 1, Tz::UTC) {
                        assert!(start <= t, "{unit:?} x{bin} of {t}: {start}");
                    }
                }
                for amount in [-1, 1, 12, i64::MIN, i64::MAX] {
                    let _ = add(t, unit, amount, Tz::UTC);
                }
                let _ = diff(t, T, unit, 0, Tz::UTC);
                let _ = diff(T, t, unit, 3, Tz::UTC);
                for tz in [
                    zone("America/New_York"),
                    zone("Asia/Kathmandu"),
                    zone("-14:00"),
                ] {
                    let _ = trunc(t, unit, 3, 1, tz);
                    let _ = add(t, unit, -13, tz);
                    let _ = diff(t, T, unit, 2, tz);
                    let _ = Civil::of(t, tz).iso_week();
                }
            }
            let _ = Part::DayOfYear.of(t, Tz::UTC);
            assert!((1..=7).contains(&Part::DayOfWeek.of(t, Tz::UTC)));
        }
    }
}
