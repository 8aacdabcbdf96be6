//! Finding multipliers for the float lane's [`crate::FloatEncoding::Mult`] encoding: stretches
//! of values that are integer multiples of one base, up to a few units in the last place.
//!
//! Such values come from arithmetic on decimals: an adjusted stock price is the price in cents
//! times a split or dividend factor that stays constant between corporate actions; a reading
//! converted between units is a decimal times the conversion factor. Their bits look random,
//! but `value = m × base + adjustment` with a small integer `m` and an adjustment of a few ulps
//! costs the bits of `m` and of the adjustment instead of a full mantissa (after pcodec's
//! `FloatMult` mode, which keeps one base per chunk; here the base may change where the factor
//! does, as in a dividend-adjusted series).
//!
//! The base of a stretch is found from a few of its values with an approximate Euclidean
//! algorithm that carries an error bound through every step (values are trusted to 48 bits,
//! then, if no base shows, to 40 bits: twelve significant digits), then refined by least
//! squares over the stretch. The layout is in `docs/format.md` ("Float lane").

/// One stretch of values sharing a base: rows `start..` up to the next segment's start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Segment {
    /// First row of the stretch.
    pub start: usize,
    /// Every value of the stretch is `(m as f64) * base`, then adjusted by a few ulps.
    pub base: f64,
}

/// Values whose base is searched for at the start of a segment.
const SAMPLE_LEN: usize = 16;

/// Values [`probe_bits_per_value`] looks at.
const PROBE_LEN: usize = 128;

/// Values of the sample a base search may start from.
const ANCHORS: usize = 3;

/// Values looked ahead to choose how coarse a segment's base may be.
const COARSEN_WINDOW: usize = 64;

/// Bits an exception costs, about: its position and its raw bits.
const EXCEPTION_BITS: f64 = 80.0;

/// Fewest sampled values (finite, non-zero) a base is searched among.
const MIN_SAMPLE: usize = 4;

/// Relative errors trusted in each value, tried in turn: values exact to 48 bits (a price
/// rounded to 12 decimals), then to 40 bits (twelve significant digits).
const VALUE_ERRORS: [f64; 2] = [1.0 / (1u64 << 48) as f64, 1.0 / (1u64 << 40) as f64];

/// Relative difference within which two values' proposals for a base agree (values trusted to
/// 40 bits agree to about 2^-40; a value that is no multiple is off by about `1 / m`).
const AGREEMENT: f64 = 1.0 / (1u64 << 36) as f64;

/// Relative rounding error of one floating-point operation.
const MACHINE_EPSILON: f64 = f64::EPSILON;

/// A value fits a base when the bit lengths of its multiplier and of its adjustment add up to
/// at most this many (a full mantissa is 52 bits: a fit saves at least 8).
const FIT_BITS: u32 = 44;

/// `2^52 + 2^51`, for rounding to an integer by an add and a subtraction.
const ROUNDER: f64 = 6_755_399_441_055_744.0;

/// Largest `k` by which a segment's base may be divided when a value is a multiple of
/// `base / k` only.
const MAX_SUBDIVISION: f64 = 64.0;

/// Widest adjustment of a value that fits, in bits (values trusted to 40 bits are within
/// 2^13 ulps of their multiple).
const MAX_ADJUSTMENT_BITS: u32 = 16;

/// Most multiplier bit length (so `m as f64` is exact and `m` far from overflowing).
const MAX_MULT_BITS: u32 = 50;

/// `m = round(x / base)` for a value and its adjustment in ulps (`bits(x) − bits(m·base)`,
/// wrapping), computed exactly as the decoder reverses it. `None` for a value without a
/// usable multiplier (not finite, or `|x / base|` at or beyond 2^50).
#[inline]
fn split(x: f64, base: f64, inv_base: f64) -> Option<(i64, i64)> {
    let q = x * inv_base;
    if q.is_nan() || q.abs() >= (1u64 << MAX_MULT_BITS) as f64 {
        return None;
    }
    // Round to nearest without a libm call: for |q| < 2^51, adding and subtracting 2^52 + 2^51
    // rounds (ties to even; the decoder never rounds, so any rounding would do).
    let m = ((q + ROUNDER) - ROUNDER) as i64;
    Some((m, adjustment(x, m, base)))
}

/// `bits(x) − bits(m·base)`, wrapping, as a signed number of ulps.
#[inline]
fn adjustment(x: f64, m: i64, base: f64) -> i64 {
    x.to_bits().wrapping_sub(((m as f64) * base).to_bits()) as i64
}

/// `(m, adjustment)` of `x` (see [`split`]) if it fits `base` well enough to be worth a
/// multiplier: an adjustment below 2^16 ulps and at least 8 bits saved over a full mantissa
/// (see [`FIT_BITS`]). A value that does not fit its segment is stored as an exception.
#[inline]
pub(crate) fn fits(x: f64, base: f64, inv_base: f64) -> Option<(i64, i64)> {
    let (m, adj) = split(x, base, inv_base)?;
    let adj_bits = bit_len(adj.unsigned_abs());
    (adj_bits <= MAX_ADJUSTMENT_BITS && bit_len(m.unsigned_abs()) + adj_bits <= FIT_BITS)
        .then_some((m, adj))
}

/// Bits a fitting value costs in the estimates: its multiplier's delta and its adjustment,
/// with a sign bit each.
fn value_bits(delta: u64, adj: i64) -> usize {
    2 + bit_len(delta) as usize + bit_len(adj.unsigned_abs()) as usize
}

#[inline]
fn bit_len(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// A value with an absolute error bound, through the approximate Euclidean algorithm.
#[derive(Clone, Copy, Debug)]
struct Approx {
    value: f64,
    err: f64,
}

impl Approx {
    fn with_error(x: f64, relative: f64) -> Self {
        Approx {
            value: x.abs(),
            err: x.abs() * relative,
        }
    }
}

/// The greatest common divisor of two approximate positive reals: the last non-zero remainder
/// of the Euclidean algorithm, where a remainder within its error bound counts as zero. `None`
/// when the remainders sink into their error bounds first (the two share no base that leaves
/// their multipliers below about 2^40).
fn approx_gcd(a: Approx, b: Approx) -> Option<Approx> {
    let (mut hi, mut lo) = if a.value >= b.value { (a, b) } else { (b, a) };
    // Each step at least halves the larger value: 64 steps exhaust any f64 ratio in range.
    for _ in 0..64 {
        if lo.value.is_nan() || lo.value <= 0.0 {
            return None;
        }
        let q = (hi.value / lo.value).round();
        let rem = Approx {
            value: (hi.value - q * lo.value).abs(),
            err: hi.err + q * lo.err + hi.value * MACHINE_EPSILON,
        };
        if rem.value <= rem.err {
            return Some(lo);
        }
        // A remainder of the same order as its error carries no information.
        if rem.value <= 64.0 * rem.err {
            return None;
        }
        hi = lo;
        lo = rem;
    }
    None
}

/// A base that the first [`MIN_SAMPLE`] values of `sample`, or three quarters of them, are
/// multiples of, or `None`. The search starts from each of the first [`ANCHORS`] values in
/// turn, so one odd value at the start does not hide the base of the rest.
fn find_base(sample: &[f64]) -> Option<f64> {
    let mut finite = [0.0f64; SAMPLE_LEN];
    let mut count = 0usize;
    for &x in sample {
        if x.is_finite()
            && x != 0.0
            && let Some(slot) = finite.get_mut(count)
        {
            *slot = x;
            count += 1;
        }
    }
    let finite = finite.get(..count)?;
    // Trusting the values to more bits first finds bases with larger multipliers (prices in
    // hundredths of a cent); when that fails, the values may be less exact than that.
    VALUE_ERRORS.iter().find_map(|&relative| {
        let mut values = [Approx {
            value: 0.0,
            err: 0.0,
        }; SAMPLE_LEN];
        for (slot, &x) in values.iter_mut().zip(finite) {
            *slot = Approx::with_error(x, relative);
        }
        (0..ANCHORS.min(count)).find_map(|a| base_from_anchor(values.get(a..count)?, sample))
    })
}

/// The base found from `values[0]` (the anchor) and the values after it that share a base with
/// it, if enough of `sample` fits it (see [`find_base`]).
fn base_from_anchor(values: &[Approx], sample: &[f64]) -> Option<f64> {
    let (anchor, rest) = values.split_first()?;
    let mut gcd: Option<Approx> = None;
    for (i, &v) in rest.iter().enumerate() {
        // An anchor that shares a base with none of the next few values is given up (most
        // doubles share none: this is where their search ends, cheaply).
        if gcd.is_none() && i == MIN_SAMPLE {
            return None;
        }
        let current = gcd.unwrap_or(*anchor);
        let Some(g) = approx_gcd(current, v) else {
            continue;
        };
        // The error bound grows with every step of the algorithm; the base is known far better
        // as the anchor divided by its multiplier.
        let m = (anchor.value / g.value).round();
        // The first divisor may be any (two multipliers share any factor); a later one divides
        // it by a small integer, or the value is no multiple of the same base.
        let shrinks_too_far = gcd.is_some() && g.value * MAX_SUBDIVISION < current.value;
        if m < 1.0 || m >= (1u64 << MAX_MULT_BITS) as f64 || shrinks_too_far {
            continue;
        }
        gcd = Some(Approx {
            value: anchor.value / m,
            err: anchor.err / m + g.value * MACHINE_EPSILON,
        });
    }
    let base = refine_sample(gcd?.value, anchor.value, sample);
    let inv = 1.0 / base;
    let fitting = sample
        .iter()
        .filter(|&&x| fits(x, base, inv).is_some())
        .count();
    let prefix = sample
        .iter()
        .take_while(|&&x| fits(x, base, inv).is_some())
        .count();
    let enough = prefix >= MIN_SAMPLE || fitting * 2 >= sample.len();
    (base.is_finite() && base > 0.0 && enough).then_some(base)
}

/// The base of a sample made exact to its last bits: the values whose proposal `x / m` (with
/// `m` the nearest multiple of `base`) agrees with the anchor's to 2^-36 (a value that is no
/// multiple is off by about `1 / m`) give the least-squares base `Σ m·x / Σ m²` (or `base`
/// when none does).
fn refine_sample(base: f64, anchor: f64, sample: &[f64]) -> f64 {
    let proposal = anchor / (anchor / base).round();
    let agreeing = sample.iter().filter_map(|&x| {
        let x = x.abs();
        let m = (x / proposal).round();
        (m >= 1.0
            && m < (1u64 << MAX_MULT_BITS) as f64
            && (x / m - proposal).abs() <= proposal * AGREEMENT)
            .then_some((m, x))
    });
    least_squares(agreeing).unwrap_or(base)
}

/// The base `Σ m·x / Σ m²` of `(m, x)` pairs, if positive and finite.
fn least_squares(pairs: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    let (mx, mm) = pairs.fold((0.0f64, 0.0f64), |(mx, mm), (m, x)| {
        (mx + m * x, mm + m * m)
    });
    let base = mx / mm;
    (base.is_finite() && base > 0.0).then_some(base)
}

/// `k · base` for the `k` (1, or a common ratio between price ticks and cents, 2 to 100)
/// that saves the most bits over the values `ahead` that fit `base`: `log2 k` bits of every
/// multiplier divisible by `k`, against [`EXCEPTION_BITS`] for every other (it becomes an
/// exception, or makes the segment divide its base again).
fn coarsest(base: f64, ahead: &[f64]) -> f64 {
    let inv = 1.0 / base;
    let mut mults = [0i64; COARSEN_WINDOW];
    let mut count = 0usize;
    for &x in ahead {
        if let Some((m, _)) = fits(x, base, inv)
            && let Some(slot) = mults.get_mut(count)
        {
            *slot = m;
            count += 1;
        }
    }
    // How many multipliers each k divides, from each one's power of two and remainder by 25.
    let mults = mults.get(..count).unwrap_or_default();
    let mut divisible = [0usize; COARSER.len()];
    for &m in mults {
        let twos = m.trailing_zeros();
        let r25 = m % 25;
        for (slot, &(_, pow2, pow5)) in divisible.iter_mut().zip(&COARSER) {
            let fives = match pow5 {
                0 => true,
                1 => r25 % 5 == 0,
                _ => r25 == 0,
            };
            *slot += usize::from(twos >= pow2 && fives);
        }
    }
    let mut best = (0.0f64, 1.0f64);
    for (&fit, &(k, _, _)) in divisible.iter().zip(&COARSER) {
        let saved = fit as f64 * k.log2() - (count - fit) as f64 * EXCEPTION_BITS;
        if saved > best.0 {
            best = (saved, k);
        }
    }
    base * best.1
}

/// Coarser bases tried, as `(k, powers of 2 in k, powers of 5 in k)`: the ratios between
/// price ticks (sixteenths, eighths, quarters, halves) and cents.
const COARSER: [(f64, u32, u32); 12] = [
    (2.0, 1, 0),
    (4.0, 2, 0),
    (5.0, 0, 1),
    (8.0, 3, 0),
    (10.0, 1, 1),
    (16.0, 4, 0),
    (20.0, 2, 1),
    (25.0, 0, 2),
    (32.0, 5, 0),
    (50.0, 1, 2),
    (64.0, 6, 0),
    (100.0, 2, 2),
];

/// The least-squares base over the values of a segment that fit `base` (or `base` when none
/// does): a base found from a few values, made exact to the last bits by all of them.
fn refine_fitting(base: f64, values: &[f64]) -> f64 {
    let inv = 1.0 / base;
    let fitting = values
        .iter()
        .filter_map(|&x| fits(x, base, inv).map(|(m, _)| (m as f64, x)));
    least_squares(fitting).unwrap_or(base)
}

/// `base / k` for a small `k ≥ 2` when `x` fits it though not `base` (the segment's values so
/// far were all multiples of `k` times the true base).
fn finer_base(base: f64, x: f64) -> Option<f64> {
    if !x.is_finite() || x == 0.0 {
        return None;
    }
    let relative = VALUE_ERRORS[1];
    let gcd = approx_gcd(
        Approx::with_error(base, relative),
        Approx::with_error(x, relative),
    )?;
    let k = (base / gcd.value).round();
    if !(2.0..=MAX_SUBDIVISION).contains(&k) {
        return None;
    }
    let finer = base / k;
    fits(x, finer, 1.0 / finer).map(|_| finer)
}

/// Whether a finer base is needed by a quarter of the next [`SAMPLE_LEN`] values (a value
/// only it fits costs an exception, about ten bytes; the finer base costs `log2 k` bits of every
/// later multiplier).
fn needed_often(ahead: &[f64], base: f64, finer: f64) -> bool {
    let (inv, finer_inv) = (1.0 / base, 1.0 / finer);
    let window = ahead.get(..SAMPLE_LEN).unwrap_or(ahead);
    let needing = window
        .iter()
        .filter(|&&x| fits(x, base, inv).is_none() && fits(x, finer, finer_inv).is_some())
        .count();
    needing * 4 >= window.len()
}

/// Segments of `values` with their bases, or `None` when the values are not mostly multiples
/// of bases (then the Mult encoding is not worth trying). Segments start at row 0 and are in
/// increasing order. A value that does not fit its segment's base is an exception; two in a
/// row end the segment, and the next one starts where a new base is found (until then, the
/// values are exceptions of the segment before).
pub(crate) fn segments(values: &[f64]) -> Option<Vec<Segment>> {
    let n = values.len();
    if n < MIN_SAMPLE {
        return None;
    }
    // A new base costs its search and about ten bytes: at most one per 32 values, and as
    // many failed searches.
    let max_segments = n / 32 + 1;
    let mut searches = 2 * max_segments;
    let mut segments: Vec<Segment> = Vec::new();
    // The open segment: its start and base.
    let mut open: Option<(usize, f64)> = None;
    let mut at = 0usize;
    let mut misfits = 0usize;
    while at < n {
        searches = searches.checked_sub(1)?;
        let sample = values.get(at..n.min(at + SAMPLE_LEN))?;
        let ahead = values.get(at..n.min(at + COARSEN_WINDOW))?;
        let mut base = match (find_base(sample), open) {
            (Some(base), _) => {
                if let Some((start, base)) = open {
                    segments.push(Segment {
                        start,
                        base: refine_fitting(base, values.get(start..at)?),
                    });
                }
                if segments.len() == max_segments {
                    return None;
                }
                let base = coarsest(base, ahead);
                open = Some((at, base));
                base
            }
            // No base here: the value is an exception of the open segment, which goes on.
            (None, Some((_, base))) => {
                misfits += 1;
                at += 1;
                base
            }
            (None, None) => return None,
        };
        let mut inv = 1.0 / base;
        let first = at;
        while let Some(&x) = values.get(at) {
            let mut fit = fits(x, base, inv);
            if fit.is_none()
                && let Some(finer) = finer_base(base, x)
                && needed_often(values.get(at..).unwrap_or_default(), base, finer)
            {
                // Prices in sixteenths of a dollar, then in cents: the base was a multiple.
                base = finer;
                inv = 1.0 / base;
                if let Some((_, open_base)) = open.as_mut() {
                    *open_base = base;
                }
                fit = fits(x, base, inv);
            }
            if fit.is_none() {
                let next_fits = values
                    .get(at + 1)
                    .is_some_and(|&y| fits(y, base, inv).is_some());
                if !next_fits && at > first {
                    break;
                }
                misfits += 1;
            }
            at += 1;
        }
    }
    let (start, base) = open?;
    segments.push(Segment {
        start,
        base: refine_fitting(base, values.get(start..)?),
    });
    // Mostly multiples, or the encoding would mostly carry exceptions.
    (misfits * 4 <= n).then_some(segments)
}

/// Bits a value of `values` would take in the Mult encoding, about, judged from the first
/// segment's base over the values up to its end (at most [`PROBE_LEN`]): a search costs as
/// much as encoding, so a lane whose start does not promise to win is not searched. `None`
/// when its start shows no base.
pub(crate) fn probe_bits_per_value(values: &[f64]) -> Option<f64> {
    let base = find_base(values.get(..values.len().min(SAMPLE_LEN))?)?;
    let inv = 1.0 / base;
    let (mut bits, mut count, mut fitted, mut misses) = (0usize, 0usize, 0usize, 0usize);
    let mut prev: Option<i64> = None;
    for &x in values.iter().take(PROBE_LEN) {
        match fits(x, base, inv) {
            Some((m, adj)) => {
                bits += value_bits(prev.map_or(0, |p| m.wrapping_sub(p).unsigned_abs()), adj);
                prev = Some(m);
                fitted += 1;
                misses = 0;
            }
            // Two misses in a row end the segment (once it has begun).
            None if misses == 1 && fitted >= MIN_SAMPLE => break,
            None => {
                bits += EXCEPTION_BITS as usize;
                misses += 1;
            }
        }
        count += 1;
    }
    (fitted >= MIN_SAMPLE).then(|| bits as f64 / count as f64)
}

/// Bits the Mult encoding of `values` with these segments would take, about: the bit lengths
/// of the multipliers' deltas and of the adjustments (a sign bit each), [`EXCEPTION_BITS`] per
/// exception and per segment.
pub(crate) fn estimate_bits(values: &[f64], segments: &[Segment]) -> usize {
    let n = values.len();
    let mut bits = segments.len() * EXCEPTION_BITS as usize;
    let mut prev = 0i64;
    for (s, seg) in segments.iter().enumerate() {
        let end = segments.get(s + 1).map_or(n, |next| next.start);
        let inv = 1.0 / seg.base;
        for &x in values.get(seg.start..end).unwrap_or_default() {
            match fits(x, seg.base, inv) {
                Some((m, adj)) => {
                    bits += value_bits(m.wrapping_sub(prev).unsigned_abs(), adj);
                    prev = m;
                }
                None => bits += EXCEPTION_BITS as usize,
            }
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scaled_decimal_series_has_one_base() {
        // Cents times a factor, rounded to 13 decimals, as an adjusted close is published.
        let factor = 0.032_128_484_412_638_9_f64;
        let values: Vec<f64> = (0..1000)
            .map(|i| {
                let cents = 12_000 + (i * 37 % 900) - 450;
                let v = f64::from(cents) * factor / 100.0;
                (v * 1e13).round() / 1e13
            })
            .collect();
        let segs = segments(&values).expect("a base");
        assert_eq!(segs.len(), 1);
        let base = segs[0].base;
        assert!((base / (factor / 100.0) - 1.0).abs() < 1e-9, "{base}");
        let inv = 1.0 / base;
        for &x in &values {
            let (m, adj) = split(x, base, inv).unwrap();
            assert!(adj.unsigned_abs() < 1 << 8, "{x}: m {m} adj {adj}");
        }
    }

    #[test]
    fn a_factor_change_starts_a_segment() {
        let values: Vec<f64> = (0..600)
            .map(|i| {
                let factor = if i < 250 { 0.71 } else { 0.7134 };
                f64::from(10_000 + (i * 7919) % 2000) * factor
            })
            .collect();
        let segs = segments(&values).expect("bases");
        let starts: Vec<usize> = segs.iter().map(|s| s.start).collect();
        assert_eq!(starts, [0, 250]);
    }

    #[test]
    fn noise_has_no_base() {
        let values: Vec<f64> = (0..1000)
            .map(|i| (f64::from(i) * 0.37).sin() * 1e3)
            .collect();
        assert_eq!(segments(&values), None);
        assert_eq!(probe_bits_per_value(&values), None);
    }

    #[test]
    fn the_probe_and_the_estimate_price_multipliers_and_exceptions() {
        // Multipliers moving by at most 63 (7 bits) with adjustments of a few ulps.
        let mut values: Vec<f64> = (0..500)
            .map(|i| f64::from(5_000 + (i * 37) % 64) * 0.017)
            .collect();
        let probe = probe_bits_per_value(&values).expect("a base");
        assert!((4.0..16.0).contains(&probe), "{probe}");
        let segs = segments(&values).expect("a base");
        let clean = estimate_bits(&values, &segs);
        // An exception costs its raw bits.
        values[100] = f64::NAN;
        values[300] = 1e300;
        let segs = segments(&values).expect("a base");
        let with_exceptions = estimate_bits(&values, &segs);
        assert!(
            with_exceptions >= clean + 2 * 64,
            "{clean} → {with_exceptions}"
        );
    }

    #[test]
    fn specials_do_not_break_the_search() {
        let mut values: Vec<f64> = (0..200).map(|i| f64::from(i % 50 + 3) * 0.3).collect();
        values[3] = f64::NAN;
        values[100] = f64::INFINITY;
        values[150] = 0.0;
        let segs = segments(&values).expect("a base");
        assert_eq!(segs.len(), 1);
        assert!((segs[0].base / 0.3 - 1.0).abs() < 1e-12);
    }
}
