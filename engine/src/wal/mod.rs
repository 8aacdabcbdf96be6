//! The write-ahead log of one collection (`docs/durability.md`): one record per commit group,
//! holding every row it committed, column by column and compressed, so that a commit writes
//! nothing per bucket to the store. Buckets are stored when they leave memory; a checkpoint
//! records the rows still only in memory and drops the log before it.
//!
//! Files `<db>/wal/c<collection id>/<sequence, 20 digits>.log`, each a run of frames
//! `u32 length | u64 xxh3 of the payload | payload` (little-endian). A payload is a
//! [`LogRecord`]: a kind byte (7 or 5 commit, 6 checkpoint), a varint entry count, then per
//! entry `flags u8 (1: key follows, 2: sorted) | shared u8 | the bucket _id's last 12 − shared
//! bytes (the first ones are the previous entry's) | [varint length | key bytes] | zigzag
//! varint min time − the previous entry's | varint first row | varint rows | varint raw bytes
//! | varint size estimate`, then `varint length | rows`: every entry's rows. Kinds 5 and 6 hold
//! them in the codec's plain row format, one plain entry per entry, entry after entry (the
//! lanes with one fixed light transform: no encoding is chosen on the commit path,
//! `docs/format.md`, "Plain rows"). Kind 7, an insert call's commit, holds the call's columns
//! once, as received, and per entry the runs of call rows it holds, or plain rows for an entry
//! whose batch other writers shared ([`call_rows`]). Records of kinds 3 and 4, which earlier
//! versions wrote, are kinds 5 and 6 with their rows as one table encoded by the codec (a
//! field an entry lacks is missing in its rows), and kinds 1 and 2 the same fields at fixed
//! widths (`docs/keys.md`): all are still read.
//!
//! A frame cut short at the end of the last file (or whose checksum does not match, at its
//! end) is a write a crash interrupted: a torn tail. Anything else that does not parse is
//! damage. Reading stops at either, and says where and what lies past it ([`LogCut`]).
//!
//! Sequence numbers only grow: a restart leaves the new file behind, empty when it holds no
//! checkpoint, so a [`LogPosition`] names one place in the log's whole history (the stored
//! retirement markers of rewritten and removed buckets compare against it, `docs/durability.md`).

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use tscoll_catalog::{BucketId, CallRows};
use tscoll_codec::{Column, PlainTable, RowStart, decode_bucket, decode_plain, varint};
use xxhash_rust::xxh3::xxh3_64;

use crate::Durability;
use crate::error::{Error, Result};

/// Frame header: length (4 bytes) and checksum (8 bytes).
const FRAME_HEADER: usize = 12;
/// Largest payload a frame may announce (a commit group's rows; bounds reading bad bytes).
const MAX_PAYLOAD: usize = 1 << 31;

/// What [`WriteAheadLog::read_all`] read: the records up to the first frame that cannot be
/// read, and that frame when there is one.
#[derive(Debug, Default)]
pub(crate) struct LogRead {
    /// Every record before the cut, with its position, oldest first.
    pub(crate) records: Vec<(LogPosition, LogRecord)>,
    /// Where reading stopped, when it did before the end of the log.
    pub(crate) cut: Option<LogCut>,
}

/// Where reading a log stopped before its end, and what lies past that point.
#[derive(Debug)]
pub(crate) struct LogCut {
    /// Damage (`true`), or a torn tail: the last frame of the last file cut short or with a
    /// checksum that does not match, a write a crash interrupted.
    pub(crate) damaged: bool,
    /// The file.
    pub(crate) path: PathBuf,
    /// Its sequence number.
    pub(crate) seq: u64,
    /// Where the frame that cannot be read begins in it.
    pub(crate) offset: u64,
    /// What is wrong with that frame.
    pub(crate) reason: String,
    /// Bytes from there to the end of the log (the file's rest and every later file).
    pub(crate) bytes: u64,
    /// The records after the cut whose frames are intact, with their positions, in order.
    pub(crate) readable: Vec<(LogPosition, LogRecord)>,
    /// Frames after the cut that cannot be read, the first one included; a lower bound when
    /// damage hides where the next frames begin.
    pub(crate) unreadable: u64,
    /// The entries of a torn record, when its beginning holds them whole.
    pub(crate) torn_entries: Option<Vec<LogEntry>>,
}

impl LogCut {
    /// Counts the frames of `rest`, which starts with the frame that cannot be read: that
    /// one is skipped when its length is plausible (only its checksum or contents are
    /// wrong), then the others are read.
    fn count_after(&mut self, rest: &[u8]) {
        self.unreadable += 1;
        let skip = match frame_at(rest) {
            Frame::Intact { len, .. } | Frame::BadChecksum { len } => len,
            Frame::Short => return,
        };
        let at = LogPosition {
            seq: self.seq,
            offset: self.offset + skip as u64,
        };
        self.count_frames(rest.get(skip..).unwrap_or_default(), at);
    }

    /// Reads the frames of `bytes`, the first one at `at`, into [`LogCut::readable`] and
    /// [`LogCut::unreadable`], until one whose length runs past the end.
    fn count_frames(&mut self, mut bytes: &[u8], mut at: LogPosition) {
        while !bytes.is_empty() {
            let len = match frame_at(bytes) {
                Frame::Intact { payload, len } => {
                    match LogRecord::decode(payload) {
                        Ok(r) => self.readable.push((at, r)),
                        Err(_) => self.unreadable += 1,
                    }
                    len
                }
                Frame::BadChecksum { len } => {
                    self.unreadable += 1;
                    len
                }
                Frame::Short => {
                    self.unreadable += 1;
                    return;
                }
            };
            bytes = bytes.get(len..).unwrap_or_default();
            at.offset += len as u64;
        }
    }
}

/// The frame at the start of some bytes.
enum Frame<'a> {
    /// Its checksum matches; `len` bytes with the header.
    Intact { payload: &'a [u8], len: usize },
    /// Its checksum does not match; `len` bytes with the header.
    BadChecksum { len: usize },
    /// The bytes end before the length its header gives (or inside the header).
    Short,
}

fn frame_at(bytes: &[u8]) -> Frame<'_> {
    let Some((head, body)) = bytes.split_at_checked(FRAME_HEADER) else {
        return Frame::Short;
    };
    let len = u32::from_le_bytes(head[..4].try_into().unwrap_or_default()) as usize;
    let sum = u64::from_le_bytes(head[4..].try_into().unwrap_or_default());
    match body.get(..len) {
        None => Frame::Short,
        Some(payload) if xxh3_64(payload) == sum => Frame::Intact {
            payload,
            len: FRAME_HEADER + len,
        },
        Some(_) => Frame::BadChecksum {
            len: FRAME_HEADER + len,
        },
    }
}

/// A place in the log: a file's sequence number and a byte offset in it. Positions of later
/// records compare greater.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LogPosition {
    /// The file's sequence number.
    pub(crate) seq: u64,
    /// Bytes before the record in the file.
    pub(crate) offset: u64,
}

impl LogPosition {
    /// 16 bytes: sequence number, then offset (big-endian).
    pub(crate) fn to_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.seq.to_be_bytes());
        out[8..].copy_from_slice(&self.offset.to_be_bytes());
        out
    }

    /// Inverse of [`LogPosition::to_bytes`]; `None` unless `bytes` is 16 bytes long.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<LogPosition> {
        Some(LogPosition {
            seq: u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?),
            offset: u64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?),
        })
    }
}

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// The rows of one commit group.
    Commit = 1,
    /// Every row held only in memory when the checkpoint was taken (first record of a file).
    Checkpoint = 2,
}

/// Rows of one bucket in a record.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LogEntry {
    /// Bucket `_id`.
    pub(crate) id: BucketId,
    /// The series' key bytes: in a bucket's first commit and in checkpoints.
    pub(crate) key: Option<Vec<u8>>,
    /// Whether the bucket's rows are in time order after these rows.
    pub(crate) sorted: bool,
    /// `control.min.<time>` (rounded, ms).
    pub(crate) min_time: i64,
    /// Position in the bucket of the first row.
    pub(crate) first_row: u32,
    /// Number of rows.
    pub(crate) rows: u32,
    /// BSON bytes of every measurement of the bucket after these rows.
    pub(crate) uncompressed_bytes: u64,
    /// The classic size estimate after these rows (bytes).
    pub(crate) size_estimate: u64,
}

/// How a record holds its entries' rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowsLayout {
    /// One table encoded by the codec (a bucket blob), the entries' rows one after another.
    Blob,
    /// The codec's plain rows, one plain entry per entry ([`tscoll_codec::PlainWriter`]).
    Plain,
    /// An insert call's columns as received, with per entry the runs of them it holds, or
    /// plain rows for an entry that holds rows of other writers too ([`call_rows`]).
    Call,
}

/// One record: a commit group or a checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LogRecord {
    pub(crate) kind: RecordKind,
    pub(crate) entries: Vec<LogEntry>,
    /// The entries' rows in entry order, laid out as `layout` says.
    pub(crate) rows: Vec<u8>,
    pub(crate) layout: RowsLayout,
}

impl LogRecord {
    /// The payload bytes, in the compact layout (kind 3 or 4, see the module documentation).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let size: usize = self
            .entries
            .iter()
            .map(|e| 24 + e.key.as_ref().map_or(0, Vec::len))
            .sum();
        let mut out = Vec::with_capacity(16 + size + self.rows.len());
        out.push(match (self.kind, self.layout) {
            (RecordKind::Commit, RowsLayout::Blob) => COMPACT_COMMIT,
            (RecordKind::Checkpoint, RowsLayout::Blob) => COMPACT_CHECKPOINT,
            (RecordKind::Commit, RowsLayout::Plain) => PLAIN_COMMIT,
            (RecordKind::Checkpoint, RowsLayout::Plain) => PLAIN_CHECKPOINT,
            (RecordKind::Commit, RowsLayout::Call) => CALL_COMMIT,
            (RecordKind::Checkpoint, RowsLayout::Call) => CALL_CHECKPOINT,
        });
        varint::put(&mut out, self.entries.len() as u64);
        let mut previous_id = [0u8; 12];
        let mut previous_min_time = 0i64;
        for e in &self.entries {
            out.push(u8::from(e.key.is_some()) | (u8::from(e.sorted) << 1));
            let shared =
                e.id.iter()
                    .zip(&previous_id)
                    .take_while(|(a, b)| a == b)
                    .count();
            #[expect(clippy::cast_possible_truncation, reason = "at most 12")]
            out.push(shared as u8);
            out.extend_from_slice(e.id.get(shared..).unwrap_or_default());
            if let Some(k) = &e.key {
                varint::put(&mut out, k.len() as u64);
                out.extend_from_slice(k);
            }
            varint::put_signed(&mut out, e.min_time.wrapping_sub(previous_min_time));
            varint::put(&mut out, u64::from(e.first_row));
            varint::put(&mut out, u64::from(e.rows));
            varint::put(&mut out, e.uncompressed_bytes);
            varint::put(&mut out, e.size_estimate);
            previous_id = e.id;
            previous_min_time = e.min_time;
        }
        varint::put(&mut out, self.rows.len() as u64);
        out.extend_from_slice(&self.rows);
        out
    }

    /// Parses a payload, in either layout.
    ///
    /// # Errors
    /// A message naming what is wrong.
    pub(crate) fn decode(bytes: &[u8]) -> std::result::Result<LogRecord, String> {
        let (kind, layout, entries, mut r) = decode_head(bytes)?;
        let len = if matches!(bytes.first(), Some(1 | 2)) {
            r.u32()? as usize
        } else {
            let len = r.varint()?;
            usize::try_from(len).map_err(|_| format!("rows of {len} bytes"))?
        };
        with_rows(r, len, kind, layout, entries)
    }
}

/// The kind and entries of a payload, in either layout, and a reader of what follows them
/// (the rows' length and the rows).
fn decode_head(
    bytes: &[u8],
) -> std::result::Result<(RecordKind, RowsLayout, Vec<LogEntry>, Reader<'_>), String> {
    let mut r = Reader(bytes);
    let (kind, layout) = match r.u8()? {
        1 => (RecordKind::Commit, RowsLayout::Blob),
        2 => (RecordKind::Checkpoint, RowsLayout::Blob),
        COMPACT_COMMIT => (RecordKind::Commit, RowsLayout::Blob),
        COMPACT_CHECKPOINT => (RecordKind::Checkpoint, RowsLayout::Blob),
        PLAIN_COMMIT => (RecordKind::Commit, RowsLayout::Plain),
        PLAIN_CHECKPOINT => (RecordKind::Checkpoint, RowsLayout::Plain),
        CALL_COMMIT => (RecordKind::Commit, RowsLayout::Call),
        CALL_CHECKPOINT => (RecordKind::Checkpoint, RowsLayout::Call),
        k => return Err(format!("unknown record kind {k}")),
    };
    let entries = if matches!(bytes.first(), Some(1 | 2)) {
        decode_fixed(&mut r)?
    } else {
        decode_compact(&mut r)?
    };
    Ok((kind, layout, entries, r))
}

/// Kind byte of a commit record in the compact layout.
const COMPACT_COMMIT: u8 = 3;
/// Kind byte of a checkpoint record in the compact layout.
const COMPACT_CHECKPOINT: u8 = 4;
/// Kind byte of a commit record in the compact layout with plain rows.
const PLAIN_COMMIT: u8 = 5;
/// Kind byte of a checkpoint record in the compact layout with plain rows.
const PLAIN_CHECKPOINT: u8 = 6;
/// Kind byte of a commit record in the compact layout with an insert call's columns.
const CALL_COMMIT: u8 = 7;
/// Kind byte of a checkpoint record in the compact layout with an insert call's columns
/// (not written: checkpoints hold plain rows; read for symmetry).
const CALL_CHECKPOINT: u8 = 8;

/// Rows `from..to` of entry `entry` of plain rows (clamped to its rows), the fields they lack
/// left out.
fn plain_entry_rows(
    table: &PlainTable,
    entry: usize,
    from: usize,
    to: usize,
) -> Vec<(String, Column)> {
    let Some(e) = table.entries.get(entry) else {
        return Vec::new();
    };
    let to = to.min(e.rows);
    e.columns
        .iter()
        .map(|(n, c)| {
            let name = table.names.get(*n).cloned().unwrap_or_default();
            let mut rows = c.rows(from.min(to), to);
            // A plain column stops at its last value: the rows after it are missing.
            let want = to.saturating_sub(from);
            if rows.len() < want {
                rows.push_missing_n(want - rows.len());
            }
            (name, rows)
        })
        .filter(|(_, c)| !c.all_missing())
        .collect()
}

/// The rows of a record in the layout [`RowsLayout::Call`]: `varint length | plain rows`
/// (one plain entry per entry whose rows are plain), `varint length | the call's columns`
/// (plain rows, one entry of every row of the call), then per entry `varint runs` (0: its
/// rows are the next plain entry) and per run `zigzag varint first call row − the end of the
/// run before | varint rows`.
pub(crate) fn call_rows(plain: &[u8], call: &CallRows<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        plain.len() + call.table.len() + 3 * call.runs.len() + call.counts.len() + 20,
    );
    varint::put(&mut out, plain.len() as u64);
    out.extend_from_slice(plain);
    varint::put(&mut out, call.table.len() as u64);
    out.extend_from_slice(call.table);
    let mut end = 0i64;
    let mut runs = call.runs.iter();
    for &count in &call.counts {
        varint::put(&mut out, u64::from(count));
        for &[first, rows] in runs.by_ref().take(count as usize) {
            varint::put_signed(&mut out, i64::from(first) - end);
            varint::put(&mut out, u64::from(rows));
            end = i64::from(first) + i64::from(rows);
        }
    }
    out
}

/// The entries of a record in the compact layout (kinds 3 and 4).
fn decode_compact(r: &mut Reader<'_>) -> std::result::Result<Vec<LogEntry>, String> {
    let n = r.varint()?;
    // Every entry takes at least 7 bytes: a count beyond that is damage.
    if n > (r.0.len() / 7) as u64 {
        return Err(format!("{n} entries cannot fit in {} bytes", r.0.len()));
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "bounded by the bytes above"
    )]
    let mut entries = Vec::with_capacity(n as usize);
    let mut previous_id = [0u8; 12];
    let mut previous_min_time = 0i64;
    for _ in 0..n {
        let flags = r.u8()?;
        let shared = usize::from(r.u8()?);
        let mut id = previous_id;
        let Some(tail) = id.get_mut(shared..) else {
            return Err(format!("{shared} bytes shared with a 12-byte bucket id"));
        };
        tail.copy_from_slice(r.take(12 - shared)?);
        let key = if flags & 1 == 1 {
            let len = r.varint()?;
            let len = usize::try_from(len).map_err(|_| format!("key of {len} bytes"))?;
            Some(r.take(len)?.to_vec())
        } else {
            None
        };
        let min_time = previous_min_time.wrapping_add(r.varint_signed()?);
        let first_row = r.varint_u32("first row")?;
        let rows = r.varint_u32("row count")?;
        let uncompressed_bytes = r.varint()?;
        let size_estimate = r.varint()?;
        entries.push(LogEntry {
            id,
            key,
            sorted: flags & 2 == 2,
            min_time,
            first_row,
            rows,
            uncompressed_bytes,
            size_estimate,
        });
        previous_id = id;
        previous_min_time = min_time;
    }
    Ok(entries)
}

/// The entries of a record in the fixed layout of kinds 1 and 2, which earlier versions wrote
/// (a log left by a crash of one is still recovered).
fn decode_fixed(r: &mut Reader<'_>) -> std::result::Result<Vec<LogEntry>, String> {
    let n = r.u32()? as usize;
    // Every entry takes at least 45 bytes: a count beyond that is damage.
    if n > r.0.len() / 45 {
        return Err(format!("{n} entries cannot fit in {} bytes", r.0.len()));
    }
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let id: BucketId = r
            .take(12)?
            .try_into()
            .map_err(|_| "short bucket id".to_owned())?;
        let flags = r.u8()?;
        let key = if flags & 1 == 1 {
            let len = r.u32()? as usize;
            Some(r.take(len)?.to_vec())
        } else {
            None
        };
        // Fields are read in the order they are written.
        entries.push(LogEntry {
            id,
            key,
            sorted: flags & 2 == 2,
            min_time: r.i64()?,
            first_row: r.u32()?,
            rows: r.u32()?,
            uncompressed_bytes: r.u64()?,
            size_estimate: r.u64()?,
        });
    }
    Ok(entries)
}

/// The record of `entries`, with the `len` bytes of rows that end the payload `r` reads.
fn with_rows(
    mut r: Reader<'_>,
    len: usize,
    kind: RecordKind,
    layout: RowsLayout,
    entries: Vec<LogEntry>,
) -> std::result::Result<LogRecord, String> {
    let rows = r.take(len)?.to_vec();
    if !r.0.is_empty() {
        return Err(format!("{} bytes after the rows", r.0.len()));
    }
    Ok(LogRecord {
        kind,
        entries,
        rows,
        layout,
    })
}

/// The rows of a record, decoded: per entry, its columns.
#[derive(Debug)]
pub(crate) enum RecordRows {
    /// One table (layout [`RowsLayout::Blob`]) and where each entry's rows start in it.
    Blob {
        table: tscoll_codec::Bucket,
        offsets: Vec<usize>,
    },
    /// Plain rows, an entry per entry.
    Plain(PlainTable),
    /// An insert call's columns and plain rows ([`RowsLayout::Call`]).
    Call {
        /// The plain rows, an entry per entry whose rows are plain.
        plain: PlainTable,
        /// The call's columns: one entry of every row.
        call: PlainTable,
        /// Per column of `call`: where every [`MARK_ROWS`]-th row starts.
        marks: Vec<Vec<RowStart>>,
        /// Where each entry's rows are.
        entries: Vec<EntryRows>,
    },
}

/// Where the rows of one entry of a [`RecordRows::Call`] are.
#[derive(Debug)]
pub(crate) enum EntryRows {
    /// Entry `k` of the plain rows.
    Plain(usize),
    /// Runs `(first row, rows)` of the call's columns, in row order.
    Call(Vec<(usize, usize)>),
}

impl RecordRows {
    /// Decodes rows laid out as `layout`, of entries of `entry_rows` rows each.
    ///
    /// # Errors
    /// The rows are damaged, or hold fewer entries or rows than `entry_rows` says.
    pub(crate) fn decode(
        layout: RowsLayout,
        rows: &[u8],
        entry_rows: impl IntoIterator<Item = u32>,
    ) -> std::result::Result<RecordRows, String> {
        let entry_rows: Vec<u32> = entry_rows.into_iter().collect();
        match layout {
            RowsLayout::Blob => {
                let table = decode_bucket(rows).map_err(|e| e.to_string())?;
                let mut offsets = Vec::with_capacity(entry_rows.len());
                let mut at = 0usize;
                for n in entry_rows {
                    offsets.push(at);
                    at += n as usize;
                }
                if at > table.row_count {
                    return Err("a log entry points past its record's rows".to_owned());
                }
                Ok(RecordRows::Blob { table, offsets })
            }
            RowsLayout::Plain => {
                let table = decode_plain(rows).map_err(|e| e.to_string())?;
                let matches = table.entries.len() == entry_rows.len()
                    && table
                        .entries
                        .iter()
                        .zip(&entry_rows)
                        .all(|(e, &n)| e.rows == n as usize);
                if !matches {
                    return Err("a record's rows do not match its entries".to_owned());
                }
                Ok(RecordRows::Plain(table))
            }
            RowsLayout::Call => decode_call(rows, &entry_rows),
        }
    }

    /// Rows `from..to` of entry `entry` (clamped to its rows), the fields they lack left
    /// out.
    pub(crate) fn entry_rows(&self, entry: usize, from: usize, to: usize) -> Vec<(String, Column)> {
        match self {
            RecordRows::Blob { table, offsets } => {
                let Some(&at) = offsets.get(entry) else {
                    return Vec::new();
                };
                let end = offsets.get(entry + 1).copied().unwrap_or(table.row_count);
                let (from, to) = ((at + from).min(end), (at + to).min(end));
                table
                    .columns
                    .iter()
                    .map(|(n, c)| (n.clone(), c.rows(from, to)))
                    .filter(|(_, c)| !c.all_missing())
                    .collect()
            }
            RecordRows::Plain(table) => plain_entry_rows(table, entry, from, to),
            RecordRows::Call {
                plain,
                call,
                marks,
                entries,
            } => match entries.get(entry) {
                None => Vec::new(),
                Some(EntryRows::Plain(k)) => plain_entry_rows(plain, *k, from, to),
                Some(EntryRows::Call(runs)) => call_entry_rows(call, marks, runs, from, to),
            },
        }
    }
}

/// The rows of a record in the layout [`RowsLayout::Call`] (see [`call_rows`]), of entries
/// of `entry_rows` rows each.
fn decode_call(rows: &[u8], entry_rows: &[u32]) -> std::result::Result<RecordRows, String> {
    let mut r = Reader(rows);
    let len = r.varint()?;
    let plain = r.take(usize::try_from(len).map_err(|_| format!("plain rows of {len} bytes"))?)?;
    let len = r.varint()?;
    let table = r.take(usize::try_from(len).map_err(|_| format!("call rows of {len} bytes"))?)?;
    let plain = decode_plain(plain).map_err(|e| e.to_string())?;
    let call = decode_plain(table).map_err(|e| e.to_string())?;
    let call_rows = match call.entries.as_slice() {
        [e] => e.rows,
        _ => return Err("a record's call columns are not one entry".to_owned()),
    };
    let mut entries = Vec::with_capacity(entry_rows.len());
    let mut plain_rows = plain.entries.iter();
    let mut next_plain = 0;
    let mut end = 0i64;
    for &n in entry_rows {
        let count = r.varint()?;
        if count == 0 {
            if plain_rows.next().is_none_or(|e| e.rows != n as usize) {
                return Err("a record's rows do not match its entries".to_owned());
            }
            entries.push(EntryRows::Plain(next_plain));
            next_plain += 1;
            continue;
        }
        // Every run takes at least 2 bytes: a count beyond that is damage.
        if count > (r.0.len() / 2) as u64 {
            return Err(format!("{count} runs cannot fit in {} bytes", r.0.len()));
        }
        #[expect(
            clippy::cast_possible_truncation,
            reason = "bounded by the bytes above"
        )]
        let mut runs = Vec::with_capacity(count as usize);
        let mut total = 0usize;
        for _ in 0..count {
            let first = end
                .checked_add(r.varint_signed()?)
                .ok_or("a run's first row overflows")?;
            let len = r.varint()?;
            let last = u64::try_from(first)
                .ok()
                .and_then(|f| f.checked_add(len))
                .filter(|&l| l <= call_rows as u64)
                .ok_or_else(|| "a run points past the call's rows".to_owned())?;
            #[expect(clippy::cast_possible_truncation, reason = "within the call's rows")]
            runs.push((first as usize, len as usize));
            total += len as usize;
            #[expect(clippy::cast_possible_wrap, reason = "within the call's rows")]
            {
                end = last as i64;
            }
        }
        if total != n as usize {
            return Err("an entry's runs do not hold its rows".to_owned());
        }
        entries.push(EntryRows::Call(runs));
    }
    if plain_rows.next().is_some() || !r.0.is_empty() {
        return Err("a record's rows do not match its entries".to_owned());
    }
    let marks = call
        .entries
        .first()
        .map(|e| e.columns.iter().map(|(_, c)| row_marks(c)).collect())
        .unwrap_or_default();
    Ok(RecordRows::Call {
        plain,
        call,
        marks,
        entries,
    })
}

/// Rows between two marks of a call's column ([`row_marks`]).
const MARK_ROWS: usize = 64;

/// Where every [`MARK_ROWS`]-th row of `column` starts: a row's start is then found in at
/// most [`MARK_ROWS`] steps.
fn row_marks(column: &Column) -> Vec<RowStart> {
    let mut marks = Vec::with_capacity(column.len() / MARK_ROWS + 1);
    let mut at = RowStart::default();
    marks.push(at);
    while at.row + MARK_ROWS < column.len() {
        at = column.row_start_after(at, at.row + MARK_ROWS);
        marks.push(at);
    }
    marks
}

/// Rows `from..to` of the entry made of `runs` of the call's columns (clamped to its rows),
/// the fields they lack left out, in the order their first values come (the order a bucket
/// opened by these rows lists its fields in).
fn call_entry_rows(
    call: &PlainTable,
    marks: &[Vec<RowStart>],
    runs: &[(usize, usize)],
    from: usize,
    to: usize,
) -> Vec<(String, Column)> {
    let Some(entry) = call.entries.first() else {
        return Vec::new();
    };
    let mut out: Vec<(usize, String, Column)> = Vec::new();
    for ((n, c), marks) in entry.columns.iter().zip(marks) {
        let mut rows = Column::new();
        // Entry rows `at..at + len` are call rows `first..first + len`.
        let mut at = 0;
        for &(first, len) in runs {
            let (a, b) = (from.max(at), to.min(at + len));
            if a < b {
                let (s, e) = (first + a - at, first + b - at);
                // A plain column stops at its last value: the rows after it are missing.
                let (cs, ce) = (s.min(c.len()), e.min(c.len()));
                let mark = marks.get(cs / MARK_ROWS).copied().unwrap_or_default();
                rows.extend_from_rows_at(c, c.row_start_after(mark, cs), ce);
                rows.push_missing_n((e - s) - (ce - cs));
            }
            at += len;
        }
        let Some(first) = rows
            .types()
            .iter()
            .position(|&t| t != tscoll_codec::tag::MISSING)
        else {
            continue;
        };
        let name = call.names.get(*n).cloned().unwrap_or_default();
        out.push((first, name, rows));
    }
    out.sort_by_key(|(first, _, _)| *first); // stable: ties keep the call's order
    out.into_iter().map(|(_, n, c)| (n, c)).collect()
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).expect("a log record part over 4 GiB")
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        if n > self.0.len() {
            return Err(format!("{n} bytes wanted, {} left", self.0.len()));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        self.take(N)?
            .try_into()
            .map_err(|_| "short field".to_owned())
    }
    fn u8(&mut self) -> std::result::Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> std::result::Result<i64, String> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    fn varint(&mut self) -> std::result::Result<u64, String> {
        varint::take(&mut self.0).map_err(|e| e.to_string())
    }
    fn varint_signed(&mut self) -> std::result::Result<i64, String> {
        varint::take_signed(&mut self.0).map_err(|e| e.to_string())
    }
    fn varint_u32(&mut self, what: &str) -> std::result::Result<u32, String> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| format!("{what} {v} over 32 bits"))
    }
}

/// A failed [`WriteAheadLog::append`].
#[derive(Debug)]
pub(crate) struct AppendError {
    /// What failed ([`Error::Io`], naming the file).
    pub(crate) error: Error,
    /// Part or all of the record may be left in the file (taking it back failed), so its
    /// commit may be recovered after a restart.
    pub(crate) may_remain: bool,
}

/// The open log file.
struct Tail {
    seq: u64,
    file: BufWriter<File>,
    /// Bytes written to it.
    bytes: u64,
    /// Bytes of its checkpoint record (0 when it has none).
    checkpoint: u64,
    /// When it was started (by a checkpoint or on open).
    started: Instant,
}

/// The write-ahead log of one collection.
pub(crate) struct WriteAheadLog {
    dir: PathBuf,
    tail: Mutex<TailState>,
}

/// The open file, if any, and whether a failed append left bytes in it that could not be
/// taken back.
#[derive(Default)]
struct TailState {
    open: Option<Tail>,
    /// Appends fail until the next restart, which removes the damaged file.
    poisoned: bool,
}

impl WriteAheadLog {
    /// The log in directory `dir` (created if missing); no file is opened until the first
    /// append. Call [`WriteAheadLog::read_all`] first to recover what an earlier process left.
    pub(crate) fn open(dir: PathBuf) -> Result<WriteAheadLog> {
        fs::create_dir_all(&dir).map_err(io_error(&dir, "creating the log directory"))?;
        Ok(WriteAheadLog {
            dir,
            tail: Mutex::new(TailState::default()),
        })
    }

    /// The log files present, oldest first: `(sequence, path)`.
    pub(crate) fn files(&self) -> Result<Vec<(u64, PathBuf)>> {
        let mut out = Vec::new();
        let entries = fs::read_dir(&self.dir).map_err(io_error(&self.dir, "listing the log"))?;
        for entry in entries {
            let entry = entry.map_err(io_error(&self.dir, "listing the log"))?;
            let name = entry.file_name();
            let Some(seq) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".log"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            out.push((seq, entry.path()));
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Every record of every file with its position, oldest first, up to the first frame
    /// that cannot be read, and how reading ended there ([`LogCut`]): a frame cut short at
    /// the end of the last file, or a last frame of the last file whose checksum does not
    /// match, is a torn tail (a write a crash interrupted); anything else is damage.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be read.
    pub(crate) fn read_all(&self) -> Result<LogRead> {
        let files = self.files()?;
        let mut out = LogRead::default();
        for (i, (seq, path)) in files.iter().enumerate() {
            let last = i + 1 == files.len();
            let bytes = fs::read(path).map_err(io_error(path, "reading the log"))?;
            let mut at = 0;
            while let Some(rest) = bytes.get(at..).filter(|r| !r.is_empty()) {
                let (damaged, reason) = match frame_at(rest) {
                    Frame::Intact { payload, len } => match LogRecord::decode(payload) {
                        Ok(record) => {
                            let offset = at as u64;
                            out.records
                                .push((LogPosition { seq: *seq, offset }, record));
                            at += len;
                            continue;
                        }
                        Err(e) => (true, format!("a record does not parse ({e})")),
                    },
                    // The last frame of the last file may be a torn write: its bytes were
                    // never acknowledged as written out.
                    Frame::Short if last => (false, "the last record is cut short".to_owned()),
                    Frame::Short => (true, "a file other than the last is cut short".to_owned()),
                    Frame::BadChecksum { len } if last && len == rest.len() => (
                        false,
                        "the last record's checksum does not match (a write cut short)".to_owned(),
                    ),
                    Frame::BadChecksum { .. } => {
                        (true, "a record's checksum does not match".to_owned())
                    }
                };
                let mut cut = LogCut {
                    damaged,
                    path: path.clone(),
                    seq: *seq,
                    offset: at as u64,
                    reason,
                    bytes: rest.len() as u64,
                    readable: Vec::new(),
                    unreadable: 0,
                    torn_entries: None,
                };
                if damaged {
                    cut.count_after(rest);
                    for (later_seq, later) in files.get(i + 1..).unwrap_or_default() {
                        let bytes = fs::read(later).map_err(io_error(later, "reading the log"))?;
                        cut.bytes += bytes.len() as u64;
                        cut.count_frames(
                            &bytes,
                            LogPosition {
                                seq: *later_seq,
                                offset: 0,
                            },
                        );
                    }
                } else {
                    // The entries of a record cut short were written whole when they parse
                    // (those of one whose checksum does not match cannot be trusted).
                    cut.unreadable = 1;
                    cut.torn_entries = matches!(frame_at(rest), Frame::Short)
                        .then(|| rest.get(FRAME_HEADER..))
                        .flatten()
                        .and_then(|payload| decode_head(payload).ok())
                        .map(|(_, _, entries, _)| entries);
                }
                out.cut = Some(cut);
                return Ok(out);
            }
        }
        Ok(out)
    }

    /// Copies the log files from sequence number `from` on to `<db>/wal-damaged-<ms>/<log
    /// directory name>/`, beside the database (the log directory is `<db>/wal/c<id>`), and
    /// returns that folder.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be copied.
    pub(crate) fn set_aside(&self, from: u64) -> Result<PathBuf> {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let db = self
            .dir
            .parent()
            .and_then(Path::parent)
            .unwrap_or(&self.dir);
        let to = db
            .join(format!("wal-damaged-{ms}"))
            .join(self.dir.file_name().unwrap_or_default());
        fs::create_dir_all(&to).map_err(io_error(&to, "creating a folder for a damaged log"))?;
        for (_, path) in self.files()?.into_iter().filter(|(s, _)| *s >= from) {
            fs::copy(&path, to.join(path.file_name().unwrap_or_default()))
                .map_err(io_error(&path, "copying a damaged log file"))?;
        }
        sync_dir(&to)?;
        Ok(to)
    }

    /// Appends one record with the durability asked for; opens a file first if none is open.
    /// When writing fails, the file is cut back to where the record began, so the bytes of a
    /// commit reported as failed never reach recovery; when even that fails, every append
    /// fails until the next [`WriteAheadLog::restart`].
    ///
    /// # Errors
    /// [`AppendError`]: the file cannot be written, or an earlier failure could not be taken
    /// back; [`AppendError::may_remain`] when the record's bytes may be left in the file.
    pub(crate) fn append(
        &self,
        payload: &[u8],
        durability: Durability,
    ) -> std::result::Result<(), AppendError> {
        let refused = |error| AppendError {
            error,
            may_remain: false,
        };
        if payload.len() > MAX_PAYLOAD {
            return Err(refused(Error::Io(std::io::Error::other(format!(
                "a log record of {} bytes is over 2 GiB",
                payload.len()
            )))));
        }
        let mut state = self.lock();
        if state.poisoned {
            return Err(refused(Error::Io(std::io::Error::other(
                "the log holds the bytes of a failed append; a checkpoint must restart it",
            ))));
        }
        if state.open.is_none() {
            state.open = Some(
                self.start(self.next_seq().map_err(refused)?)
                    .map_err(refused)?,
            );
        }
        let Some(t) = state.open.as_mut() else {
            unreachable!("opened above")
        };
        let path = self.path_of(t.seq);
        let Err(e) = write_frame(&mut t.file, payload, durability) else {
            t.bytes += (FRAME_HEADER + payload.len()) as u64;
            return Ok(());
        };
        // Take the record back: the file must end up holding exactly the bytes before it.
        let Some(t) = state.open.take() else {
            unreachable!("taken above")
        };
        let (file, buffered) = t.file.into_parts();
        let buffered = buffered.unwrap_or_default();
        match take_back(&file, &buffered, t.bytes) {
            Ok(()) => {
                state.open = Some(Tail {
                    file: BufWriter::with_capacity(1 << 20, file),
                    ..t
                });
                Err(refused(io_error(&path, "writing the log")(e)))
            }
            Err(back) => {
                state.poisoned = true;
                // The record's bytes stay in the file unless they all come after bytes
                // the file lacks (those are never written now).
                let may_remain = file.metadata().map_or(true, |m| m.len() > t.bytes);
                Err(AppendError {
                    error: io_error(&path, "writing the log")(std::io::Error::new(
                        e.kind(),
                        format!("{e}; cutting the record off failed too: {back}"),
                    )),
                    may_remain,
                })
            }
        }
    }

    /// The position the next record will be appended at.
    ///
    /// # Errors
    /// [`Error::Io`] when the log directory cannot be listed.
    pub(crate) fn position(&self) -> Result<LogPosition> {
        let state = self.lock();
        match &state.open {
            Some(t) => Ok(LogPosition {
                seq: t.seq,
                offset: t.bytes,
            }),
            None => Ok(LogPosition {
                seq: self.next_seq()?,
                offset: 0,
            }),
        }
    }

    /// Bytes logged since the last checkpoint and how long ago it was taken; `None` when no
    /// file is open.
    pub(crate) fn since_checkpoint(&self) -> Option<(u64, std::time::Duration)> {
        self.lock()
            .open
            .as_ref()
            .map(|t| (t.bytes - t.checkpoint, t.started.elapsed()))
    }

    /// Starts a new file, first holding `checkpoint` (when given, synced; the file is left
    /// empty otherwise, so sequence numbers keep growing), and removes every older file. The
    /// caller guarantees that everything the older files hold is stored durably or in
    /// `checkpoint`.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be written or removed.
    pub(crate) fn restart(&self, checkpoint: Option<&[u8]>) -> Result<()> {
        let mut state = self.lock();
        if let Some(mut t) = state.open.take() {
            let _ = t.file.flush();
        }
        let old = self.files()?;
        let next = self.next_seq()?;
        let mut t = self.start(next)?;
        if let Some(payload) = checkpoint {
            let path = self.path_of(next);
            if let Err(e) = write_frame(&mut t.file, payload, Durability::Sync) {
                // The older files still hold everything: the new one goes, or it would be
                // a file cut short before the files of later appends.
                let _ = t.file.into_parts();
                let _ = fs::remove_file(&path)
                    .and_then(|()| sync_dir(&self.dir).map_err(std::io::Error::other));
                return Err(io_error(&path, "writing a checkpoint")(e));
            }
            t.bytes = (FRAME_HEADER + payload.len()) as u64;
            t.checkpoint = t.bytes;
        }
        state.open = Some(t);
        state.poisoned = false;
        drop(state);
        for (_, path) in old {
            fs::remove_file(&path).map_err(io_error(&path, "removing an old log file"))?;
        }
        sync_dir(&self.dir)
    }

    /// Flushes the open file to the operating system (a clean shutdown keeps it).
    pub(crate) fn flush(&self) -> Result<()> {
        if let Some(t) = self.lock().open.as_mut() {
            let path = self.path_of(t.seq);
            t.file
                .flush()
                .map_err(io_error(&path, "flushing the log"))?;
        }
        Ok(())
    }

    /// Removes the whole log directory (the collection is dropped).
    pub(crate) fn remove(&self) -> Result<()> {
        self.lock().open.take();
        match fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error(&self.dir, "removing the log")(e))
            }
            _ => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TailState> {
        self.tail.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_seq(&self) -> Result<u64> {
        Ok(self.files()?.last().map_or(1, |(s, _)| s + 1))
    }

    fn path_of(&self, seq: u64) -> PathBuf {
        self.dir.join(format!("{seq:020}.log"))
    }

    fn start(&self, seq: u64) -> Result<Tail> {
        let path = self.path_of(seq);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_error(&path, "creating a log file"))?;
        sync_dir(&self.dir)?;
        Ok(Tail {
            seq,
            file: BufWriter::with_capacity(1 << 20, file),
            bytes: 0,
            checkpoint: 0,
            started: Instant::now(),
        })
    }
}

impl Drop for WriteAheadLog {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Leaves `file` holding the first `keep` bytes of the stream it was written with, when the
/// bytes past the file's end are `buffered`: writes those of them it lacks, or cuts it.
fn take_back(mut file: &File, buffered: &[u8], keep: u64) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    if len > keep {
        file.set_len(keep)?;
    } else {
        let missing = usize::try_from(keep - len).map_err(std::io::Error::other)?;
        let bytes = buffered
            .get(..missing)
            .ok_or_else(|| std::io::Error::other("the buffer lacks bytes before the record"))?;
        file.write_all(bytes)?;
    }
    file.sync_data()
}

/// Writes one frame (header and payload) and makes it as durable as asked.
fn write_frame(
    file: &mut BufWriter<File>,
    payload: &[u8],
    durability: Durability,
) -> std::io::Result<()> {
    let mut head = [0u8; FRAME_HEADER];
    head[..4].copy_from_slice(&len32(payload.len()).to_le_bytes());
    head[4..].copy_from_slice(&xxh3_64(payload).to_le_bytes());
    file.write_all(&head)?;
    file.write_all(payload)?;
    match durability {
        Durability::Buffered => Ok(()),
        Durability::Flush => file.flush(),
        Durability::Sync => {
            file.flush()?;
            file.get_ref().sync_data()
        }
    }
}

/// Makes a directory's entries (files created or removed) durable.
fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir, "syncing the log directory"))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

fn io_error(path: &Path, what: &'static str) -> impl Fn(std::io::Error) -> Error + use<> {
    let path = path.display().to_string();
    move |e| Error::Io(std::io::Error::new(e.kind(), format!("{what} {path}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two entries' rows: 3 rows with `t` and `a`, then 2 rows with `t` and `b`.
    fn two_entries() -> (Column, Column, Column) {
        let (mut t, mut a, mut b) = (Column::new(), Column::new(), Column::new());
        for i in 0..5 {
            t.push_int(tscoll_codec::tag::DATETIME, 1000 * i);
            if i < 3 {
                a.push_float(0.5 * i as f64);
                b.push_missing();
            } else {
                a.push_missing();
                b.push_bytes(tscoll_codec::tag::STRING, format!("b{i}").as_bytes());
            }
        }
        (t, a, b)
    }

    #[test]
    fn entry_rows_read_alike_from_both_layouts() {
        let (t, a, b) = two_entries();
        // Kinds 3 and 4 (earlier versions): one table, the entries one after the other.
        let blob =
            tscoll_codec::encode_bucket(5, &[("t", &t), ("a", &a), ("b", &b)]).expect("encodes");
        // Kinds 5 and 6: a plain entry per entry.
        let mut plain = tscoll_codec::PlainWriter::new();
        plain.begin_entry(3);
        plain.column("t", &t, t.row_start(0), 3);
        plain.column("a", &a, a.row_start(0), 3);
        plain.begin_entry(2);
        plain.column("t", &t, t.row_start(3), 5);
        plain.column("b", &b, b.row_start(3), 5);
        let plain = plain.finish();
        for (layout, bytes) in [(RowsLayout::Blob, blob), (RowsLayout::Plain, plain)] {
            let rows = RecordRows::decode(layout, &bytes, [3, 2]).expect("decodes");
            assert_eq!(
                rows.entry_rows(0, 1, 3),
                [
                    ("t".to_owned(), t.rows(1, 3)),
                    ("a".to_owned(), a.rows(1, 3))
                ],
                "{layout:?}"
            );
            assert_eq!(
                rows.entry_rows(1, 0, 2),
                [
                    ("t".to_owned(), t.rows(3, 5)),
                    ("b".to_owned(), b.rows(3, 5))
                ],
                "{layout:?}"
            );
            // Entries that do not match the rows are damage.
            assert!(
                RecordRows::decode(layout, &bytes, [3, 3]).is_err(),
                "{layout:?}"
            );
        }
    }

    /// The call columns of [`two_entries`]' rows in the order 3, 4, 0, 1, 2, and runs that
    /// make entry 0 of them; entry 1 plain.
    fn call_layout(t: &Column, a: &Column, b: &Column) -> (Vec<u8>, Vec<[u32; 2]>) {
        let order = [3, 4, 0, 1, 2];
        let shuffle = |c: &Column| {
            let mut out = Column::new();
            for &r in &order {
                out.extend_from_rows(c, r, r + 1);
            }
            out
        };
        let (ct, ca, cb) = (shuffle(t), shuffle(a), shuffle(b));
        let mut w = tscoll_codec::PlainWriter::new();
        w.begin_entry(5);
        w.column("t", &ct, RowStart::default(), 5);
        w.column("a", &ca, RowStart::default(), 5);
        w.column("b", &cb, RowStart::default(), 5);
        (w.finish(), vec![[2, 3]])
    }

    #[test]
    fn entry_rows_read_alike_from_call_columns() {
        let (t, a, b) = two_entries();
        let (table, runs) = call_layout(&t, &a, &b);
        let mut plain = tscoll_codec::PlainWriter::new();
        plain.begin_entry(2);
        plain.column("t", &t, t.row_start(3), 5);
        plain.column("b", &b, b.row_start(3), 5);
        let plain = plain.finish();
        let bytes = call_rows(
            &plain,
            &CallRows {
                table: &table,
                counts: vec![1, 0],
                runs,
            },
        );
        let rows = RecordRows::decode(RowsLayout::Call, &bytes, [3, 2]).expect("decodes");
        assert_eq!(
            rows.entry_rows(0, 1, 3),
            [
                ("t".to_owned(), t.rows(1, 3)),
                ("a".to_owned(), a.rows(1, 3))
            ]
        );
        assert_eq!(
            rows.entry_rows(1, 0, 2),
            [
                ("t".to_owned(), t.rows(3, 5)),
                ("b".to_owned(), b.rows(3, 5))
            ]
        );
        assert!(RecordRows::decode(RowsLayout::Call, &bytes, [3, 3]).is_err());
        assert!(RecordRows::decode(RowsLayout::Call, &bytes, [3]).is_err());
        // Entry 1 as two runs of the call's rows, and an entry of rows 4 and 0 (`b` has
        // its first value before `a`: a bucket they open lists `b` first).
        let bytes = call_rows(
            &[],
            &CallRows {
                table: &table,
                counts: vec![2, 1],
                runs: vec![[0, 1], [1, 1], [1, 2]],
            },
        );
        let rows = RecordRows::decode(RowsLayout::Call, &bytes, [2, 2]).expect("decodes");
        assert_eq!(
            rows.entry_rows(0, 0, 2),
            [
                ("t".to_owned(), t.rows(3, 5)),
                ("b".to_owned(), b.rows(3, 5))
            ]
        );
        let mut t40 = t.rows(4, 5);
        t40.extend_from(&t.rows(0, 1));
        let mut b40 = b.rows(4, 5);
        b40.push_missing();
        let mut a40 = a.rows(4, 5);
        a40.extend_from(&a.rows(0, 1));
        assert_eq!(
            rows.entry_rows(1, 0, 2),
            [
                ("t".to_owned(), t40),
                ("b".to_owned(), b40),
                ("a".to_owned(), a40)
            ]
        );
        // A run past the call's rows is damage, not a panic; so is every cut.
        let bad = call_rows(
            &[],
            &CallRows {
                table: &table,
                counts: vec![1, 1],
                runs: vec![[0, 2], [4, 2]],
            },
        );
        assert!(RecordRows::decode(RowsLayout::Call, &bad, [2, 2]).is_err());
        let record = LogRecord {
            kind: RecordKind::Commit,
            entries: vec![entry(1, true), entry(2, false)],
            rows: bytes,
            layout: RowsLayout::Call,
        };
        let encoded = record.encode();
        assert_eq!(LogRecord::decode(&encoded), Ok(record));
        for cut in 0..encoded.len() {
            assert!(LogRecord::decode(&encoded[..cut]).is_err(), "cut at {cut}");
        }
    }

    fn entry(id: u8, key: bool) -> LogEntry {
        LogEntry {
            id: [id; 12],
            key: key.then(|| vec![1, 2, 3]),
            sorted: id.is_multiple_of(2),
            min_time: -5,
            first_row: 7,
            rows: 3,
            uncompressed_bytes: 99,
            size_estimate: 1234,
        }
    }

    fn records(log: &WriteAheadLog) -> Vec<LogRecord> {
        log.read_all()
            .expect("read")
            .records
            .into_iter()
            .map(|(_, r)| r)
            .collect()
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_ends_the_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = WriteAheadLog::open(dir.path().join("wal")).expect("open");
        let a = LogRecord {
            kind: RecordKind::Commit,
            entries: vec![entry(1, true), entry(2, false)],
            rows: vec![1; 7],
            layout: RowsLayout::Blob,
        };
        let b = LogRecord {
            kind: RecordKind::Checkpoint,
            entries: vec![entry(4, true)],
            rows: Vec::new(),
            layout: RowsLayout::Blob,
        };
        log.append(&a.encode(), Durability::Flush).expect("append");
        log.append(&b.encode(), Durability::Sync).expect("append");
        assert_eq!(records(&log), vec![a.clone(), b.clone()]);
        let positions: Vec<LogPosition> = log
            .read_all()
            .expect("read")
            .records
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(positions[0].offset, 0);
        assert_eq!(
            positions[1].offset,
            (FRAME_HEADER + a.encode().len()) as u64
        );
        assert!(positions[0] < positions[1] && positions[1] < log.position().expect("pos"));
        // A torn last frame is dropped, and said; the frames before it stay.
        let (seq, path) = log.files().expect("files").pop().expect("a file");
        let len = fs::metadata(&path).expect("meta").len();
        let f = OpenOptions::new().write(true).open(&path).expect("open");
        f.set_len(len - 3).expect("cut");
        assert_eq!(records(&log), vec![a.clone()]);
        let cut = log.read_all().expect("read").cut.expect("a torn tail");
        assert!(!cut.damaged);
        assert_eq!((cut.seq, cut.offset), (seq, positions[1].offset));
        assert_eq!(cut.bytes, len - 3 - positions[1].offset);
        // b has no rows: the cut went through its entries, which are not counted.
        assert_eq!(cut.torn_entries, None);
        assert!(cut.reason.contains("cut short"), "{}", cut.reason);
        // A checkpoint starts a new file and removes the old ones.
        let before = log.position().expect("pos");
        log.restart(Some(&b.encode())).expect("restart");
        assert_eq!(log.files().expect("files").len(), 1);
        assert_eq!(records(&log), vec![b]);
        assert!(log.position().expect("pos") > before);
        // A restart without a checkpoint leaves one empty file: positions keep growing.
        let before = log.position().expect("pos");
        log.restart(None).expect("restart");
        let files = log.files().expect("files");
        assert_eq!(files.len(), 1);
        assert_eq!(fs::metadata(&files[0].1).expect("meta").len(), 0);
        drop(log);
        let log = WriteAheadLog::open(dir.path().join("wal")).expect("open");
        assert!(records(&log).is_empty());
        assert!(log.position().expect("pos") > before);
    }

    #[test]
    fn a_failed_append_is_taken_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        // The failure left part of the record in the file: it is cut off.
        fs::write(&path, b"goodPARTIAL").expect("write");
        let file = OpenOptions::new().append(true).open(&path).expect("open");
        take_back(&file, b"", 4).expect("take back");
        assert_eq!(fs::read(&path).expect("read"), b"good");
        // The failure came before the buffer reached the file: the acknowledged bytes the
        // buffer held are written, the record's are not.
        fs::write(&path, b"go").expect("write");
        let file = OpenOptions::new().append(true).open(&path).expect("open");
        take_back(&file, b"odPARTIAL", 4).expect("take back");
        assert_eq!(fs::read(&path).expect("read"), b"good");
        // A buffer that lacks bytes the file should hold is an error, not a panic.
        fs::write(&path, b"g").expect("write");
        let file = OpenOptions::new().append(true).open(&path).expect("open");
        assert!(take_back(&file, b"o", 4).is_err());
    }

    #[test]
    fn damage_before_the_end_is_a_damaged_cut_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = WriteAheadLog::open(dir.path().join("wal")).expect("open");
        let a = LogRecord {
            kind: RecordKind::Commit,
            entries: vec![entry(3, true)],
            rows: vec![3; 3],
            layout: RowsLayout::Blob,
        };
        log.append(&a.encode(), Durability::Flush).expect("append");
        log.append(&a.encode(), Durability::Flush).expect("append");
        let (_, path) = log.files().expect("files").pop().expect("a file");
        let mut bytes = fs::read(&path).expect("read");
        bytes[FRAME_HEADER + 2] ^= 0xff;
        fs::write(&path, &bytes).expect("write");
        // The damaged first frame ends the records; the intact one after it is counted.
        let read = log.read_all().expect("read");
        assert!(read.records.is_empty());
        let cut = read.cut.expect("damage");
        assert!(cut.damaged, "{}", cut.reason);
        assert_eq!((cut.offset, cut.bytes), (0, bytes.len() as u64));
        let second = LogPosition {
            seq: cut.seq,
            offset: (FRAME_HEADER + a.encode().len()) as u64,
        };
        assert_eq!(
            (cut.readable, cut.unreadable),
            (vec![(second, a.clone())], 1)
        );
        // A length running past the end of a file other than the last is damage too.
        log.restart(None).expect("restart");
        fs::write(&path, &bytes[..FRAME_HEADER + 5]).expect("write");
        let cut = log.read_all().expect("read").cut.expect("damage");
        assert!(cut.damaged && cut.reason.contains("other than the last"));
        for cut in 0..a.encode().len() {
            assert!(LogRecord::decode(&a.encode()[..cut]).is_err());
        }
    }

    /// The fixed layout of kinds 1 and 2, as earlier versions wrote it.
    fn encode_fixed(r: &LogRecord) -> Vec<u8> {
        let mut out = vec![r.kind as u8];
        out.extend_from_slice(&len32(r.entries.len()).to_le_bytes());
        for e in &r.entries {
            out.extend_from_slice(&e.id);
            out.push(u8::from(e.key.is_some()) | (u8::from(e.sorted) << 1));
            if let Some(k) = &e.key {
                out.extend_from_slice(&len32(k.len()).to_le_bytes());
                out.extend_from_slice(k);
            }
            out.extend_from_slice(&e.min_time.to_le_bytes());
            out.extend_from_slice(&e.first_row.to_le_bytes());
            out.extend_from_slice(&e.rows.to_le_bytes());
            out.extend_from_slice(&e.uncompressed_bytes.to_le_bytes());
            out.extend_from_slice(&e.size_estimate.to_le_bytes());
        }
        out.extend_from_slice(&len32(r.rows.len()).to_le_bytes());
        out.extend_from_slice(&r.rows);
        out
    }

    /// A commit of one row to each of `n` buckets, as a trickle of real-time data logs it:
    /// bucket ids that differ in their last bytes, one hour's min time, growing sizes.
    fn trickle_record(n: u16) -> LogRecord {
        let entries = (0..n)
            .map(|i| {
                let mut id = [7u8; 12];
                id[10..].copy_from_slice(&i.to_be_bytes());
                LogEntry {
                    id,
                    key: (i % 50 == 0).then(|| vec![u8::try_from(i % 200).expect("small"); 150]),
                    sorted: i % 3 != 0,
                    min_time: 1_700_000_000_000 + 3_600_000 * i64::from(i % 2),
                    first_row: 123,
                    rows: 1,
                    uncompressed_bytes: 45_000 + u64::from(i),
                    size_estimate: 52_000 + u64::from(i),
                }
            })
            .collect();
        LogRecord {
            kind: RecordKind::Commit,
            entries,
            rows: vec![9; 100],
            layout: RowsLayout::Blob,
        }
    }

    #[test]
    fn compact_records_round_trip_and_stay_small() {
        let mut a = trickle_record(1000);
        a.entries.push(LogEntry {
            min_time: i64::MIN,
            first_row: u32::MAX,
            rows: u32::MAX,
            uncompressed_bytes: u64::MAX,
            size_estimate: 0,
            ..entry(200, true)
        });
        a.entries.push(LogEntry {
            min_time: i64::MAX,
            ..entry(200, false)
        });
        for kind in [RecordKind::Commit, RecordKind::Checkpoint] {
            a.kind = kind;
            a.layout = RowsLayout::Blob;
            let bytes = a.encode();
            assert_eq!(LogRecord::decode(&bytes), Ok(a.clone()));
            assert_eq!(LogRecord::decode(&encode_fixed(&a)), Ok(a.clone()));
            // Plain rows: the same entries under kinds 5 and 6.
            a.layout = RowsLayout::Plain;
            let plain = a.encode();
            assert_eq!(plain.first(), Some(&(bytes[0] + 2)));
            assert_eq!(LogRecord::decode(&plain), Ok(a.clone()));
        }
        // Without their keys, the trickle's entries take 15 bytes each, a third of the fixed
        // layout's 45.
        let mut b = trickle_record(1000);
        for e in &mut b.entries {
            e.key = None;
        }
        let per_entry = (b.encode().len() - 100) / 1000;
        assert!(per_entry <= 15, "{per_entry} bytes per entry");
        assert!((encode_fixed(&b).len() - 100) / 1000 >= 45);
    }

    #[test]
    fn a_log_in_the_fixed_layout_is_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = WriteAheadLog::open(dir.path().join("wal")).expect("open");
        let a = trickle_record(10);
        log.append(&encode_fixed(&a), Durability::Flush)
            .expect("append");
        log.append(&a.encode(), Durability::Flush).expect("append");
        assert_eq!(records(&log), vec![a.clone(), a]);
    }

    #[test]
    fn every_cut_of_a_compact_record_is_an_error() {
        let a = trickle_record(60);
        let bytes = a.encode();
        for cut in 0..bytes.len() {
            assert!(LogRecord::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        // A shared prefix longer than an id is damage, not a panic.
        let mut bad = bytes.clone();
        let first_shared = 1 + varint::len(60) + 1;
        bad[first_shared] = 13;
        assert!(LogRecord::decode(&bad).is_err());
    }
}
