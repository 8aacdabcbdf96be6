//! The float lane (doubles), bit-exact for every value including `-0.0`, infinities and NaN
//! payloads.
//!
//! * [`FloatEncoding::Alp`] (decimal-aware, after ALP): for an exponent `e`, a value `v` whose
//!   digits `d = round(v·10^e)` satisfy `|v·10^e| < 2^53` and `(d as f64) / 10^e == v`
//!   bit for bit is stored as the integer `d` (an int section, so deltas, frame of reference
//!   and bit-packing apply); a value a few ulps off its decimal (`1.7919999999999998`) is
//!   stored as the decimal plus a correction in ulps; every other value is an exception kept
//!   as raw bits.
//! * [`FloatEncoding::Xor`] / [`FloatEncoding::Bits`]: the raw bits, XORed with the previous
//!   value's bits or as they are, through an int section (for full-precision values).
//! * [`FloatEncoding::Plain`]: 8 bytes per value.
//!
//! The smallest candidate wins.

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

    // Decimal candidate.
    let e = choose_exponent(values);
    let p = POW10.get(e).copied().unwrap_or(1.0);
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
    // The candidates are written straight into `out`; a smaller later one replaces it.
    let start = out.len();
    if n_exc < n {
        out.push(FloatEncoding::Alp.to_code());
        out.push(e as u8);
        ints::encode(&digits, out, scratch);
        varint::put(out, corr_pos.len() as u64);
        ints::encode(&corr_pos, out, scratch);
        ints::encode(&corr, out, scratch);
        varint::put(out, n_exc as u64);
        ints::encode(&exc_pos, out, scratch);
        ints::encode(&exc, out, scratch);
        if out.len() - start < best_len {
            best_len = out.len() - start;
            best = Some(FloatLayout {
                encoding: FloatEncoding::Alp,
                exponent: e as u8,
                corrections: corr_pos.len(),
                exceptions: n_exc,
            });
        } else {
            out.truncate(start);
        }
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

    #[test]
    fn full_precision_noise() {
        let v: Vec<f64> = (0..500)
            .map(|i| (f64::from(i) * 0.37).sin() * 1e3)
            .collect();
        let (len, _) = round_trip(&v);
        assert!(len <= 1 + 8 * 500);
    }
}
