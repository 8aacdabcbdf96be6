//! The blob (header, column directory, column bodies, checksum) and the column body (type
//! stream + lane sections, optionally one zstd frame). Layout: `docs/format.md`.

use std::collections::HashSet;

use crate::bytes;
use crate::column::Column;
use crate::float::{self, FloatLayout};
use crate::format::{
    BytesEncoding, ColumnWrap, FloatEncoding, MAGIC, MAX_CELLS, MAX_COLUMNS, MAX_LANE_BYTES,
    MAX_NAME_LEN, MAX_RAW_BODY, MAX_ROWS, TypeEncoding,
};
use crate::ints::{self, IntLayout};
use crate::reader::Reader;
use crate::types;
use crate::varint;
use crate::zstd_pass;
use crate::{Bucket, Error, FORMAT_VERSION, Result};

/// Raw bodies shorter than this are not offered to zstd.
const ZSTD_MIN_BODY: usize = 64;
/// Bytes of the fixed prefix (magic + version) and of the checksum.
const PREFIX_LEN: usize = MAGIC.len() + 1;
const CRC_LEN: usize = 4;

/// The encodings chosen for one column (for statistics and benchmarks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnLayout {
    /// Whether the body went through the zstd pass.
    pub zstd: bool,
    /// Bytes of the raw body (before zstd).
    pub raw_len: usize,
    /// Bytes of the body as stored.
    pub encoded_len: usize,
    /// Encoding of the type stream.
    pub types: TypeEncoding,
    /// Int lane, if any row is in it.
    pub ints: Option<IntLayout>,
    /// Float lane, if any row is in it.
    pub floats: Option<FloatLayout>,
    /// Bytes lane, if any row is in it.
    pub bytes: Option<BytesEncoding>,
}

/// Reusable encoder state (scratch memory).
pub(crate) struct Encoder {
    scratch: Vec<i64>,
    raw: Vec<u8>,
}

thread_local! {
    /// One encoder per thread: its scratch memory outlives a call, so encoding a small column
    /// does not pay for allocations.
    static ENCODER: std::cell::Cell<Option<Encoder>> = const { std::cell::Cell::new(None) };
}

/// Largest scratch memory (bytes) an encoder keeps between calls.
const KEEP_ENCODER_BYTES: usize = 1 << 20;

impl Encoder {
    /// Runs `f` with this thread's encoder (a fresh one if it is in use).
    pub(crate) fn with<T>(f: impl FnOnce(&mut Encoder) -> T) -> T {
        let mut enc = ENCODER
            .with(std::cell::Cell::take)
            .unwrap_or_else(Encoder::new);
        let result = f(&mut enc);
        if enc.raw.capacity() + 8 * enc.scratch.capacity() <= KEEP_ENCODER_BYTES {
            ENCODER.with(|cell| cell.set(Some(enc)));
        }
        result
    }

    pub(crate) fn new() -> Self {
        Encoder {
            scratch: Vec::new(),
            raw: Vec::new(),
        }
    }

    /// Appends the body of `col` to `out`.
    pub(crate) fn column(&mut self, col: &Column, out: &mut Vec<u8>) -> Result<ColumnLayout> {
        if col.bytes().len() > MAX_LANE_BYTES {
            return Err(Error::InvalidArgument(format!(
                "bytes lane of {} bytes exceeds the limit {MAX_LANE_BYTES}",
                col.bytes().len()
            )));
        }
        let raw = &mut self.raw;
        raw.clear();
        let scratch = &mut self.scratch;
        let types = types::encode(col.types(), raw, scratch);
        let ints = (!col.ints().is_empty()).then(|| ints::encode(col.ints(), raw, scratch));
        let floats = (!col.floats().is_empty()).then(|| float::encode(col.floats(), raw, scratch));
        let bytes =
            (!col.ends().is_empty()).then(|| bytes::encode(col.bytes(), col.ends(), raw, scratch));
        let raw_len = raw.len();
        if raw_len > MAX_RAW_BODY {
            return Err(Error::InvalidArgument(
                "column body exceeds the format limit".to_owned(),
            ));
        }
        let start = out.len();
        let mut zstd = false;
        // zstd rarely beats the numeric encodings and costs more than they do: it is offered
        // only bodies with bytes, or with floats that are not (mostly) decimals.
        let patched = floats.is_some_and(|f| match f.encoding {
            FloatEncoding::Alp => 16 * (f.corrections + f.exceptions) >= col.floats().len(),
            FloatEncoding::Mult => false,
            _ => true,
        });
        if raw_len >= ZSTD_MIN_BODY && (!col.ends().is_empty() || patched) {
            // Numeric bodies are already dense: zstd must save 1/8 to be worth its decode time.
            let margin = if col.ends().is_empty() {
                raw_len / 8
            } else {
                0
            };
            if let Some(z) = zstd_pass::compress(raw)
                && varint::len(raw_len as u64) + z.len() + margin < raw_len
            {
                out.push(ColumnWrap::Zstd.to_code());
                varint::put(out, raw_len as u64);
                out.extend_from_slice(&z);
                zstd = true;
            }
        }
        if !zstd {
            out.push(ColumnWrap::Raw.to_code());
            out.extend_from_slice(raw);
        }
        Ok(ColumnLayout {
            zstd,
            raw_len,
            encoded_len: out.len() - start,
            types,
            ints,
            floats,
            bytes,
        })
    }
}

/// Decodes a column body of `rows` rows.
pub(crate) fn decode_column(body: &[u8], rows: usize, version: u8) -> Result<Column> {
    if rows > MAX_ROWS {
        return Err(Error::InvalidArgument(format!(
            "{rows} rows exceed the limit {MAX_ROWS}"
        )));
    }
    let mut r = Reader::new(body);
    match ColumnWrap::try_from_code(r.u8()?)? {
        ColumnWrap::Raw => decode_raw(r.rest(), rows, version),
        ColumnWrap::Zstd => {
            let raw_len = r.varint_at_most(MAX_RAW_BODY, "raw column length")?;
            let raw = zstd_pass::decompress(r.rest(), raw_len)?;
            decode_raw(&raw, rows, version)
        }
    }
}

thread_local! {
    /// Scratch integers of the decoder, kept per thread so decoding a small column does not
    /// pay for an allocation.
    static DECODE_SCRATCH: std::cell::Cell<Vec<i64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Largest scratch buffer kept between calls (elements).
const KEEP_SCRATCH: usize = 1 << 16;

fn decode_raw(raw: &[u8], rows: usize, version: u8) -> Result<Column> {
    let mut scratch = DECODE_SCRATCH.with(std::cell::Cell::take);
    let column = decode_raw_with(raw, rows, version, &mut scratch);
    if scratch.capacity() <= KEEP_SCRATCH {
        scratch.clear();
        DECODE_SCRATCH.with(|cell| cell.set(scratch));
    }
    column
}

fn decode_raw_with(raw: &[u8], rows: usize, version: u8, scratch: &mut Vec<i64>) -> Result<Column> {
    let mut r = Reader::with_version(raw, version);
    let mut type_codes = Vec::new();
    let [_, n_int, n_float, n_bytes] = types::decode(&mut r, rows, &mut type_codes, scratch)?;
    let mut int_lane = Vec::new();
    ints::decode(&mut r, n_int, &mut int_lane)?;
    let mut float_lane = Vec::new();
    if n_float > 0 {
        float_lane.reserve(n_float);
        float::decode(&mut r, n_float, &mut float_lane, scratch)?;
    }
    let (mut data, mut ends) = (Vec::new(), Vec::new());
    if n_bytes > 0 {
        bytes::decode(&mut r, n_bytes, &mut data, &mut ends, scratch, version)?;
    }
    r.finish("column")?;
    Column::from_counted_lanes(type_codes, int_lane, float_lane, data, ends)
}

/// One column's entry in a blob's directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnEntry {
    /// Field name.
    pub name: String,
    /// Bytes of the column's body in the blob.
    pub encoded_len: usize,
}

/// A blob's header, read without decoding any column (see [`crate::read_header`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobHeader {
    /// Format version the blob was written with.
    pub version: u8,
    /// Number of rows of every column.
    pub row_count: usize,
    /// The columns in stored order.
    pub columns: Vec<ColumnEntry>,
}

/// Whether a bucket of `rows` rows and the fields `names` is within the format's limits
/// ([`MAX_ROWS`], [`MAX_COLUMNS`], [`MAX_CELLS`], [`MAX_NAME_LEN`]), which
/// [`crate::encode_bucket`] checks before encoding; `Err` says which it passes. Rows are
/// encoded only when their bucket is stored, so a writer checks a bucket against this before
/// it commits rows to it.
///
/// # Errors
/// The limit passed, as text.
pub fn check_limits<'a>(
    rows: usize,
    names: impl ExactSizeIterator<Item = &'a str>,
) -> std::result::Result<(), String> {
    check_shape(rows, names.len())?;
    for name in names {
        if name.len() > MAX_NAME_LEN {
            return Err(format!("column name of {} bytes", name.len()));
        }
    }
    Ok(())
}

/// Checks the limits shared by the encoder and the decoder.
fn check_shape(rows: usize, cols: usize) -> std::result::Result<(), String> {
    if rows > MAX_ROWS {
        return Err(format!("{rows} rows exceed the limit {MAX_ROWS}"));
    }
    if cols > MAX_COLUMNS {
        return Err(format!("{cols} columns exceed the limit {MAX_COLUMNS}"));
    }
    if rows.checked_mul(cols).is_none_or(|c| c > MAX_CELLS) {
        return Err(format!(
            "{rows} rows × {cols} columns exceed the limit of {MAX_CELLS} cells"
        ));
    }
    Ok(())
}

/// Encodes a blob; returns it and each column's layout.
pub(crate) fn encode_blob(
    row_count: usize,
    columns: &[(&str, &Column)],
) -> Result<(Vec<u8>, Vec<ColumnLayout>)> {
    check_shape(row_count, columns.len()).map_err(Error::InvalidArgument)?;
    let mut names = HashSet::with_capacity(columns.len());
    for (name, col) in columns {
        if col.len() != row_count {
            return Err(Error::InvalidArgument(format!(
                "column {name:?} has {} rows, expected {row_count}",
                col.len()
            )));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(Error::InvalidArgument(format!(
                "column name of {} bytes",
                name.len()
            )));
        }
        if !names.insert(*name) {
            return Err(Error::InvalidArgument(format!(
                "column name {name:?} repeats"
            )));
        }
    }
    let mut bodies = Vec::new();
    let mut layouts = Vec::with_capacity(columns.len());
    Encoder::with(|enc| {
        for (_, col) in columns {
            layouts.push(enc.column(col, &mut bodies)?);
        }
        Ok::<(), Error>(())
    })?;
    let mut blob = Vec::with_capacity(bodies.len() + 16 + columns.len() * 16);
    blob.extend_from_slice(&MAGIC);
    blob.push(FORMAT_VERSION);
    varint::put(&mut blob, row_count as u64);
    varint::put(&mut blob, columns.len() as u64);
    for ((name, _), layout) in columns.iter().zip(&layouts) {
        varint::put(&mut blob, name.len() as u64);
        blob.extend_from_slice(name.as_bytes());
        varint::put(&mut blob, layout.encoded_len as u64);
    }
    blob.extend_from_slice(&bodies);
    let crc = crc32fast::hash(&blob);
    blob.extend_from_slice(&crc.to_le_bytes());
    Ok((blob, layouts))
}

/// A parsed blob: version, rows and `(name, body)` per column.
struct Parsed<'a> {
    version: u8,
    rows: usize,
    columns: Vec<(&'a str, &'a [u8])>,
}

fn parse(blob: &[u8]) -> Result<Parsed<'_>> {
    let mut r = Reader::new(blob);
    let prefix = r.bytes(PREFIX_LEN)?;
    let (magic, version) = prefix.split_at(MAGIC.len());
    if magic != MAGIC {
        return Err(Error::Corruption(
            "not a tscoll blob (bad magic)".to_owned(),
        ));
    }
    let version = version.first().copied().unwrap_or(0);
    if version == 0 {
        return Err(Error::Corruption("format version 0".to_owned()));
    }
    if version > FORMAT_VERSION {
        return Err(Error::UnsupportedVersion(version));
    }
    if blob.len() < PREFIX_LEN + CRC_LEN {
        return Err(Error::Truncated {
            needed: PREFIX_LEN + CRC_LEN,
            available: blob.len(),
        });
    }
    let (covered, crc) = blob.split_at(blob.len() - CRC_LEN);
    let mut stored = [0u8; CRC_LEN];
    stored.copy_from_slice(crc);
    if crc32fast::hash(covered) != u32::from_le_bytes(stored) {
        return Err(Error::Corruption("checksum mismatch".to_owned()));
    }
    let mut r = Reader::new(covered.get(PREFIX_LEN..).unwrap_or_default());
    let rows = r.varint_at_most(MAX_ROWS, "row count")?;
    let cols = r.varint_at_most(MAX_COLUMNS, "column count")?;
    check_shape(rows, cols).map_err(Error::Corruption)?;
    // Every directory entry takes at least 2 bytes and every body at least 1.
    if cols.saturating_mul(3) > r.remaining() {
        return Err(Error::Corruption(format!(
            "{cols} columns cannot fit the blob"
        )));
    }
    let mut dir = Vec::with_capacity(cols);
    let mut seen = HashSet::with_capacity(cols);
    let mut total = 0usize;
    for _ in 0..cols {
        let name_len = r.varint_at_most(MAX_NAME_LEN, "column name length")?;
        let name = std::str::from_utf8(r.bytes(name_len)?)
            .map_err(|_| Error::Corruption("column name is not UTF-8".to_owned()))?;
        if !seen.insert(name) {
            return Err(Error::Corruption(format!("column name {name:?} repeats")));
        }
        let len = r.varint_at_most(r.remaining(), "column body length")?;
        total = total
            .checked_add(len)
            .ok_or_else(|| Error::Corruption("body sizes".to_owned()))?;
        dir.push((name, len));
    }
    if total != r.remaining() {
        return Err(Error::Corruption(format!(
            "column bodies take {total} bytes, the blob has {}",
            r.remaining()
        )));
    }
    let mut columns = Vec::with_capacity(cols);
    for (name, len) in dir {
        columns.push((name, r.bytes(len)?));
    }
    Ok(Parsed {
        version,
        rows,
        columns,
    })
}

/// Reads a blob's header and directory (checksum verified, no column decoded).
pub(crate) fn read_header(blob: &[u8]) -> Result<BlobHeader> {
    let p = parse(blob)?;
    Ok(BlobHeader {
        version: p.version,
        row_count: p.rows,
        columns: p
            .columns
            .iter()
            .map(|&(name, body)| ColumnEntry {
                name: name.to_owned(),
                encoded_len: body.len(),
            })
            .collect(),
    })
}

/// Decodes the columns `keep` accepts.
pub(crate) fn decode_blob(blob: &[u8], keep: &mut dyn FnMut(&str) -> bool) -> Result<Bucket> {
    let p = parse(blob)?;
    let mut columns = Vec::new();
    for (name, body) in p.columns {
        if keep(name) {
            columns.push((name.to_owned(), decode_column(body, p.rows, p.version)?));
        }
    }
    Ok(Bucket {
        row_count: p.rows,
        columns,
    })
}
