//! The write path: validate (SPEC §2), group by series and sort by time, stage in the
//! catalog, commit the prepared batches as one record of the write-ahead log (SPEC §7, §9;
//! `docs/architecture.md`, write path), then store the buckets that left memory.

pub(crate) mod arrow;
pub(crate) mod doc_columns;
pub(crate) mod ids;
pub(crate) mod meta_cache;
pub(crate) mod reopen;
pub(crate) mod series;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bson::{Bson, Document};
use tscoll_catalog::value::element_size;
use tscoll_catalog::{
    BucketKey, CommitError, CommitRows, MAX_BSON_OBJECT_SIZE, Measurement, MeasurementColumns,
    Prepared, StageError, WriteBatch, WriterId,
};

use tscoll_codec::MAX_NAME_LEN;

use crate::collection::CollectionInner;
use crate::document;
use crate::error::{Error, ErrorCode, Result};
use crate::wal::{LogEntry, LogRecord, RecordKind, RowsLayout};
use crate::write::series::SeriesGroups;
use crate::{Durability, InsertOptions};

/// How many times the measurements of an aborted batch are placed again before they are
/// reported as errors (SPEC; MongoDB's reopening retry limit is also 16, SPEC §0).
const MAX_RETRIES: usize = 16;

/// Uncompressed bytes of rows past which a commit writes the rows prepared so far as a record
/// of their own (a call of many large measurements is logged in several records, each well
/// within the log's frame limit).
const MAX_RECORD_ROWS: usize = 64 << 20;

/// Source of [`WriterId`]s: every insert call is a writer of its own.
static NEXT_WRITER: AtomicU64 = AtomicU64::new(1);

/// A rejected measurement (SPEC ).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteError {
    /// Position of the measurement in the input slice.
    pub index: usize,
    /// Category (`BadValue` for a bad time field, `BSONObjectTooLarge`, ...).
    pub code: ErrorCode,
    /// What is wrong.
    pub message: String,
}

/// Outcome of [`Collection::insert_many`](crate::Collection::insert_many) and
/// [`Collection::insert_record_batch`](crate::Collection::insert_record_batch). An ordered
/// insert with a rejected measurement returns [`Error::BulkWrite`] holding this; an
/// unordered one returns it with its rejections in `errors`: check them, or call
/// [`InsertResult::check`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InsertResult {
    /// Measurements stored (`nInserted`).
    pub inserted: usize,
    /// Rejected measurements, by input position (`writeErrors`), in input order.
    pub errors: Vec<WriteError>,
}

impl InsertResult {
    /// `Ok(self)` when no measurement was rejected (SPEC: the rejections an unordered
    /// insert returns become the error an ordered one returns).
    ///
    /// # Errors
    /// [`Error::BulkWrite`] holding `self` when some were.
    pub fn check(self) -> Result<InsertResult> {
        if self.errors.is_empty() {
            Ok(self)
        } else {
            Err(Error::BulkWrite(Box::new(self)))
        }
    }

    /// `Ok(self)` unless an ordered insert stopped at a rejected measurement (SPEC ),
    /// which is [`Error::BulkWrite`].
    pub(crate) fn ordered(self, ordered: bool) -> Result<InsertResult> {
        if ordered { self.check() } else { Ok(self) }
    }
}

/// Measurements checked (SPEC §2) and grouped by series, sorted by time.
pub(crate) struct Validated<'a> {
    /// The series.
    pub(crate) keys: Vec<Arc<BucketKey>>,
    /// The measurements of each series, in time order.
    pub(crate) groups: Vec<Vec<Measurement<'a>>>,
    /// The rejected measurements.
    pub(crate) errors: Vec<WriteError>,
    /// The measurements of `groups` column by column, in that order, when they were asked
    /// for and every measurement lists the same fields in the same order.
    pub(crate) columns: Option<MeasurementColumns>,
}

impl CollectionInner {
    /// Checks measurements (SPEC §2) and groups them by series; `ids` are the `_id`s given,
    /// in order, to the measurements without one. With `ordered`, stops at the first bad one.
    /// With `into_columns`, each value is also put into the call's columns as it is checked
    /// ([`doc_columns::DocColumns`]).
    pub(crate) fn validate<'a>(
        &self,
        docs: &'a [Document],
        ids: &'a [Bson],
        ordered: bool,
        into_columns: bool,
    ) -> Validated<'a> {
        let spec = self.spec();
        let time_field = spec.time_field.as_str();
        let meta_field = spec.meta_field.as_deref();
        let mut series = SeriesGroups::with_cache(&self.meta_cache);
        let mut groups: Vec<Vec<Measurement<'a>>> = Vec::new();
        let mut errors = Vec::new();
        let mut next_id = 0;
        let mut columns = doc_columns::DocColumns::new(docs.len(), into_columns);
        for (index, doc) in docs.iter().enumerate() {
            // One pass over the fields.: only the first occurrence of a field counts;
            // Document keeps one.
            let mut time = None;
            let mut meta = None;
            let mut has_id = false;
            let mut raw: u64 = 0;
            let mut unstorable = None;
            let mut too_long = None;
            let mut pushed = 0;
            for (k, v) in doc {
                if k.len() > MAX_NAME_LEN {
                    too_long = Some(k.len());
                    break;
                }
                if Some(k.as_str()) == meta_field {
                    // Checked below, once per distinct value.
                    meta = Some((k, v));
                    continue;
                }
                // A name the call's columns hold was checked with the document that gave it.
                let known = columns.push(k, v, &mut pushed);
                if let Err(e) = document::check_element_of(k, v, known) {
                    unstorable = Some(e);
                    break;
                }
                let k = k.as_str();
                if k == time_field {
                    time = Some(v);
                } else if k == "_id" {
                    has_id = true;
                }
                raw += element_size(k, v);
            }
            // The series: a meta value identical to one seen before in this call was checked
            // then; any other is checked before it joins a series.
            let mut group = None;
            if unstorable.is_none()
                && let Some((k, m)) = meta
            {
                match series.seen(m) {
                    (Some(g), _) => group = Some(g),
                    (None, hash) => match document::check_element(k, m) {
                        Ok(()) => group = Some(series.group_of_new(m, hash)),
                        Err(e) => unstorable = Some(e),
                    },
                }
            }
            if let Some(len) = too_long {
                columns.reject(pushed);
                // A field is a column of its bucket, whose name the codec keeps to 64 KiB.
                errors.push(WriteError {
                    index,
                    code: ErrorCode::BadValue,
                    message: long_name(len),
                });
                if ordered {
                    break;
                }
                continue;
            }
            if let Some(e) = unstorable {
                columns.reject(pushed);
                // Rejected alone: nothing of it reaches a bucket (SPEC ).
                errors.push(WriteError {
                    index,
                    code: ErrorCode::BadValue,
                    message: format!("measurement cannot be stored: {e}"),
                });
                if ordered {
                    break;
                }
                continue;
            }
            let Some(Bson::DateTime(time)) = time else {
                columns.reject(pushed);
                errors.push(WriteError {
                    index,
                    code: ErrorCode::BadValue,
                    message: format!(
                        "'{time_field}' must be present and contain a valid BSON UTC datetime value"
                    ),
                });
                if ordered {
                    break;
                }
                continue;
            };
            let generated_id = if has_id {
                None
            } else {
                next_id += 1;
                ids.get(next_id - 1)
            };
            let g = group.unwrap_or_else(|| series.group_of(None));
            if let Some(e) = too_large(index, raw, &series.keys[g]) {
                columns.reject(pushed);
                errors.push(e);
                if ordered {
                    break;
                }
                continue;
            }
            if groups.len() <= g {
                groups.resize_with(g + 1, Vec::new);
            }
            columns.accept(pushed, index, time.timestamp_millis(), raw, generated_id);
            groups[g].push(Measurement {
                index,
                time: time.timestamp_millis(),
                doc,
                generated_id,
            });
        }
        for g in &mut groups {
            g.sort_by_key(|m| m.time); // stable
        }
        Validated {
            columns: columns.into_columns(&groups),
            keys: series.keys.keys,
            groups,
            errors,
        }
    }

    pub(crate) fn insert_many(
        &self,
        docs: &[Document],
        options: &InsertOptions,
    ) -> Result<InsertResult> {
        let missing_ids = docs.iter().filter(|d| !d.contains_key("_id")).count();
        let ids: Vec<Bson> = ids::generate(missing_ids).map(Bson::ObjectId).collect();
        let validated = self.validate(docs, &ids, options.ordered, true);
        self.insert_call(validated.errors, options.durability, |writer, call| {
            self.place_with_retries(
                writer,
                &validated.keys,
                validated.groups,
                validated.columns,
                docs.len(),
                options.durability,
                call,
            )
        })
    }

    /// Runs `place` as one insert call: as a new writer, holding the commit gate until the
    /// buckets that left memory are stored (a checkpoint, which takes it exclusively, then
    /// finds every row either stored or in an open bucket), then a checkpoint if one is due.
    /// `errors` are the call's rejections so far; the result's errors come sorted by position.
    ///
    /// # Errors
    /// What failed; [`Error::InsertIncomplete`] when some measurements were committed before
    /// (or may have been, `docs/durability.md`), so that an error never hides stored ones.
    pub(crate) fn insert_call(
        &self,
        errors: Vec<WriteError>,
        durability: Durability,
        place: impl FnOnce(WriterId, &mut Call) -> Result<()>,
    ) -> Result<InsertResult> {
        self.writable()?;
        let writer = WriterId(NEXT_WRITER.fetch_add(1, Ordering::Relaxed));
        let mut call = Call {
            result: InsertResult {
                inserted: 0,
                errors,
            },
            committed: Vec::new(),
            uncertain: Vec::new(),
        };
        let gate = self
            .commit_gate
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Storing the buckets that left memory and a checkpoint come after the commit: their
        // failure leaves the call's measurements committed.
        let done = place(writer, &mut call).and_then(|()| self.store_leaving());
        drop(gate);
        if let Err(source) = done.and_then(|()| self.checkpoint_if_due()) {
            return Err(call.failed(writer, durability, source));
        }
        let mut result = call.result;
        result.errors.sort_by_key(|e| e.index);
        Ok(result)
    }

    /// Places and commits the groups of measurements `todo` (SPEC §6.2, §7), placing the
    /// measurements of a batch aborted by someone else's failure again (SPEC; an
    /// aborted batch was never written, so a retry cannot duplicate a measurement), up to
    /// [`MAX_RETRIES`] times. `inputs` is the number of measurements of the call; `columns`,
    /// when given, are the measurements of `todo` column by column, in that order (the first
    /// pass stages the others one by one; a retry converts what it places again).
    #[expect(clippy::too_many_arguments, reason = "one insert call's inputs")]
    pub(crate) fn place_with_retries(
        &self,
        writer: WriterId,
        keys: &[Arc<BucketKey>],
        mut todo: Vec<Vec<Measurement<'_>>>,
        mut columns: Option<MeasurementColumns>,
        inputs: usize,
        durability: Durability,
        call: &mut Call,
    ) -> Result<()> {
        let meta_field = self.spec().meta_field;
        for attempt in 0..=MAX_RETRIES {
            // Measurements that list the same fields in the same order (the common case) are
            // staged column by column, a run of a series' rows at a time; others one by one.
            let columns = if attempt == 0 {
                columns.take()
            } else {
                MeasurementColumns::from_measurements(&todo, meta_field.as_deref())
            };
            let failed =
                self.place_and_commit(writer, keys, &todo, columns.as_ref(), durability, call)?;
            if failed.is_empty() {
                break;
            }
            if attempt == MAX_RETRIES {
                for (index, reason) in failed {
                    call.result.errors.push(WriteError {
                        index,
                        code: ErrorCode::InternalError,
                        message: format!("{reason} (gave up after {MAX_RETRIES} retries)"),
                    });
                }
                break;
            }
            let mut again = vec![false; inputs];
            for (index, _) in &failed {
                if let Some(a) = again.get_mut(*index) {
                    *a = true;
                }
            }
            for group in &mut todo {
                group.retain(|m| again.get(m.index).copied().unwrap_or(false));
            }
        }
        Ok(())
    }

    /// One pass of the write path: stages every group (SPEC §6.2), commits the batches this
    /// writer wins the commit rights of and waits for the others (SPEC ). Counts this
    /// writer's committed measurements into `result` and returns those whose batch was
    /// aborted, with the reason, for a retry.
    fn place_and_commit(
        &self,
        writer: WriterId,
        keys: &[Arc<BucketKey>],
        groups: &[Vec<Measurement<'_>>],
        columns: Option<&MeasurementColumns>,
        durability: Durability,
        call: &mut Call,
    ) -> Result<Vec<(usize, String)>> {
        let source = crate::write::reopen::Reopener { coll: self };
        let mut batches = Vec::new();
        if let Some(rows) = columns {
            let outcome = self
                .catalog
                .stage_call(writer, keys, rows, Some(groups), &source);
            take_outcome(outcome, &mut batches, &mut call.result);
        } else {
            for (key, group) in keys.iter().zip(groups) {
                if group.is_empty() {
                    continue;
                }
                let outcome = self.catalog.stage(writer, key, group, &source);
                take_outcome(outcome, &mut batches, &mut call.result);
            }
        }
        self.commit_staged(writer, batches, columns, durability, call)
    }

    /// Commits the staged `batches`: those this writer wins the commit rights of as one log
    /// record (or several, each holding at most [`MAX_RECORD_ROWS`] bytes of rows), waiting
    /// for the others (SPEC ). Counts this writer's committed measurements into `call`
    /// and returns those whose batch was aborted, with the reason. `columns`, when given, are
    /// the columns the batches were staged from: the record holds them once, as received,
    /// and a batch of this writer's rows alone as the runs of them it holds.
    pub(crate) fn commit_staged(
        &self,
        writer: WriterId,
        batches: Vec<Arc<WriteBatch>>,
        columns: Option<&MeasurementColumns>,
        durability: Durability,
        call: &mut Call,
    ) -> Result<Vec<(usize, String)>> {
        let mut failed = Vec::new();
        let mut prepared = Vec::new();
        let mut set_aside = Vec::new();
        // The rows of every batch this writer commits: its log record's rows.
        let mut table = columns
            .and_then(|c| CommitRows::for_call(writer, c, MAX_RECORD_ROWS))
            .unwrap_or_default();
        let mut rest = batches.into_iter();
        while let Some(batch) = rest.next() {
            let Some(rights) = self.catalog.claim(&batch) else {
                set_aside.push(batch);
                continue;
            };
            match rights.prepare_into(&mut table) {
                Ok(p) => prepared.push(p),
                Err(e) => push_failed(&mut failed, &batch, writer, &e.to_string()),
            }
            if table.bytes() >= MAX_RECORD_ROWS {
                let group = std::mem::take(&mut prepared);
                if let Err(e) = self.commit(group, &mut table, durability, writer, call) {
                    // The batches not claimed yet are this writer's to settle: another
                    // writer of one of them waits for it.
                    for batch in rest {
                        if let Some(rights) = self.catalog.claim(&batch) {
                            rights.abort(CommitError::WriteFailed(e.to_string()));
                        }
                    }
                    return Err(e);
                }
            }
        }
        self.commit(prepared, &mut table, durability, writer, call)?;
        for batch in set_aside {
            match self.catalog.wait(&batch) {
                Ok(()) => {
                    call.result.inserted += batch.rows_of(writer);
                    call.committed.push(batch);
                }
                Err(e) => push_failed(&mut failed, &batch, writer, &e.to_string()),
            }
        }
        Ok(failed)
    }

    /// Writes prepared batches, whose rows are `table`, as one record of the write-ahead log
    /// with the durability asked for (SPEC ), then finishes them and counts them in
    /// `call` as committed. The caller holds the commit gate.
    ///
    /// # Errors
    /// A log write failure: every batch is aborted (its other writers retry, R-7.3.2). When
    /// the record could not be taken back, this writer's measurements of it go to
    /// `call.uncertain`.
    fn commit(
        &self,
        prepared: Vec<Prepared>,
        table: &mut CommitRows,
        durability: Durability,
        writer: WriterId,
        call: &mut Call,
    ) -> Result<()> {
        if prepared.is_empty() {
            table.clear();
            return Ok(());
        }
        let record = log_record(&prepared, table);
        let mut written = prepared;
        self.append_record(&record, &mut written, durability, writer, call)?;
        finish_written(written, writer, call);
        Ok(())
    }

    /// Appends `record`, holding the rows of `group`, to the log.
    ///
    /// # Errors
    /// The append fails: `group` is aborted (and emptied). When the record could not be
    /// taken back, this writer's measurements of it go to `call.uncertain`.
    fn append_record(
        &self,
        record: &LogRecord,
        group: &mut Vec<Prepared>,
        durability: Durability,
        writer: WriterId,
        call: &mut Call,
    ) -> Result<()> {
        let Err(e) = self.wal.append(&record.encode(), durability) else {
            return Ok(());
        };
        if e.may_remain {
            for p in group.iter() {
                call.uncertain.extend(p.batch.indices_of(writer));
            }
        }
        abort_all(std::mem::take(group), &e.error);
        Err(e.error)
    }
}

/// Why a field name of `len` bytes is refused: a field is a column of its bucket, and the
/// codec keeps column names to [`MAX_NAME_LEN`] bytes.
pub(crate) fn long_name(len: usize) -> String {
    format!(
        "a field name of {len} bytes is longer than the {MAX_NAME_LEN} bytes a stored field \
         name may have"
    )
}

/// Finishes batches written to the log: they are committed, and counted so in `call` (also
/// when a later record of the same commit fails: its error then says they were stored).
fn finish_written(written: Vec<Prepared>, writer: WriterId, call: &mut Call) {
    for p in written {
        call.result.inserted += p.batch.rows_of(writer);
        call.committed.push(Arc::clone(&p.batch));
        p.finish();
    }
}

/// What one insert call did so far.
pub(crate) struct Call {
    /// Its outcome so far.
    pub(crate) result: InsertResult,
    /// The batches it committed measurements of.
    committed: Vec<Arc<WriteBatch>>,
    /// Positions of its measurements whose log record failed and could not be taken back.
    uncertain: Vec<usize>,
}

impl Call {
    /// The error of the call, failed with `source`: `source` itself when nothing of the call
    /// was committed or may have been, [`Error::InsertIncomplete`] otherwise.
    fn failed(self, writer: WriterId, durability: Durability, source: Error) -> Error {
        if self.committed.is_empty() && self.uncertain.is_empty() {
            return source;
        }
        let mut committed: Vec<usize> = self
            .committed
            .iter()
            .flat_map(|b| b.indices_of(writer))
            .collect();
        committed.sort_unstable();
        let mut uncertain = self.uncertain;
        uncertain.sort_unstable();
        Error::InsertIncomplete {
            committed,
            buffered: durability == Durability::Buffered,
            uncertain,
            source: Box::new(source),
        }
    }
}

/// Aborts prepared batches that were not written (their other writers retry, R-7.3.2).
fn abort_all(prepared: Vec<Prepared>, e: &Error) {
    for p in prepared {
        p.abort(CommitError::WriteFailed(e.to_string()));
    }
}

/// The rejection of the measurement at `index` of `raw` BSON bytes (meta left out) in series
/// `key` when the bucket holding it, with its min and max copies, would not fit in 16 MiB
/// (SPEC ).
pub(crate) fn too_large(index: usize, raw: u64, key: &BucketKey) -> Option<WriteError> {
    let estimate = 3 * raw + key.bytes.len() as u64;
    (estimate > MAX_BSON_OBJECT_SIZE).then(|| WriteError {
        index,
        code: ErrorCode::BsonObjectTooLarge,
        message: format!(
            "measurement would make its bucket {estimate} bytes, over the 16 MiB BSON limit"
        ),
    })
}

/// Adds what staging produced: its batches to `batches`, its rejections to `result`.
pub(crate) fn take_outcome(
    outcome: tscoll_catalog::StageOutcome,
    batches: &mut Vec<Arc<WriteBatch>>,
    result: &mut InsertResult,
) {
    for (index, rejection) in outcome.rejected {
        result.errors.push(match rejection {
            StageError::TooLarge(size) => WriteError {
                index,
                code: ErrorCode::BsonObjectTooLarge,
                message: format!("bucket would be {size} bytes, over the 16 MiB BSON limit"),
            },
            StageError::BadValue(reason) => WriteError {
                index,
                code: ErrorCode::BadValue,
                message: format!("measurement cannot be stored: {reason}"),
            },
            StageError::Storage(e) => WriteError {
                index,
                code: ErrorCode::InternalError,
                message: format!("reading stored buckets to place the measurement: {e}"),
            },
        });
    }
    batches.extend(outcome.batches);
}

/// The log record of a commit: per prepared batch, where its rows go in its bucket and the
/// series' key when the bucket is new; the rows of every batch in order, from `table`: in
/// the codec's plain row format, or as runs of the call's columns (`RowsLayout::Call`).
fn log_record(prepared: &[Prepared], table: &mut CommitRows) -> LogRecord {
    let (rows, layout) = match table.finish_call() {
        (plain, None) => (plain, RowsLayout::Plain),
        (plain, Some(call)) => (crate::wal::call_rows(&plain, &call), RowsLayout::Call),
    };
    #[expect(clippy::cast_possible_truncation, reason = "rows ≤ bucket_max_count")]
    let entries = prepared
        .iter()
        .map(|p| LogEntry {
            id: p.bucket_id,
            key: (p.committed_before == 0).then(|| p.key.bytes.clone()),
            sorted: p.sorted,
            min_time: p.min_time,
            first_row: p.committed_before,
            rows: p.rows as u32,
            uncompressed_bytes: p.uncompressed_before + p.uncompressed_bytes,
            size_estimate: p.size_estimate,
        })
        .collect();
    LogRecord {
        kind: RecordKind::Commit,
        entries,
        rows,
        layout,
    }
}

/// Records `writer`'s measurements of a failed batch, with the reason, for a retry
/// (SPEC ).
fn push_failed(
    failed: &mut Vec<(usize, String)>,
    batch: &WriteBatch,
    writer: WriterId,
    reason: &str,
) {
    failed.extend(
        batch
            .indices_of(writer)
            .into_iter()
            .map(|i| (i, reason.to_owned())),
    );
}
