//! Meta-only updates (SPEC §11.2): a multi update whose filter reads the meta field only and
//! whose operators change only the meta field is applied to each matching bucket's meta
//! value, renormalized, and written as a move of the bucket to its new series.

use bson::{DateTime, Document};
use tscoll_catalog::BucketKey;

use super::{Apply, Modification, UpdateResult};
use crate::collection::CollectionInner;
use crate::direct_write::IndexEntry;
use crate::error::Result;
use crate::mql::filter::Filter;

impl CollectionInner {
    pub(super) fn update_meta(
        &self,
        filter: &Filter,
        update: &Modification,
        meta_field: &str,
    ) -> Result<UpdateResult> {
        // Reads and direct writes see the store: rows held in memory are stored first.
        self.flush_open()?;
        let now = DateTime::now();
        let mut out = UpdateResult::default();
        // Every new meta value first: an operator failing on one series changes nothing.
        let mut moves = Vec::new();
        for (entry, meta) in self.buckets_matching_meta(filter, (i64::MIN, i64::MAX))? {
            let mut wrapper = Document::new();
            if let Some(m) = &meta {
                wrapper.insert(meta_field, m.clone());
            }
            let updated = update.apply(
                &wrapper,
                &Apply {
                    inserting: false,
                    now,
                    matched: None,
                },
            )?;
            // the new meta value is normalized like an inserted one.
            let new_key = BucketKey::from_meta(updated.get(meta_field));
            moves.push((entry, new_key));
        }
        let entries: Vec<IndexEntry> = moves.iter().map(|(e, _)| e.clone()).collect();
        // One atomic batch moves every bucket.
        self.direct_write_all(&entries, || {
            let mut wb = self.store.batch();
            for (entry, new_key) in &moves {
                let Some(control) = self.control(&entry.id)? else {
                    continue; // removed meanwhile
                };
                let count = u64::from(control.count);
                out.matched += count;
                if new_key.bytes != entry.key.bytes {
                    self.put_move(&mut wb, entry, &control, new_key)?;
                    out.modified += count;
                    out.buckets_modified += 1;
                }
            }
            wb.commit("updating buckets' meta")
        })?;
        Ok(out)
    }
}
