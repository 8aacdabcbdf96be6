//! Batches of parsed input, made on a thread of their own while the caller inserts the
//! previous ones: reading, decompressing and parsing overlap with inserting.
//!
//! A batch of NDJSON lines or CSV records becomes Arrow columns when the columns take every
//! line of it exactly ([`crate::input::columns`]), and [`Record`]s (a document or a reason
//! per line) otherwise. The inserting side stores records in batches of `batch_size` good
//! documents (bad lines do not count), so a batch of lines is cut where that side's next
//! `insert_many` would be full, and columns are made only when that side holds no
//! documents: both sides count the good documents the same way.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use arrow_array::{Array, RecordBatch};
use tscoll_engine::CollectionSpec;
use tscoll_engine::arrow::RecordBatchOptions;

use super::columns::{NotColumnar, Table};
use super::csv::CsvReader;
use super::ndjson::{NdjsonLines, parse_document};
use super::ndjson_columns::NdjsonColumns;
use super::times::TimeFormat;
use super::{Position, Record, at_line};

/// Batches handed over at once: one being inserted, one parsed ahead.
const AHEAD: usize = 1;

/// One batch of parsed input, or the read error that ended it.
pub(crate) enum Batch {
    /// Lines read into columns: their line numbers and field values (fields but the time and
    /// meta fields) per row.
    Columns {
        batch: RecordBatch,
        lines: Vec<Position>,
        fields: Vec<u64>,
    },
    /// Lines parsed one by one, in input order.
    Records(Vec<Record>),
    /// The input could not be read past this point (every line before it was in a batch).
    ReadError(io::Error),
}

/// Where a parsing thread reads from.
pub(crate) enum Source<R, C> {
    /// NDJSON lines.
    Ndjson(NdjsonLines<R>),
    /// CSV records.
    Csv(Box<CsvReader<C>>),
    /// Parquet record batches (a line number is a row number), each with its columns
    /// mapped to the collection's time and meta fields.
    Parquet(Box<ParquetRecordBatchReader>, Box<ParquetMapping>),
}

/// The names batches of columns need, and how NDJSON writes its times.
pub(crate) struct Fields<'a> {
    pub(crate) time: &'a str,
    pub(crate) meta: Option<&'a str>,
    /// How the time field of an NDJSON document is written when it is not a date
    /// (`--time-format`); `None`: it must be a date.
    pub(crate) time_format: Option<TimeFormat>,
}

/// Parses `source` into batches on a scoped thread and returns the receiving end; the
/// thread ends at the end of the input, after a read error, or when the receiver is dropped.
pub(crate) fn spawn<'scope, R, C>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    source: Source<R, C>,
    fields: Fields<'scope>,
    batch_size: usize,
) -> Receiver<Batch>
where
    R: BufRead + Send + 'scope,
    C: Read + Send + 'scope,
{
    let (tx, rx) = sync_channel(AHEAD);
    scope.spawn(move || match source {
        Source::Ndjson(lines) => run(
            PendingLines {
                lines,
                text: String::new(),
                ends: Vec::new(),
                time: fields
                    .time_format
                    .clone()
                    .map(|format| (fields.time.to_owned(), format)),
            },
            &fields,
            batch_size,
            &tx,
        ),
        Source::Csv(reader) => run(
            PendingRecords {
                reader: *reader,
                records: Vec::new(),
                lines: Vec::new(),
            },
            &fields,
            batch_size,
            &tx,
        ),
        Source::Parquet(reader, mapping) => {
            run_parquet(*reader, &mapping, &fields, &tx);
        }
    });
    rx
}

/// How the columns of a Parquet input map to a collection's time and meta fields
/// (`--csv-time-column`, `--csv-meta-columns`).
pub(crate) struct ParquetMapping {
    /// The columns named.
    pub(crate) options: RecordBatchOptions,
    /// The collection's options (its time and meta field names).
    pub(crate) spec: CollectionSpec,
}

/// Hands over each Parquet record batch as columns, mapped (the engine reads every Arrow
/// type with a BSON form).
fn run_parquet(
    reader: ParquetRecordBatchReader,
    mapping: &ParquetMapping,
    fields: &Fields<'_>,
    tx: &SyncSender<Batch>,
) {
    let mut next_line = 1u64;
    for batch in reader {
        let batch = batch.map_err(|e| e.to_string()).and_then(|b| {
            mapping
                .options
                .apply(&b, &mapping.spec)
                .map_err(|e| e.to_string())
        });
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                let _ = tx.send(Batch::ReadError(at_line(next_line, io::Error::other(e))));
                return;
            }
        };
        let lines: Vec<Position> = (next_line..)
            .take(batch.num_rows())
            .map(Position::from)
            .collect();
        next_line += batch.num_rows() as u64;
        let values = field_values(&batch, fields);
        let handed = Batch::Columns {
            batch,
            lines,
            fields: values,
        };
        if tx.send(handed).is_err() {
            return;
        }
    }
}

/// Each row's number of non-null columns other than the time and meta fields.
fn field_values(batch: &RecordBatch, fields: &Fields<'_>) -> Vec<u64> {
    let mut counts = vec![0u64; batch.num_rows()];
    for (field, column) in batch.schema_ref().fields().iter().zip(batch.columns()) {
        if field.name() == fields.time || Some(field.name().as_str()) == fields.meta {
            continue;
        }
        for (row, count) in counts.iter_mut().enumerate() {
            *count += u64::from(column.is_valid(row));
        }
    }
    counts
}

/// Lines read from an input and not parsed yet.
trait Pending {
    /// Lines pending.
    fn len(&self) -> usize;
    /// Reads one more line; `None` at the end of the input.
    fn read(&mut self) -> Option<io::Result<()>>;
    /// Appends every pending line to `table`, each as one row.
    fn columns(&self, table: &mut Table<'_>) -> Result<(), NotColumnar>;
    /// Each pending line's number.
    fn line_numbers(&self) -> Vec<Position>;
    /// Each pending line as a record.
    fn records(&self) -> Vec<Record>;
    /// Forgets the pending lines.
    fn clear(&mut self);
}

/// NDJSON lines: their text, one after the other, and each line's number and end in it (or
/// why it is not text).
struct PendingLines<R> {
    lines: NdjsonLines<R>,
    text: String,
    ends: Vec<(Position, Result<usize, String>)>,
    /// The time field and how it is written, when it need not be a date.
    time: Option<(String, TimeFormat)>,
}

impl<R> PendingLines<R> {
    /// Each line's number and text, in input order.
    fn iter(&self) -> impl Iterator<Item = (Position, Result<&str, &str>)> {
        let mut start = 0;
        self.ends.iter().map(move |(line, end)| match end {
            Ok(end) => {
                let text = self.text.get(start..*end).unwrap_or_default();
                start = *end;
                (*line, Ok(text))
            }
            Err(reason) => (*line, Err(reason.as_str())),
        })
    }
}

impl<R: BufRead> Pending for PendingLines<R> {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn read(&mut self) -> Option<io::Result<()>> {
        let (line, text) = match self.lines.next_line()? {
            Ok(next) => next,
            Err(e) => return Some(Err(e)),
        };
        let end = text.map(|t| {
            self.text.push_str(t);
            self.text.len()
        });
        self.ends.push((line, end));
        Some(Ok(()))
    }

    fn columns(&self, table: &mut Table<'_>) -> Result<(), NotColumnar> {
        let mut columns = NdjsonColumns::new(table);
        self.iter()
            .try_for_each(|(_, text)| columns.push_line(text.map_err(|_| NotColumnar)?))
    }

    fn line_numbers(&self) -> Vec<Position> {
        self.ends.iter().map(|(l, _)| *l).collect()
    }

    fn records(&self) -> Vec<Record> {
        self.iter()
            .map(|(line, text)| {
                let mut doc = text.map_err(str::to_owned).and_then(parse_document);
                if let (Ok(d), Some((field, format))) = (&mut doc, &self.time)
                    && let Err(e) = format.read_field(d, field)
                {
                    doc = Err(e);
                }
                Record { line, doc }
            })
            .collect()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }
}

/// CSV records (their buffers reused from batch to batch) and each one's line (or why it is
/// bad).
struct PendingRecords<C> {
    reader: CsvReader<C>,
    records: Vec<csv::StringRecord>,
    lines: Vec<(u64, Result<(), String>)>,
}

impl<C: Read> Pending for PendingRecords<C> {
    fn len(&self) -> usize {
        self.lines.len()
    }

    fn read(&mut self) -> Option<io::Result<()>> {
        let n = self.lines.len();
        if self.records.len() <= n {
            self.records.push(csv::StringRecord::new());
        }
        let record = self.records.get_mut(n)?;
        match self.reader.read(record)? {
            Ok(read) => {
                self.lines.push(read);
                Some(Ok(()))
            }
            Err(e) => Some(Err(e)),
        }
    }

    fn columns(&self, table: &mut Table<'_>) -> Result<(), NotColumnar> {
        for ((_, read), record) in self.lines.iter().zip(&self.records) {
            read.as_ref().map_err(|_| NotColumnar)?;
            self.reader.push_columns(record, table)?;
        }
        Ok(())
    }

    fn line_numbers(&self) -> Vec<Position> {
        self.lines.iter().map(|(l, _)| Position::from(*l)).collect()
    }

    fn records(&self) -> Vec<Record> {
        self.lines
            .iter()
            .zip(&self.records)
            .map(|((line, read), record)| Record {
                line: Position::from(*line),
                doc: read.clone().and_then(|()| self.reader.document(record)),
            })
            .collect()
    }

    fn clear(&mut self) {
        self.lines.clear();
    }
}

/// Reads `pending`'s input to its end in batches and hands them over.
fn run(mut pending: impl Pending, fields: &Fields<'_>, batch_size: usize, tx: &SyncSender<Batch>) {
    // Good documents the inserting side holds and has not inserted yet.
    let mut carried = 0usize;
    loop {
        let mut error = None;
        while pending.len() + carried < batch_size {
            match pending.read() {
                None => break,
                Some(Ok(())) => {}
                Some(Err(e)) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let end = error.is_some() || pending.len() + carried < batch_size;
        let batch =
            (pending.len() > 0).then(|| batch_of(&pending, fields, &mut carried, batch_size));
        pending.clear();
        if !hand_over(tx, batch, error, end) {
            return;
        }
    }
}

/// Sends `batch` (if any), then the read error (if any); returns whether reading goes on:
/// not after an error, at the `end` of the input, or when the receiver is gone.
fn hand_over(
    tx: &SyncSender<Batch>,
    batch: Option<Batch>,
    error: Option<io::Error>,
    end: bool,
) -> bool {
    if let Some(batch) = batch
        && tx.send(batch).is_err()
    {
        return false;
    }
    if let Some(e) = error {
        let _ = tx.send(Batch::ReadError(e));
        return false;
    }
    !end
}

/// The batch of the pending lines: columns when the inserting side holds no documents and
/// the columns take every line, records otherwise (counted into `carried`).
fn batch_of(
    pending: &impl Pending,
    fields: &Fields<'_>,
    carried: &mut usize,
    batch_size: usize,
) -> Batch {
    if *carried == 0 {
        let mut table = Table::new(fields.time, fields.meta);
        if pending.columns(&mut table).is_ok() {
            let values = table.field_values().to_vec();
            if let Ok(batch) = table.finish() {
                return Batch::Columns {
                    batch,
                    lines: pending.line_numbers(),
                    fields: values,
                };
            }
        }
    }
    let records = pending.records();
    let good = records.iter().filter(|r| r.doc.is_ok()).count();
    *carried = (*carried + good) % batch_size.max(1);
    Batch::Records(records)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// The kind and line numbers of each batch of NDJSON from `input` in batches of `size`.
    fn batches(input: impl BufRead + Send, size: usize) -> Vec<(char, Vec<u64>)> {
        std::thread::scope(|scope| {
            let fields = Fields {
                time: "t",
                meta: None,
                time_format: None,
            };
            let source: Source<_, &[u8]> = Source::Ndjson(NdjsonLines::new(input));
            spawn(scope, source, fields, size)
                .into_iter()
                .map(|b| match b {
                    Batch::Columns { lines, .. } => ('c', lines.iter().map(|p| p.line).collect()),
                    Batch::Records(r) => ('r', r.iter().map(|r| r.line.line).collect()),
                    Batch::ReadError(_) => ('e', Vec::new()),
                })
                .collect()
        })
    }

    const GOOD: &str = r#"{"t":{"$date":"2016-01-01T00:00:00Z"},"a":1}"#;

    #[test]
    fn lines_become_columns_and_records_cut_where_inserts_are_full() {
        let bad = "{";
        let text = [GOOD, GOOD, bad, GOOD, GOOD, GOOD, GOOD, GOOD].join("\n");
        // Lines 1-2 as columns; 3-4 as records (one good document held); 5 alone completes
        // that insert; 6-7 as columns again, then 8.
        assert_eq!(
            batches(text.as_bytes(), 2),
            [
                ('c', vec![1, 2]),
                ('r', vec![3, 4]),
                ('r', vec![5]),
                ('c', vec![6, 7]),
                ('c', vec![8]),
            ]
        );
    }

    #[test]
    fn a_read_error_comes_after_every_line_before_it() {
        struct Failing(&'static [u8]);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0.is_empty() {
                    return Err(io::Error::other("cut"));
                }
                let n = buf.len().min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let text = format!("{GOOD}\n{GOOD}\n{GOOD}\n");
        let text: &'static [u8] = Box::leak(text.into_bytes().into_boxed_slice());
        let got = batches(io::BufReader::new(Failing(text)), 2);
        assert_eq!(got, [('c', vec![1, 2]), ('c', vec![3]), ('e', vec![])]);
    }
}
