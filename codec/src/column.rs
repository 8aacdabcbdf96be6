//! The in-memory column: one field's values for a run of rows, split into typed lanes.
//!
//! A [`Column`] is what flows from the bucket catalog to the codec and back: the catalog appends
//! one value (or a skip) per measurement, the codec encodes the lanes, the engine unpacks rows
//! from a decoded column. Every row has a BSON element type code in [`Column::types`]
//! ([`tag::MISSING`] for a skip, SPEC §4.8); the value itself lives in the lane of its type:
//!
//! | lane | types | value kept |
//! |---|---|---|
//! | int | int32, int64, date (ms), timestamp, bool | `i64` (timestamp: its `u64` bits; bool: 0/1) |
//! | float | double | `f64`, bit-exact (NaN payloads, `-0.0`) |
//! | bytes | every other type with a value | payload bytes, see [`Column::push_bytes`] |
//! | none | missing, null, undefined, MinKey, MaxKey | nothing |
//!
//! Values of one lane are in row order, so a row's value is found by counting the rows of the
//! same lane before it.

/// BSON element type codes as used in [`Column::types`] (BSON spec), plus [`tag::MISSING`].
pub mod tag {
    /// No value in this row (a skip, SPEC §4.8). Not a BSON type.
    pub const MISSING: u8 = 0x00;
    /// 64-bit binary floating point.
    pub const DOUBLE: u8 = 0x01;
    /// UTF-8 string.
    pub const STRING: u8 = 0x02;
    /// Embedded document.
    pub const DOCUMENT: u8 = 0x03;
    /// Array.
    pub const ARRAY: u8 = 0x04;
    /// Binary data.
    pub const BINARY: u8 = 0x05;
    /// Undefined (deprecated).
    pub const UNDEFINED: u8 = 0x06;
    /// ObjectId (12 bytes).
    pub const OBJECT_ID: u8 = 0x07;
    /// Boolean.
    pub const BOOLEAN: u8 = 0x08;
    /// UTC datetime, milliseconds since the Unix epoch.
    pub const DATETIME: u8 = 0x09;
    /// Null.
    pub const NULL: u8 = 0x0A;
    /// Regular expression.
    pub const REGEX: u8 = 0x0B;
    /// DBPointer (deprecated).
    pub const DB_POINTER: u8 = 0x0C;
    /// JavaScript code.
    pub const JAVASCRIPT: u8 = 0x0D;
    /// Symbol (deprecated).
    pub const SYMBOL: u8 = 0x0E;
    /// JavaScript code with scope (deprecated).
    pub const JAVASCRIPT_WITH_SCOPE: u8 = 0x0F;
    /// 32-bit integer.
    pub const INT32: u8 = 0x10;
    /// Timestamp (MongoDB internal).
    pub const TIMESTAMP: u8 = 0x11;
    /// 64-bit integer.
    pub const INT64: u8 = 0x12;
    /// 128-bit decimal floating point.
    pub const DECIMAL128: u8 = 0x13;
    /// MaxKey.
    pub const MAX_KEY: u8 = 0x7F;
    /// MinKey.
    pub const MIN_KEY: u8 = 0xFF;
}

/// Which lane of a [`Column`] holds values of a type code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// No value is kept (missing, null, undefined, MinKey, MaxKey).
    Empty,
    /// [`Column::ints`].
    Int,
    /// [`Column::floats`].
    Float,
    /// [`Column::bytes`] with [`Column::ends`].
    Bytes,
}

impl Lane {
    /// The lane of a type code, or `None` for a code that is not a BSON type nor
    /// [`tag::MISSING`].
    #[must_use]
    pub const fn of(type_code: u8) -> Option<Lane> {
        match type_code {
            tag::MISSING | tag::NULL | tag::UNDEFINED | tag::MIN_KEY | tag::MAX_KEY => {
                Some(Lane::Empty)
            }
            tag::INT32 | tag::INT64 | tag::DATETIME | tag::TIMESTAMP | tag::BOOLEAN => {
                Some(Lane::Int)
            }
            tag::DOUBLE => Some(Lane::Float),
            tag::STRING
            | tag::DOCUMENT
            | tag::ARRAY
            | tag::BINARY
            | tag::OBJECT_ID
            | tag::REGEX
            | tag::DB_POINTER
            | tag::JAVASCRIPT
            | tag::SYMBOL
            | tag::JAVASCRIPT_WITH_SCOPE
            | tag::DECIMAL128 => Some(Lane::Bytes),
            _ => None,
        }
    }
}

/// Lane index of a type code (0 = empty, 1 = int, 2 = float, 3 = bytes, 4 = not a type).
#[inline]
#[expect(clippy::indexing_slicing, reason = "a u8 indexes a 256-slot array")]
fn lane_index(code: u8) -> u8 {
    LANE_INDEX[usize::from(code)]
}

/// Lane index per type code (0 = empty, 1 = int, 2 = float, 3 = bytes, 4 = not a type).
#[expect(
    clippy::indexing_slicing,
    reason = "const evaluation: an out-of-range index fails the build"
)]
const LANE_INDEX: [u8; 256] = {
    let mut t = [4u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = match Lane::of(i as u8) {
            Some(Lane::Empty) => 0,
            Some(Lane::Int) => 1,
            Some(Lane::Float) => 2,
            Some(Lane::Bytes) => 3,
            None => 4,
        };
        i += 1;
    }
    t
};

/// Rows per lane `[empty, int, float, bytes]`, or `None` if a code is not a type.
#[expect(clippy::indexing_slicing, reason = "a u8 indexes a 256-slot array")]
pub(crate) fn lane_counts(types: &[u8]) -> Option<[usize; 4]> {
    let mut counts = [0usize; 5];
    match types.first() {
        None => {}
        // The common case (one type, e.g. "all present") in one vectorized pass.
        Some(&first) if types.iter().all(|&t| t == first) => {
            if let Some(c) = counts.get_mut(usize::from(lane_index(first))) {
                *c = types.len();
            }
        }
        Some(_) => {
            // A histogram per type code (a `u8` indexes 256 slots without a check), four of
            // them interleaved so runs of one type do not wait on their own increments.
            let mut h = [[0u32; 256]; 4];
            let chunks = types.chunks_exact(4);
            let tail = chunks.remainder();
            for c in chunks {
                if let [a, b, x, y] = *c {
                    h[0][usize::from(a)] += 1;
                    h[1][usize::from(b)] += 1;
                    h[2][usize::from(x)] += 1;
                    h[3][usize::from(y)] += 1;
                }
            }
            for &t in tail {
                h[0][usize::from(t)] += 1;
            }
            for (code, lane) in LANE_INDEX.iter().enumerate() {
                let n: u32 = h.iter().map(|hist| hist[code]).sum();
                if let Some(c) = counts.get_mut(usize::from(*lane)) {
                    *c += n as usize;
                }
            }
        }
    }
    match counts {
        [e, i, f, b, 0] => Some([e, i, f, b]),
        _ => None,
    }
}

/// Where a row of a [`Column`] starts: its position and how many values each lane holds
/// before it ([`Column::row_start`]). Lets a scan of a long column go on from where it was
/// without counting the rows before again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowStart {
    /// The row.
    pub row: usize,
    /// Int-lane values before it.
    pub int: usize,
    /// Float-lane values before it.
    pub float: usize,
    /// Bytes-lane values before it.
    pub bytes: usize,
}

/// Consecutive rows of a [`Column`], lane by lane ([`Column::row_lanes`]).
#[derive(Clone, Copy, Debug)]
pub struct RowLanes<'a> {
    /// Their type codes.
    pub types: &'a [u8],
    /// The int-lane values they hold.
    pub ints: &'a [i64],
    /// The float-lane values they hold.
    pub floats: &'a [f64],
    /// Where the first of them starts.
    pub start: RowStart,
    /// How many bytes-lane values they hold.
    pub bytes: usize,
}

/// One row's value, borrowed from a [`Column`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    /// A skip: the measurement has no such field.
    Missing,
    /// A type without a value: null, undefined, MinKey or MaxKey (the type code).
    Empty(u8),
    /// An int-lane value: (type code, value).
    Int(u8, i64),
    /// A double.
    Float(f64),
    /// A bytes-lane value: (type code, payload as described in [`Column::push_bytes`]).
    Bytes(u8, &'a [u8]),
}

/// One field's values for a run of rows, in typed lanes (see the module docs).
///
/// Invariants (kept by the `push_*` methods, checked by the decoder): `ints.len()` is the
/// number of int-lane rows, `floats.len()` the number of float-lane rows, `ends.len()` the number
/// of bytes-lane rows, `ends` is non-decreasing and its last entry is `bytes.len()`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Column {
    types: Vec<u8>,
    ints: Vec<i64>,
    floats: Vec<f64>,
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl Column {
    /// An empty column.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `rows` rows of one scalar lane.
    #[must_use]
    pub fn with_capacity(rows: usize) -> Self {
        Column {
            types: Vec::with_capacity(rows),
            ..Self::default()
        }
    }

    /// Builds a column from its raw lanes, checking the invariants.
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] when a type code is unknown, a lane's length does not match
    /// the number of rows of its types, or `ends` is not a valid offset list into `bytes`.
    pub fn from_lanes(
        types: Vec<u8>,
        ints: Vec<i64>,
        floats: Vec<f64>,
        bytes: Vec<u8>,
        ends: Vec<u32>,
    ) -> crate::Result<Self> {
        let Some([_, n_int, n_float, n_bytes]) = lane_counts(&types) else {
            let bad = types
                .iter()
                .find(|&&t| Lane::of(t).is_none())
                .copied()
                .unwrap_or(0);
            return Err(crate::Error::Corruption(format!(
                "unknown type code {bad:#04x}"
            )));
        };
        if n_int != ints.len() || n_float != floats.len() || n_bytes != ends.len() {
            return Err(crate::Error::Corruption(
                "lane lengths do not match the row types".to_owned(),
            ));
        }
        Self::from_counted_lanes(types, ints, floats, bytes, ends)
    }

    /// As [`Column::from_lanes`] for lanes whose lengths are known to match the types (the
    /// decoder reads each lane by the count of its types): checks `ends` only.
    pub(crate) fn from_counted_lanes(
        types: Vec<u8>,
        ints: Vec<i64>,
        floats: Vec<f64>,
        bytes: Vec<u8>,
        ends: Vec<u32>,
    ) -> crate::Result<Self> {
        debug_assert_eq!(
            lane_counts(&types).map(|[_, i, f, b]| (i, f, b)),
            Some((ints.len(), floats.len(), ends.len()))
        );
        let mut prev = 0u32;
        for &e in &ends {
            if e < prev {
                return Err(crate::Error::Corruption(
                    "bytes offsets decrease".to_owned(),
                ));
            }
            prev = e;
        }
        if prev as usize != bytes.len() {
            return Err(crate::Error::Corruption(
                "bytes offsets do not cover the bytes lane".to_owned(),
            ));
        }
        Ok(Column {
            types,
            ints,
            floats,
            bytes,
            ends,
        })
    }

    /// Number of rows (skips included).
    #[must_use]
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether the column has no rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// Whether every row is a skip.
    #[must_use]
    pub fn all_missing(&self) -> bool {
        self.types.iter().all(|&t| t == tag::MISSING)
    }

    /// Type code per row ([`tag::MISSING`] for a skip).
    #[must_use]
    pub fn types(&self) -> &[u8] {
        &self.types
    }

    /// Int-lane values in row order.
    #[must_use]
    pub fn ints(&self) -> &[i64] {
        &self.ints
    }

    /// Float-lane values in row order.
    #[must_use]
    pub fn floats(&self) -> &[f64] {
        &self.floats
    }

    /// Concatenated bytes-lane payloads; value `i` is `bytes[ends[i-1]..ends[i]]`.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// End offset of each bytes-lane payload in [`Column::bytes`].
    #[must_use]
    pub fn ends(&self) -> &[u32] {
        &self.ends
    }

    /// Appends a skip (the measurement lacks the field).
    #[inline]
    pub fn push_missing(&mut self) {
        self.types.push(tag::MISSING);
    }

    /// Appends `n` skips.
    pub fn push_missing_n(&mut self, n: usize) {
        self.types.resize(self.types.len() + n, tag::MISSING);
    }

    /// Appends a value of a type without payload (null, undefined, MinKey, MaxKey).
    ///
    /// # Panics
    /// If `type_code` is not in [`Lane::Empty`] (a caller bug).
    #[inline]
    pub fn push_empty(&mut self, type_code: u8) {
        assert_eq!(
            Lane::of(type_code),
            Some(Lane::Empty),
            "not an empty-lane type"
        );
        self.types.push(type_code);
    }

    /// Appends an int-lane value: int32, int64, date (ms), timestamp (`u64` bits as `i64`),
    /// bool (0 or 1).
    ///
    /// # Panics
    /// If `type_code` is not in [`Lane::Int`] (a caller bug).
    #[inline]
    pub fn push_int(&mut self, type_code: u8, value: i64) {
        assert_eq!(Lane::of(type_code), Some(Lane::Int), "not an int-lane type");
        self.types.push(type_code);
        self.ints.push(value);
    }

    /// Appends a double.
    #[inline]
    pub fn push_float(&mut self, value: f64) {
        self.types.push(tag::DOUBLE);
        self.floats.push(value);
    }

    /// Appends doubles, one row each: a run of values read from elsewhere in one pass.
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef};
    ///
    /// let mut c = Column::new();
    /// c.extend_floats([1.5, -0.0].into_iter());
    /// assert_eq!(c.iter().collect::<Vec<_>>(), [ValueRef::Float(1.5), ValueRef::Float(-0.0)]);
    /// ```
    pub fn extend_floats(&mut self, values: impl Iterator<Item = f64>) {
        let before = self.floats.len();
        self.floats.extend(values);
        let added = self.floats.len() - before;
        self.types.resize(self.types.len() + added, tag::DOUBLE);
    }

    /// Appends int-lane values of one type, one row each (see [`Column::push_int`]).
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef};
    ///
    /// let mut c = Column::new();
    /// c.extend_ints(0x10, [7, -1].into_iter());
    /// assert_eq!(c.iter().collect::<Vec<_>>(), [ValueRef::Int(0x10, 7), ValueRef::Int(0x10, -1)]);
    /// ```
    ///
    /// # Panics
    /// If `type_code` is not in [`Lane::Int`] (a caller bug).
    pub fn extend_ints(&mut self, type_code: u8, values: impl Iterator<Item = i64>) {
        assert_eq!(Lane::of(type_code), Some(Lane::Int), "not an int-lane type");
        let before = self.ints.len();
        self.ints.extend(values);
        let added = self.ints.len() - before;
        self.types.resize(self.types.len() + added, type_code);
    }

    /// Appends a bytes-lane value. The payload is the BSON value bytes of the element, except
    /// for string, JavaScript code and symbol, whose payload is the UTF-8 text alone (no length
    /// prefix, no trailing NUL). So: ObjectId = 12 bytes, decimal128 = 16 bytes, binary =
    /// `i32` length + subtype + data, document and array = the embedded BSON document, regex =
    /// two C strings, and so on.
    ///
    /// # Panics
    /// If `type_code` is not in [`Lane::Bytes`] or the lane would exceed 4 GiB (caller bugs).
    #[inline]
    pub fn push_bytes(&mut self, type_code: u8, payload: &[u8]) {
        assert_eq!(
            Lane::of(type_code),
            Some(Lane::Bytes),
            "not a bytes-lane type"
        );
        self.types.push(type_code);
        self.bytes.extend_from_slice(payload);
        let end = u32::try_from(self.bytes.len()).expect("bytes lane over 4 GiB");
        self.ends.push(end);
    }

    /// Appends one value.
    pub fn push(&mut self, value: ValueRef<'_>) {
        match value {
            ValueRef::Missing => self.push_missing(),
            ValueRef::Empty(t) => self.push_empty(t),
            ValueRef::Int(t, v) => self.push_int(t, v),
            ValueRef::Float(v) => self.push_float(v),
            ValueRef::Bytes(t, b) => self.push_bytes(t, b),
        }
    }

    /// Appends every row of `other`.
    pub fn extend_from(&mut self, other: &Column) {
        let base = u32::try_from(self.bytes.len()).expect("bytes lane over 4 GiB");
        self.types.extend_from_slice(&other.types);
        self.ints.extend_from_slice(&other.ints);
        self.floats.extend_from_slice(&other.floats);
        self.bytes.extend_from_slice(&other.bytes);
        self.ends.extend(other.ends.iter().map(|e| e + base));
    }

    /// Appends rows `from..to` of `other` (clamped to its rows), without an intermediate
    /// column.
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef};
    ///
    /// let mut c = Column::new();
    /// c.push_bytes(0x02, b"a");
    /// c.push_missing();
    /// c.push_bytes(0x02, b"bc");
    /// c.push_float(1.5);
    /// let mut d = Column::new();
    /// d.push_int(0x10, 7);
    /// d.extend_from_rows(&c, 1, 4);
    /// assert_eq!(
    ///     d.iter().collect::<Vec<_>>(),
    ///     [ValueRef::Int(0x10, 7), ValueRef::Missing, ValueRef::Bytes(0x02, b"bc"), ValueRef::Float(1.5)]
    /// );
    /// ```
    ///
    /// # Panics
    /// If the bytes lane would exceed 4 GiB (a caller bug).
    pub fn extend_from_rows(&mut self, other: &Column, from: usize, to: usize) {
        self.extend_from_rows_at(other, other.row_start(from), to);
    }

    /// Where row `row` (clamped to the rows) starts in each lane.
    #[must_use]
    pub fn row_start(&self, row: usize) -> RowStart {
        self.row_start_after(RowStart::default(), row)
    }

    /// The start of row `row` (at most the rows) without counting, when every row holds a
    /// value of one lane (e.g. a column of doubles without a missing value).
    #[inline]
    fn one_lane_start(&self, row: usize) -> Option<RowStart> {
        let rows = self.types.len();
        if row > rows {
            return None;
        }
        let start = RowStart {
            row,
            ..RowStart::default()
        };
        match (self.ints.len(), self.floats.len(), self.ends.len()) {
            (i, 0, 0) if i == rows => Some(RowStart { int: row, ..start }),
            (0, f, 0) if f == rows => Some(RowStart {
                float: row,
                ..start
            }),
            (0, 0, b) if b == rows => Some(RowStart {
                bytes: row,
                ..start
            }),
            _ => None,
        }
    }

    /// As [`Column::row_start`], counting from `from`, the start of an earlier row of this
    /// column: the cost is the rows in between.
    #[must_use]
    pub fn row_start_after(&self, from: RowStart, row: usize) -> RowStart {
        let row = row.clamp(from.row, self.types.len().max(from.row));
        if let Some(start) = self.one_lane_start(row) {
            return start;
        }
        let [_, int, float, bytes] =
            lane_counts(self.types.get(from.row..row).unwrap_or_default()).unwrap_or([0; 4]);
        RowStart {
            row,
            int: from.int + int,
            float: from.float + float,
            bytes: from.bytes + bytes,
        }
    }

    /// As [`Column::row_start`], counting back from the end: the cost is the rows from `row`
    /// on, so this is the cheap way to find a row near the end of a long column.
    ///
    /// ```
    /// use tscoll_codec::Column;
    ///
    /// let mut c = Column::new();
    /// c.push_int(0x10, 1);
    /// c.push_bytes(0x02, b"ab");
    /// c.push_missing();
    /// c.push_float(2.5);
    /// c.push_bytes(0x02, b"c");
    /// for row in 0..=6 {
    ///     assert_eq!(c.row_start_from_end(row), c.row_start(row));
    /// }
    /// ```
    #[must_use]
    pub fn row_start_from_end(&self, row: usize) -> RowStart {
        let row = row.min(self.types.len());
        if let Some(start) = self.one_lane_start(row) {
            return start;
        }
        let [_, int, float, bytes] =
            lane_counts(self.types.get(row..).unwrap_or_default()).unwrap_or([0; 4]);
        RowStart {
            row,
            int: self.ints.len().saturating_sub(int),
            float: self.floats.len().saturating_sub(float),
            bytes: self.ends.len().saturating_sub(bytes),
        }
    }

    /// Where the next row pushed will start: the end of the column.
    #[must_use]
    pub fn end(&self) -> RowStart {
        RowStart {
            row: self.types.len(),
            int: self.ints.len(),
            float: self.floats.len(),
            bytes: self.ends.len(),
        }
    }

    /// Appends the rows of `other` from `start` (a [`RowStart`] of `other`) to `to`.
    ///
    /// # Panics
    /// If the bytes lane would exceed 4 GiB (a caller bug).
    pub fn extend_from_rows_at(&mut self, other: &Column, start: RowStart, to: usize) {
        self.extend_from_lanes(other, &other.row_lanes(start, to));
    }

    /// Appends the rows of `other` that `lanes` (from [`Column::row_lanes`] of `other`) holds.
    ///
    /// # Panics
    /// If the bytes lane would exceed 4 GiB (a caller bug).
    pub fn extend_from_lanes(&mut self, other: &Column, lanes: &RowLanes<'_>) {
        self.types.extend_from_slice(lanes.types);
        // Most runs fill one lane: the others are not touched.
        if !lanes.ints.is_empty() {
            self.ints.extend_from_slice(lanes.ints);
        }
        if !lanes.floats.is_empty() {
            self.floats.extend_from_slice(lanes.floats);
        }
        let (b0, nb) = (lanes.start.bytes, lanes.bytes);
        if nb == 0 {
            return;
        }
        let (first, last) = (other.bytes_end(b0), other.bytes_end(b0 + nb));
        let base = u32::try_from(self.bytes.len()).expect("bytes lane over 4 GiB");
        self.bytes.extend_from_slice(
            other
                .bytes
                .get(first as usize..last as usize)
                .unwrap_or_default(),
        );
        self.ends.extend(
            other
                .ends
                .get(b0..b0 + nb)
                .unwrap_or_default()
                .iter()
                .map(|e| e - first + base),
        );
        assert!(
            u32::try_from(self.bytes.len()).is_ok(),
            "bytes lane over 4 GiB"
        );
    }

    /// Rows from `start` (a [`RowStart`] of this column) to `to`: their type codes and the
    /// int and float lane values they hold.
    #[must_use]
    pub fn lanes_from(&self, start: RowStart, to: usize) -> (&[u8], &[i64], &[f64]) {
        let lanes = self.row_lanes(start, to);
        (lanes.types, lanes.ints, lanes.floats)
    }

    /// Rows from `start` (a [`RowStart`] of this column) to `to`, lane by lane (the type
    /// codes counted once).
    #[must_use]
    pub fn row_lanes(&self, start: RowStart, to: usize) -> RowLanes<'_> {
        let types = self.types_from(start, to);
        self.lanes_at(types, start, lane_counts(types).unwrap_or([0; 4]))
    }

    /// As [`Column::row_lanes`], for a column whose every row has type `code`
    /// ([`Column::single_type`]): the lanes are found without counting the type codes.
    ///
    /// ```
    /// use tscoll_codec::Column;
    ///
    /// let mut c = Column::new();
    /// for v in [1, 2, 3] {
    ///     c.push_int(0x10, v);
    /// }
    /// let lanes = c.row_lanes_single(c.row_start(1), 3, 0x10);
    /// assert_eq!((lanes.types, lanes.ints), (&[0x10, 0x10][..], &[2, 3][..]));
    /// ```
    #[must_use]
    pub fn row_lanes_single(&self, start: RowStart, to: usize, code: u8) -> RowLanes<'_> {
        let types = self.types_from(start, to);
        let mut counts = [0; 4];
        if let Some(c) = counts.get_mut(usize::from(lane_index(code))) {
            *c = types.len();
        }
        self.lanes_at(types, start, counts)
    }

    /// Makes room for `rows` more rows shaped like `like` (rows of `other`, from
    /// [`Column::row_lanes`]): their type codes, and each lane's values (and bytes) in the
    /// proportion `like` holds them. Does nothing when the type codes already have the room,
    /// so a caller may ask before every append.
    pub fn reserve_like(&mut self, rows: usize, other: &Column, like: &RowLanes<'_>) {
        if self.types.capacity() - self.types.len() >= rows {
            return;
        }
        let n = like.types.len().max(1);
        let share = |k: usize| rows.saturating_mul(k) / n;
        self.types.reserve_exact(rows);
        if !like.ints.is_empty() {
            self.ints.reserve_exact(share(like.ints.len()));
        }
        if !like.floats.is_empty() {
            self.floats.reserve_exact(share(like.floats.len()));
        }
        if like.bytes > 0 {
            let b0 = like.start.bytes;
            let payload = other
                .bytes_end(b0 + like.bytes)
                .saturating_sub(other.bytes_end(b0)) as usize;
            self.ends.reserve_exact(share(like.bytes));
            self.bytes.reserve_exact(share(payload));
        }
    }

    /// Makes room for `rows` more rows shaped like the rows the column holds: their type
    /// codes, and each lane's values (and bytes) in the proportion the column holds them. For a
    /// column filled row by row whose first row shows what the others will be (an insert
    /// call's columns), so that it does not grow by doubling.
    ///
    /// ```
    /// use tscoll_codec::{Column, tag};
    ///
    /// let mut c = Column::new();
    /// c.push_int(tag::INT32, 7);
    /// c.reserve_rows(1000);
    /// c.push_int(tag::INT32, 8);
    /// assert_eq!(c.ints(), [7, 8]);
    /// ```
    pub fn reserve_rows(&mut self, rows: usize) {
        let n = self.types.len().max(1);
        let share = |k: usize| rows.saturating_mul(k) / n;
        self.types.reserve(rows);
        self.ints.reserve(share(self.ints.len()));
        self.floats.reserve(share(self.floats.len()));
        self.ends.reserve(share(self.ends.len()));
        self.bytes.reserve(share(self.bytes.len()));
    }

    /// Where the first `k` values of the bytes lane end in [`Column::bytes`] (0 for none,
    /// and for a `k` past the lane, which callers clamp or check).
    fn bytes_end(&self, k: usize) -> u32 {
        k.checked_sub(1)
            .and_then(|i| self.ends.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// The rows of `types` (a slice of [`Column::types`] from `start`), whose lanes hold
    /// `counts` values, lane by lane.
    fn lanes_at<'a>(
        &'a self,
        types: &'a [u8],
        start: RowStart,
        counts: [usize; 4],
    ) -> RowLanes<'a> {
        let [_, ni, nf, nb] = counts;
        RowLanes {
            types,
            ints: self.ints.get(start.int..start.int + ni).unwrap_or_default(),
            floats: self
                .floats
                .get(start.float..start.float + nf)
                .unwrap_or_default(),
            start,
            bytes: nb,
        }
    }

    /// Rows `row..to` (clamped to the rows) lane by lane, found by counting back from the
    /// end: the cost is the rows from `row` on, the cheap way to read rows near the end of a
    /// long column.
    ///
    /// ```
    /// use tscoll_codec::Column;
    ///
    /// let mut c = Column::new();
    /// c.push_int(0x10, 1);
    /// c.push_bytes(0x02, b"ab");
    /// c.push_float(2.5);
    /// c.push_int(0x10, 3);
    /// let lanes = c.row_lanes_from_end(1, 3);
    /// assert_eq!((lanes.types, lanes.ints, lanes.floats, lanes.bytes), (&[0x02, 0x01][..], &[][..], &[2.5][..], 1));
    /// assert_eq!(lanes.start, c.row_start(1));
    /// ```
    #[must_use]
    pub fn row_lanes_from_end(&self, row: usize, to: usize) -> RowLanes<'_> {
        let to = to.min(self.types.len());
        let row = row.min(to);
        let [_, ti, tf, tb] =
            lane_counts(self.types.get(to..).unwrap_or_default()).unwrap_or([0; 4]);
        let types = self.types.get(row..to).unwrap_or_default();
        let counts = lane_counts(types).unwrap_or([0; 4]);
        let [_, ni, nf, nb] = counts;
        let start = RowStart {
            row,
            int: self.ints.len().saturating_sub(ti + ni),
            float: self.floats.len().saturating_sub(tf + nf),
            bytes: self.ends.len().saturating_sub(tb + nb),
        };
        self.lanes_at(types, start, counts)
    }

    /// The type code every row of the column has, `None` when they differ or there is no
    /// row.
    ///
    /// ```
    /// use tscoll_codec::Column;
    ///
    /// let mut c = Column::new();
    /// c.push_float(1.5);
    /// c.push_float(2.5);
    /// assert_eq!(c.single_type(), Some(0x01));
    /// c.push_missing();
    /// assert_eq!(c.single_type(), None);
    /// ```
    #[must_use]
    pub fn single_type(&self) -> Option<u8> {
        let first = *self.types.first()?;
        self.types.iter().all(|&t| t == first).then_some(first)
    }

    /// The type codes of the rows from `start` (a [`RowStart`] of this column) to `to`.
    #[must_use]
    pub fn types_from(&self, start: RowStart, to: usize) -> &[u8] {
        let to = to.clamp(start.row, self.types.len().max(start.row));
        self.types.get(start.row..to).unwrap_or_default()
    }

    /// The values of the rows from `start` (a [`RowStart`] of this column) to `to`.
    #[must_use]
    pub fn iter_from(&self, start: RowStart, to: usize) -> ColumnIter<'_> {
        ColumnIter {
            col: self,
            row: start.row,
            end: to.min(self.types.len()),
            int: start.int,
            float: start.float,
            bytes: start.bytes,
        }
    }

    /// The rows from `from` on, as a column of their own (empty when `from ≥ len`).
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef};
    ///
    /// let mut c = Column::new();
    /// c.push_int(0x10, 1);
    /// c.push_bytes(0x02, b"ab");
    /// c.push_float(2.5);
    /// let t = c.tail(1);
    /// assert_eq!(t.iter().collect::<Vec<_>>(), [ValueRef::Bytes(0x02, b"ab"), ValueRef::Float(2.5)]);
    /// ```
    #[must_use]
    pub fn tail(&self, from: usize) -> Column {
        self.rows(from, self.len())
    }

    /// Rows `from..to` as a column of their own (clamped to the column's rows).
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef};
    ///
    /// let mut c = Column::new();
    /// c.push_bytes(0x02, b"a");
    /// c.push_missing();
    /// c.push_bytes(0x02, b"bc");
    /// c.push_int(0x10, 7);
    /// let r = c.rows(1, 3);
    /// assert_eq!(r.iter().collect::<Vec<_>>(), [ValueRef::Missing, ValueRef::Bytes(0x02, b"bc")]);
    /// ```
    #[must_use]
    pub fn rows(&self, from: usize, to: usize) -> Column {
        let to = to.min(self.types.len());
        let from = from.min(to);
        let (head, rest) = self.types.split_at(from);
        let types = rest.get(..to - from).unwrap_or_default();
        let [_, i0, f0, b0] = lane_counts(head).unwrap_or([0; 4]);
        let [_, ni, nf, nb] = lane_counts(types).unwrap_or([0; 4]);
        let (base, last) = (self.bytes_end(b0), self.bytes_end(b0 + nb));
        Column {
            types: types.to_vec(),
            ints: self.ints.get(i0..i0 + ni).unwrap_or_default().to_vec(),
            floats: self.floats.get(f0..f0 + nf).unwrap_or_default().to_vec(),
            bytes: self
                .bytes
                .get(base as usize..last as usize)
                .unwrap_or_default()
                .to_vec(),
            ends: self
                .ends
                .get(b0..b0 + nb)
                .unwrap_or_default()
                .iter()
                .map(|e| e - base)
                .collect(),
        }
    }

    /// Keeps the first `rows` rows (all of them when `rows ≥ len`), keeping the allocations.
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef};
    ///
    /// let mut c = Column::new();
    /// c.push_bytes(0x02, b"a");
    /// c.push_int(0x10, 7);
    /// c.push_bytes(0x02, b"bc");
    /// c.truncate(2);
    /// assert_eq!(c.iter().collect::<Vec<_>>(), [ValueRef::Bytes(0x02, b"a"), ValueRef::Int(0x10, 7)]);
    /// assert_eq!(c.bytes(), b"a");
    /// ```
    pub fn truncate(&mut self, rows: usize) {
        if rows >= self.types.len() {
            return;
        }
        let end = self.row_start(rows);
        self.types.truncate(rows);
        self.ints.truncate(end.int);
        self.floats.truncate(end.float);
        self.ends.truncate(end.bytes);
        let bytes = self.ends.last().map_or(0, |&e| e as usize);
        self.bytes.truncate(bytes);
    }

    /// Removes the last row (nothing when there is none), in O(1).
    pub fn pop_row(&mut self) {
        let Some(t) = self.types.pop() else { return };
        match lane_index(t) {
            1 => {
                self.ints.pop();
            }
            2 => {
                self.floats.pop();
            }
            3 => {
                self.ends.pop();
                let bytes = self.ends.last().map_or(0, |&e| e as usize);
                self.bytes.truncate(bytes);
            }
            _ => {}
        }
    }

    /// The rows `rows` of this column (row numbers, in any order, a row any number of
    /// times) as a new column, in that order; a number past the rows gives a missing row.
    /// One pass over this column's type codes, then one step per row taken.
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef, tag};
    ///
    /// let mut c = Column::new();
    /// c.push_bytes(tag::STRING, b"a");
    /// c.push_float(1.5);
    /// c.push_missing();
    /// c.push_int(tag::INT32, 7);
    /// let g = c.gather(&[3, 0, 1, 1, 9]);
    /// assert_eq!(
    ///     g.iter().collect::<Vec<_>>(),
    ///     [
    ///         ValueRef::Int(tag::INT32, 7),
    ///         ValueRef::Bytes(tag::STRING, b"a"),
    ///         ValueRef::Float(1.5),
    ///         ValueRef::Float(1.5),
    ///         ValueRef::Missing,
    ///     ]
    /// );
    /// ```
    #[must_use]
    pub fn gather(&self, rows: &[u32]) -> Column {
        let n = self.types.len();
        // Rows all of one type (the common case): a row's lane position is its number.
        if let Some(&t) = self.types.first()
            && self.types.iter().all(|&u| u == t)
            && rows.iter().all(|&r| (r as usize) < n)
        {
            let types = vec![t; rows.len()];
            match lane_index(t) {
                0 => {
                    return Column {
                        types,
                        ..Column::default()
                    };
                }
                1 if self.ints.len() == n => {
                    let ints = rows.iter().map(|&r| self.ints.get(r as usize).copied());
                    return Column {
                        types,
                        ints: ints.map(Option::unwrap_or_default).collect(),
                        ..Column::default()
                    };
                }
                2 if self.floats.len() == n => {
                    let floats = rows.iter().map(|&r| self.floats.get(r as usize).copied());
                    return Column {
                        types,
                        floats: floats.map(Option::unwrap_or_default).collect(),
                        ..Column::default()
                    };
                }
                3 if self.ends.len() == n => {
                    let mut out = Column {
                        types,
                        ends: Vec::with_capacity(rows.len()),
                        ..Column::default()
                    };
                    for &r in rows {
                        let r = r as usize;
                        let from = r
                            .checked_sub(1)
                            .and_then(|j| self.ends.get(j))
                            .map_or(0, |&e| e as usize);
                        let to = self.ends.get(r).map_or(from, |&e| e as usize);
                        out.bytes
                            .extend_from_slice(self.bytes.get(from..to).unwrap_or_default());
                        let end = u32::try_from(out.bytes.len()).expect("bytes lane over 4 GiB");
                        out.ends.push(end);
                    }
                    return out;
                }
                _ => {}
            }
        }
        // Each row's position in its lane.
        let mut counts = [0u32; 5];
        let at: Vec<u32> = self
            .types
            .iter()
            .map(|&t| {
                counts.get_mut(usize::from(lane_index(t))).map_or(0, |c| {
                    *c += 1;
                    *c - 1
                })
            })
            .collect();
        let mut out = Column::with_capacity(rows.len());
        for &r in rows {
            let r = r as usize;
            let (Some(&t), Some(&i)) = (self.types.get(r), at.get(r)) else {
                out.push_missing();
                continue;
            };
            let i = i as usize;
            match lane_index(t) {
                1 => out.push_int(t, self.ints.get(i).copied().unwrap_or_default()),
                2 => out.push_float(self.floats.get(i).copied().unwrap_or_default()),
                3 => {
                    let from = i
                        .checked_sub(1)
                        .and_then(|j| self.ends.get(j))
                        .map_or(0, |&e| e as usize);
                    let to = self.ends.get(i).map_or(from, |&e| e as usize);
                    out.push_bytes(t, self.bytes.get(from..to).unwrap_or_default());
                }
                0 => out.types.push(t),
                _ => out.push_missing(),
            }
        }
        out
    }

    /// Removes every row, keeping the allocations.
    pub fn clear(&mut self) {
        self.types.clear();
        self.ints.clear();
        self.floats.clear();
        self.bytes.clear();
        self.ends.clear();
    }

    /// Bytes held by the lanes' allocations (for memory accounting, SPEC R-6.9.5).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.types.capacity()
            + self.ints.capacity() * 8
            + self.floats.capacity() * 8
            + self.bytes.capacity()
            + self.ends.capacity() * 4
    }

    /// Whether two columns hold the same rows bit for bit (unlike `==`, NaN equals a NaN with the
    /// same payload and `-0.0` differs from `0.0`).
    ///
    /// ```
    /// use tscoll_codec::Column;
    ///
    /// let (mut a, mut b) = (Column::new(), Column::new());
    /// a.push_float(f64::NAN);
    /// b.push_float(f64::NAN);
    /// assert!(a != b && a.bitwise_eq(&b));
    /// ```
    #[must_use]
    pub fn bitwise_eq(&self, other: &Column) -> bool {
        self.types == other.types
            && self.ints == other.ints
            && self.floats.len() == other.floats.len()
            && self
                .floats
                .iter()
                .zip(&other.floats)
                .all(|(a, b)| a.to_bits() == b.to_bits())
            && self.bytes == other.bytes
            && self.ends == other.ends
    }

    /// Iterates over the rows in order.
    #[must_use]
    pub fn iter(&self) -> ColumnIter<'_> {
        ColumnIter {
            col: self,
            row: 0,
            end: self.types.len(),
            int: 0,
            float: 0,
            bytes: 0,
        }
    }

    /// The values of rows `from..to` (clamped to the column's rows), in order.
    ///
    /// ```
    /// use tscoll_codec::{Column, ValueRef};
    ///
    /// let mut c = Column::new();
    /// c.push_bytes(0x02, b"a");
    /// c.push_float(1.5);
    /// c.push_bytes(0x02, b"bc");
    /// c.push_int(0x10, 7);
    /// assert_eq!(
    ///     c.iter_rows(1, 3).collect::<Vec<_>>(),
    ///     [ValueRef::Float(1.5), ValueRef::Bytes(0x02, b"bc")]
    /// );
    /// ```
    #[must_use]
    pub fn iter_rows(&self, from: usize, to: usize) -> ColumnIter<'_> {
        self.iter_from(self.row_start(from), to)
    }

    /// Rows `from..to` (clamped) as their type codes and the int and float lane values they
    /// hold, for scans that need no bytes-lane value.
    ///
    /// ```
    /// use tscoll_codec::Column;
    ///
    /// let mut c = Column::new();
    /// c.push_float(0.5);
    /// c.push_int(0x12, 3);
    /// c.push_float(1.5);
    /// c.push_int(0x12, 4);
    /// let (types, ints, floats) = c.lanes_of_rows(1, 3);
    /// assert_eq!((types, ints, floats), (&[0x12, 0x01][..], &[3][..], &[1.5][..]));
    /// ```
    #[must_use]
    pub fn lanes_of_rows(&self, from: usize, to: usize) -> (&[u8], &[i64], &[f64]) {
        self.lanes_from(self.row_start(from), to)
    }
}

/// Iterator over the rows of a [`Column`], from [`Column::iter`].
#[derive(Clone, Debug)]
pub struct ColumnIter<'a> {
    col: &'a Column,
    row: usize,
    end: usize,
    int: usize,
    float: usize,
    bytes: usize,
}

impl<'a> Iterator for ColumnIter<'a> {
    type Item = ValueRef<'a>;

    fn next(&mut self) -> Option<ValueRef<'a>> {
        if self.row >= self.end {
            return None;
        }
        let t = *self.col.types.get(self.row)?;
        self.row += 1;
        // The invariants of `Column` guarantee every lane index below is in range; `get` keeps
        // a broken invariant from panicking and ends the iteration instead.
        Some(match Lane::of(t)? {
            Lane::Empty if t == tag::MISSING => ValueRef::Missing,
            Lane::Empty => ValueRef::Empty(t),
            Lane::Int => {
                let v = *self.col.ints.get(self.int)?;
                self.int += 1;
                ValueRef::Int(t, v)
            }
            Lane::Float => {
                let v = *self.col.floats.get(self.float)?;
                self.float += 1;
                ValueRef::Float(v)
            }
            Lane::Bytes => {
                let start = if self.bytes == 0 {
                    0
                } else {
                    *self.col.ends.get(self.bytes - 1)?
                };
                let end = *self.col.ends.get(self.bytes)?;
                self.bytes += 1;
                ValueRef::Bytes(t, self.col.bytes.get(start as usize..end as usize)?)
            }
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end.saturating_sub(self.row);
        (0, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_rows_makes_room_in_the_lanes_in_use_only() {
        let mut c = Column::new();
        c.push_int(tag::INT32, 1);
        c.push_bytes(tag::STRING, b"abcd");
        c.reserve_rows(1000);
        // Half the rows so far are ints, half strings of 4 bytes.
        assert!(c.types.capacity() >= 1002);
        assert!(c.ints.capacity() >= 501);
        assert!(c.ends.capacity() >= 501);
        assert!(c.bytes.capacity() >= 2004);
        assert_eq!(c.floats.capacity(), 0);
    }
}
