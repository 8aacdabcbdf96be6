//! Recovery of the write-ahead log (`docs/durability.md`): opening a collection stores the
//! rows its log holds that the store does not, then empties the log.
//!
//! Every logged row carries its position in its bucket, and a stored bucket's control record
//! counts the rows stored: the rows at or past that count are the ones to store. A bucket a
//! direct write rewrote, moved or removed has a retirement marker: its rows logged before the
//! marker's log position are stale and skipped. Storing them
//! is one part per bucket written like any other (segment, control record, index entry), so a
//! crash during recovery leaves a state the next recovery completes without storing a row
//! twice.
//!
//! A log that ends in a torn record, or (with
//! [`Database::open_recovering`](crate::Database::open_recovering)) one damaged before its
//! end, is recovered up to there: a prefix of the commits, never a bucket's later record
//! without its earlier ones. What was dropped is a [`LogRecovery`].

use std::collections::HashMap;
use std::path::PathBuf;

use bson::{Bson, DateTime, Document};
use fjall::PersistMode;
use tscoll_catalog::value::to_bson;
use tscoll_catalog::{BucketId, BucketKey, MinMax};
use tscoll_codec::{Column, encode_bucket};

use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::storage::bucket_write::{BucketWrite, Placement};
use crate::storage::control::{Control, merged_sums};
use crate::storage::keys::hex;
use crate::wal::{LogCut, LogEntry, LogPosition, LogRead, RecordRows, RowsLayout};

/// What the log holds of one bucket.
#[derive(Default)]
struct Logged {
    key: Option<Vec<u8>>,
    last: Option<LogEntry>,
    /// `(entry, record number, first row of the entry in the record's table)`.
    parts: Vec<(LogEntry, usize, usize)>,
}

/// What recovery stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Buckets written.
    pub(crate) buckets: usize,
    /// Rows stored.
    pub(crate) rows: u64,
    /// What was dropped from the end of the log.
    pub(crate) dropped: Option<LogRecovery>,
}

/// What opening a collection dropped from its write-ahead log (`docs/durability.md`, "A
/// torn log tail" and "A damaged write-ahead log", read by
/// [`Database::log_recovery`](crate::Database::log_recovery)).
///
/// Either a **torn tail**: the last record was cut short (or its checksum does not match),
/// which a crash while a commit was written leaves; that commit had not been acknowledged,
/// unless with [`Durability::Buffered`](crate::Durability::Buffered) or before a power loss
/// without a sync. Or **damage** before that ([`LogRecovery::damaged`]), which only
/// [`Database::open_recovering`](crate::Database::open_recovering) opens past: every record
/// before the damaged one is kept, that one and every later one dropped (a bucket's later
/// record cannot be kept without its earlier ones), after the files from the damaged one on
/// were copied to [`LogRecovery::backup_dir`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogRecovery {
    /// The collection.
    pub collection: String,
    /// Damage (`true`) rather than a torn last record.
    pub damaged: bool,
    /// The log file (`<db>/wal/c<collection id>/<sequence>.log`).
    pub file: PathBuf,
    /// Byte offset in [`LogRecovery::file`] of the first record dropped.
    pub offset: u64,
    /// What is wrong there.
    pub reason: String,
    /// Records kept, before it (commits and checkpoints).
    pub records_kept: u64,
    /// Records dropped: the damaged or torn one and every later one (a lower bound when the
    /// damage hides where the next records begin).
    pub records_dropped: u64,
    /// Records dropped that could not be read (their measurements are not counted below).
    pub records_unreadable: u64,
    /// Measurements of the dropped records that could be read (of a torn record, when its
    /// entries were written whole) and that the store does not hold: lost. (A record is
    /// dropped whole, but rows of it that were stored before the crash stay.)
    pub measurements_dropped: u64,
    /// The first and last time of the measurements counted in
    /// [`LogRecovery::measurements_dropped`] that could be read; `None` when none could.
    pub time_range: Option<(DateTime, DateTime)>,
    /// Bytes of log dropped.
    pub bytes_dropped: u64,
    /// Where the damaged file and the later ones were copied, as they were (`<db>/
    /// wal-damaged-<ms>/c<collection id>/`); `None` for a torn tail.
    pub backup_dir: Option<PathBuf>,
}

impl std::fmt::Display for LogRecovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let measurements = match (self.measurements_dropped, self.records_unreadable) {
            (m, 0) => format!("{m} measurement(s)"),
            (m, u) => format!("at least {m} measurement(s) ({u} record(s) unreadable)"),
        };
        let range = self.time_range.map_or_else(String::new, |(a, b)| {
            format!(" from {} to {}", rfc3339(a), rfc3339(b))
        });
        if !self.damaged {
            return write!(
                f,
                "collection '{}': dropped the last record of the write-ahead log, cut short at \
                 byte {} of {} ({}; {} bytes, {measurements}{range}): normal after a crash \
                 during a commit, which then was not acknowledged (but with buffered \
                 durability or after a power loss)",
                self.collection,
                self.offset,
                self.file.display(),
                self.reason,
                self.bytes_dropped
            );
        }
        write!(
            f,
            "collection '{}': the write-ahead log is damaged at byte {} of {} ({}); kept the \
             {} record(s) before it, dropped {} record(s) ({} bytes) holding \
             {measurements}{range}",
            self.collection,
            self.offset,
            self.file.display(),
            self.reason,
            self.records_kept,
            self.records_dropped,
            self.bytes_dropped
        )?;
        if let Some(dir) = &self.backup_dir {
            write!(f, "; the original files are in {}", dir.display())?;
        }
        Ok(())
    }
}

fn rfc3339(t: DateTime) -> String {
    t.try_to_rfc3339_string()
        .unwrap_or_else(|_| t.timestamp_millis().to_string())
}

impl CollectionInner {
    /// Stores what the log holds beyond the store, makes it durable and empties the log. A
    /// torn last record is dropped; so is damage, with every later record, when `recover`
    /// (the files from the damaged one on are copied beside the database first).
    ///
    /// # Errors
    /// [`Error::LogDamaged`] when the log is damaged before its end and not `recover`;
    /// [`Error::Corruption`] when a logged blob is damaged, or a bucket new to the store has
    /// no logged key; [`Error::Io`], [`Error::Storage`] when reading or writing fails.
    pub(crate) fn recover_log(&self, recover: bool) -> Result<Recovered> {
        let LogRead { records, cut } = self.wal.read_all()?;
        let dropped = match cut {
            None => None,
            Some(cut) if cut.damaged && !recover => return Err(self.log_damaged(&cut)),
            Some(cut) => Some(self.dropped(cut, records.len())?),
        };
        let mut order: Vec<BucketId> = Vec::new();
        let mut logged: HashMap<BucketId, Logged> = HashMap::new();
        let mut tables = Vec::with_capacity(records.len());
        let mut retired: HashMap<BucketId, Option<LogPosition>> = HashMap::new();
        for (r, (position, record)) in records.into_iter().enumerate() {
            let entry_rows: Vec<u32> = record.entries.iter().map(|e| e.rows).collect();
            for (i, e) in record.entries.into_iter().enumerate() {
                // Rows logged before the bucket was rewritten, moved or removed are stale.
                let marker = match retired.get(&e.id) {
                    Some(m) => *m,
                    None => {
                        let m = self.store.retired(&e.id)?;
                        retired.insert(e.id, m);
                        m
                    }
                };
                if marker.is_some_and(|m| position < m) {
                    continue;
                }
                let l = logged.entry(e.id).or_insert_with(|| {
                    order.push(e.id);
                    Logged::default()
                });
                if e.key.is_some() {
                    l.key.clone_from(&e.key);
                }
                l.last = Some(e.clone());
                l.parts.push((e, r, i));
            }
            tables.push((record.layout, record.rows, entry_rows));
        }
        // Each record's rows are decoded once, when a bucket first needs them.
        let mut decoded: Vec<Option<RecordRows>> = Vec::new();
        decoded.resize_with(tables.len(), || None);
        let mut out = Recovered {
            dropped,
            ..Recovered::default()
        };
        for id in order {
            if let Some(l) = logged.remove(&id) {
                let rows = self.recover_bucket(&id, l, &tables, &mut decoded)?;
                if rows > 0 {
                    out.buckets += 1;
                    out.rows += rows;
                }
            }
        }
        // The log goes only once what it held is durable in the store: what an earlier
        // process stored from it may not be yet.
        self.fjall
            .persist(PersistMode::SyncAll)
            .map_err(Error::storage("persisting recovered buckets"))?;
        self.wal.restart(None)?;
        let mut wb = self.store.batch();
        let mut markers = 0;
        for (id, marker) in &retired {
            if marker.is_some() {
                self.store.remove_retired(&mut wb, id);
                markers += 1;
            }
        }
        if markers > 0 {
            wb.commit("removing retirement markers")?;
        }
        Ok(out)
    }

    /// The error of a log damaged at `cut`, for an open without recovery.
    fn log_damaged(&self, cut: &LogCut) -> Error {
        Error::LogDamaged {
            file: format!("{} at byte {}", cut.path.display(), cut.offset),
            reason: format!(
                "{} (collection '{}'). The database cannot be opened as it is: run `tscoll \
                 verify --recover --db DIR` to keep every record before the damage and see \
                 what is lost, or `tscoll salvage --recover --db DIR --to NEWDIR` to copy what \
                 is readable (API: Database::open_recovering)",
                cut.reason, self.name
            ),
        }
    }

    /// What reading the log dropped at `cut`, after `kept` records; a damaged log's files
    /// from the damaged one on are copied beside the database first.
    fn dropped(&self, cut: LogCut, kept: usize) -> Result<LogRecovery> {
        let backup_dir = if cut.damaged {
            Some(self.wal.set_aside(cut.seq)?)
        } else {
            None
        };
        let time_field = self.spec().time_field;
        let mut lost = Lost::default();
        let torn = LogPosition {
            seq: cut.seq,
            offset: cut.offset,
        };
        for e in cut.torn_entries.iter().flatten() {
            lost.measurements += u64::from(e.rows - self.unstored_skip(e, torn)?);
        }
        for (position, record) in &cut.readable {
            let rows = RecordRows::decode(
                record.layout,
                &record.rows,
                record.entries.iter().map(|e| e.rows),
            )
            .ok();
            for (i, e) in record.entries.iter().enumerate() {
                let skip = self.unstored_skip(e, *position)?;
                lost.measurements += u64::from(e.rows - skip);
                let Some(rows) = &rows else { continue };
                let lost_rows = rows.entry_rows(i, skip as usize, e.rows as usize);
                if let Some((_, times)) = lost_rows.iter().find(|(n, _)| *n == time_field) {
                    lost.widen(times, 0, times.len());
                }
            }
        }
        Ok(LogRecovery {
            collection: self.name.clone(),
            damaged: cut.damaged,
            file: cut.path,
            offset: cut.offset,
            reason: cut.reason,
            records_kept: kept as u64,
            records_dropped: cut.readable.len() as u64 + cut.unreadable,
            records_unreadable: cut.unreadable,
            measurements_dropped: lost.measurements,
            time_range: lost
                .range
                .map(|(a, b)| (DateTime::from_millis(a), DateTime::from_millis(b))),
            bytes_dropped: cut.bytes,
            backup_dir,
        })
    }

    /// How many of the first rows of entry `e`, logged at `position`, the store holds (or
    /// has since rewritten or removed): those past them are lost when the entry is dropped.
    fn unstored_skip(&self, e: &LogEntry, position: LogPosition) -> Result<u32> {
        if self.store.retired(&e.id)?.is_some_and(|m| position < m) {
            return Ok(e.rows);
        }
        let stored = self.control(&e.id)?.map_or(0, |c| c.count);
        Ok(stored.saturating_sub(e.first_row).min(e.rows))
    }

    /// Stores the logged rows of one bucket past its stored count; returns how many.
    fn recover_bucket(
        &self,
        id: &BucketId,
        mut l: Logged,
        tables: &[(RowsLayout, Vec<u8>, Vec<u32>)],
        decoded: &mut [Option<RecordRows>],
    ) -> Result<u64> {
        let corrupt = |reason: String| Error::Corruption {
            keyspace: "write-ahead log".to_owned(),
            key: hex(id),
            reason,
        };
        let stored = self.control(id)?;
        let mut next = stored.as_ref().map_or(0, |c| c.count);
        l.parts.sort_by_key(|(e, _, _)| e.first_row);
        let mut rows = 0usize;
        let mut columns: Vec<(String, Column)> = Vec::new();
        for (e, record, entry) in &l.parts {
            if e.first_row + e.rows <= next {
                continue; // stored already
            }
            let skip = next.saturating_sub(e.first_row) as usize;
            let (Some(slot), Some((layout, bytes, entry_rows))) =
                (decoded.get_mut(*record), tables.get(*record))
            else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(
                    RecordRows::decode(*layout, bytes, entry_rows.iter().copied())
                        .map_err(corrupt)?,
                );
            }
            let Some(table) = slot.as_ref() else { continue };
            let n = (e.rows as usize).saturating_sub(skip);
            for (name, tail) in table.entry_rows(*entry, skip, e.rows as usize) {
                match columns.iter_mut().find(|(c, _)| *c == name) {
                    Some((_, c)) => c.extend_from(&tail),
                    None => {
                        let mut c = Column::with_capacity(rows + n);
                        c.push_missing_n(rows);
                        c.extend_from(&tail);
                        columns.push((name, c));
                    }
                }
            }
            rows += n;
            for (_, c) in &mut columns {
                if c.len() < rows {
                    c.push_missing_n(rows - c.len());
                }
            }
            next = next.max(e.first_row + e.rows);
        }
        if rows == 0 {
            return Ok(0);
        }
        let Some(last) = l.last else {
            return Ok(0);
        };
        let key = match (&stored, l.key) {
            (_, Some(bytes)) => BucketKey::from_bytes(bytes),
            (Some(c), None) => self
                .store
                .series_key(c.meta_hash, c.min_time, id)?
                .ok_or_else(|| corrupt("the stored bucket has no index entry".to_owned()))?,
            (None, None) => {
                return Err(corrupt(
                    "rows of a bucket the store does not hold, without its series".to_owned(),
                ));
            }
        };
        let time_field = self.spec().time_field;
        let control = recovered_control(stored.as_ref(), &last, &key, &time_field, rows, &columns)
            .map_err(corrupt)?;
        let segment = stored.as_ref().map_or(0, |c| c.next_segment);
        let mut control = control;
        control.next_segment = segment + 1;
        let refs: Vec<(&str, &Column)> = columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let blob = encode_bucket(rows, &refs)?;
        let _serialized = self.merge_lock(id);
        let mut wb = self.store.batch();
        self.put_bucket(
            &mut wb,
            BucketWrite {
                id,
                key: &key,
                placement: if stored.is_none() {
                    Placement::New
                } else {
                    Placement::Append
                },
                rows,
                columns: &columns,
                segment_no: segment,
                blob: Some(blob),
                control: &control,
                previous: stored.as_ref(),
                new_to_store: stored.is_none(),
            },
        )?;
        wb.commit("storing recovered rows")?;
        if stored.is_some() {
            self.merge_bucket_locked(id)?;
        }
        Ok(rows as u64)
    }
}

/// The measurements dropped records held that the store does not, and their time range.
#[derive(Default)]
struct Lost {
    measurements: u64,
    /// First and last time (ms).
    range: Option<(i64, i64)>,
}

impl Lost {
    /// Widens the time range by rows `from..to` of a time column.
    fn widen(&mut self, times: &Column, from: usize, to: usize) {
        for v in times.iter_rows(from, to) {
            if let Ok(Some(Bson::DateTime(t))) = to_bson(v) {
                let t = t.timestamp_millis();
                self.range = Some(self.range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            }
        }
    }
}

/// The control record of a bucket after recovery stored `rows` more rows: min/max of the
/// stored record (if any) widened by the new rows, the logged scalars of the last entry.
fn recovered_control(
    stored: Option<&Control>,
    last: &LogEntry,
    key: &BucketKey,
    time_field: &str,
    rows: usize,
    columns: &[(String, Column)],
) -> std::result::Result<Control, String> {
    let mut fields: Vec<(String, MinMax)> = stored.map_or_else(Vec::new, |c| {
        c.min
            .iter()
            .map(|(name, min)| {
                (
                    name.clone(),
                    MinMax::from_stored(min, c.max.get(name).unwrap_or(min)),
                )
            })
            .collect()
    });
    // Positions of the fields by name: a bucket may have many fields.
    let mut at: HashMap<String, usize> = fields
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.clone(), i))
        .collect();
    let mut max_time = stored.map_or(i64::MIN, |c| c.max_time);
    for (name, col) in columns {
        let mut mm: Option<MinMax> = None;
        for v in col.iter() {
            let Some(b) = to_bson(v)? else { continue };
            if name == time_field {
                if let Bson::DateTime(t) = &b {
                    max_time = max_time.max(t.timestamp_millis());
                }
                continue;
            }
            match &mut mm {
                Some(m) => m.update(&b),
                None => mm = Some(MinMax::new(&b)),
            }
        }
        if name == time_field {
            continue;
        }
        let Some(mm) = mm else { continue };
        match at.get(name) {
            Some(&i) => {
                let f = &mut fields[i].1;
                f.update(&mm.min());
                f.update(&mm.max());
            }
            None => {
                at.insert(name.clone(), fields.len());
                fields.push((name.clone(), mm));
            }
        }
    }
    let min_time = stored.map_or(last.min_time, |c| c.min_time);
    // Fields in first-appearance order: the stored ones, then those the new rows add.
    let mut order: Vec<&str> =
        stored.map_or_else(Vec::new, |c| c.min.keys().map(String::as_str).collect());
    let mut listed: std::collections::HashSet<&str> = order.iter().copied().collect();
    for (name, _) in columns {
        if listed.insert(name.as_str()) {
            order.push(name);
        }
    }
    let mut min = Document::new();
    let mut max = Document::new();
    for name in order {
        if name == time_field {
            let stored_min = stored.and_then(|c| c.min.get(time_field)).cloned();
            min.insert(
                name,
                stored_min.unwrap_or(Bson::DateTime(DateTime::from_millis(min_time))),
            );
            max.insert(name, DateTime::from_millis(max_time));
        } else if let Some(&i) = at.get(name) {
            let f = &fields[i].1;
            min.insert(name, f.min());
            max.insert(name, f.max());
        }
    }
    // Sums are known when the stored record (if any) has them.
    let sums = match stored {
        None => Some(merged_sums(&min, None, columns)),
        Some(c) => c
            .sums
            .as_ref()
            .map(|s| merged_sums(&min, Some((&c.min, s)), columns)),
    };
    Ok(Control {
        sorted: last.sorted,
        min_time,
        max_time,
        count: stored.map_or(0, |c| c.count) + u32::try_from(rows).map_err(|e| e.to_string())?,
        size_estimate: last.size_estimate,
        next_segment: 0,
        closed: false,
        meta_hash: key.hash,
        uncompressed_bytes: last.uncompressed_bytes,
        sums,
        min,
        max,
    })
}
