//! tscoll-codec: the columnar codec and bucket blob format of tscoll.
//!
//! A bucket (SPEC §4) is stored as one or more *blobs*; each blob holds a run of rows of every
//! column of the bucket. [`encode_bucket`] turns named [`Column`]s into a versioned, checksummed
//! blob and [`decode_bucket`] / [`decode_bucket_projected`] give them back. Pure functions, no
//! I/O. The byte layout (little-endian) is specified in `docs/format.md`.
//!
//! Each column is encoded lane by lane (type stream, ints, floats, bytes), each lane with the
//! smallest of several encodings (delta / delta-of-delta + frame of reference + bit-packing or
//! rANS entropy coding, decimal floats, dictionaries, ObjectId splitting), and the body goes
//! through zstd when that makes it smaller.
//!
//! Rows written once and rarely read (the engine's write-ahead log) take the plain row format
//! instead ([`PlainWriter`], [`decode_plain`]): the lanes with one fixed light transform and
//! no encoding chosen.
//!
//! ```
//! use tscoll_codec::{Column, decode_bucket, encode_bucket, tag};
//!
//! let mut time = Column::new();
//! let mut temp = Column::new();
//! for i in 0..1000 {
//!     time.push_int(tag::DATETIME, 1_362_067_200_000 + 3_600_000 * i);
//!     temp.push_float(f64::from(i32::try_from(i % 50).unwrap()) / 10.0 - 2.5);
//! }
//! let blob = encode_bucket(1000, &[("ts", &time), ("TEMP", &temp)])?;
//! let bucket = decode_bucket(&blob)?;
//! assert_eq!(bucket.row_count, 1000);
//! assert_eq!(bucket.columns[0], ("ts".to_owned(), time));
//! assert_eq!(bucket.columns[1], ("TEMP".to_owned(), temp));
//! # Ok::<(), tscoll_codec::Error>(())
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]
#![deny(clippy::big_endian_bytes)]

mod bits;
mod bitstream;
mod blob;
mod bytes;
mod coded;
mod column;
mod delta;
mod dict_model;
mod error;
mod float;
mod float_mult;
mod format;
mod ints;
mod plain;
mod range_coder;
mod rans;
mod reader;
mod sparse;
mod types;
pub mod varint;
mod zigzag;
mod zstd_pass;

pub use blob::{BlobHeader, ColumnEntry, ColumnLayout, check_limits};
pub use column::{Column, ColumnIter, Lane, RowLanes, RowStart, ValueRef, tag};
pub use error::{Error, Result};
pub use float::FloatLayout;
pub use format::{
    BLOCK_LEN, BytesEncoding, ColumnWrap, FloatEncoding, IntEncoding, MAGIC, MAX_CELLS,
    MAX_COLUMNS, MAX_LANE_BYTES, MAX_NAME_LEN, MAX_RAW_BODY, MAX_ROWS, TypeEncoding,
};
pub use ints::IntLayout;
pub use plain::{PlainEntry, PlainTable, PlainWriter, decode_plain};

/// Newest blob format version this build writes (and every version up to it, it reads).
pub const FORMAT_VERSION: u8 = 5;

/// A decoded blob: its row count and its (possibly projected) columns in stored order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bucket {
    /// Number of rows of every column.
    pub row_count: usize,
    /// `(field name, column)` in the order they were encoded.
    pub columns: Vec<(String, Column)>,
}

/// Encodes columns of equal length into one blob.
///
/// # Errors
/// [`Error::InvalidArgument`] if a column's length differs from `row_count`, a name repeats,
/// or a size exceeds the format's limits ([`MAX_ROWS`], [`MAX_COLUMNS`], [`MAX_CELLS`],
/// [`MAX_NAME_LEN`], [`MAX_LANE_BYTES`]).
pub fn encode_bucket(row_count: usize, columns: &[(&str, &Column)]) -> Result<Vec<u8>> {
    blob::encode_blob(row_count, columns).map(|(blob, _)| blob)
}

/// As [`encode_bucket`], also returning the encodings chosen for each column (for statistics
/// and benchmarks).
///
/// ```
/// use tscoll_codec::{Column, TypeEncoding, encode_bucket_with_layout, tag};
///
/// let mut c = Column::new();
/// (0..100).for_each(|i| c.push_int(tag::INT32, i));
/// let (blob, layouts) = encode_bucket_with_layout(100, &[("n", &c)])?;
/// assert_eq!(layouts[0].types, TypeEncoding::Const);
/// assert!(blob.len() < 40);
/// # Ok::<(), tscoll_codec::Error>(())
/// ```
///
/// # Errors
/// As [`encode_bucket`].
pub fn encode_bucket_with_layout(
    row_count: usize,
    columns: &[(&str, &Column)],
) -> Result<(Vec<u8>, Vec<ColumnLayout>)> {
    blob::encode_blob(row_count, columns)
}

/// Decodes every column of a blob.
///
/// # Errors
/// [`Error::Corruption`], [`Error::Truncated`] or [`Error::UnsupportedVersion`] for bytes that
/// are not a blob this build can read. Never panics; allocates only what the input justifies
/// (within the format limits).
pub fn decode_bucket(blob: &[u8]) -> Result<Bucket> {
    decode_bucket_projected(blob, &mut |_| true)
}

/// Decodes only the columns whose name `keep` accepts; the others are skipped unread.
///
/// ```
/// use tscoll_codec::{Column, decode_bucket_projected, encode_bucket, tag};
///
/// let mut a = Column::new();
/// let mut b = Column::new();
/// a.push_int(tag::INT64, 7);
/// b.push_bytes(tag::STRING, b"x");
/// let blob = encode_bucket(1, &[("a", &a), ("b", &b)])?;
/// let bucket = decode_bucket_projected(&blob, &mut |name| name == "b")?;
/// assert_eq!(bucket.columns, vec![("b".to_owned(), b)]);
/// # Ok::<(), tscoll_codec::Error>(())
/// ```
///
/// # Errors
/// As [`decode_bucket`].
pub fn decode_bucket_projected(blob: &[u8], keep: &mut dyn FnMut(&str) -> bool) -> Result<Bucket> {
    blob::decode_blob(blob, keep)
}

/// Reads a blob's version, row count and column directory (names and encoded sizes) without
/// decoding any column. The checksum is verified.
///
/// ```
/// use tscoll_codec::{Column, encode_bucket, read_header, tag};
///
/// let mut a = Column::new();
/// a.push_float(1.5);
/// let blob = encode_bucket(1, &[("a", &a)])?;
/// let header = read_header(&blob)?;
/// assert_eq!((header.row_count, header.columns[0].name.as_str()), (1, "a"));
/// # Ok::<(), tscoll_codec::Error>(())
/// ```
///
/// # Errors
/// As [`decode_bucket`].
pub fn read_header(blob: &[u8]) -> Result<BlobHeader> {
    blob::read_header(blob)
}

/// Encodes one column body (the unit stored in a blob's body area); returns it and its layout.
///
/// # Errors
/// [`Error::InvalidArgument`] if the column exceeds the format limits.
pub fn encode_column(column: &Column) -> Result<(Vec<u8>, ColumnLayout)> {
    if column.len() > MAX_ROWS {
        return Err(Error::InvalidArgument(format!(
            "{} rows exceed {MAX_ROWS}",
            column.len()
        )));
    }
    let mut out = Vec::new();
    let layout = blob::Encoder::with(|enc| enc.column(column, &mut out))?;
    Ok((out, layout))
}

/// Decodes one column body of `row_count` rows written by [`encode_column`] (of this build's
/// [`FORMAT_VERSION`]).
///
/// ```
/// use tscoll_codec::{Column, decode_column, encode_column, tag};
///
/// let mut c = Column::new();
/// c.push_bytes(tag::STRING, b"hello");
/// c.push_missing();
/// let (body, _) = encode_column(&c)?;
/// assert_eq!(decode_column(&body, 2)?, c);
/// # Ok::<(), tscoll_codec::Error>(())
/// ```
///
/// # Errors
/// [`Error::Corruption`] or [`Error::Truncated`] for bad input; [`Error::InvalidArgument`] if
/// `row_count` exceeds [`MAX_ROWS`].
pub fn decode_column(body: &[u8], row_count: usize) -> Result<Column> {
    blob::decode_column(body, row_count, FORMAT_VERSION)
}
