//! The rows of one commit group: what one record of the engine's write-ahead log holds
//! (`docs/architecture.md`, write path: one log record per commit group), in the codec's plain
//! row format ([`tscoll_codec::PlainWriter`]): the lanes with one fixed light transform, no
//! encoding chosen. A bucket is encoded only when it is stored.
//!
//! A committer prepares its batches into one [`CommitRows`]
//! ([`crate::CommitRights::prepare_into`]). Made for an insert call
//! ([`CommitRows::for_call`]), it holds the call's columns once, as received, and a batch
//! whose rows are all the call's is logged as the runs of call rows it holds: nothing of its
//! values is written per bucket. Any other batch (one that holds another writer's rows too,
//! or a checkpoint's bucket) is written from its bucket's in-memory columns as one plain
//! entry.

use tscoll_codec::{PlainWriter, RowStart};

use crate::bucket::BucketRows;
use crate::columns::MeasurementColumns;
use crate::write_batch::WriterId;

/// Rows of several batches, one entry per batch, in the order they were appended.
#[derive(Debug, Default)]
pub struct CommitRows {
    plain: PlainWriter,
    call: Option<CallTable>,
}

/// The columns of one insert call, for batches whose rows are all the call's.
#[derive(Debug)]
struct CallTable {
    /// The writer of the call.
    writer: WriterId,
    /// Per input position: its row in the call's columns (`u32::MAX`: none).
    row_of: Vec<u32>,
    /// The call's columns in the plain format: one entry of every row.
    table: Vec<u8>,
    /// Per entry of the current record: how many runs of call rows hold its rows (0: the
    /// entry is the next plain entry).
    counts: Vec<u32>,
    /// The runs, entry after entry: `[first call row, rows]`.
    runs: Vec<[u32; 2]>,
}

/// The rows a record refers to in an insert call's columns ([`CommitRows::finish_call`]).
#[derive(Debug)]
pub struct CallRows<'a> {
    /// The call's columns in the plain format, one entry of every row of the call.
    pub table: &'a [u8],
    /// Per entry of the record, in order: how many runs of `runs` hold its rows, 0 when its
    /// rows are the next entry of the plain rows instead.
    pub counts: Vec<u32>,
    /// `[first call row, rows]` of every run, entry after entry, each entry's runs in row
    /// order.
    pub runs: Vec<[u32; 2]>,
}

impl CommitRows {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty table for the batches of `writer`'s insert call of `columns`: batches whose
    /// rows are all the call's are logged as runs of the call's rows. The call's columns are
    /// written once, now, in the plain format; `None` when they hold no row or more than
    /// `max_bytes` bytes (then use [`CommitRows::new`]).
    #[must_use]
    pub fn for_call(
        writer: WriterId,
        columns: &MeasurementColumns,
        max_bytes: usize,
    ) -> Option<Self> {
        let n = columns.len();
        let last = columns.indices.get(..n)?.iter().copied().max()?;
        let mut row_of = vec![u32::MAX; last.checked_add(1)?];
        for (row, &index) in columns.indices.iter().take(n).enumerate() {
            *row_of.get_mut(index)? = u32::try_from(row).ok()?;
        }
        let mut w = PlainWriter::new();
        w.begin_entry(n);
        for (name, column) in &columns.fields {
            let to = n.min(column.len());
            w.column_lanes(name, column, &column.row_lanes(RowStart::default(), to));
        }
        let table = w.finish();
        (table.len() <= max_bytes).then(|| CommitRows {
            plain: PlainWriter::new(),
            call: Some(CallTable {
                writer,
                row_of,
                table,
                counts: Vec::new(),
                runs: Vec::new(),
            }),
        })
    }

    /// Appends rows `from..to` of a bucket's columns as one entry (fields without a value in
    /// them left out).
    pub(crate) fn append(&mut self, names: &[Box<str>], src: &BucketRows, from: usize, to: usize) {
        if let Some(call) = &mut self.call {
            call.counts.push(0);
        }
        self.plain.begin_entry(to.saturating_sub(from));
        for (name, col) in src.named(names) {
            if col.len() <= from {
                // The field has no value in these rows.
                continue;
            }
            // The rows are at the end of the bucket's columns (or just before the active
            // batch's): count back from the end.
            self.plain
                .column_lanes(name, col, &col.row_lanes_from_end(from, to));
        }
    }

    /// Appends a batch's rows, rows `from..to` of its bucket's columns, staged from the
    /// input positions `indices` by `owners`, one per row: as runs of the call's rows when
    /// the table is made for the call of the one writer of every row, as
    /// [`CommitRows::append`] otherwise.
    pub(crate) fn append_batch(
        &mut self,
        names: &[Box<str>],
        src: &BucketRows,
        from: usize,
        to: usize,
        indices: &[usize],
        owners: &[WriterId],
    ) {
        if let Some(call) = &mut self.call
            && call.push_runs(to.saturating_sub(from), indices, owners)
        {
            return;
        }
        self.append(names, src, from, to);
    }

    /// Rows of the entries appended as plain rows (those logged as runs of the call's rows
    /// are not counted).
    #[must_use]
    pub fn rows(&self) -> usize {
        self.plain.rows()
    }

    /// Uncompressed bytes of the rows so far, the call's columns included once an entry
    /// refers to them.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.plain.len()
            + self
                .call
                .as_ref()
                .filter(|c| !c.runs.is_empty())
                .map_or(0, |c| c.table.len())
    }

    /// Entries (batches) appended as plain rows.
    #[must_use]
    pub fn entries(&self) -> usize {
        self.plain.entries()
    }

    /// The plain rows ([`tscoll_codec::decode_plain`] reads them back), one entry per entry
    /// appended as plain rows; the table is left empty.
    #[must_use]
    pub fn finish(&mut self) -> Vec<u8> {
        if let Some(call) = &mut self.call {
            call.counts.clear();
            call.runs.clear();
        }
        self.plain.finish()
    }

    /// As [`CommitRows::finish`], with the entries' runs of the call's rows when an entry
    /// refers to them (the call's columns stay, for the next record).
    #[must_use]
    pub fn finish_call(&mut self) -> (Vec<u8>, Option<CallRows<'_>>) {
        let plain = self.plain.finish();
        let Some(call) = self.call.as_mut() else {
            return (plain, None);
        };
        if call.runs.is_empty() {
            call.counts.clear();
            return (plain, None);
        }
        let refs = CallRows {
            table: &call.table,
            counts: std::mem::take(&mut call.counts),
            runs: std::mem::take(&mut call.runs),
        };
        (plain, Some(refs))
    }

    /// Empties the table (the call's columns stay).
    pub fn clear(&mut self) {
        self.plain.clear();
        if let Some(call) = &mut self.call {
            call.counts.clear();
            call.runs.clear();
        }
    }
}

impl CallTable {
    /// Records an entry of `rows` rows as runs of call rows when every row is this call's
    /// (`owners`) and `indices` name rows of it; `false`, recording nothing, otherwise.
    fn push_runs(&mut self, rows: usize, indices: &[usize], owners: &[WriterId]) -> bool {
        if indices.len() != rows || owners.len() != rows || owners.iter().any(|&w| w != self.writer)
        {
            return false;
        }
        let before = self.runs.len();
        let mut open: Option<[u32; 2]> = None;
        for &index in indices {
            let Some(&row) = self.row_of.get(index).filter(|&&r| r != u32::MAX) else {
                self.runs.truncate(before);
                return false;
            };
            match &mut open {
                Some([start, len]) if *start + *len == row => *len += 1,
                _ => {
                    if let Some(run) = open {
                        self.runs.push(run);
                    }
                    open = Some([row, 1]);
                }
            }
        }
        let Some(run) = open else {
            return false;
        };
        self.runs.push(run);
        #[expect(
            clippy::cast_possible_truncation,
            reason = "runs ≤ rows ≤ bucket_max_count"
        )]
        self.counts.push((self.runs.len() - before) as u32);
        true
    }
}
