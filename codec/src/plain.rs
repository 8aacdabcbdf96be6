//! The plain row format: rows of several runs ("entries"), each a run of rows of some named
//! columns, as the columns' lanes with one fixed light transform and no encoding chosen: ints
//! as zigzag varints of their differences, the rest as they are. Writing it costs about a
//! copy of the lanes, so it suits data written once and rarely read: the engine's write-ahead
//! log holds the rows of each commit this way, and a bucket is encoded by
//! [`crate::encode_bucket`] only when it is stored (`docs/format.md`, "Plain rows").
//!
//! Layout, entry after entry: `varint rows`, then per column `varint name reference` —
//! `k ≥ 1` is the `k`-th name met so far, one more than the names met so far introduces a new
//! one, `varint length | UTF-8` — `varint 2 × column rows + 1 if they are all of one type`
//! (at most the entry's rows; the rows after them are missing), the type codes (that one type
//! once, or one byte per row), the int lane (each value minus
//! the one before it in the lane, the first minus 0, as a zigzag varint), the float lane (f64
//! bits, 8 bytes little-endian each) and per bytes-lane value `varint length | payload`; a
//! reference 0 ends the entry. Every entry has a column of its full rows.
//!
//! ```
//! use tscoll_codec::{Column, PlainWriter, decode_plain, tag};
//!
//! let mut time = Column::new();
//! let mut temp = Column::new();
//! for i in 0..3 {
//!     time.push_int(tag::DATETIME, 1_700_000_000_000 + 1000 * i);
//!     temp.push_float(20.5 + i as f64);
//! }
//! let mut w = PlainWriter::new();
//! w.begin_entry(2);
//! w.column("t", &time, time.row_start(0), 2);
//! w.column("temp", &temp, temp.row_start(0), 2);
//! w.begin_entry(1);
//! w.column("t", &time, time.row_start(2), 3);
//! let table = decode_plain(&w.finish())?;
//! assert_eq!(table.entries.len(), 2);
//! assert_eq!(table.entries[1].rows, 1);
//! assert_eq!(table.entry_columns(0)[1], ("temp", temp.rows(0, 2)));
//! # Ok::<(), tscoll_codec::Error>(())
//! ```

use std::collections::HashMap;

use crate::column::{Lane, lane_counts};
use crate::format::{MAX_NAME_LEN, MAX_ROWS};
use crate::reader::Reader;
use crate::{Column, Error, Result, RowLanes, RowStart, varint};

/// Writes rows in the plain format (see the module docs), entry by entry.
#[derive(Debug, Default)]
pub struct PlainWriter {
    /// The uncompressed bytes so far.
    buf: Vec<u8>,
    /// Names met so far, in order.
    names: Vec<String>,
    /// Their positions.
    index: HashMap<String, usize>,
    /// The name after the last one written: columns come in one order entry after entry,
    /// so a lookup is usually one comparison.
    hint: usize,
    /// Whether an entry is open (its end not written yet).
    open: bool,
    /// Rows of every entry so far.
    rows: usize,
    /// Entries so far.
    entries: usize,
}

impl PlainWriter {
    /// An empty writer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts an entry of `rows` rows (ending the one before). Its columns follow
    /// ([`PlainWriter::column`]); one of them must hold all `rows` rows.
    pub fn begin_entry(&mut self, rows: usize) {
        self.end_entry();
        varint::put(&mut self.buf, rows as u64);
        self.open = true;
        self.rows += rows;
        self.entries += 1;
    }

    /// Appends rows `start.row..to` of `column` (a [`RowStart`] of it, `to` clamped to its
    /// rows) as the current entry's column `name`: its first rows, the others missing.
    pub fn column(&mut self, name: &str, column: &Column, start: RowStart, to: usize) {
        self.column_lanes(name, column, &column.row_lanes(start, to));
    }

    /// As [`PlainWriter::column`] for rows of `column` already found lane by lane
    /// ([`Column::row_lanes`], [`Column::row_lanes_from_end`]).
    pub fn column_lanes(&mut self, name: &str, column: &Column, lanes: &RowLanes<'_>) {
        let i = match self.names.get(self.hint) {
            Some(n) if n == name => self.hint,
            _ => match self.index.get(name) {
                Some(&i) => i,
                None => {
                    self.names.push(name.to_owned());
                    self.index.insert(name.to_owned(), self.names.len() - 1);
                    varint::put(&mut self.buf, self.names.len() as u64);
                    varint::put(&mut self.buf, name.len() as u64);
                    self.buf.extend_from_slice(name.as_bytes());
                    self.hint = self.names.len();
                    self.lanes(column, lanes);
                    return;
                }
            },
        };
        varint::put(&mut self.buf, i as u64 + 1);
        self.hint = i + 1;
        self.lanes(column, lanes);
    }

    fn lanes(&mut self, column: &Column, lanes: &RowLanes<'_>) {
        let start = lanes.start;
        let buf = &mut self.buf;
        // Rows of one type (the common case) give their type once.
        let uniform = lanes
            .types
            .first()
            .filter(|&&first| lanes.types.iter().all(|&t| t == first));
        varint::put(
            buf,
            ((lanes.types.len() as u64) << 1) | u64::from(uniform.is_some()),
        );
        match uniform {
            Some(&t) => buf.push(t),
            None => buf.extend_from_slice(lanes.types),
        }
        let mut previous = 0i64;
        for &v in lanes.ints {
            varint::put_signed(buf, v.wrapping_sub(previous));
            previous = v;
        }
        for v in lanes.floats {
            buf.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        if lanes.bytes > 0 {
            let ends = column.ends();
            let bytes = column.bytes();
            let mut from = start
                .bytes
                .checked_sub(1)
                .and_then(|i| ends.get(i))
                .map_or(0, |&e| e as usize);
            for &end in ends
                .get(start.bytes..start.bytes + lanes.bytes)
                .unwrap_or_default()
            {
                let end = end as usize;
                let payload = bytes.get(from..end).unwrap_or_default();
                varint::put(buf, payload.len() as u64);
                buf.extend_from_slice(payload);
                from = end;
            }
        }
    }

    fn end_entry(&mut self) {
        if self.open {
            self.buf.push(0);
            self.open = false;
            self.hint = 0;
        }
    }

    /// Rows of every entry so far.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Entries so far.
    #[must_use]
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Uncompressed bytes so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Forgets everything written, keeping the buffers.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.names.clear();
        self.index.clear();
        self.hint = 0;
        self.open = false;
        self.rows = 0;
        self.entries = 0;
    }

    /// The plain bytes of what was written (the writer is left empty).
    #[must_use]
    pub fn finish(&mut self) -> Vec<u8> {
        self.end_entry();
        let out = std::mem::take(&mut self.buf);
        self.clear();
        out
    }
}

/// One entry of a [`PlainTable`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlainEntry {
    /// Its rows.
    pub rows: usize,
    /// `(name, column)`: the index of the name in [`PlainTable::names`], and a column of at
    /// most `rows` rows (the rows after its last are missing).
    pub columns: Vec<(usize, Column)>,
}

/// Rows read back from the plain format ([`decode_plain`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlainTable {
    /// The column names, in the order they were met.
    pub names: Vec<String>,
    /// The entries, in order.
    pub entries: Vec<PlainEntry>,
}

impl PlainTable {
    /// The columns of entry `i` by name (none when there is no such entry).
    #[must_use]
    pub fn entry_columns(&self, i: usize) -> Vec<(&str, Column)> {
        self.entries.get(i).map_or_else(Vec::new, |e| {
            e.columns
                .iter()
                .map(|(n, c)| {
                    let name = self.names.get(*n).map_or("", String::as_str);
                    (name, c.clone())
                })
                .collect()
        })
    }
}

/// Reads bytes written by [`PlainWriter::finish`].
///
/// Memory is bounded by the input: every value read is backed by at least one byte of it.
///
/// # Errors
/// [`Error::Corruption`] or [`Error::Truncated`] when the bytes are not plain rows.
pub fn decode_plain(bytes: &[u8]) -> Result<PlainTable> {
    let mut r = Reader::new(bytes);
    let mut table = PlainTable::default();
    // Per name, the last entry that had it: a name repeated in an entry is found in O(1).
    let mut last_entry: Vec<usize> = Vec::new();
    // Rows of one type take 1 byte for all of them: the rows read are bounded by the input.
    let mut budget = bytes
        .len()
        .saturating_mul(MAX_ROWS_PER_BYTE)
        .saturating_add(MAX_ROWS);
    while r.remaining() > 0 {
        let rows = r.varint_at_most(MAX_ROWS, "rows of a plain entry")?;
        let mut entry = PlainEntry {
            rows,
            columns: Vec::new(),
        };
        let mut full = rows == 0;
        loop {
            let reference = r.varint()?;
            if reference == 0 {
                break;
            }
            let name = if reference == table.names.len() as u64 + 1 {
                let n = r.varint_at_most(MAX_NAME_LEN, "name length")?;
                let name = std::str::from_utf8(r.bytes(n)?)
                    .map_err(|_| Error::Corruption("a column name is not UTF-8".to_owned()))?;
                table.names.push(name.to_owned());
                last_entry.push(usize::MAX);
                table.names.len() - 1
            } else {
                usize::try_from(reference - 1)
                    .ok()
                    .filter(|&i| i < table.names.len())
                    .ok_or_else(|| {
                        Error::Corruption(format!("name reference {reference} of a plain column"))
                    })?
            };
            let entry_no = table.entries.len();
            if last_entry.get(name) == Some(&entry_no) {
                return Err(Error::Corruption(format!(
                    "column {:?} repeats in a plain entry",
                    table.names.get(name)
                )));
            }
            if let Some(last) = last_entry.get_mut(name) {
                *last = entry_no;
            }
            let column = read_column(&mut r, rows, &mut budget)?;
            full |= column.len() == rows;
            entry.columns.push((name, column));
        }
        if !full {
            return Err(Error::Corruption(
                "a plain entry has no column of its rows".to_owned(),
            ));
        }
        table.entries.push(entry);
    }
    Ok(table)
}

/// Rows a byte of plain rows may stand for, at most (rows of one type give their type once).
const MAX_ROWS_PER_BYTE: usize = 1024;

/// Reads one column of at most `rows` rows, taking them from `budget`.
fn read_column(r: &mut Reader<'_>, rows: usize, budget: &mut usize) -> Result<Column> {
    let head = r.varint()?;
    let n = usize::try_from(head >> 1)
        .ok()
        .filter(|&n| n <= rows)
        .ok_or_else(|| Error::Corruption(format!("a plain column of {} rows", head >> 1)))?;
    *budget = budget.checked_sub(n).ok_or_else(|| {
        Error::Corruption("plain rows of more rows than their bytes can hold".to_owned())
    })?;
    let types = if head & 1 == 1 {
        vec![r.u8()?; n]
    } else {
        r.bytes(n)?.to_vec()
    };
    let [_, n_int, n_float, n_bytes] = lane_counts(&types).ok_or_else(|| {
        let bad = types.iter().find(|&&t| Lane::of(t).is_none()).copied();
        Error::Corruption(format!("unknown type code {bad:?} in plain rows"))
    })?;
    if n_int > r.remaining() {
        return Err(Error::Truncated {
            needed: n_int,
            available: r.remaining(),
        });
    }
    let mut ints = Vec::with_capacity(n_int);
    let mut previous = 0i64;
    for _ in 0..n_int {
        previous = previous.wrapping_add(r.varint_signed()?);
        ints.push(previous);
    }
    let floats = r
        .bytes(n_float.saturating_mul(8))?
        .chunks_exact(8)
        .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().unwrap_or_default())))
        .collect();
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(n_bytes.min(r.remaining()));
    for _ in 0..n_bytes {
        let len = r.varint_at_most(r.remaining(), "length of a plain value")?;
        bytes.extend_from_slice(r.bytes(len)?);
        ends.push(
            u32::try_from(bytes.len())
                .map_err(|_| Error::Corruption("a plain column's bytes pass 4 GiB".to_owned()))?,
        );
    }
    Column::from_lanes(types, ints, floats, bytes, ends)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tag;

    fn column(values: &[Option<i64>]) -> Column {
        let mut c = Column::new();
        for v in values {
            match v {
                Some(v) if v % 3 == 0 => c.push_bytes(tag::STRING, v.to_string().as_bytes()),
                Some(v) if v % 3 == 1 => c.push_int(tag::INT64, *v),
                #[expect(clippy::cast_precision_loss, reason = "test values")]
                Some(v) => c.push_float(*v as f64 / 7.0),
                None => c.push_missing(),
            }
        }
        c
    }

    proptest! {
        /// Entries of any split of two columns read back as the rows written.
        #[test]
        fn entries_read_back_as_written(
            a in proptest::collection::vec(proptest::option::of(-1000i64..1000), 1..60),
            b in proptest::collection::vec(proptest::option::of(-1000i64..1000), 0..60),
            cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            let (ca, cb) = (column(&a), column(&b));
            let mut bounds: Vec<usize> = cuts.into_iter().filter(|&c| c < a.len()).collect();
            bounds.push(0);
            bounds.push(a.len());
            bounds.sort_unstable();
            bounds.dedup();
            let mut w = PlainWriter::new();
            for pair in bounds.windows(2) {
                let (from, to) = (pair[0], pair[1]);
                w.begin_entry(to - from);
                w.column("a", &ca, ca.row_start(from), to);
                if b.len() > from {
                    w.column("b", &cb, cb.row_start(from), to);
                }
            }
            prop_assert_eq!(w.rows(), a.len());
            let table = decode_plain(&w.finish()).expect("decodes");
            prop_assert_eq!(table.entries.len(), bounds.len() - 1);
            for (i, pair) in bounds.windows(2).enumerate() {
                let (from, to) = (pair[0], pair[1]);
                let cols = table.entry_columns(i);
                prop_assert_eq!(&cols[0], &("a", ca.rows(from, to)));
                if b.len() > from {
                    prop_assert_eq!(&cols[1], &("b", cb.rows(from, to.min(b.len()))));
                }
            }
        }

        /// Any bytes give a table or an error, never a panic.
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode_plain(&bytes);
        }

        /// Damage to written rows gives an error or other rows, never a panic.
        #[test]
        fn damaged_rows_decode_or_fail(
            a in proptest::collection::vec(proptest::option::of(-1000i64..1000), 1..40),
            at in any::<usize>(),
            xor in 1u8..,
        ) {
            let ca = column(&a);
            let mut w = PlainWriter::new();
            w.begin_entry(a.len());
            w.column("a", &ca, ca.row_start(0), a.len());
            let mut bytes = w.finish();
            let i = at % bytes.len();
            bytes[i] ^= xor;
            let _ = decode_plain(&bytes);
        }
    }

    #[test]
    fn a_column_named_twice_in_an_entry_is_damage() {
        let c = column(&[Some(1)]);
        let mut w = PlainWriter::new();
        w.begin_entry(1);
        w.column("a", &c, c.row_start(0), 1);
        w.column("a", &c, c.row_start(0), 1);
        assert!(matches!(
            decode_plain(&w.finish()),
            Err(Error::Corruption(_))
        ));
    }

    #[test]
    fn an_entry_without_a_full_column_is_damage() {
        let c = column(&[Some(1)]);
        let mut w = PlainWriter::new();
        w.begin_entry(2);
        w.column("a", &c, c.row_start(0), 1);
        assert!(matches!(
            decode_plain(&w.finish()),
            Err(Error::Corruption(_))
        ));
    }

    #[test]
    fn ints_take_a_byte_or_two_when_they_change_little() {
        let mut t = Column::new();
        let mut v = Column::new();
        for i in 0..100 {
            t.push_int(tag::DATETIME, 1_700_000_000_000 + 10_000 * i);
            v.push_int(tag::INT32, 50 + i % 3);
        }
        let mut w = PlainWriter::new();
        w.begin_entry(100);
        w.column("t", &t, t.row_start(0), 100);
        w.column("v", &v, v.row_start(0), 100);
        let bytes = w.finish();
        // One type per column, the first time in 6 bytes, 99 time steps of 10 000 in 3, 100
        // values in 1 (the raw lanes are 1800 bytes).
        assert!(
            bytes.len() < 2 + 6 + 3 * 99 + 100 + 20,
            "{} bytes",
            bytes.len()
        );
        let table = decode_plain(&bytes).expect("decodes");
        assert_eq!(table.entry_columns(0), [("t", t), ("v", v)]);
    }
}
