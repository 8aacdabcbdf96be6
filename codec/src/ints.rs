//! Int sections: the machinery behind the int lane and every integer stream of the other
//! encodings (float digits, type indices, lengths, dictionary codes, ObjectId parts).
//!
//! A section of `n` values (the count is known from the context, never stored) is
//! [`IntEncoding::Const`], [`IntEncoding::Packed`]: delta of order 0, 1 or 2 (chosen by exact
//! size), then the residuals minus their minimum (frame of reference), divided by their common
//! divisor, and bit-packed in blocks of [`BLOCK_LEN`] values, each block with its own width and
//! minimum (a divisor of 0 means every residual equals the minimum: no blocks),
//! [`IntEncoding::Sparse`]: the same residuals as one common value and a list of exceptions
//! ([`crate::sparse`]) when few differ, or [`IntEncoding::Coded`]: the same residuals
//! entropy-coded ([`crate::coded`]) when they come from a small skewed alphabet and that pays
//! for its slower decoding. A section of 0 values is empty (no bytes).

use crate::bits;
use crate::coded;
use crate::delta;
use crate::format::{BLOCK_LEN, IntEncoding};
use crate::reader::Reader;
use crate::sparse;
use crate::varint;
use crate::{Error, Result};

/// What the encoder chose for one section (see [`crate::ColumnLayout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntLayout {
    /// The section's encoding.
    pub encoding: IntEncoding,
    /// Delta order (0 for [`IntEncoding::Const`]).
    pub order: u8,
}

/// Frame of a residual sequence: its minimum and common divisor.
#[derive(Clone, Copy, Debug)]
struct Frame {
    base: i64,
    gcd: u64,
}

/// Greatest common divisor (binary algorithm); `gcd(0, b) = b`.
pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    if a == 0 {
        return b;
    }
    if b == 0 {
        return a;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

/// A divisibility test by a fixed `d > 0` without division: `d = 2^shift · odd`, and `x` is a
/// multiple of `odd` exactly when `x · odd⁻¹ (mod 2^64) ≤ ⌊(2^64 − 1) / odd⌋`.
#[derive(Clone, Copy)]
struct Divisor {
    shift: u32,
    inverse: u64,
    limit: u64,
}

impl Divisor {
    fn new(d: u64) -> Divisor {
        let shift = d.trailing_zeros();
        let odd = d >> shift;
        // Newton's iteration doubles the correct low bits each step: 3 → 6 → ... → 96 ≥ 64.
        let mut inverse = odd;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inverse)));
        }
        Divisor {
            shift,
            inverse,
            limit: u64::MAX / odd,
        }
    }

    #[inline]
    fn divides(self, x: u64) -> bool {
        x.trailing_zeros() >= self.shift
            && (x >> self.shift).wrapping_mul(self.inverse) <= self.limit
    }
}

/// Values whose divisor seeds the common-divisor search.
const GCD_SEED: usize = 8;

fn frame_of(res: &[i64]) -> Frame {
    let base = res.iter().copied().min().unwrap_or(0);
    let dev = |r: i64| r.wrapping_sub(base) as u64;
    // A divisor of a few values, then one cheap check of every value against it; only when a
    // value is not a multiple does the exact (slow) reduction run, from that value on.
    let mut g = res.iter().take(GCD_SEED).fold(0u64, |g, &r| gcd(g, dev(r)));
    if g == 1 {
        return Frame { base, gcd: 1 };
    }
    if g > 1 {
        let d = Divisor::new(g);
        match res.iter().position(|&r| !d.divides(dev(r))) {
            None => return Frame { base, gcd: g },
            Some(i) => {
                for &r in res.get(i..).unwrap_or_default() {
                    g = gcd(g, dev(r));
                    if g == 1 {
                        break;
                    }
                }
            }
        }
    } else {
        // The seed values all equal the base.
        for &r in res {
            g = gcd(g, dev(r));
            if g == 1 {
                break;
            }
        }
    }
    // gcd 0: every residual equals the base (no blocks are written).
    Frame { base, gcd: g }
}

/// `(offset of the block minimum from the frame base, width)` of one block, both in units of
/// the frame's divisor.
#[inline]
fn block_shape(block: &[i64], frame: Frame) -> (u64, u32) {
    let (lo, hi) = min_max(block);
    let offset = lo.wrapping_sub(frame.base) as u64 / frame.gcd;
    let range = hi.wrapping_sub(lo) as u64 / frame.gcd;
    (offset, bits::width_of(range))
}

#[inline]
fn min_max(block: &[i64]) -> (i64, i64) {
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    for &r in block {
        lo = lo.min(r);
        hi = hi.max(r);
    }
    (lo, hi)
}

/// Bytes the residual part (frame + blocks) of a packed section takes.
fn residual_cost(res: &[i64], frame: Frame) -> usize {
    if res.is_empty() {
        return 0;
    }
    let mut cost = varint::len_signed(frame.base) + varint::len(frame.gcd);
    if frame.gcd == 0 {
        return cost;
    }
    for block in res.chunks(BLOCK_LEN) {
        let (offset, width) = block_shape(block, frame);
        cost += 1 + varint::len(offset) + bits::packed_len(block.len(), width);
    }
    cost
}

/// Approximate bytes of the residual part, assuming no common divisor: the cheap measure the
/// delta order is chosen by.
fn residual_cost_plain(res: &[i64]) -> usize {
    let Some(&first) = res.first() else { return 0 };
    let mut cost = PlainCost::new(first);
    for block in res.chunks(BLOCK_LEN) {
        let (lo, hi) = min_max(block);
        cost.block(lo, hi, block.len());
    }
    cost.finish()
}

/// Blocks whose offsets [`residual_cost_plain`] sizes exactly (a 1000-row bucket has 8).
const MAX_BLOCKS_SEEN: usize = 64;

/// [`residual_cost_plain`] summed block by block: each block's width and packed bytes, then
/// the offsets of the first [`MAX_BLOCKS_SEEN`] blocks from the least block minimum.
struct PlainCost {
    cost: usize,
    base: i64,
    lows: [i64; MAX_BLOCKS_SEEN],
    seen: usize,
}

impl PlainCost {
    /// The cost of a residual sequence whose first value is `first`, before its blocks.
    fn new(first: i64) -> PlainCost {
        PlainCost {
            cost: 0,
            base: first,
            lows: [0; MAX_BLOCKS_SEEN],
            seen: 0,
        }
    }

    /// Adds the next block: `len` values from `lo` to `hi`.
    #[inline]
    fn block(&mut self, lo: i64, hi: i64, len: usize) {
        self.base = self.base.min(lo);
        let width = bits::width_of(hi.wrapping_sub(lo) as u64);
        self.cost += 1 + bits::packed_len(len, width);
        if let Some(slot) = self.lows.get_mut(self.seen) {
            *slot = lo;
            self.seen += 1;
        } else {
            self.cost += 2;
        }
    }

    fn finish(&self) -> usize {
        let offsets: usize = self
            .lows
            .get(..self.seen)
            .unwrap_or_default()
            .iter()
            .map(|&lo| varint::len(lo.wrapping_sub(self.base) as u64))
            .sum();
        self.cost + offsets + varint::len_signed(self.base) + 1
    }
}

/// [`heads_cost`] plus [`residual_cost_plain`] of delta orders 0, 1 and 2 of `values` (at
/// least 3 of them), in one pass that keeps no difference sequence. Order `k`'s residuals
/// begin at position `k`, so its blocks begin at positions `k + BLOCK_LEN * b`.
fn order_costs(values: &[i64]) -> [usize; 3] {
    let &[v0, v1, v2, ..] = values else {
        return [usize::MAX; 3];
    };
    let n = values.len();
    let d1 = v1.wrapping_sub(v0);
    let d1_next = v2.wrapping_sub(v1);
    let d2 = d1_next.wrapping_sub(d1);
    let heads = [
        0,
        varint::len_signed(v0),
        varint::len_signed(v0) + varint::len_signed(d1),
    ];
    // Order 0's residuals so far: v0, v1, v2; order 1's: d1, d1_next; order 2's: d2.
    let mut costs = [PlainCost::new(v0), PlainCost::new(d1), PlainCost::new(d2)];
    let mut lo = [v0.min(v1).min(v2), d1.min(d1_next), d2];
    let mut hi = [v0.max(v1).max(v2), d1.max(d1_next), d2];
    let (mut prev, mut prev_d1) = (v2, d1_next);
    let mut p = 3;
    while p < n {
        let k = p % BLOCK_LEN;
        if k < 3 {
            // Order k's block ends before position p.
            let Some(&v) = values.get(p) else { break };
            let r1 = v.wrapping_sub(prev);
            let r = [v, r1, r1.wrapping_sub(prev_d1)];
            (prev, prev_d1) = (v, r1);
            for (o, &x) in r.iter().enumerate() {
                if o == k {
                    if let (Some(c), Some(l), Some(h)) =
                        (costs.get_mut(o), lo.get_mut(o), hi.get_mut(o))
                    {
                        c.block(*l, *h, BLOCK_LEN);
                        (*l, *h) = (x, x);
                    }
                } else if let (Some(l), Some(h)) = (lo.get_mut(o), hi.get_mut(o)) {
                    (*l, *h) = ((*l).min(x), (*h).max(x));
                }
            }
            p += 1;
            continue;
        }
        // No order's block begins before the next multiple of BLOCK_LEN.
        let stop = n.min(p - k + BLOCK_LEN);
        let [mut lo0, mut lo1, mut lo2] = lo;
        let [mut hi0, mut hi1, mut hi2] = hi;
        for &v in values.get(p..stop).unwrap_or_default() {
            let r1 = v.wrapping_sub(prev);
            let r2 = r1.wrapping_sub(prev_d1);
            (prev, prev_d1) = (v, r1);
            (lo0, hi0) = (lo0.min(v), hi0.max(v));
            (lo1, hi1) = (lo1.min(r1), hi1.max(r1));
            (lo2, hi2) = (lo2.min(r2), hi2.max(r2));
        }
        (lo, hi) = ([lo0, lo1, lo2], [hi0, hi1, hi2]);
        p = stop;
    }
    let mut out = [0usize; 3];
    for (k, o) in out.iter_mut().enumerate() {
        // The last block holds what is left of order k's n - k residuals.
        let last = (n - k - 1) % BLOCK_LEN + 1;
        if let (Some(c), Some(&l), Some(&h), Some(&head)) =
            (costs.get_mut(k), lo.get(k), hi.get(k), heads.get(k))
        {
            c.block(l, h, last);
            *o = head + c.finish();
        }
    }
    out
}

fn heads_cost(v: &[i64], order: u8) -> usize {
    v.iter()
        .take(usize::from(order))
        .map(|&h| varint::len_signed(h))
        .sum()
}

/// The layout [`encode`] uses for `values`: [`IntEncoding::Const`] when every value is the
/// same, else the delta order whose residuals pack smallest without a common divisor (a
/// divisor, when there is one, divides the residuals of every order alike in practice).
/// Leaves `scratch` holding the residual sequence of the chosen order.
fn choose(values: &[i64], scratch: &mut Vec<i64>) -> IntLayout {
    scratch.clear();
    let constant = IntLayout {
        encoding: IntEncoding::Const,
        order: 0,
    };
    let Some(&first) = values.first() else {
        return constant;
    };
    if values.iter().all(|&v| v == first) {
        return constant;
    }
    let costs = match *values {
        [v0, v1] => [
            residual_cost_plain(values),
            varint::len_signed(v0) + residual_cost_plain(&[v1.wrapping_sub(v0)]),
            usize::MAX,
        ],
        _ => order_costs(values),
    };
    // The lowest order of the least cost.
    let mut order = 0u8;
    let mut least = usize::MAX;
    for (k, &c) in (0u8..).zip(&costs) {
        if c < least {
            (order, least) = (k, c);
        }
    }
    scratch.extend_from_slice(values);
    delta::encode(scratch, order);
    IntLayout {
        encoding: IntEncoding::Packed,
        order,
    }
}

/// Residuals below which a section is never entropy-coded (its table would not pay).
const CODED_MIN_VALUES: usize = 16;

/// What follows the choice of a delta order: the packed section, the sparse one
/// ([`sparse::plan`]) when it is smaller, or the Coded one ([`coded::encode_if_smaller`]) when
/// it beats both with its slower decoding priced in.
enum Refined {
    /// The packed section's size after its heads (order byte and residuals).
    Packed(usize),
    Sparse(sparse::Plan),
    /// The estimated size of the section after its heads.
    Coded(usize),
}

/// Picks the encoding of `seq` (the sequence after the delta transform of `order`) and, if
/// `out` is given, appends a Coded section there when Coded wins (the other two are written by
/// the caller). Small values (below 2^7 once mapped) are Coded's own tokens; larger ones a
/// token for their bit length plus raw low bits, which the pricing charges for (a wide,
/// heavy-tailed section such as irregular event times codes its bit lengths near their
/// entropy).
fn refine(seq: &[i64], order: u8, out: Option<&mut Vec<u8>>) -> Refined {
    let k = usize::from(order).min(seq.len());
    let res = seq.get(k..).unwrap_or_default();
    let frame = frame_of(res);
    // The packed section after its heads: the order byte and the residuals.
    let packed = 1 + residual_cost(res, frame);
    let sparse = sparse::plan(res, packed - 1);
    let budget = sparse.map_or(packed, |plan| 1 + plan.size);
    if res.len() >= CODED_MIN_VALUES
        && let Some(est) = coded::encode_if_smaller(seq, order, frame.base, frame.gcd, budget, out)
    {
        return Refined::Coded(est);
    }
    sparse.map_or(Refined::Packed(packed), Refined::Sparse)
}

/// Bytes [`encode`] would write for `values`, and its choice. `scratch` is reused memory.
pub(crate) fn estimate(values: &[i64], scratch: &mut Vec<i64>) -> (usize, IntLayout) {
    let layout = choose(values, scratch);
    let Some(&first) = values.first() else {
        return (0, layout);
    };
    if layout.encoding == IntEncoding::Const {
        return (1 + varint::len_signed(first), layout);
    }
    let heads = 1 + heads_cost(scratch, layout.order);
    let (size, encoding) = match refine(scratch, layout.order, None) {
        // An estimate within a few bytes: the exact size is known only once coded.
        Refined::Coded(est) => (heads + est, IntEncoding::Coded),
        Refined::Sparse(plan) => (heads + 1 + plan.size, IntEncoding::Sparse),
        Refined::Packed(packed) => (heads + packed, IntEncoding::Packed),
    };
    let layout = IntLayout {
        encoding,
        order: layout.order,
    };
    (size, layout)
}

/// Appends the int section of `values`, choosing the smallest encoding.
pub(crate) fn encode(values: &[i64], out: &mut Vec<u8>, scratch: &mut Vec<i64>) -> IntLayout {
    let layout = choose(values, scratch);
    if layout.encoding == IntEncoding::Const {
        write_residuals(values, layout, out, scratch);
        return layout;
    }
    let encoding = write_refined(values, layout.order, out, scratch);
    IntLayout {
        encoding,
        order: layout.order,
    }
}

/// Appends the int section of `values` in the given layout (from [`estimate`]).
pub(crate) fn encode_as(
    values: &[i64],
    layout: IntLayout,
    out: &mut Vec<u8>,
    scratch: &mut Vec<i64>,
) {
    scratch.clear();
    if layout.encoding == IntEncoding::Const {
        write_residuals(values, layout, out, scratch);
        return;
    }
    scratch.extend_from_slice(values);
    delta::encode(scratch, layout.order);
    let k = usize::from(layout.order).min(scratch.len());
    let res = scratch.get(k..).unwrap_or_default();
    match layout.encoding {
        // The same decision as in `estimate`, so it writes the same bytes.
        IntEncoding::Coded => {
            write_refined(values, layout.order, out, scratch);
        }
        IntEncoding::Sparse => match sparse::plan(res, usize::MAX) {
            Some(plan) => sparse::write(scratch, layout.order, &plan, out),
            None => write_residuals(values, layout, out, scratch),
        },
        _ => write_residuals(values, layout, out, scratch),
    }
}

/// Writes the Packed, Sparse or Coded section of `values`, whichever [`refine`] picks for the
/// residual sequence `scratch` of delta order `order`, and returns it.
fn write_refined(values: &[i64], order: u8, out: &mut Vec<u8>, scratch: &[i64]) -> IntEncoding {
    match refine(scratch, order, Some(out)) {
        Refined::Coded(_) => IntEncoding::Coded,
        Refined::Sparse(plan) => {
            sparse::write(scratch, order, &plan, out);
            IntEncoding::Sparse
        }
        Refined::Packed(_) => {
            let layout = IntLayout {
                encoding: IntEncoding::Packed,
                order,
            };
            write_residuals(values, layout, out, scratch);
            IntEncoding::Packed
        }
    }
}

/// Writes the section of `values` in `layout`; `scratch` holds the residual sequence of the
/// layout's delta order (see [`choose`]).
fn write_residuals(values: &[i64], layout: IntLayout, out: &mut Vec<u8>, scratch: &[i64]) {
    let Some(&first) = values.first() else { return };
    match layout.encoding {
        IntEncoding::Const => {
            out.push(IntEncoding::Const.to_code());
            varint::put_signed(out, first);
        }
        IntEncoding::Packed | IntEncoding::Coded | IntEncoding::Sparse => {
            out.push(IntEncoding::Packed.to_code());
            out.push(layout.order);
            let k = usize::from(layout.order).min(scratch.len());
            let (heads, res) = scratch.split_at(k);
            for &h in heads {
                varint::put_signed(out, h);
            }
            if res.is_empty() {
                return;
            }
            let frame = frame_of(res);
            varint::put_signed(out, frame.base);
            varint::put(out, frame.gcd);
            if frame.gcd == 0 {
                return;
            }
            let mut tmp = [0u64; BLOCK_LEN];
            for block in res.chunks(BLOCK_LEN) {
                let (offset, width) = block_shape(block, frame);
                out.push(width as u8);
                varint::put(out, offset);
                let lo = frame
                    .base
                    .wrapping_add(offset.wrapping_mul(frame.gcd) as i64);
                let tmp = tmp.get_mut(..block.len()).unwrap_or_default();
                if frame.gcd == 1 {
                    for (t, &r) in tmp.iter_mut().zip(block) {
                        *t = r.wrapping_sub(lo) as u64;
                    }
                } else {
                    for (t, &r) in tmp.iter_mut().zip(block) {
                        *t = r.wrapping_sub(lo) as u64 / frame.gcd;
                    }
                }
                bits::pack(tmp, width, out);
            }
        }
    }
}

/// Reads the delta order of a Packed or Sparse section of `n` values and appends its heads to
/// `out`; returns the order and the number of heads.
fn read_order_and_heads(r: &mut Reader<'_>, n: usize, out: &mut Vec<i64>) -> Result<(u8, usize)> {
    let order = r.u8()?;
    if order > 2 {
        return Err(Error::Corruption(format!("delta order {order}")));
    }
    let k = usize::from(order).min(n);
    for _ in 0..k {
        out.push(r.varint_signed()?);
    }
    Ok((order, k))
}

/// Reads an int section of `n` values, appending them to `out`.
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input.
pub(crate) fn decode(r: &mut Reader<'_>, n: usize, out: &mut Vec<i64>) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let start = out.len();
    out.reserve(n);
    match IntEncoding::try_from_code(r.u8()?)? {
        IntEncoding::Const => {
            let v = r.varint_signed()?;
            out.resize(start + n, v);
        }
        IntEncoding::Packed => {
            let (order, k) = read_order_and_heads(r, n, out)?;
            let m = n - k;
            if m > 0 {
                let base = r.varint_signed()?;
                let g = r.varint()?;
                if g == 0 {
                    // Every residual equals the base.
                    out.resize(start + n, base);
                }
                let mut left = if g == 0 { 0 } else { m };
                let mut at = out.len();
                out.resize(start + n, 0);
                while left > 0 {
                    let count = left.min(BLOCK_LEN);
                    left -= count;
                    let width = u32::from(r.u8()?);
                    if width > 64 {
                        return Err(Error::Corruption(format!("bit width {width}")));
                    }
                    let offset = r.varint()?;
                    let src = r.bytes(bits::packed_len(count, width))?;
                    let frame = bits::Frame {
                        base: base.wrapping_add(offset.wrapping_mul(g) as i64),
                        step: g,
                    };
                    let dst = out.get_mut(at..at + count).unwrap_or_default();
                    bits::unpack_block(src, width, frame, dst)?;
                    at += count;
                }
            }
            delta::decode(out.get_mut(start..).unwrap_or_default(), order);
        }
        IntEncoding::Sparse => {
            if r.version() < 5 {
                return Err(Error::Corruption(format!(
                    "int encoding Sparse in a version {} blob",
                    r.version()
                )));
            }
            let (order, k) = read_order_and_heads(r, n, out)?;
            if n > k {
                sparse::decode_residuals(r, n - k, out)?;
            }
            delta::decode(out.get_mut(start..).unwrap_or_default(), order);
        }
        IntEncoding::Coded => {
            if r.version() < 3 {
                return Err(Error::Corruption(format!(
                    "int encoding Coded in a version {} blob",
                    r.version()
                )));
            }
            let (order, flags) = coded::read_header(r)?;
            let k = usize::from(order).min(n);
            for _ in 0..k {
                out.push(r.varint_signed()?);
            }
            out.resize(start + n, 0);
            if n > k {
                let (heads, res) = out.get_mut(start..).unwrap_or_default().split_at_mut(k);
                coded::decode_residuals(r, flags, order, heads, res)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`choose`] as three passes over stored difference sequences: the model the one-pass
    /// [`order_costs`] must agree with.
    fn choose_by_passes(values: &[i64], scratch: &mut Vec<i64>) -> IntLayout {
        scratch.clear();
        let Some(&first) = values.first() else {
            return IntLayout {
                encoding: IntEncoding::Const,
                order: 0,
            };
        };
        if values.iter().all(|&v| v == first) {
            return IntLayout {
                encoding: IntEncoding::Const,
                order: 0,
            };
        }
        scratch.extend_from_slice(values);
        let mut best = (usize::MAX, 0u8);
        for order in 0..=2u8 {
            if order > 0 {
                delta::encode(&mut scratch[usize::from(order) - 1..], 1);
            }
            let k = usize::from(order).min(scratch.len());
            let cost = heads_cost(scratch, order) + residual_cost_plain(&scratch[k..]);
            if cost < best.0 {
                best = (cost, order);
            }
            if scratch.len() <= usize::from(order) + 1 {
                break;
            }
        }
        scratch.clear();
        scratch.extend_from_slice(values);
        delta::encode(scratch, best.1);
        IntLayout {
            encoding: IntEncoding::Packed,
            order: best.1,
        }
    }

    /// Sequences whose orders compete: steps around a trend, with jumps, of any length
    /// around the block boundaries.
    fn sequence() -> impl Strategy<Value = Vec<i64>> {
        (
            0usize..700,
            any::<i64>(),
            -1000i64..1000,
            0u32..40,
            proptest::collection::vec(any::<i64>(), 0..8),
        )
            .prop_flat_map(|(n, start, step, noise_bits, jumps)| {
                proptest::collection::vec(any::<u64>(), n).prop_map(move |noise| {
                    let mut v = start;
                    let mut out: Vec<i64> = noise
                        .iter()
                        .map(|&r| {
                            let jitter = if noise_bits == 0 {
                                0
                            } else {
                                (r >> (64 - noise_bits)) as i64
                            };
                            v = v.wrapping_add(step).wrapping_add(jitter);
                            v
                        })
                        .collect();
                    let len = out.len();
                    for (i, &j) in jumps.iter().enumerate() {
                        if len > 0 {
                            out[(j as usize).wrapping_add(i) % len] = j;
                        }
                    }
                    out
                })
            })
    }

    proptest! {
        #[test]
        fn one_pass_choice_is_the_three_pass_choice(values in sequence()) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            prop_assert_eq!(choose(&values, &mut a), choose_by_passes(&values, &mut b));
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn one_pass_costs_are_the_three_pass_costs_at_block_edges() {
        for n in [3, 4, 127, 128, 129, 130, 131, 255, 256, 257, 258, 259, 1000] {
            let values: Vec<i64> = (0..n as i64).map(|i| i * i % 97 - 3 * i).collect();
            let mut seq = values.clone();
            let mut want = [0usize; 3];
            for (order, w) in (0u8..).zip(want.iter_mut()) {
                if order > 0 {
                    delta::encode(&mut seq[usize::from(order) - 1..], 1);
                }
                *w = heads_cost(&seq, order) + residual_cost_plain(&seq[usize::from(order)..]);
            }
            assert_eq!(order_costs(&values), want, "n = {n}");
        }
    }

    fn round_trip(values: &[i64]) -> (usize, IntLayout) {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let (est, layout) = estimate(values, &mut scratch);
        let layout2 = encode(values, &mut out, &mut scratch);
        assert_eq!(layout, layout2);
        if layout.encoding == IntEncoding::Coded {
            assert!(
                est.abs_diff(out.len()) <= 4 + out.len() / 64,
                "{est} vs {}",
                out.len()
            );
        } else {
            assert_eq!(est, out.len(), "estimate is exact");
        }
        let mut r = Reader::new(&out);
        let mut back = Vec::new();
        decode(&mut r, values.len(), &mut back).unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!(back, values);
        (out.len(), layout)
    }

    #[test]
    fn regular_timestamps_cost_almost_nothing() {
        let ts: Vec<i64> = (0..1000)
            .map(|i| 1_360_000_000_000 + 3_600_000 * i)
            .collect();
        let (len, layout) = round_trip(&ts);
        assert!(len < 20, "{len}");
        assert!(layout.order >= 1);
    }

    #[test]
    fn extremes_and_wrapping() {
        round_trip(&[i64::MIN, i64::MAX, 0, -1, i64::MIN, i64::MAX]);
        round_trip(&[i64::MAX; 3]);
        round_trip(&[5]);
        round_trip(&[5, 6]);
        round_trip(&[5, 6, 8]);
        round_trip(&[]);
        let v: Vec<i64> = (0..1000)
            .map(|i: i64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64))
            .collect();
        round_trip(&v);
    }

    #[test]
    fn divisor_test_matches_remainder() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for d in (1..200u64).chain([1000, 3_600_000, 86_400_000, 1 << 40, u64::MAX, u64::MAX - 1]) {
            let div = Divisor::new(d);
            for k in 0..200u64 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                for v in [
                    x,
                    x % 10_000,
                    k.wrapping_mul(d),
                    k.wrapping_mul(d).wrapping_add(1),
                    0,
                ] {
                    assert_eq!(div.divides(v), v % d == 0, "{v} by {d}");
                }
            }
        }
    }

    #[test]
    fn frame_divisor_is_the_exact_gcd() {
        let naive = |res: &[i64]| {
            let base = *res.iter().min().unwrap();
            res.iter()
                .fold(0, |g, &r| gcd(g, r.wrapping_sub(base) as u64))
        };
        let cases: Vec<Vec<i64>> = vec![
            (0..100).map(|i| i * 60_000).collect(),
            // Multiples of 100 but one value, late: the cheap check must fall back.
            (0..100)
                .map(|i| if i == 90 { 12_345 } else { i * 100 })
                .collect(),
            // The seed values all equal.
            (0..100)
                .map(|i| if i < 20 { 7 } else { 7 + 6 * i })
                .collect(),
            vec![5; 10],
            vec![i64::MIN, i64::MAX, 0],
            (0..100).map(|i| (i * 7919) % 1000 * 1000 + 3).collect(),
        ];
        for res in cases {
            assert_eq!(frame_of(&res).gcd, naive(&res), "{res:?}");
        }
    }

    /// TSBS cpu-only fields: a walk moved by N(0,1) steps, clamped to [0, 100], truncated.
    fn tsbs_walk(n: usize, seed: u64) -> Vec<i64> {
        let mut x = seed;
        let mut next = || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut v = 100.0 * next();
        (0..n)
            .map(|_| {
                let (a, b) = (next(), next());
                let step = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
                v = (v + step).clamp(0.0, 100.0);
                v as i64
            })
            .collect()
    }

    #[test]
    fn heavy_tailed_event_times_are_entropy_coded() {
        // Event times on whole seconds, gaps from a second to about a day with every bit
        // length about as likely: most deltas are wide (raw bits beside their token), and
        // packing spends the widest gap's width on each.
        let mut x = 7u64;
        let mut next = || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut t = 1_356_000_000_000_i64;
        let v: Vec<i64> = (0..1000)
            .map(|_| {
                t += 1000 * (2f64.powf(next() * 17.0) as i64);
                t
            })
            .collect();
        let (len, layout) = round_trip(&v);
        assert_eq!(layout.encoding, IntEncoding::Coded);
        let bits = (len * 8) as f64 / v.len() as f64;
        assert!(bits < 15.0, "{bits} bits/value");
    }

    #[test]
    fn random_walk_deltas_are_entropy_coded() {
        for n in [360, 1000] {
            let mut total = 0;
            for seed in 0..20 {
                let v = tsbs_walk(n, seed);
                let (len, layout) = round_trip(&v);
                assert_eq!(layout.encoding, IntEncoding::Coded);
                total += len;
            }
            let bits = (total * 8) as f64 / (20 * n) as f64;
            eprintln!("{n}: {bits:.3} bits/value");
            assert!(bits < 2.6, "{n}: {bits} bits/value");
        }
    }

    #[test]
    fn common_divisor_is_removed() {
        let v: Vec<i64> = (0..256).map(|i| ((i * 7919) % 100) * 1000).collect();
        let (len, _) = round_trip(&v);
        // 7 bits per value plus small headers.
        assert!(len < 256 * 7 / 8 + 16, "{len}");
    }
}
