//! The bytes lane: payloads of strings, documents, arrays, binary, ObjectIds, decimal128 and
//! every other BSON type with a value, kept exactly as given.
//!
//! * [`BytesEncoding::Plain`]: lengths (int section) + concatenated payloads.
//! * [`BytesEncoding::Dict`]: distinct payloads in first-appearance order (lengths + data), then
//!   one index per value (int section, so bit-packed).
//! * [`BytesEncoding::DictCoded`]: as `Dict` with the entries most frequent first and the
//!   indices range-coded by an adaptive context model ([`crate::dict_model`]): repeated tags
//!   cost less than their entropy when they persist from row to row (format version 2).
//! * [`BytesEncoding::ObjectId`]: every payload is 12 bytes; the big-endian 4-byte timestamp,
//!   5-byte middle and 3-byte counter become three int sections (generated ObjectIds of one
//!   bucket are nearly sequential, so they cost a few bits each).
//!
//! The smallest candidate wins; the column-level zstd pass then compresses text further.

use foldhash::{HashMap, HashMapExt};

use crate::dict_model;
use crate::format::{BytesEncoding, MAX_LANE_BYTES};
use crate::ints;
use crate::reader::Reader;
use crate::varint;
use crate::{Error, Result};

/// Iterates over the payloads of a bytes lane.
fn payloads<'a>(bytes: &'a [u8], ends: &'a [u32]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut start = 0usize;
    ends.iter().map(move |&e| {
        let end = e as usize;
        let s = bytes.get(start..end).unwrap_or_default();
        start = end;
        s
    })
}

/// Big-endian integer of up to 8 bytes (ObjectId fields are big-endian by definition).
fn be_int(b: &[u8]) -> i64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)) as i64
}

fn put_be(out: &mut Vec<u8>, v: u64, len: usize) {
    for i in (0..len).rev() {
        out.push((v >> (8 * i)) as u8);
    }
}

/// Appends the bytes lane; returns the encoding chosen.
pub(crate) fn encode(
    bytes: &[u8],
    ends: &[u32],
    out: &mut Vec<u8>,
    scratch: &mut Vec<i64>,
) -> BytesEncoding {
    let n = ends.len();
    let lengths: Vec<i64> = payloads(bytes, ends).map(|p| p.len() as i64).collect();
    let (len_cost, len_layout) = ints::estimate(&lengths, scratch);
    let plain_cost = 1 + len_cost + bytes.len();
    let mut best = (plain_cost, BytesEncoding::Plain);

    // ObjectId split.
    let mut oid_parts: Option<([Vec<i64>; 3], [ints::IntLayout; 3])> = None;
    // Whether every payload is 12 bytes and each is greater than the one before (as generated
    // ObjectIds of one series are): then no payload repeats and no dictionary is tried.
    let mut ascending = false;
    if n > 0 && lengths.iter().all(|&l| l == 12) {
        let mut parts = [
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        ];
        for oid in bytes.chunks_exact(12) {
            let (ts, rest) = oid.split_at(4);
            let (mid, ctr) = rest.split_at(5);
            parts[0].push(be_int(ts));
            parts[1].push(be_int(mid));
            parts[2].push(be_int(ctr));
        }
        let mut cost = 1;
        let layouts = parts.each_ref().map(|p| {
            let (size, layout) = ints::estimate(p, scratch);
            cost += size;
            layout
        });
        if cost < best.0 {
            best = (cost, BytesEncoding::ObjectId);
        }
        #[expect(
            clippy::big_endian_bytes,
            reason = "ObjectIds order as big-endian numbers"
        )]
        let key = |oid: &[u8]| {
            let mut k = [0u8; 16];
            k[4..].copy_from_slice(oid);
            u128::from_be_bytes(k)
        };
        ascending = bytes
            .chunks_exact(12)
            .zip(bytes.chunks_exact(12).skip(1))
            .all(|(a, b)| key(a) < key(b));
        oid_parts = Some((parts, layouts));
    }

    // Dictionary.
    let mut dict: Option<(Vec<&[u8]>, Vec<i64>)> = None;
    let mut coded_dict: Option<Coded<'_>> = None;
    if n >= 2 && !ascending {
        let mut index: HashMap<&[u8], i64> = HashMap::new();
        let mut entries: Vec<&[u8]> = Vec::new();
        let mut codes = Vec::with_capacity(n);
        for p in payloads(bytes, ends) {
            let next = entries.len() as i64;
            let code = *index.entry(p).or_insert_with(|| {
                entries.push(p);
                next
            });
            codes.push(code);
        }
        if entries.len() < n {
            let entry_lengths: Vec<i64> = entries.iter().map(|e| e.len() as i64).collect();
            let entries_cost = 1
                + varint::len(entries.len() as u64)
                + ints::estimate(&entry_lengths, scratch).0
                + entries.iter().map(|e| e.len()).sum::<usize>();
            let cost = entries_cost + ints::estimate(&codes, scratch).0;
            if cost < best.0 {
                best = (cost, BytesEncoding::Dict);
            }
            if (2..=dict_model::MAX_SYMBOLS).contains(&entries.len()) && n <= dict_model::MAX_VALUES
            {
                let c = coded(&entries, &codes);
                let cost = entries_cost + varint::len(c.stream.len() as u64) + c.stream.len();
                if cost < best.0 {
                    best = (cost, BytesEncoding::DictCoded);
                    coded_dict = Some(c);
                }
            }
            dict = Some((entries, codes));
        }
    }

    if let (BytesEncoding::DictCoded, Some(c)) = (best.1, coded_dict) {
        out.push(BytesEncoding::DictCoded.to_code());
        varint::put(out, c.entries.len() as u64);
        let entry_lengths: Vec<i64> = c.entries.iter().map(|e| e.len() as i64).collect();
        ints::encode(&entry_lengths, out, scratch);
        for e in &c.entries {
            out.extend_from_slice(e);
        }
        varint::put(out, c.stream.len() as u64);
        out.extend_from_slice(&c.stream);
        return BytesEncoding::DictCoded;
    }
    match (best.1, oid_parts, dict) {
        (BytesEncoding::ObjectId, Some((parts, layouts)), _) => {
            out.push(BytesEncoding::ObjectId.to_code());
            for (p, layout) in parts.iter().zip(layouts) {
                ints::encode_as(p, layout, out, scratch);
            }
            BytesEncoding::ObjectId
        }
        (BytesEncoding::Dict, _, Some((entries, codes))) => {
            out.push(BytesEncoding::Dict.to_code());
            varint::put(out, entries.len() as u64);
            let entry_lengths: Vec<i64> = entries.iter().map(|e| e.len() as i64).collect();
            ints::encode(&entry_lengths, out, scratch);
            for e in &entries {
                out.extend_from_slice(e);
            }
            ints::encode(&codes, out, scratch);
            BytesEncoding::Dict
        }
        _ => {
            out.push(BytesEncoding::Plain.to_code());
            ints::encode_as(&lengths, len_layout, out, scratch);
            out.extend_from_slice(bytes);
            BytesEncoding::Plain
        }
    }
}

/// A dictionary with its entries most frequent first and its coded index stream.
struct Coded<'a> {
    entries: Vec<&'a [u8]>,
    stream: Vec<u8>,
}

fn coded<'a>(entries: &[&'a [u8]], codes: &[i64]) -> Coded<'a> {
    let mut counts = vec![0usize; entries.len()];
    for &c in codes {
        if let Some(n) = usize::try_from(c).ok().and_then(|c| counts.get_mut(c)) {
            *n += 1;
        }
    }
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(counts.get(i).copied().unwrap_or(0)));
    let mut rank = vec![0i64; entries.len()];
    for (r, &i) in order.iter().enumerate() {
        if let Some(slot) = rank.get_mut(i) {
            *slot = r as i64;
        }
    }
    let ranked: Vec<i64> = codes
        .iter()
        .map(|&c| {
            usize::try_from(c)
                .ok()
                .and_then(|c| rank.get(c))
                .copied()
                .unwrap_or(0)
        })
        .collect();
    let mut stream = Vec::new();
    dict_model::encode(&ranked, entries.len(), &mut stream);
    Coded {
        entries: order
            .iter()
            .filter_map(|&i| entries.get(i).copied())
            .collect(),
        stream,
    }
}

/// Reads `n` lengths and checks each is in range and their sum fits the limit and `avail`.
fn read_lengths(
    r: &mut Reader<'_>,
    n: usize,
    limit: usize,
    scratch: &mut Vec<i64>,
) -> Result<usize> {
    scratch.clear();
    ints::decode(r, n, scratch)?;
    let mut total = 0usize;
    for &l in scratch.iter() {
        let l = usize::try_from(l).map_err(|_| Error::Corruption(format!("payload length {l}")))?;
        total = total
            .checked_add(l)
            .filter(|&t| t <= limit)
            .ok_or_else(|| Error::Corruption("bytes lane exceeds its limit".to_owned()))?;
    }
    Ok(total)
}

/// Reads a bytes lane of `n` values into `bytes` and `ends` (both appended to; both empty on
/// entry).
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input.
pub(crate) fn decode(
    r: &mut Reader<'_>,
    n: usize,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<u32>,
    scratch: &mut Vec<i64>,
    version: u8,
) -> Result<()> {
    let encoding = BytesEncoding::try_from_code(r.u8()?)?;
    if encoding == BytesEncoding::DictCoded && version < 2 {
        return Err(Error::Corruption(
            "bytes encoding DictCoded in a version 1 blob".to_owned(),
        ));
    }
    match encoding {
        BytesEncoding::Plain => {
            let total = read_lengths(r, n, MAX_LANE_BYTES.min(r.remaining()), scratch)?;
            let data = r.bytes(total)?;
            bytes.extend_from_slice(data);
            ends.reserve(n);
            let mut end = 0u32;
            for &l in scratch.iter() {
                end += l as u32;
                ends.push(end);
            }
        }
        BytesEncoding::Dict | BytesEncoding::DictCoded => {
            let k = r.varint_at_most(n, "dictionary size")?;
            if k == 0 && n > 0 {
                return Err(Error::Corruption("empty dictionary".to_owned()));
            }
            let total = read_lengths(r, k, MAX_LANE_BYTES.min(r.remaining()), scratch)?;
            let data = r.bytes(total)?;
            let mut spans = Vec::with_capacity(k);
            let mut start = 0usize;
            for &l in scratch.iter() {
                let end = start + l as usize;
                spans.push((start, end));
                start = end;
            }
            scratch.clear();
            if encoding == BytesEncoding::DictCoded {
                let len = r.varint_at_most(r.remaining(), "coded index stream length")?;
                dict_model::decode(r.bytes(len)?, n, k, scratch)?;
            } else {
                ints::decode(r, n, scratch)?;
            }
            let mut out_len = 0usize;
            for &c in scratch.iter() {
                let span = usize::try_from(c).ok().and_then(|c| spans.get(c));
                let Some(&(s, e)) = span else {
                    return Err(Error::Corruption(format!(
                        "dictionary index {c} out of range"
                    )));
                };
                out_len = out_len
                    .checked_add(e - s)
                    .filter(|&t| t <= MAX_LANE_BYTES)
                    .ok_or_else(|| Error::Corruption("bytes lane exceeds its limit".to_owned()))?;
            }
            bytes.reserve(out_len);
            ends.reserve(n);
            for &c in scratch.iter() {
                let (s, e) = spans.get(c as usize).copied().unwrap_or((0, 0));
                bytes.extend_from_slice(data.get(s..e).unwrap_or_default());
                ends.push(bytes.len() as u32);
            }
        }
        BytesEncoding::ObjectId => {
            let total = n
                .checked_mul(12)
                .filter(|&t| t <= MAX_LANE_BYTES)
                .ok_or_else(|| Error::Corruption("bytes lane exceeds its limit".to_owned()))?;
            let mut parts = [Vec::new(), Vec::new(), Vec::new()];
            for p in &mut parts {
                ints::decode(r, n, p)?;
            }
            bytes.reserve(total);
            ends.reserve(n);
            let [ts, mid, ctr] = &parts;
            for ((&t, &m), &c) in ts.iter().zip(mid).zip(ctr) {
                let (t, m, c) = (t as u64, m as u64, c as u64);
                if t >> 32 != 0 || m >> 40 != 0 || c >> 24 != 0 {
                    return Err(Error::Corruption("ObjectId part out of range".to_owned()));
                }
                put_be(bytes, t, 4);
                put_be(bytes, m, 5);
                put_be(bytes, c, 3);
                ends.push(bytes.len() as u32);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[expect(
    clippy::big_endian_bytes,
    reason = "ObjectIds are big-endian by definition"
)]
mod tests {
    use super::*;

    fn lane(values: &[&[u8]]) -> (Vec<u8>, Vec<u32>) {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for v in values {
            bytes.extend_from_slice(v);
            ends.push(bytes.len() as u32);
        }
        (bytes, ends)
    }

    fn round_trip(values: &[&[u8]]) -> (usize, BytesEncoding) {
        let (bytes, ends) = lane(values);
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let enc = encode(&bytes, &ends, &mut out, &mut scratch);
        let mut r = Reader::new(&out);
        let (mut b2, mut e2) = (Vec::new(), Vec::new());
        decode(
            &mut r,
            values.len(),
            &mut b2,
            &mut e2,
            &mut scratch,
            crate::FORMAT_VERSION,
        )
        .unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!((b2, e2), (bytes, ends));
        (out.len(), enc)
    }

    #[test]
    fn repeated_strings_use_a_dictionary() {
        let dirs: [&[u8]; 4] = [b"N", b"NNW", b"SE", b"ESE"];
        let v: Vec<&[u8]> = (0..1000).map(|i| dirs[(i * 7 / 13) % 4]).collect();
        let (len, enc) = round_trip(&v);
        // Each row stays or moves to the next direction (about 1 bit of information a row,
        // against 2 bits for bit-packed indices), which the context model learns.
        assert_eq!(enc, BytesEncoding::DictCoded);
        assert!(len < 1000 * 13 / 10 / 8 + 20, "{len}");
        // Without a pattern between rows, the plain dictionary's bit-packed indices win or
        // tie, and the coded stream is never larger than the entropy plus a few bytes.
        let mut x = 3u64;
        let v: Vec<&[u8]> = (0..1000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                dirs[(x >> 62) as usize]
            })
            .collect();
        let (len, enc) = round_trip(&v);
        assert!(matches!(
            enc,
            BytesEncoding::Dict | BytesEncoding::DictCoded
        ));
        assert!(len < 2000 / 8 + 40, "{len}");
    }

    #[test]
    fn coded_dictionary_needs_version_2() {
        let v: Vec<&[u8]> = (0..100)
            .map(|i| if i % 3 == 0 { &b"a"[..] } else { b"b" })
            .collect();
        let (bytes, ends) = lane(&v);
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        assert_eq!(
            encode(&bytes, &ends, &mut out, &mut scratch),
            BytesEncoding::DictCoded
        );
        let (mut b, mut e) = (Vec::new(), Vec::new());
        let err = decode(&mut Reader::new(&out), 100, &mut b, &mut e, &mut scratch, 1);
        assert!(matches!(err, Err(Error::Corruption(_))));
    }

    #[test]
    fn sequential_object_ids_are_cheap() {
        let ids: Vec<[u8; 12]> = (0..1000u32)
            .map(|i| {
                let mut id = [0u8; 12];
                id[..4].copy_from_slice(&(1_700_000_000 + i / 100).to_be_bytes());
                id[4..9].copy_from_slice(&[0xAB, 0xCD, 0xEF, 0x01, 0x23]);
                id[9..].copy_from_slice(&(0x00FF_FFF0u32 + i).to_be_bytes()[1..]);
                id
            })
            .collect();
        let v: Vec<&[u8]> = ids.iter().map(|i| &i[..]).collect();
        let (len, enc) = round_trip(&v);
        assert_eq!(enc, BytesEncoding::ObjectId);
        assert!(len < 1000 / 2, "{len} bytes for 1000 ObjectIds");
    }

    #[test]
    fn unique_and_empty_payloads() {
        round_trip(&[]);
        round_trip(&[b""]);
        round_trip(&[b"", b"", b""]);
        round_trip(&[b"a", b"bc", b"", b"def"]);
    }
}
