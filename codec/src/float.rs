//! The float lane (doubles), bit-exact for every value including `-0.0`, infinities and NaN
//! payloads.
//!
//! * [`FloatEncoding::Alp`] (decimal-aware, after ALP): for an exponent `e`, a value `v` whose
//!   digits `d = round(v·10^e)` satisfy `|v·10^e| < 2^53` and `(d as f64) / 10^e == v`
//!   bit for bit is stored as the integer `d` (an int section, so deltas, frame of reference
//!   and bit-packing apply); a value a few ulps off its decimal (`1.7919999999999998`) is
//!   stored as the decimal plus a correction in ulps; every other value is an exception kept
//!   as raw bits.
//! * [`FloatEncoding::Mult`] (after pcodec's FloatMult): values that are integer multiples of
//!   a base, up to a few ulps, such as prices times an adjustment factor, stored as segments
//!   with a base each, an int section of multipliers and one of adjustments, plus exceptions
//!   (bases found by [`crate::float_mult`]).
//! * [`FloatEncoding::Xor`] / [`FloatEncoding::Bits`]: the raw bits, XORed with the previous
//!   value's bits or as they are, through an int section (for full-precision values).
//! * [`FloatEncoding::Plain`]: 8 bytes per value.
//!
//! The smallest candidate wins.

use crate::float_mult::{self, Segment};
use crate::format::FloatEncoding;
use crate::ints;
use crate::reader::Reader;
use crate::varint;
use crate::{Error, Result};

/// Largest decimal exponent [`FloatEncoding::Alp`] may use (decoders accept up to 22, the
/// largest exact power of ten in `f64`).
const MAX_ENCODE_EXP: usize = 18;
const MAX_DECODE_EXP: u8 = 22;

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// 2^53: digits must stay below it in magnitude so `d as f64` is exact.
const MAX_DIGITS: f64 = 9_007_199_254_740_992.0;

/// Largest distance, in units in the last place, of a value from its decimal that is stored as
/// a correction rather than as an exception (values such as `1.7919999999999998`, one ulp
/// below `1.792`).
const MAX_CORRECTION_ULPS: i64 = 1 << 12;

/// Values sampled to choose the exponent.
const SAMPLE: usize = 128;

/// Decimal exponent from which values are also tried as multiples of a base: a decimal with
/// this many digits after the point is often a scaled value, such as an adjusted price (and
/// only values exact to about 12 significant digits can show their base).
const MULT_MIN_EXP: usize = 9;

/// What the encoder chose for one section (see [`crate::ColumnLayout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatLayout {
    /// The lane's encoding.
    pub encoding: FloatEncoding,
    /// Decimal exponent (for [`FloatEncoding::Alp`]).
    pub exponent: u8,
    /// Values a few ulps off their decimal, stored with a correction (for
    /// [`FloatEncoding::Alp`]).
    pub corrections: usize,
    /// Values kept as raw bits (for [`FloatEncoding::Alp`]).
    pub exceptions: usize,
}

/// How one value fits the decimal encoding at one exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fit {
    /// `digits / 10^e` is the value, bit for bit.
    Exact(i64),
    /// `digits / 10^e` is the value's bits minus the correction (in ulps).
    Near(i64, i64),
    /// Not representable.
    Exception,
}

#[inline]
fn fit(v: f64, p: f64) -> Fit {
    let s = v * p;
    if s.is_nan() || s.abs() >= MAX_DIGITS {
        return Fit::Exception;
    }
    // Round to nearest (ties either way: the check below decides); for |s| < 2^51 adding and
    // subtracting 2^52 + 2^51 rounds without a libm call.
    let d = if s.abs() < 2_251_799_813_685_248.0 {
        ((s + MAGIC) - MAGIC) as i64
    } else {
        s.round() as i64
    };
    let back = ((d as f64) / p).to_bits();
    let bits = v.to_bits();
    if back == bits {
        return Fit::Exact(d);
    }
    // Same sign: the bit patterns are ordered like the magnitudes.
    if (back ^ bits) >> 63 == 0 {
        let diff = bits.wrapping_sub(back) as i64;
        if diff.unsigned_abs() <= MAX_CORRECTION_ULPS as u64 {
            return Fit::Near(d, diff);
        }
    }
    Fit::Exception
}

/// Exponent for the decimal encoding, by estimated cost over a sample.
fn choose_exponent(values: &[f64]) -> usize {
    let step = (values.len() / SAMPLE).max(1);
    let sample: Vec<f64> = values.iter().step_by(step).copied().collect();
    let n = sample.len() as u64;
    // Cost in tenths of a bit: a decimal digit ≈ 3.3 bits a value, a correction ≈ 24 bits, an
    // exception ≈ 90 bits.
    let mut best = (u64::MAX, 0usize);
    for (e, &p) in POW10.iter().take(MAX_ENCODE_EXP + 1).enumerate() {
        let (mut exact, mut near) = (0u64, 0u64);
        for &v in &sample {
            match fit(v, p) {
                Fit::Exact(_) => exact += 1,
                Fit::Near(..) => near += 1,
                Fit::Exception => {}
            }
        }
        let exc = n - exact - near;
        let cost = n * 33 * e as u64 + near * 240 + exc * 900;
        if cost < best.0 {
            best = (cost, e);
        }
        if exact == n {
            break;
        }
    }
    best.1
}

/// Appends the float lane of `values`, choosing the smallest encoding.
pub(crate) fn encode(values: &[f64], out: &mut Vec<u8>, scratch: &mut Vec<i64>) -> FloatLayout {
    let n = values.len();
    let mut best_len = 1 + 8 * n;
    let mut best: Option<FloatLayout> = None;

    let e = choose_exponent(values);
    let p = POW10.get(e).copied().unwrap_or(1.0);
    let start = out.len();

    // Multiples of a base, for values with many decimals: scaled decimals such as adjusted
    // prices. When they cost well below what the decimal digits would, the decimal candidate
    // is not tried (it is the slowest to encode).
    let mut mult_tried = false;
    if e >= MULT_MIN_EXP {
        mult_tried = true;
        let alp_bits = alp_bits_estimate(values, p);
        let promising = float_mult::probe_bits_per_value(values)
            .is_some_and(|bits| bits * (n as f64) < 1.25 * alp_bits as f64);
        if promising && let Some(len) = try_mult(values, out, (start, best_len), alp_bits, scratch)
        {
            best_len = len;
            best = Some(MULT_LAYOUT);
            if len * 8 * 5 < alp_bits * 4 {
                return MULT_LAYOUT;
            }
        }
    }

    // Decimal candidate.
    let mut digits = Vec::with_capacity(n);
    let (mut corr_pos, mut corr): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    let (mut exc_pos, mut exc): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    let mut prev = 0i64;
    for (i, &v) in values.iter().enumerate() {
        match fit(v, p) {
            Fit::Exact(d) => {
                digits.push(d);
                prev = d;
            }
            Fit::Near(d, c) => {
                digits.push(d);
                prev = d;
                corr_pos.push(i as i64);
                corr.push(c);
            }
            Fit::Exception => {
                digits.push(prev);
                exc_pos.push(i as i64);
                exc.push(v.to_bits() as i64);
            }
        }
    }
    let n_exc = exc_pos.len();
    // The candidates are written straight into `out` after the current best; a smaller one
    // replaces it.
    if n_exc < n {
        let alp_start = out.len();
        out.push(FloatEncoding::Alp.to_code());
        out.push(e as u8);
        ints::encode(&digits, out, scratch);
        varint::put(out, corr_pos.len() as u64);
        ints::encode(&corr_pos, out, scratch);
        ints::encode(&corr, out, scratch);
        varint::put(out, n_exc as u64);
        ints::encode(&exc_pos, out, scratch);
        ints::encode(&exc, out, scratch);
        let len = out.len() - alp_start;
        if len < best_len {
            out.copy_within(alp_start.., start);
            out.truncate(start + len);
            best_len = len;
            best = Some(FloatLayout {
                encoding: FloatEncoding::Alp,
                exponent: e as u8,
                corrections: corr_pos.len(),
                exceptions: n_exc,
            });
        } else {
            out.truncate(alp_start);
        }
    }

    // Multiples of a base, for values that are not (mostly) short decimals.
    if !mult_tried
        && n_exc * 16 > n
        && let Some(len) = try_mult(values, out, (start, best_len), 8 * best_len, scratch)
    {
        best_len = len;
        best = Some(MULT_LAYOUT);
    }

    // Raw-bit candidates, for values that are not (mostly) short decimals.
    if n_exc * 16 > n {
        let raw: Vec<i64> = values.iter().map(|v| v.to_bits() as i64).collect();
        let mut prev = 0u64;
        let xored: Vec<i64> = values
            .iter()
            .map(|v| {
                let b = v.to_bits();
                let x = b ^ prev;
                prev = b;
                x as i64
            })
            .collect();
        for (encoding, lane) in [(FloatEncoding::Bits, &raw), (FloatEncoding::Xor, &xored)] {
            let (cost, layout) = ints::estimate(lane, scratch);
            if 1 + cost < best_len {
                out.truncate(start);
                out.push(encoding.to_code());
                ints::encode_as(lane, layout, out, scratch);
                best_len = out.len() - start;
                best = Some(FloatLayout {
                    encoding,
                    exponent: 0,
                    corrections: 0,
                    exceptions: 0,
                });
            }
        }
    }

    match best {
        Some(layout) => layout,
        None => {
            out.truncate(start);
            out.push(FloatEncoding::Plain.to_code());
            for v in values {
                out.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            FloatLayout {
                encoding: FloatEncoding::Plain,
                exponent: 0,
                corrections: 0,
                exceptions: 0,
            }
        }
    }
}

/// What the encoder reports for a Mult lane.
const MULT_LAYOUT: FloatLayout = FloatLayout {
    encoding: FloatEncoding::Mult,
    exponent: 0,
    corrections: 0,
    exceptions: 0,
};

/// Writes the Mult encoding of `values` in place of the current best lane (`out[start..]`,
/// `best_len` bytes or none) if the values are multiples of bases and it is smaller; its
/// length if so.
fn try_mult(
    values: &[f64],
    out: &mut Vec<u8>,
    (start, best_len): (usize, usize),
    budget_bits: usize,
    scratch: &mut Vec<i64>,
) -> Option<usize> {
    let segments = float_mult::segments(values)?;
    // Encoding the lanes costs as much as finding the bases: not when the estimate already
    // loses (noisy decimals have bases too, but their decimal candidate is smaller).
    if float_mult::estimate_bits(values, &segments) > budget_bits {
        return None;
    }
    let at = out.len();
    encode_mult(values, &segments, out, scratch);
    let len = out.len() - at;
    if len < best_len {
        out.copy_within(at.., start);
        out.truncate(start + len);
        Some(len)
    } else {
        out.truncate(at);
        None
    }
}

/// Bits the decimal candidate at `p` would take, about: the mean bit length of the deltas of
/// the digits of the first values (64 bits for an exception), times the values.
fn alp_bits_estimate(values: &[f64], p: f64) -> usize {
    let (mut bits, mut count) = (0usize, 0usize);
    let mut prev: Option<i64> = None;
    for &v in values.iter().take(SAMPLE) {
        match fit(v, p) {
            Fit::Exact(d) | Fit::Near(d, _) => {
                if let Some(prev) = prev {
                    bits += 65 - d.wrapping_sub(prev).unsigned_abs().leading_zeros() as usize;
                    count += 1;
                }
                prev = Some(d);
            }
            Fit::Exception => {
                bits += 64;
                count += 1;
            }
        }
    }
    if count == 0 {
        return usize::MAX / 8;
    }
    bits * values.len() / count
}

/// Appends the Mult encoding of `values` with the given segments (see `docs/format.md`).
fn encode_mult(values: &[f64], segments: &[Segment], out: &mut Vec<u8>, scratch: &mut Vec<i64>) {
    let n = values.len();
    let mut mults = Vec::with_capacity(n);
    let mut adjustments = Vec::with_capacity(n);
    let (mut exc_pos, mut exc) = (Vec::new(), Vec::new());
    let mut prev = 0i64;
    for (s, seg) in segments.iter().enumerate() {
        let end = segments.get(s + 1).map_or(n, |next| next.start);
        let inv = 1.0 / seg.base;
        for (i, &x) in values.iter().enumerate().take(end).skip(seg.start) {
            match float_mult::fits(x, seg.base, inv) {
                Some((m, adj)) => {
                    prev = m;
                    mults.push(m);
                    adjustments.push(adj);
                }
                None => {
                    // An exception keeps the previous multiplier (the multipliers stay a
                    // smooth sequence).
                    mults.push(prev);
                    adjustments.push(0);
                    exc_pos.push(i as i64);
                    exc.push(x.to_bits() as i64);
                }
            }
        }
    }
    let starts: Vec<i64> = segments.iter().map(|s| s.start as i64).collect();
    let bases: Vec<i64> = segments.iter().map(|s| s.base.to_bits() as i64).collect();
    out.push(FloatEncoding::Mult.to_code());
    varint::put(out, segments.len() as u64);
    ints::encode(&starts, out, scratch);
    ints::encode(&bases, out, scratch);
    ints::encode(&mults, out, scratch);
    ints::encode(&adjustments, out, scratch);
    varint::put(out, exc_pos.len() as u64);
    if !exc_pos.is_empty() {
        ints::encode(&exc_pos, out, scratch);
        ints::encode(&exc, out, scratch);
    }
}

/// Appends `(m as f64) * base`, adjusted by `a` ulps, for every multiplier `m` and adjustment
/// `a` of each segment (`starts` checked: 0 first, increasing, below `mults.len()`).
fn mults_to_f64(
    starts: &[i64],
    bases: &[i64],
    mults: &[i64],
    adjustments: &[i64],
    out: &mut Vec<f64>,
) {
    // As in `digits_to_f64`: when every |m| < 2^51, `m as f64` is an integer add and a
    // subtraction.
    let fast = mults
        .iter()
        .fold(0u64, |acc, &m| acc | m.wrapping_add(1 << 51) as u64)
        < 1 << 52;
    let magic = MAGIC.to_bits();
    let n = mults.len();
    for (s, (&start, &base)) in starts.iter().zip(bases).enumerate() {
        let end = starts.get(s + 1).map_or(n, |&e| e as usize);
        let range = start as usize..end;
        let base = f64::from_bits(base as u64);
        let (Some(m), Some(a)) = (mults.get(range.clone()), adjustments.get(range)) else {
            return;
        };
        let pairs = m.iter().zip(a);
        if fast {
            out.extend(pairs.map(|(&m, &a)| {
                let m = f64::from_bits(magic.wrapping_add(m as u64)) - MAGIC;
                f64::from_bits((m * base).to_bits().wrapping_add(a as u64))
            }));
        } else {
            out.extend(pairs.map(|(&m, &a)| {
                f64::from_bits(((m as f64) * base).to_bits().wrapping_add(a as u64))
            }));
        }
    }
}

/// `2^52 + 2^51`: adding an integer `d` with `|d| < 2^51` to its bit pattern gives the double
/// `MAGIC + d` exactly.
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// Appends `d / p` for every digit sequence value (bit-exact with `(d as f64) / p`). When every
/// `|d| < 2^51` (always, for decimals), the conversion is an integer add and a subtraction, so
/// the whole loop runs in SIMD lanes.
fn digits_to_f64(digits: &[i64], p: f64, out: &mut Vec<f64>) {
    // `d + 2^51` is in `[0, 2^52)` exactly when `|d| < 2^51` (or `d = -2^51`): OR them all.
    let bits = digits
        .iter()
        .fold(0u64, |acc, &d| acc | d.wrapping_add(1 << 51) as u64);
    if bits < 1 << 52 {
        let m = MAGIC.to_bits();
        out.extend(
            digits
                .iter()
                .map(|&d| (f64::from_bits(m.wrapping_add(d as u64)) - MAGIC) / p),
        );
    } else {
        out.extend(digits.iter().map(|&d| (d as f64) / p));
    }
}

/// Reads a list of `(position, value)` patches (a count, then two int sections) and applies
/// `f(slot, value)` to each; positions must be strictly increasing and below `lane.len()`.
fn patch(
    r: &mut Reader<'_>,
    lane: &mut [f64],
    scratch: &mut Vec<i64>,
    f: fn(&mut f64, i64),
) -> Result<()> {
    let count = r.varint_at_most(lane.len(), "patch count")?;
    if count == 0 {
        return Ok(());
    }
    scratch.clear();
    ints::decode(r, count, scratch)?;
    ints::decode(r, count, scratch)?;
    let (positions, values) = scratch.split_at(count);
    let mut next = 0usize;
    for (&pos, &v) in positions.iter().zip(values) {
        let slot = usize::try_from(pos)
            .ok()
            .filter(|&p| p >= next)
            .and_then(|p| {
                next = p + 1;
                lane.get_mut(p)
            });
        match slot {
            Some(slot) => f(slot, v),
            None => {
                return Err(Error::Corruption(
                    "patch positions out of range or not increasing".to_owned(),
                ));
            }
        }
    }
    Ok(())
}

/// Reads a float lane of `n` values, appending them to `out`.
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input.
pub(crate) fn decode(
    r: &mut Reader<'_>,
    n: usize,
    out: &mut Vec<f64>,
    scratch: &mut Vec<i64>,
) -> Result<()> {
    let start = out.len();
    match FloatEncoding::try_from_code(r.u8()?)? {
        FloatEncoding::Plain => {
            let len = n
                .checked_mul(8)
                .ok_or_else(|| Error::Corruption("float count".to_owned()))?;
            let raw = r.bytes(len)?;
            out.extend(raw.chunks_exact(8).map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                f64::from_bits(u64::from_le_bytes(b))
            }));
        }
        FloatEncoding::Alp => {
            let e = r.u8()?;
            if e > MAX_DECODE_EXP {
                return Err(Error::Corruption(format!("decimal exponent {e}")));
            }
            let p = POW10.get(usize::from(e)).copied().unwrap_or(1.0);
            scratch.clear();
            ints::decode(r, n, scratch)?;
            digits_to_f64(scratch, p, out);
            let lane = out.get_mut(start..).unwrap_or_default();
            patch(r, lane, scratch, |slot, c| {
                *slot = f64::from_bits(slot.to_bits().wrapping_add(c as u64));
            })?;
            patch(r, lane, scratch, |slot, bits| {
                *slot = f64::from_bits(bits as u64)
            })?;
        }
        FloatEncoding::Xor => {
            scratch.clear();
            ints::decode(r, n, scratch)?;
            let mut prev = 0u64;
            out.extend(scratch.iter().map(|&x| {
                prev ^= x as u64;
                f64::from_bits(prev)
            }));
        }
        FloatEncoding::Bits => {
            scratch.clear();
            ints::decode(r, n, scratch)?;
            out.extend(scratch.iter().map(|&x| f64::from_bits(x as u64)));
        }
        FloatEncoding::Mult => {
            if r.version() < 4 {
                return Err(Error::Corruption(format!(
                    "float encoding Mult in a version {} blob",
                    r.version()
                )));
            }
            let k = r.varint_at_most(n, "segment count")?;
            if k == 0 && n > 0 {
                return Err(Error::Corruption("no segments".to_owned()));
            }
            scratch.clear();
            ints::decode(r, k, scratch)?;
            let starts_ok = scratch.first().is_none_or(|&s| s == 0)
                && scratch.windows(2).all(|w| w.first() < w.get(1))
                && scratch
                    .last()
                    .is_none_or(|&s| s >= 0 && (s as u64) < n as u64);
            if !starts_ok {
                return Err(Error::Corruption(
                    "segment starts not 0 first, increasing and in range".to_owned(),
                ));
            }
            ints::decode(r, k, scratch)?;
            ints::decode(r, n, scratch)?;
            ints::decode(r, n, scratch)?;
            let (heads, lanes) = scratch.split_at(2 * k);
            let (starts, bases) = heads.split_at(k);
            let (mults, adjustments) = lanes.split_at(n);
            mults_to_f64(starts, bases, mults, adjustments, out);
            if out.len() - start != n {
                return Err(Error::Corruption(
                    "Mult segments do not cover the lane".to_owned(),
                ));
            }
            let lane = out.get_mut(start..).unwrap_or_default();
            patch(r, lane, scratch, |slot, bits| {
                *slot = f64::from_bits(bits as u64)
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[f64]) -> (usize, FloatLayout) {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let layout = encode(values, &mut out, &mut scratch);
        let mut r = Reader::new(&out);
        let mut back = Vec::new();
        decode(&mut r, values.len(), &mut back, &mut scratch).unwrap();
        assert_eq!(r.remaining(), 0);
        let a: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        let b: Vec<u64> = back.iter().map(|v| v.to_bits()).collect();
        assert_eq!(a, b);
        (out.len(), layout)
    }

    #[test]
    fn decimals_use_alp() {
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i % 300 - 150) / 10.0).collect();
        let (len, layout) = round_trip(&v);
        assert_eq!(layout.encoding, FloatEncoding::Alp);
        assert_eq!(layout.exponent, 1);
        assert!(len < 1000 * 10 / 8, "{len}");
    }

    #[test]
    fn specials_are_exact() {
        let v = [
            0.0,
            -0.0,
            f64::NAN,
            f64::from_bits(0x7FF8_0000_0000_1234),
            f64::from_bits(0xFFF0_0000_0000_0001),
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            1.5,
            0.132,
            95.192_558_499_999_99,
        ];
        round_trip(&v);
        round_trip(&[]);
        round_trip(&[-0.0; 10]);
        round_trip(&[f64::NAN; 10]);
    }

    #[test]
    fn fast_digit_conversion_is_exact() {
        let edge = 1i64 << 51;
        let digits: Vec<i64> = [0, 1, -1, 12_345, -98_765, edge - 1, -edge, 1 << 40]
            .into_iter()
            .chain((0..2000).map(|i: i64| i.wrapping_mul(0x9E37_79B9) % edge))
            .collect();
        for &p in &POW10 {
            let mut fast = Vec::new();
            digits_to_f64(&digits, p, &mut fast);
            for (&d, f) in digits.iter().zip(&fast) {
                assert_eq!(f.to_bits(), ((d as f64) / p).to_bits(), "{d} / {p}");
            }
        }
        // Out of the fast range: the plain conversion.
        let mut out = Vec::new();
        digits_to_f64(&[edge, i64::MIN, i64::MAX], 10.0, &mut out);
        assert_eq!(out[2].to_bits(), ((i64::MAX as f64) / 10.0).to_bits());
    }

    /// Adjusted closes: cents times a factor that changes at each dividend, rounded to 12
    /// decimals, as price histories publish them.
    fn adjusted_prices(n: usize) -> Vec<f64> {
        let mut cents = 10_000i64;
        let mut seed = 7u64;
        (0..n)
            .map(|i| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                cents += (seed >> 33) as i64 % 301 - 150;
                let factor = 0.731_234_5 + 0.004 * (i / 150) as f64;
                let v = cents as f64 * factor / 100.0;
                (v * 1e12).round() / 1e12
            })
            .collect()
    }

    #[test]
    fn scaled_decimals_use_mult_and_cost_about_their_multipliers() {
        let v = adjusted_prices(1000);
        let (len, layout) = round_trip(&v);
        assert_eq!(layout.encoding, FloatEncoding::Mult);
        // Cents moving by up to 1.50 (9 bits) and a dozen bits of rounding, against the
        // 40-odd bits of the 12-decimal digits.
        assert!(len * 8 < 1000 * 24, "{len} bytes");
        let mut alp = Vec::new();
        let digits: Vec<i64> = v.iter().map(|x| (x * 1e12).round() as i64).collect();
        ints::encode(&digits, &mut alp, &mut Vec::new());
        assert!(
            len * 3 < alp.len() * 2,
            "{len} vs decimal digits {}",
            alp.len()
        );
    }

    #[test]
    fn mult_keeps_specials_and_misfits_exactly() {
        let mut v = adjusted_prices(600);
        for (i, x) in [
            (3, f64::NAN),
            (10, f64::from_bits(0xFFF8_DEAD_BEEF_0001)),
            (50, f64::INFINITY),
            (51, f64::NEG_INFINITY),
            (100, -0.0),
            (101, 0.0),
            (200, 5e-324),
            (201, 1e300),
            (202, -3.0),
            (599, 0.123_456_789),
        ] {
            v[i] = x;
        }
        let segments = float_mult::segments(&v).expect("bases");
        let mut out = Vec::new();
        encode_mult(&v, &segments, &mut out, &mut Vec::new());
        let mut back = Vec::new();
        decode(&mut Reader::new(&out), v.len(), &mut back, &mut Vec::new()).unwrap();
        let a: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
        let b: Vec<u64> = back.iter().map(|x| x.to_bits()).collect();
        assert_eq!(a, b);
    }

    #[test]
    fn mult_needs_version_4_and_checks_its_segments() {
        let v = adjusted_prices(300);
        let segments = float_mult::segments(&v).expect("bases");
        let mut good = Vec::new();
        encode_mult(&v, &segments, &mut good, &mut Vec::new());
        let mut back = Vec::new();
        let mut scratch = Vec::new();
        let old = decode(
            &mut Reader::with_version(&good, 3),
            300,
            &mut back,
            &mut scratch,
        );
        assert!(matches!(old, Err(Error::Corruption(_))), "{old:?}");

        // Hand-made lanes: code, segment count, starts, bases, multipliers, adjustments,
        // exceptions.
        let lane = |count: u64, starts: &[i64], n: usize| {
            let mut out = vec![FloatEncoding::Mult.to_code()];
            varint::put(&mut out, count);
            let mut s = Vec::new();
            ints::encode(starts, &mut out, &mut s);
            let bases: Vec<i64> = starts.iter().map(|_| 0.5f64.to_bits() as i64).collect();
            ints::encode(&bases, &mut out, &mut s);
            ints::encode(&vec![3; n], &mut out, &mut s);
            ints::encode(&vec![0; n], &mut out, &mut s);
            varint::put(&mut out, 0);
            out
        };
        let read = |bytes: &[u8], n: usize| {
            let mut back = Vec::new();
            decode(&mut Reader::new(bytes), n, &mut back, &mut Vec::new()).map(|()| back)
        };
        assert_eq!(read(&lane(2, &[0, 5], 10), 10).unwrap(), vec![1.5; 10]);
        for (count, starts) in [
            (0u64, &[][..]),
            (2, &[0, 0][..]),
            (2, &[1, 5][..]),
            (2, &[0, 10][..]),
            (2, &[0, -1][..]),
            (11, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10][..]),
        ] {
            let got = read(&lane(count, starts, 10), 10);
            assert!(
                matches!(got, Err(Error::Corruption(_))),
                "{starts:?}: {got:?}"
            );
        }
    }

    #[test]
    fn full_precision_noise() {
        let v: Vec<f64> = (0..500)
            .map(|i| (f64::from(i) * 0.37).sin() * 1e3)
            .collect();
        let (len, _) = round_trip(&v);
        assert!(len <= 1 + 8 * 500);
    }
}
