//! Updates of measurements (SPEC §11.2 [8.0+]): each candidate bucket is unpacked; the
//! matched measurements the update changes leave it (it is written back with the rest under
//! its `_id`, or removed when empty) and are placed again as new measurements, into new
//! buckets by the collection's placement rules (§6.2). Everything — rewritten buckets,
//! removed buckets, new buckets — is one atomic fjall batch.

use std::sync::Arc;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::{raw_value_bytes, type_code};
use tscoll_catalog::{BucketCatalog, BucketKey, BucketPart, NoStorage, WriterId};

use super::{Apply, Modification, UpdateResult};
use crate::collection::CollectionInner;
use crate::direct_write::IndexEntry;
use crate::direct_write::rewrite::UnpackedBucket;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::Filter;
use crate::storage::control::Control;
use crate::write::{InsertResult, take_outcome};

/// One bucket an update changes: the measurements leaving it.
struct Change<'a> {
    entry: &'a IndexEntry,
    control: Control,
    bucket: UnpackedBucket,
    remove: Vec<bool>,
}

impl CollectionInner {
    pub(super) fn update_measurements(
        &self,
        filter: &Filter,
        update: &Modification,
        multi: bool,
    ) -> Result<UpdateResult> {
        // Reads and direct writes see the store: rows held in memory are stored first.
        self.flush_open()?;
        let spec = self.spec();
        let Some(bounds) = filter.min_time_bounds(spec.bucket_max_span_seconds * 1000) else {
            return Ok(UpdateResult::default());
        };
        // Buckets whose control rules the filter out are not cleared from the catalog.
        let mut todo = Vec::new();
        for (entry, meta) in self.buckets_matching_meta(filter, bounds)? {
            if let Some(c) = self.control(&entry.id)?
                && filter.bucket_may_match(c.min_time, c.max_time, &c.min, &c.max)
            {
                todo.push((entry, meta));
            }
        }
        if multi {
            let entries: Vec<IndexEntry> = todo.iter().map(|(e, _)| e.clone()).collect();
            return self.direct_write_all(&entries, || {
                self.update_buckets(&todo, filter, update, true)
            });
        }
        // One measurement: one bucket at a time, until one matches.
        for one in todo.chunks(1) {
            let out = self.direct_write(&one[0].0, || {
                self.update_buckets(one, filter, update, false)
            })?;
            if out.matched > 0 {
                return Ok(out);
            }
        }
        Ok(UpdateResult::default())
    }

    /// Updates the matching measurements of `todo`'s buckets (inside a direct write of all
    /// of them) in one atomic batch.
    fn update_buckets(
        &self,
        todo: &[(IndexEntry, Option<Bson>)],
        filter: &Filter,
        update: &Modification,
        multi: bool,
    ) -> Result<UpdateResult> {
        let spec = self.spec();
        let time_field = spec.time_field.as_str();
        let meta_field = spec.meta_field.as_deref();
        let now = DateTime::now();
        let mut out = UpdateResult::default();
        let mut changes: Vec<Change<'_>> = Vec::new();
        let mut updated: Vec<Document> = Vec::new();
        for (entry, meta) in todo {
            let Some(control) = self.control(&entry.id)? else {
                continue; // removed meanwhile
            };
            if !filter.bucket_may_match(
                control.min_time,
                control.max_time,
                &control.min,
                &control.max,
            ) {
                continue;
            }
            let bucket = self.read_bucket_rows(entry, &control, time_field)?;
            let mut remove = vec![false; bucket.rows];
            for (i, fields) in bucket.docs.iter().enumerate() {
                if !filter
                    .matches_row(fields, bucket.times[i], meta.as_ref())
                    .map_err(|e| {
                        e.into_error("update", |m| self.store.corrupt_data(&entry.id, m))
                    })?
                {
                    continue;
                }
                out.matched += 1;
                let doc = measurement(fields, time_field, meta_field.zip(meta.as_ref()));
                let matched = if update.needs_match() {
                    filter.matched_position(fields, meta.as_ref())
                } else {
                    None
                };
                let at = Apply {
                    inserting: false,
                    now,
                    matched,
                };
                let new = update.apply(&doc, &at)?;
                if !unchanged(&doc, &new, meta_field) {
                    remove[i] = true;
                    out.modified += 1;
                    updated.push(new);
                }
                if !multi {
                    break;
                }
            }
            if remove.contains(&true) {
                changes.push(Change {
                    entry,
                    control,
                    bucket,
                    remove,
                });
            }
            if !multi && out.matched > 0 {
                break;
            }
        }
        if updated.is_empty() {
            return Ok(out);
        }
        // Every updated measurement is checked and placed before anything is written.
        let parts = self.place_updated(&updated)?;
        let mut wb = self.store.batch();
        for c in &changes {
            self.put_rows_removed(
                &mut wb, c.entry, &c.control, &c.bucket, &c.remove, time_field,
            )?;
        }
        for part in &parts {
            self.put_fresh_bucket(&mut wb, part)?;
        }
        wb.commit("writing an update")?;
        out.buckets_modified = changes.len() as u64;
        Ok(out)
    }

    /// Places updated measurements (SPEC §2 checks, then §6.2 placement) into new buckets of
    /// a catalog of their own, with the collection's bucketing and limits: the whole buckets
    /// to store.
    ///
    /// # Errors
    /// The first measurement that cannot be stored, with MongoDB's code (`BadValue` for a
    /// missing or non-datetime time field, SPEC §11.2).
    fn place_updated(&self, docs: &[Document]) -> Result<Vec<BucketPart>> {
        let missing = docs.iter().filter(|d| !d.contains_key("_id")).count();
        let ids: Vec<Bson> = crate::write::ids::generate(missing)
            .map(Bson::ObjectId)
            .collect();
        let validated = self.validate(docs, &ids, true, false);
        if let Some(e) = validated.errors.first() {
            return Err(Error::rejected(
                e.code,
                format!("an updated measurement cannot be stored: {}", e.message),
            ));
        }
        let catalog = Arc::new(BucketCatalog::new(
            self.catalog.spec(),
            self.catalog.options(),
        ));
        let writer = WriterId(0);
        let mut batches = Vec::new();
        let mut staged = InsertResult::default();
        for (key, group) in validated.keys.iter().zip(&validated.groups) {
            if !group.is_empty() {
                let outcome = catalog.stage(writer, key, group, &NoStorage);
                take_outcome(outcome, &mut batches, &mut staged);
            }
        }
        if let Some(e) = staged.errors.first() {
            return Err(Error::rejected(
                e.code,
                format!("an updated measurement cannot be stored: {}", e.message),
            ));
        }
        for batch in batches {
            let rights = catalog.claim(&batch).ok_or_else(|| {
                Error::rejected(ErrorCode::InternalError, "placing updated measurements")
            })?;
            let prepared = rights.prepare().map_err(|e| {
                Error::rejected(
                    ErrorCode::InternalError,
                    format!("placing updated measurements: {e}"),
                )
            })?;
            prepared.finish();
        }
        let mut parts: Vec<BucketPart> = catalog
            .take_leaving()
            .into_iter()
            .map(|p| Arc::try_unwrap(p).unwrap_or_else(|p| (*p).clone()))
            .collect();
        for (key, id) in catalog.unstored() {
            parts.extend(catalog.take_unstored(&key, &id));
        }
        Ok(parts)
    }
}

/// Whether an update left a measurement as it was: the same fields in the same order with
/// the same bytes (a NaN is equal to itself, as MongoDB compares), the meta value compared
/// normalized (R-3.1: it is stored normalized).
fn unchanged(old: &Document, new: &Document, meta_field: Option<&str>) -> bool {
    let others = |d: &Document| -> Vec<(String, u8, Vec<u8>)> {
        d.iter()
            .filter(|(k, _)| Some(k.as_str()) != meta_field)
            .map(|(k, v)| (k.clone(), type_code(v), raw_value_bytes(v)))
            .collect()
    };
    meta_field.is_none_or(|m| {
        BucketKey::from_meta(old.get(m)).bytes == BucketKey::from_meta(new.get(m)).bytes
    }) && others(old) == others(new)
}

/// A stored measurement as [`crate::Collection::find`] returns it: time, meta, then the
/// other fields in column order.
fn measurement(fields: &Document, time_field: &str, meta: Option<(&str, &Bson)>) -> Document {
    let mut doc = Document::new();
    if let Some(t) = fields.get(time_field) {
        doc.insert(time_field, t.clone());
    }
    if let Some((name, m)) = meta {
        doc.insert(name, m.clone());
    }
    for (k, v) in fields {
        if k != time_field {
            doc.insert(k.clone(), v.clone());
        }
    }
    doc
}
