//! The engine's answer to the catalog's reopening requests (SPEC §6.8): archived buckets by
//! `_id`, and the query over the meta+time index.

use tscoll_catalog::{BucketId, BucketKey, BucketSource, QueryOutcome, SourceError, StoredBucket};

use crate::collection::CollectionInner;
use crate::storage::IndexRow;
use crate::storage::keys::hash_time_range;

pub(crate) struct Reopener<'a> {
    pub(crate) coll: &'a CollectionInner,
}

impl BucketSource for Reopener<'_> {
    fn fetch(&self, key: &BucketKey, id: &BucketId) -> Result<Option<StoredBucket>, SourceError> {
        let Some(control) = self.coll.control(id).map_err(source_error)? else {
            return Ok(None);
        };
        Ok((control.meta_hash == key.hash).then(|| control.into_stored(*id, key.bytes.clone())))
    }

    fn query(
        &self,
        key: &BucketKey,
        time: i64,
        span_ms: i64,
        max_count: u32,
        max_size: u64,
    ) -> Result<QueryOutcome, SourceError> {
        // the default meta+time index qualifies, or an index without a partial
        // filter whose bucket key starts with `meta, control.min.<time>` (`control.min.<time>`
        // without a metaField). The query itself reads the meta+time keyspace, which lists
        // every bucket (it is kept when the default index is dropped).
        if !self.coll.reopening_index_exists() {
            return Ok(QueryOutcome::NoIndex);
        }
        let (lo, hi) = hash_time_range(
            key.hash,
            time.saturating_sub(span_ms.saturating_sub(1)),
            time,
        );
        for row in self.coll.store.index_scan(&lo[..]..=&hi[..]) {
            let IndexRow::Bucket(item) = row.map_err(source_error)? else {
                continue;
            };
            if item.meta[..] != key.bytes[..] {
                continue;
            }
            let (id, v) = (item.id, item.meta);
            let Some(control) = self.coll.control(&id).map_err(source_error)? else {
                continue; // removed since the index was read
            };
            if control.closed || control.count >= max_count || control.size_estimate >= max_size {
                continue;
            }
            return Ok(QueryOutcome::Hit(Box::new(
                control.into_stored(id, v.to_vec()),
            )));
        }
        Ok(QueryOutcome::Miss)
    }
}

/// A storage or corruption error met while looking for a bucket to reopen.
fn source_error(e: crate::Error) -> SourceError {
    SourceError(e.to_string())
}
