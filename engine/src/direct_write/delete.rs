//! Deletes (SPEC §11.1, 7.0+ semantics): a filter on the meta field only deletes whole
//! buckets; any other filter unpacks each candidate bucket, removes the matching
//! measurements and writes the rest back under the same `_id`, keeping its
//! `control.min.<time>`; a bucket left empty is removed. The result counts measurements.

use bson::{Bson, Document};

use crate::collection::CollectionInner;
use crate::direct_write::IndexEntry;
use crate::error::Result;
use crate::mql::filter::Filter;
use crate::storage::control::Control;

/// Outcome of [`Collection::delete_many`](crate::Collection::delete_many) / [`Collection::delete_one`](crate::Collection::delete_one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeleteResult {
    /// Measurements deleted (`n`, SPEC §11.1 [7.0+]).
    pub deleted: u64,
    /// Buckets removed whole.
    pub buckets_removed: u64,
    /// Buckets rewritten with their remaining measurements.
    pub buckets_rewritten: u64,
}

/// Whether a filter reads the meta field only (then whole buckets match or not, SPEC §14.2).
pub(crate) fn meta_only(filter: &Filter) -> bool {
    filter.meta_only()
}

impl CollectionInner {
    pub(crate) fn delete(&self, filter_doc: &Document, just_one: bool) -> Result<DeleteResult> {
        self.writable()?;
        // Reads and direct writes see the store: rows held in memory are stored first.
        self.flush_open()?;
        let spec = self.spec();
        let filter = Filter::parse(filter_doc, &spec.time_field, spec.meta_field.as_deref())?;
        let whole_only = meta_only(&filter) && !just_one;
        let mut out = DeleteResult::default();
        let Some(bounds) = filter.min_time_bounds(spec.bucket_max_span_seconds * 1000) else {
            return Ok(out);
        };
        for (entry, meta) in self.buckets_matching_meta(&filter, bounds)? {
            let deleted = self.direct_write(&entry, || {
                let Some(control) = self.control(&entry.id)? else {
                    return Ok((0, false)); // removed meanwhile
                };
                if whole_only
                    || (!just_one
                        && filter.whole_bucket_matches(control.min_time, control.max_time))
                {
                    self.write_removal(&entry, Some(&control))?;
                    return Ok((u64::from(control.count), true));
                }
                if !filter.bucket_may_match(
                    control.min_time,
                    control.max_time,
                    &control.min,
                    &control.max,
                ) {
                    return Ok((0, false));
                }
                self.delete_rows(
                    &entry,
                    &control,
                    &filter,
                    just_one,
                    &spec.time_field,
                    meta.as_ref(),
                )
            })?;
            let (deleted, whole) = deleted;
            if deleted > 0 {
                out.deleted += deleted;
                if whole {
                    out.buckets_removed += 1;
                } else {
                    out.buckets_rewritten += 1;
                }
                if just_one {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Removes the matching rows of one bucket (inside a direct write); returns how many and
    /// whether the bucket went whole.
    fn delete_rows(
        &self,
        entry: &IndexEntry,
        control: &Control,
        filter: &Filter,
        just_one: bool,
        time_field: &str,
        meta: Option<&Bson>,
    ) -> Result<(u64, bool)> {
        let bucket = self.read_bucket_rows(entry, control, time_field)?;
        let mut remove = vec![false; bucket.rows];
        let mut removed = 0u64;
        for (i, doc) in bucket.docs.iter().enumerate() {
            if filter
                .matches_row(doc, bucket.times[i], meta)
                .map_err(|e| e.into_error("delete", |m| self.store.corrupt_data(&entry.id, m)))?
            {
                remove[i] = true;
                removed += 1;
                if just_one {
                    break;
                }
            }
        }
        if removed == 0 {
            return Ok((0, false));
        }
        let mut wb = self.store.batch();
        let whole = self.put_rows_removed(&mut wb, entry, control, &bucket, &remove, time_field)?;
        wb.commit("removing measurements from a bucket")?;
        Ok((removed, whole))
    }
}
