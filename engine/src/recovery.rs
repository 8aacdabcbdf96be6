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

use std::collections::HashMap;

use bson::{Bson, DateTime, Document};
use fjall::PersistMode;
use tscoll_catalog::value::to_bson;
use tscoll_catalog::{BucketId, BucketKey, MinMax};
use tscoll_codec::{Column, decode_bucket, encode_bucket};

use crate::collection::CollectionInner;
use crate::control::{Control, merged_sums};
use crate::error::{Error, Result};
use crate::storage::keys::hex;
use crate::storage::wal::{LogEntry, LogPosition, table_rows};

/// What the log holds of one bucket.
#[derive(Default)]
struct Logged {
    key: Option<Vec<u8>>,
    last: Option<LogEntry>,
    /// `(entry, record number, first row of the entry in the record's table)`.
    parts: Vec<(LogEntry, usize, usize)>,
}

/// What recovery stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Buckets written.
    pub(crate) buckets: usize,
    /// Rows stored.
    pub(crate) rows: u64,
}

impl CollectionInner {
    /// Stores what the log holds beyond the store, makes it durable and empties the log.
    ///
    /// # Errors
    /// [`Error::Corruption`] when the log or a logged blob is damaged, or a bucket new to the
    /// store has no logged key; [`Error::Io`], [`Error::Storage`] when reading or writing fails.
    pub(crate) fn recover_log(&self) -> Result<Recovered> {
        let records = self.wal.read_all()?;
        let mut order: Vec<BucketId> = Vec::new();
        let mut logged: HashMap<BucketId, Logged> = HashMap::new();
        let mut tables = Vec::with_capacity(records.len());
        let mut retired: HashMap<BucketId, Option<LogPosition>> = HashMap::new();
        for (r, (position, record)) in records.into_iter().enumerate() {
            let mut offset = 0;
            for e in record.entries {
                let rows = e.rows as usize;
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
                    offset += rows;
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
                l.parts.push((e, r, offset));
                offset += rows;
            }
            tables.push(record.rows);
        }
        // Each record's table is decoded once, when a bucket first needs it.
        let mut decoded: Vec<Option<tscoll_codec::Bucket>> = vec![None; tables.len()];
        let mut out = Recovered::default();
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
        let mut wb = self.fjall.batch();
        let mut markers = 0;
        for (id, marker) in &retired {
            if marker.is_some() {
                self.store.remove_retired(&mut wb, id);
                markers += 1;
            }
        }
        if markers > 0 {
            wb.commit()
                .map_err(Error::storage("removing retirement markers"))?;
        }
        Ok(out)
    }

    /// Stores the logged rows of one bucket past its stored count; returns how many.
    fn recover_bucket(
        &self,
        id: &BucketId,
        mut l: Logged,
        tables: &[Vec<u8>],
        decoded: &mut [Option<tscoll_codec::Bucket>],
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
        for (e, record, offset) in &l.parts {
            if e.first_row + e.rows <= next {
                continue; // stored already
            }
            let skip = next.saturating_sub(e.first_row) as usize;
            let (Some(slot), Some(blob)) = (decoded.get_mut(*record), tables.get(*record)) else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(decode_bucket(blob).map_err(|err| corrupt(err.to_string()))?);
            }
            let Some(table) = slot.as_ref() else { continue };
            if offset + e.rows as usize > table.row_count {
                return Err(corrupt(
                    "a log entry points past its record's rows".to_owned(),
                ));
            }
            let n = (e.rows as usize).saturating_sub(skip);
            for (name, tail) in table_rows(table, offset + skip, n) {
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
        let mut wb = self.fjall.batch();
        self.store.put_segment(&mut wb, id, segment, blob);
        self.store.put_control(&mut wb, id, control.encode());
        if stored.is_none() {
            self.put_bucket_rollups(&mut wb, id, rows, &columns)?;
        } else {
            self.put_appended_rollups(&mut wb, id, segment, rows, &columns)?;
        }
        if stored.is_none() {
            self.store
                .put_index_entry(&mut wb, &key, control.min_time, id)?;
        }
        if self.has_secondary_indexes() {
            self.index_bucket_change(&mut wb, id, &key, stored.as_ref(), Some(&control))?;
        }
        wb.commit()
            .map_err(Error::storage("storing recovered rows"))?;
        if stored.is_some() {
            self.merge_bucket_locked(id)?;
        }
        Ok(rows as u64)
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
