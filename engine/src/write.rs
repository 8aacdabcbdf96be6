//! The write path: validate (SPEC §2), group by series and sort by time, stage in the
//! catalog, commit each prepared batch as an appended segment plus its control record and index
//! entry in one atomic fjall batch (SPEC §7, §9), then merge the segments of closed buckets.

use std::collections::HashMap;

use bson::{Bson, Document, oid::ObjectId};
use fjall::PersistMode;
use tscoll_catalog::value::element_size;
use tscoll_catalog::{
    BucketKey, ClosedBucket, MAX_BSON_OBJECT_SIZE, Measurement, PreparedBatch, StageError,
};
use tscoll_codec::{Column, encode_bucket};

use crate::collection::{Collection, CollectionInner};
use crate::control::Control;
use crate::error::{Error, ErrorCode, Result};
use crate::keys::{data_key, index_key};

/// How durable an acknowledged insert is (`docs/durability.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Written to fjall's journal buffer: survives a clean shutdown, not a crash. Default.
    #[default]
    Buffered,
    /// Flushed to the operating system: survives a process crash, not a power loss.
    Flush,
    /// fsync'ed: survives `kill -9` and power loss.
    Sync,
}

/// Options of [`Collection::insert_many`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InsertOptions {
    /// Stop at the first bad measurement (`true`, default) or keep every good one (SPEC ).
    pub ordered: bool,
    /// Durability of the acknowledgement. Default = [`Durability::Buffered`].
    pub durability: Durability,
}

impl Default for InsertOptions {
    fn default() -> Self {
        InsertOptions {
            ordered: true,
            durability: Durability::Buffered,
        }
    }
}

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

/// Outcome of [`Collection::insert_many`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InsertResult {
    /// Measurements stored (`nInserted`).
    pub inserted: usize,
    /// Rejected measurements, by input position (`writeErrors`), in input order.
    pub errors: Vec<WriteError>,
}

impl Collection {
    /// Inserts measurements (SPEC §2, §6, §7).
    ///
    /// Each measurement must have the time field as a BSON datetime; one without `_id`
    /// gets a generated ObjectId. Measurements are grouped by series and stably sorted
    /// by time before placement. With `ordered`, processing stops at the first bad
    /// measurement and everything before it is stored; otherwise every good one is stored.
    ///
    /// # Errors
    /// `Err` only when storage fails as a whole ([`Error::Storage`], [`Error::Poisoned`]);
    /// bad measurements are reported in [`InsertResult::errors`].
    pub fn insert_many(&self, docs: &[Document], options: &InsertOptions) -> Result<InsertResult> {
        self.inner.insert_many(docs, options)
    }
}

struct Validated<'a> {
    keys: Vec<BucketKey>,
    groups: Vec<Vec<Measurement<'a>>>,
    errors: Vec<WriteError>,
}

impl CollectionInner {
    fn validate<'a>(&self, docs: &'a [Document], ids: &'a [Bson], ordered: bool) -> Validated<'a> {
        let spec = self.spec();
        let mut out = Validated {
            keys: Vec::new(),
            groups: Vec::new(),
            errors: Vec::new(),
        };
        let mut group_of: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut scratch = Vec::new();
        let mut next_id = 0;
        for (index, doc) in docs.iter().enumerate() {
            // only the first occurrence of a field counts; Document keeps one.
            let time = match doc.get(&spec.time_field) {
                Some(Bson::DateTime(t)) => t.timestamp_millis(),
                _ => {
                    out.errors.push(WriteError {
                        index,
                        code: ErrorCode::BadValue,
                        message: format!(
                            "'{}' must be present and contain a valid BSON UTC datetime value",
                            spec.time_field
                        ),
                    });
                    if ordered {
                        break;
                    }
                    continue;
                }
            };
            let generated_id = if doc.contains_key("_id") {
                None
            } else {
                next_id += 1;
                ids.get(next_id - 1)
            };
            scratch.clear();
            let meta = spec.meta_field.as_ref().and_then(|m| doc.get(m));
            if let Some(m) = meta {
                tscoll_catalog::write_normalized(m, &mut scratch);
            }
            // the bucket holding it (with min and max copies) must fit in 16 MiB.
            let raw: u64 = doc
                .iter()
                .filter(|(k, _)| Some(k.as_str()) != spec.meta_field.as_deref())
                .map(|(k, v)| element_size(k, v))
                .sum();
            let estimate = 3 * raw + scratch.len() as u64;
            if estimate > MAX_BSON_OBJECT_SIZE {
                out.errors.push(WriteError {
                    index,
                    code: ErrorCode::BsonObjectTooLarge,
                    message: format!(
                        "measurement would make its bucket {estimate} bytes, over the 16 MiB BSON limit"
                    ),
                });
                if ordered {
                    break;
                }
                continue;
            }
            let g = match group_of.get(scratch.as_slice()) {
                Some(&g) => g,
                None => {
                    let g = out.groups.len();
                    group_of.insert(scratch.clone(), g);
                    out.keys.push(BucketKey::from_bytes(scratch.clone()));
                    out.groups.push(Vec::new());
                    g
                }
            };
            out.groups[g].push(Measurement {
                index,
                time,
                doc,
                generated_id,
            });
        }
        for g in &mut out.groups {
            g.sort_by_key(|m| m.time); // stable
        }
        out
    }

    pub(crate) fn insert_many(
        &self,
        docs: &[Document],
        options: &InsertOptions,
    ) -> Result<InsertResult> {
        let missing_ids = docs.iter().filter(|d| !d.contains_key("_id")).count();
        let ids: Vec<Bson> = (0..missing_ids)
            .map(|_| Bson::ObjectId(ObjectId::new()))
            .collect();
        let validated = self.validate(docs, &ids, options.ordered);
        let mut result = InsertResult {
            inserted: 0,
            errors: validated.errors,
        };
        let source = crate::reopen::Reopener { coll: self };
        let mut batches = Vec::new();
        let mut closed = Vec::new();
        for (key, group) in validated.keys.iter().zip(&validated.groups) {
            let outcome = self.catalog.stage(key, group, &source);
            for (index, StageError::TooLarge(size)) in outcome.rejected {
                result.errors.push(WriteError {
                    index,
                    code: ErrorCode::BsonObjectTooLarge,
                    message: format!("bucket would be {size} bytes, over the 16 MiB BSON limit"),
                });
            }
            batches.extend(outcome.batches);
            closed.extend(outcome.closed);
        }
        // Commit rights (SPEC ): commit what we win, wait for the rest.
        let mut prepared = Vec::new();
        let mut set_aside = Vec::new();
        for batch in batches {
            if batch.claim_commit_rights() {
                match self.catalog.prepare_commit(&batch) {
                    Ok(p) => prepared.push(p),
                    Err(reason) => {
                        self.catalog.abort(&batch, &reason);
                        for index in batch.indices() {
                            result.errors.push(internal(index, &reason));
                        }
                    }
                }
            } else {
                set_aside.push(batch);
            }
        }
        match self.commit(&prepared, options.durability) {
            Ok(()) => {
                for p in &prepared {
                    result.inserted += p.rows;
                    closed.extend(self.catalog.finish(p));
                }
            }
            Err(e) => {
                for p in &prepared {
                    self.catalog.abort(&p.batch, &e.to_string());
                }
                return Err(e);
            }
        }
        for batch in set_aside {
            match self.catalog.wait(&batch) {
                Ok(()) => result.inserted += batch.indices().len(),
                Err(reason) => {
                    for index in batch.indices() {
                        result.errors.push(internal(index, &reason));
                    }
                }
            }
        }
        self.merge_closed(&closed)?;
        result.errors.sort_by_key(|e| e.index);
        Ok(result)
    }

    /// Writes prepared batches in one atomic fjall batch (SPEC ): per bucket, the new
    /// segment, the control record and, for a new bucket, its index entry.
    fn commit(&self, prepared: &[PreparedBatch], durability: Durability) -> Result<()> {
        if prepared.is_empty() {
            return Ok(());
        }
        let mut wb = self.fjall.batch();
        for p in prepared {
            let columns: Vec<(&str, &Column)> =
                p.columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
            let blob = encode_bucket(p.rows, &columns)?;
            let previous_raw = if p.committed_before == 0 {
                0
            } else {
                self.control(&p.bucket_id)?
                    .map_or(0, |c| c.uncompressed_bytes)
            };
            let control = Control::from_prepared(p, previous_raw);
            wb.insert(&self.data, data_key(&p.bucket_id, p.segment_no), blob);
            wb.insert(&self.ctl, p.bucket_id, control.encode());
            if p.committed_before == 0 {
                wb.insert(
                    &self.idx,
                    index_key(p.key.hash, p.min_time, &p.bucket_id),
                    p.key.bytes.clone(),
                );
            }
        }
        let mode = match durability {
            Durability::Buffered => None,
            Durability::Flush => Some(PersistMode::Buffer),
            Durability::Sync => Some(PersistMode::SyncAll),
        };
        wb.durability(mode)
            .commit()
            .map_err(Error::storage("committing a write batch"))
    }

    /// Merges the segments of buckets that left memory into one blob each (DESIGN "Write path
    /// rules"): read every segment, concatenate the columns, write one blob, delete the rest.
    pub(crate) fn merge_closed(&self, closed: &[ClosedBucket]) -> Result<()> {
        for c in closed.iter().filter(|c| c.segments > 1) {
            self.merge_bucket(&c.id)?;
        }
        Ok(())
    }

    fn merge_bucket(&self, id: &tscoll_catalog::BucketId) -> Result<()> {
        let Some(control) = self.control(id)? else {
            return Ok(());
        };
        let segments = self.read_segments(id, &mut |_| true)?;
        if segments.len() <= 1 {
            return Ok(());
        }
        let rows: usize = segments.iter().map(|(_, b)| b.row_count).sum();
        let order: Vec<&str> = control.min.keys().map(String::as_str).collect();
        let mut merged: Vec<(String, Column)> = Vec::with_capacity(order.len());
        for name in &order {
            let mut col = Column::with_capacity(rows);
            for (_, seg) in &segments {
                match seg.columns.iter().find(|(n, _)| n == name) {
                    Some((_, c)) => col.extend_from(c),
                    None => col.push_missing_n(seg.row_count),
                }
            }
            merged.push(((*name).to_owned(), col));
        }
        let refs: Vec<(&str, &Column)> = merged.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let blob = encode_bucket(rows, &refs)?;
        let last = segments.last().map_or(0, |(s, _)| *s);
        let mut wb = self.fjall.batch();
        for (seg, _) in &segments {
            if *seg != last {
                wb.remove(&self.data, data_key(id, *seg));
            }
        }
        wb.insert(&self.data, data_key(id, last), blob);
        wb.commit()
            .map_err(Error::storage("merging bucket segments"))
    }

    /// Reads and decodes every segment of a bucket (projected), in segment order.
    pub(crate) fn read_segments(
        &self,
        id: &tscoll_catalog::BucketId,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Vec<(u32, tscoll_codec::Bucket)>> {
        let mut out = Vec::new();
        for item in self.data.prefix(id) {
            let (k, v) = item
                .into_inner()
                .map_err(Error::storage("reading bucket segments"))?;
            let seg = k
                .get(12..16)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map_or(0, u32::from_be_bytes);
            out.push((seg, tscoll_codec::decode_bucket_projected(&v, keep)?));
        }
        Ok(out)
    }
}

fn internal(index: usize, reason: &str) -> WriteError {
    WriteError {
        index,
        code: ErrorCode::InternalError,
        message: reason.to_owned(),
    }
}
