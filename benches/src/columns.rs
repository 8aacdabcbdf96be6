//! Deterministic synthetic columns, one generator per [`ColumnKind`].
//!
//! [`generate`] builds a column of `n` rows shaped like the real data each kind stands for
//! (minute timestamps, 5-minute logger timestamps with jitter, traded volumes, temperatures,
//! GPS coordinates, computed decimals with floating-point noise, sensor signals, wind
//! directions, earthquake titles). The same `(kind, n, seed)` always gives the same column,
//! bit for bit, with no dependency on a random-number crate: the generator is a hand-written
//! splitmix64.

use tscoll_codec::{Column, tag};

use crate::rng::SplitMix64;

pub use crate::codec::ColumnKind;

/// 2013-03-01T00:00:00Z in milliseconds since the Unix epoch: the first timestamp of the
/// timestamp kinds (for seed 0).
pub const START_MS: i64 = 1_362_067_200_000;

/// Interval of [`ColumnKind::TimestampsRegular`], in milliseconds (one minute).
pub const REGULAR_STEP_MS: i64 = 60_000;

/// Nominal interval of [`ColumnKind::TimestampsIrregular`], in milliseconds (five minutes);
/// actual intervals carry jitter of up to ±6 s and occasional gaps of whole intervals.
pub const IRREGULAR_STEP_MS: i64 = 300_000;

/// The 16 compass points, in clockwise order from north: the values of
/// [`ColumnKind::StringsTags`] columns.
pub const COMPASS: [&str; 16] = [
    "N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW",
    "NNW",
];

/// Shortest value of a [`ColumnKind::StringsText`] column, in bytes.
pub const TEXT_MIN_LEN: usize = 20;

/// Longest value of a [`ColumnKind::StringsText`] column, in bytes.
pub const TEXT_MAX_LEN: usize = 80;

/// One row in this many is missing (a skip) in the numeric kinds other than timestamps, on
/// average.
pub const MISSING_ONE_IN: u64 = 100;

/// A deterministic column of `n` rows of `kind`, from `seed`.
///
/// Shapes, per kind (all values deterministic for `(kind, n, seed)`):
///
/// * [`ColumnKind::TimestampsRegular`]: dates (ms since the epoch), starting at [`START_MS`]
///   plus `seed % 1024` minutes, every [`REGULAR_STEP_MS`]; no missing rows.
/// * [`ColumnKind::TimestampsIrregular`]: dates on a [`IRREGULAR_STEP_MS`] grid, about half of
///   them jittered by up to ±6 s, one interval in 100 followed by a gap of 1 to 12 intervals;
///   strictly increasing, no missing rows.
/// * [`ColumnKind::Integers`]: traded volumes, a random walk around a few thousand with one
///   value in 40 a heavy-tailed (Pareto) spike up to 10¹²; int32 where the value fits, int64
///   otherwise; about 1 % missing.
/// * [`ColumnKind::FloatsDec4`]: temperatures in °C with 2 decimals (`12.34`, `12.3`), a
///   random walk in hundredths between −40 and 45; a whole value is stored as int32 (as a
///   JSON loader does); about 1 % missing.
/// * [`ColumnKind::FloatsDec5To10`]: latitudes with 7 decimals (`37.7749123`), a random walk
///   in units of 10⁻⁷ degrees; about 1 % missing.
/// * [`ColumnKind::FloatsNoisy`]: prices with 3 decimals between 0.5 and 50, each moved 1 or 2
///   ulps up or down (`1.7320000000000002`), as arithmetic on decimals leaves them; about 1 %
///   missing.
/// * [`ColumnKind::FloatsFull`]: a sensor signal, sums of sines and cosines of a randomly
///   advancing phase plus a Gaussian random walk, at full double precision; about 1 % missing.
/// * [`ColumnKind::StringsTags`]: wind directions, one of the 16 [`COMPASS`] points, turning
///   by at most one point a row.
/// * [`ColumnKind::StringsText`]: earthquake titles such as `"M 1.2 - 10 km NE of Cobb, CA"`,
///   [`TEXT_MIN_LEN`] to [`TEXT_MAX_LEN`] bytes of ASCII.
#[must_use]
pub fn generate(kind: ColumnKind, n: usize, seed: u64) -> Column {
    let mut rng = SplitMix64::new(seed ^ kind_salt(kind));
    let mut col = Column::with_capacity(n);
    match kind {
        ColumnKind::TimestampsRegular => timestamps_regular(&mut col, n, seed),
        ColumnKind::TimestampsIrregular => timestamps_irregular(&mut col, n, seed, &mut rng),
        ColumnKind::Integers => integers(&mut col, n, &mut rng),
        ColumnKind::FloatsDec4 => floats_dec4(&mut col, n, &mut rng),
        ColumnKind::FloatsDec5To10 => floats_dec7(&mut col, n, &mut rng),
        ColumnKind::FloatsNoisy => floats_noisy(&mut col, n, &mut rng),
        ColumnKind::FloatsFull => floats_full(&mut col, n, &mut rng),
        ColumnKind::StringsTags => strings_tags(&mut col, n, &mut rng),
        ColumnKind::StringsText => strings_text(&mut col, n, &mut rng),
    }
    debug_assert_eq!(col.len(), n);
    col
}

/// The raw size of a column's values, in bytes: 8 per int or double (missing rows count 0)
/// plus the payload bytes of strings and other bytes-lane values. The unit of the codec
/// benches' throughput.
#[must_use]
pub fn raw_bytes(col: &Column) -> u64 {
    8 * (col.ints().len() + col.floats().len()) as u64 + col.bytes().len() as u64
}

/// Makes the same seed give unrelated streams for different kinds.
fn kind_salt(kind: ColumnKind) -> u64 {
    let index = ColumnKind::ALL
        .iter()
        .position(|&k| k == kind)
        .unwrap_or_default() as u64;
    (index + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
}

fn timestamps_regular(col: &mut Column, n: usize, seed: u64) {
    let start = START_MS + (seed % 1024) as i64 * REGULAR_STEP_MS;
    for i in 0..n as i64 {
        col.push_int(tag::DATETIME, start + i * REGULAR_STEP_MS);
    }
}

fn timestamps_irregular(col: &mut Column, n: usize, seed: u64, rng: &mut SplitMix64) {
    let mut slot = (seed % 1024) as i64;
    for _ in 0..n {
        // A logger that wakes every 5 minutes, on time about half of the time.
        let jitter = if rng.one_in(2) {
            0
        } else {
            rng.range(-6_000, 6_000)
        };
        col.push_int(tag::DATETIME, START_MS + slot * IRREGULAR_STEP_MS + jitter);
        slot += 1;
        if rng.one_in(100) {
            // Lost samples: the link was down for up to an hour.
            slot += rng.range(1, 12);
        }
    }
}

fn integers(col: &mut Column, n: usize, rng: &mut SplitMix64) {
    let mut level: i64 = rng.range(1_000, 5_000);
    for _ in 0..n {
        if rng.one_in(MISSING_ONE_IN) {
            col.push_missing();
            continue;
        }
        level = (level + rng.range(-50, 50)).clamp(0, 50_000);
        let mut value = level + rng.range(0, level / 4);
        if rng.one_in(40) {
            // Block trades: Pareto with shape 0.9 (infinite mean), scale 10^4, capped at 10^12.
            let spike = (1e4 / rng.unit().powf(1.0 / 0.9)).min(1e12);
            value += spike as i64;
        }
        match i32::try_from(value) {
            Ok(v) => col.push_int(tag::INT32, i64::from(v)),
            Err(_) => col.push_int(tag::INT64, value),
        }
    }
}

/// Pushes `digits / 10^decimals`: int32 when it is whole (as a loader of `12` rather than
/// `12.0` writes it), otherwise the double nearest to the decimal.
fn push_decimal(col: &mut Column, digits: i64, decimals: u32) {
    let scale = 10i64.pow(decimals);
    if digits % scale == 0
        && let Ok(v) = i32::try_from(digits / scale)
    {
        col.push_int(tag::INT32, i64::from(v));
    } else {
        // Both operands are exact, so the quotient is the correctly rounded decimal.
        col.push_float(digits as f64 / scale as f64);
    }
}

fn floats_dec4(col: &mut Column, n: usize, rng: &mut SplitMix64) {
    let mut hundredths = rng.range(-500, 2_500);
    for _ in 0..n {
        if rng.one_in(MISSING_ONE_IN) {
            col.push_missing();
            continue;
        }
        hundredths = (hundredths + rng.range(-25, 25)).clamp(-4_000, 4_500);
        push_decimal(col, hundredths, 2);
    }
}

fn floats_dec7(col: &mut Column, n: usize, rng: &mut SplitMix64) {
    // A vehicle moving around 37.77° N, in units of 1e-7 degrees (about 1 cm).
    let mut units = rng.range(377_000_000, 378_000_000);
    for _ in 0..n {
        if rng.one_in(MISSING_ONE_IN) {
            col.push_missing();
            continue;
        }
        units += rng.range(-2_000, 2_000);
        push_decimal(col, units, 7);
    }
}

fn floats_noisy(col: &mut Column, n: usize, rng: &mut SplitMix64) {
    let mut thousandths = rng.range(1_000, 20_000);
    for _ in 0..n {
        if rng.one_in(MISSING_ONE_IN) {
            col.push_missing();
            continue;
        }
        thousandths = (thousandths + rng.range(-40, 40)).clamp(500, 50_000);
        let exact = (thousandths as f64 / 1e3).to_bits();
        // Positive values: adding to the bits moves up by that many ulps.
        let ulps = rng.range(1, 2) as u64;
        let noisy = if rng.one_in(2) {
            exact + ulps
        } else {
            exact - ulps
        };
        col.push_float(f64::from_bits(noisy));
    }
}

fn floats_full(col: &mut Column, n: usize, rng: &mut SplitMix64) {
    let mut phase = rng.unit() * std::f64::consts::TAU;
    let mut drift = 0.0f64;
    for _ in 0..n {
        if rng.one_in(MISSING_ONE_IN) {
            col.push_missing();
            continue;
        }
        phase += 0.01 + 0.005 * rng.unit();
        drift += 0.05 * rng.gauss();
        col.push_float(20.0 * phase.sin() + 3.0 * (3.7 * phase).cos() + drift);
    }
}

fn strings_tags(col: &mut Column, n: usize, rng: &mut SplitMix64) {
    let mut point = rng.below(16) as usize;
    for _ in 0..n {
        // Veer or back by one point now and then.
        point = match rng.below(8) {
            0 => (point + 1) % 16,
            1 => (point + 15) % 16,
            _ => point,
        };
        col.push_bytes(tag::STRING, COMPASS[point].as_bytes());
    }
}

/// `(place, region)` of the earthquake titles.
const PLACES: [(&str, &str); 30] = [
    ("Volcano", "Hawaii"),
    ("Pahala", "Hawaii"),
    ("Ridgecrest", "CA"),
    ("The Geysers", "CA"),
    ("Anza", "CA"),
    ("Cobb", "CA"),
    ("Petrolia", "CA"),
    ("Ferndale", "CA"),
    ("Nikiski", "Alaska"),
    ("Sand Point", "Alaska"),
    ("Kodiak", "Alaska"),
    ("Stanley", "Idaho"),
    ("Pawnee", "Oklahoma"),
    ("Ocotillo Wells", "CA"),
    ("Borrego Springs", "CA"),
    ("Mammoth Lakes", "CA"),
    ("Yellowstone National Park", "Wyoming"),
    ("San Juan Bautista", "CA"),
    ("Tres Pinos", "CA"),
    ("Aguanga", "CA"),
    ("Luwuk", "Indonesia"),
    ("Hachinohe", "Japan"),
    ("Ovalle", "Chile"),
    ("Lata", "Solomon Islands"),
    ("Port-Olry", "Vanuatu"),
    ("Namie", "Japan"),
    ("Whites City", "New Mexico"),
    ("Toyah", "Texas"),
    ("Mentone", "Texas"),
    ("Ain Sefra", "Algeria"),
];

/// Offshore regions, titled without a nearby place.
const REGIONS: [&str; 8] = [
    "south of the Fiji Islands",
    "South Sandwich Islands region",
    "Kermadec Islands region",
    "northern Mid-Atlantic Ridge",
    "southern East Pacific Rise",
    "Andreanof Islands, Aleutian Islands, Alaska",
    "central Mid-Atlantic Ridge",
    "Near Islands, Aleutian Islands, Alaska",
];

fn strings_text(col: &mut Column, n: usize, rng: &mut SplitMix64) {
    let mut title = String::with_capacity(TEXT_MAX_LEN);
    for _ in 0..n {
        // Gutenberg–Richter: magnitudes fall off exponentially, most are small.
        let tenths = (5.0 - 9.0 * rng.unit().ln()).min(80.0) as i64;
        let magnitude = format!("{}.{}", tenths / 10, tenths % 10);
        title.clear();
        if tenths >= 45 && rng.one_in(2) {
            title.push_str(&format!(
                "M {magnitude} - {}",
                REGIONS[rng.below(REGIONS.len() as u64) as usize]
            ));
        } else {
            let event = match rng.below(40) {
                0 => " Quarry Blast",
                1 => " Explosion",
                _ => "",
            };
            let km = rng.range(0, 150);
            let dir = COMPASS[rng.below(16) as usize];
            let (place, region) = PLACES[rng.below(PLACES.len() as u64) as usize];
            title.push_str(&format!(
                "M {magnitude}{event} - {km} km {dir} of {place}, {region}"
            ));
        }
        debug_assert!((TEXT_MIN_LEN..=TEXT_MAX_LEN).contains(&title.len()));
        col.push_bytes(tag::STRING, title.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use tscoll_codec::ValueRef;

    use super::*;

    const N: usize = 10_000;

    /// Whether `v` is exactly the double nearest to a decimal with `decimals` fraction digits.
    fn is_decimal(v: f64, decimals: i32) -> bool {
        let p = 10f64.powi(decimals);
        (v * p).round() / p == v
    }

    /// Distance in ulps from `v` to the nearest double of the decimal with `decimals` fraction
    /// digits closest to it (positive `v`).
    fn ulps_from_decimal(v: f64, decimals: i32) -> u64 {
        let p = 10f64.powi(decimals);
        let d = (v * p).round() / p;
        v.to_bits().abs_diff(d.to_bits())
    }

    fn floats(col: &Column) -> Vec<f64> {
        col.floats().to_vec()
    }

    fn strings(col: &Column) -> Vec<&str> {
        col.iter()
            .map(|v| match v {
                ValueRef::Bytes(tag::STRING, b) => std::str::from_utf8(b).unwrap(),
                other => panic!("not a string: {other:?}"),
            })
            .collect()
    }

    fn deltas(col: &Column) -> Vec<i64> {
        col.ints().windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn missing(col: &Column) -> usize {
        col.types().iter().filter(|&&t| t == tag::MISSING).count()
    }

    #[test]
    fn deterministic_and_seed_dependent() {
        for kind in ColumnKind::ALL {
            let a = generate(kind, 1000, 42);
            assert!(a.bitwise_eq(&generate(kind, 1000, 42)), "{kind}");
            assert!(!a.bitwise_eq(&generate(kind, 1000, 43)), "{kind}");
        }
    }

    #[test]
    fn length_is_n_and_prefix_stable() {
        for kind in ColumnKind::ALL {
            for n in [0, 1, 2, 999, 1000, 4096] {
                assert_eq!(generate(kind, n, 7).len(), n, "{kind} n={n}");
            }
            // A shorter column is a prefix of a longer one (one stream per seed).
            let long = generate(kind, 500, 7);
            let short = generate(kind, 100, 7);
            assert!(long.iter().take(100).eq(short.iter()), "{kind}");
        }
    }

    #[test]
    fn regular_timestamps_have_one_delta() {
        let col = generate(ColumnKind::TimestampsRegular, N, 3);
        assert!(col.types().iter().all(|&t| t == tag::DATETIME));
        let distinct: HashSet<i64> = deltas(&col).into_iter().collect();
        assert_eq!(distinct, HashSet::from([REGULAR_STEP_MS]));
        assert_eq!(col.ints()[0], START_MS + 3 * REGULAR_STEP_MS);
    }

    #[test]
    fn irregular_timestamps_increase_with_varied_deltas() {
        let col = generate(ColumnKind::TimestampsIrregular, N, 3);
        assert!(col.types().iter().all(|&t| t == tag::DATETIME));
        let deltas = deltas(&col);
        assert!(deltas.iter().all(|&d| d > 0));
        let mut counts: HashMap<i64, usize> = HashMap::new();
        for &d in &deltas {
            *counts.entry(d).or_default() += 1;
        }
        // Not regular by the kind's definition (< 95 % of one interval) ...
        let top = counts.values().max().copied().unwrap();
        assert!(top * 100 < deltas.len() * 95, "top {top}");
        // ... but the nominal interval is still the most common, and there are gaps.
        assert_eq!(counts[&IRREGULAR_STEP_MS], top);
        assert!(deltas.iter().any(|&d| d >= 2 * IRREGULAR_STEP_MS - 12_000));
        assert!(counts.len() > 100);
    }

    #[test]
    fn integers_are_heavy_tailed_int32_and_int64() {
        let col = generate(ColumnKind::Integers, N, 5);
        assert!(col.floats().is_empty() && col.bytes().is_empty());
        let types: HashSet<u8> = col.types().iter().copied().collect();
        assert!(types.is_subset(&HashSet::from([tag::INT32, tag::INT64, tag::MISSING])));
        let ints = col.ints();
        assert!(ints.iter().all(|&v| v >= 0));
        let mut sorted = ints.to_vec();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2];
        let max = *sorted.last().unwrap();
        // Heavy tail: the largest value is orders of magnitude above the typical one, and the
        // largest 1 % of the values hold over a tenth of the total (a light tail: about 1 %).
        assert!(max > 100 * median, "median {median} max {max}");
        let total: i64 = sorted.iter().sum();
        let top: i64 = sorted[sorted.len() * 99 / 100..].iter().sum();
        assert!(top * 10 > total, "top 1 % {top} of {total}");
        // int64 exactly where int32 does not fit.
        for (t, v) in col.iter().filter_map(|v| match v {
            ValueRef::Int(t, v) => Some((t, v)),
            _ => None,
        }) {
            assert_eq!(t == tag::INT64, i32::try_from(v).is_err(), "{v}");
        }
    }

    #[test]
    fn dec4_values_have_at_most_4_decimals_and_whole_ones_are_int32() {
        let col = generate(ColumnKind::FloatsDec4, N, 11);
        let values = floats(&col);
        assert!(values.iter().all(|&v| is_decimal(v, 4)));
        // Truly 2 decimals, not fewer.
        assert!(values.iter().any(|&v| !is_decimal(v, 1)));
        assert!(values.iter().all(|&v| v.fract() != 0.0));
        assert!(!col.ints().is_empty());
        assert!(
            col.types()
                .iter()
                .all(|&t| matches!(t, tag::DOUBLE | tag::INT32 | tag::MISSING))
        );
        assert!(values.iter().all(|&v| (-40.0..=45.0).contains(&v)));
    }

    #[test]
    fn dec7_values_have_5_to_10_decimals() {
        let col = generate(ColumnKind::FloatsDec5To10, N, 13);
        let values = floats(&col);
        assert!(values.iter().all(|&v| is_decimal(v, 7)));
        // Most need more than 4 decimals (a tenth of them have exactly 6, and so on).
        let long = values.iter().filter(|&&v| !is_decimal(v, 4)).count();
        assert!(long * 100 > values.len() * 99, "{long}");
    }

    #[test]
    fn noisy_values_are_within_2_ulps_of_a_decimal_but_not_on_it() {
        let col = generate(ColumnKind::FloatsNoisy, N, 17);
        let values = floats(&col);
        assert!(!values.is_empty());
        for &v in &values {
            assert!(
                (0..=10).all(|k| !is_decimal(v, k)),
                "{v:?} is a short decimal"
            );
            let ulps = ulps_from_decimal(v, 3);
            assert!((1..=2).contains(&ulps), "{v:?} is {ulps} ulps off");
        }
        // Both directions of noise occur (`…0000002` and `…9999998`).
        let shown: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
        assert!(shown.iter().any(|s| s.contains("0000000")));
        assert!(shown.iter().any(|s| s.contains("9999999")));
    }

    #[test]
    fn full_precision_values_are_not_near_a_short_decimal() {
        let col = generate(ColumnKind::FloatsFull, N, 19);
        let values = floats(&col);
        for &v in &values {
            assert!(v.is_finite());
            let ulps = (0..=6)
                .map(|k| ulps_from_decimal(v.abs(), k))
                .min()
                .unwrap();
            assert!(ulps > 2, "{v:?} is {ulps} ulps from a short decimal");
        }
        let distinct: HashSet<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(distinct.len(), values.len());
    }

    #[test]
    fn numeric_kinds_have_about_one_percent_missing() {
        for kind in [
            ColumnKind::Integers,
            ColumnKind::FloatsDec4,
            ColumnKind::FloatsDec5To10,
            ColumnKind::FloatsNoisy,
            ColumnKind::FloatsFull,
        ] {
            let m = missing(&generate(kind, N, 23));
            assert!((N / 300..=N / 30).contains(&m), "{kind}: {m} missing");
        }
        for kind in [
            ColumnKind::TimestampsRegular,
            ColumnKind::TimestampsIrregular,
            ColumnKind::StringsTags,
            ColumnKind::StringsText,
        ] {
            assert_eq!(missing(&generate(kind, N, 23)), 0, "{kind}");
        }
    }

    #[test]
    fn tags_are_compass_points() {
        let col = generate(ColumnKind::StringsTags, N, 29);
        let values = strings(&col);
        let distinct: HashSet<&str> = values.iter().copied().collect();
        assert!(distinct.len() <= 16 && distinct.len() > 4, "{distinct:?}");
        assert!(distinct.iter().all(|s| COMPASS.contains(s)));
    }

    #[test]
    fn text_is_varied_and_bounded() {
        let col = generate(ColumnKind::StringsText, N, 31);
        let values = strings(&col);
        assert!(values.iter().all(|s| s.starts_with("M ")));
        assert!(
            values
                .iter()
                .all(|s| (TEXT_MIN_LEN..=TEXT_MAX_LEN).contains(&s.len())),
        );
        let distinct: HashSet<&str> = values.iter().copied().collect();
        assert!(distinct.len() > N / 2, "{}", distinct.len());
        let lens: HashSet<usize> = values.iter().map(|s| s.len()).collect();
        assert!(lens.len() > 20);
    }

    #[test]
    fn raw_bytes_counts_values() {
        let col = generate(ColumnKind::FloatsDec4, 1000, 1);
        let present = 1000 - missing(&col);
        assert_eq!(raw_bytes(&col), 8 * present as u64);
        let text = generate(ColumnKind::StringsText, 1000, 1);
        assert_eq!(raw_bytes(&text), text.bytes().len() as u64);
    }
}
