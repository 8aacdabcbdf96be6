//! Collection statistics (SPEC §8.1) and bucket inspection in MongoDB's bucket shape (§4.1).

use bson::{Bson, Document, doc, oid::ObjectId};
use tscoll_catalog::{CatalogGauges, StatsSnapshot};

use crate::collection::Collection;
use crate::error::Result;
use crate::storage::control::Control;

/// Statistics of one collection (SPEC §8.1): storage figures plus the execution counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CollectionStats {
    /// `bucketsNs`-like name of the collection.
    pub name: String,
    /// `bucketCount`: buckets stored.
    pub bucket_count: u64,
    /// `avgBucketSize` (bytes): average stored size of a bucket (segments + control record).
    pub avg_bucket_size: u64,
    /// Measurements stored (sum of `control.count`).
    pub measurement_count: u64,
    /// Bytes stored for buckets: segment blobs, control records and index entries.
    pub stored_bytes: u64,
    /// Bytes stored for rollups (keys and values; 0 without rollups), not counted in
    /// `stored_bytes`.
    pub rollup_bytes: u64,
    /// Bytes the measurements take as BSON elements (without the meta field): what a
    /// row-per-measurement store would hold.
    pub uncompressed_bytes: u64,
    /// `numActiveBuckets`: open + archived buckets in the catalog (SPEC ).
    pub num_active_buckets: u64,
    /// Open buckets in the catalog.
    pub num_open_buckets: u64,
    /// Idle buckets in the catalog.
    pub num_idle_buckets: u64,
    /// Archived bucket records in the catalog.
    pub num_archived_buckets: u64,
    /// Catalog memory (bytes, SPEC ).
    pub memory_usage: u64,
    /// Execution counters (SPEC §8.1).
    pub execution: StatsSnapshot,
}

impl CollectionStats {
    /// The stats as a document with MongoDB's camelCase keys (SPEC §8.1 order), plus
    /// `measurementCount`, `storedBytes`, `uncompressedBytes` and the catalog gauges.
    #[must_use]
    #[expect(clippy::cast_possible_wrap, reason = "counters are far below 2^63")]
    pub fn to_document(&self) -> Document {
        let mut d = doc! { "bucketsNs": format!("system.buckets.{}", self.name), "bucketCount": self.bucket_count as i64 };
        if self.bucket_count > 0 {
            d.insert("avgBucketSize", self.avg_bucket_size as i64);
        }
        d.insert("numActiveBuckets", self.num_active_buckets as i64);
        append_counters(&mut d, &self.execution);
        d.insert("measurementCount", self.measurement_count as i64);
        d.insert("storedBytes", self.stored_bytes as i64);
        d.insert("uncompressedBytes", self.uncompressed_bytes as i64);
        if self.rollup_bytes > 0 {
            d.insert("rollupBytes", self.rollup_bytes as i64);
        }
        d.insert("numOpenBuckets", self.num_open_buckets as i64);
        d.insert("numIdleBuckets", self.num_idle_buckets as i64);
        d.insert("numArchivedBuckets", self.num_archived_buckets as i64);
        d.insert("memoryUsage", self.memory_usage as i64);
        d
    }
}

/// Engine-level bucket catalog statistics (SPEC §8.2, MongoDB's `serverStatus.bucketCatalog`):
/// gauges summed over every collection, then the sum of their execution counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogStats {
    /// `numBuckets`: open buckets plus archived records (`numActiveBuckets`, R-6.1.3).
    pub num_buckets: u64,
    /// `numOpenBuckets`: open buckets in memory.
    pub num_open_buckets: u64,
    /// `numIdleBuckets`: open buckets with no pending batch, on the idle list.
    pub num_idle_buckets: u64,
    /// `numArchivedBuckets` = `numBuckets` − `numOpenBuckets`.
    pub num_archived_buckets: u64,
    /// `memoryUsage` (bytes, R-6.9.5).
    pub memory_usage: u64,
    /// Every collection's execution counters, summed (SPEC §8.1).
    pub execution: StatsSnapshot,
}

impl CatalogStats {
    pub(crate) fn add(&mut self, gauges: &CatalogGauges, execution: &StatsSnapshot) {
        self.num_buckets += gauges.active_buckets;
        self.num_open_buckets += gauges.open_buckets;
        self.num_idle_buckets += gauges.idle_buckets;
        self.num_archived_buckets = self.num_buckets.saturating_sub(self.num_open_buckets);
        self.memory_usage += gauges.memory_usage;
        self.execution.add(execution);
    }

    /// The stats as MongoDB prints them (camelCase, SPEC §8.2 order): the gauges, then every
    /// counter, with `avgNumMeasurementsPerCommit` after `numMeasurementsCommitted` when
    /// `numCommits > 0`.
    #[must_use]
    #[expect(clippy::cast_possible_wrap, reason = "counters are far below 2^63")]
    pub fn to_document(&self) -> Document {
        let mut d = doc! {
            "numBuckets": self.num_buckets as i64,
            "numOpenBuckets": self.num_open_buckets as i64,
            "numIdleBuckets": self.num_idle_buckets as i64,
            "numArchivedBuckets": self.num_archived_buckets as i64,
            "memoryUsage": self.memory_usage as i64,
        };
        append_counters(&mut d, &self.execution);
        d
    }
}

#[expect(clippy::cast_possible_wrap, reason = "counters are far below 2^63")]
fn append_counters(d: &mut Document, e: &StatsSnapshot) {
    for (name, v) in e.named() {
        d.insert(name, v as i64);
        if name == "numMeasurementsCommitted" && e.num_commits > 0 {
            d.insert(
                "avgNumMeasurementsPerCommit",
                (e.num_measurements_committed / e.num_commits) as i64,
            );
        }
    }
}

pub(crate) fn stats(coll: &Collection) -> Result<CollectionStats> {
    let inner = &coll.inner;
    inner.flush_open()?;
    let mut s = CollectionStats {
        name: inner.name.clone(),
        ..CollectionStats::default()
    };
    for item in inner.store.controls() {
        let (id, v) = item?;
        let c = Control::decode(&v).map_err(|reason| inner.store.corrupt_control(&id, reason))?;
        s.bucket_count += 1;
        s.measurement_count += u64::from(c.count);
        s.uncompressed_bytes += c.uncompressed_bytes;
        s.stored_bytes += (id.len() + v.len()) as u64;
    }
    s.stored_bytes += inner.store.segment_bytes()? + inner.store.index_bytes()?;
    s.rollup_bytes = inner.store.rollup_bytes()?;
    s.avg_bucket_size = s.stored_bytes.checked_div(s.bucket_count).unwrap_or(0);
    let cat = &inner.catalog;
    let g = cat.gauges();
    s.num_active_buckets = g.active_buckets;
    s.num_open_buckets = g.open_buckets;
    s.num_idle_buckets = g.idle_buckets;
    s.num_archived_buckets = g.archived_buckets;
    s.memory_usage = g.memory_usage;
    s.execution = cat.stats();
    Ok(s)
}

pub(crate) fn buckets(coll: &Collection) -> Result<Vec<Document>> {
    let inner = &coll.inner;
    inner.flush_open()?;
    let spec = inner.spec();
    let mut out = Vec::new();
    for entry in inner.all_buckets()? {
        let id = entry.id;
        let corrupt = |reason: String| inner.store.corrupt_index(&id, reason);
        let Some(c) = inner.control(&id)? else {
            return Err(corrupt(
                "indexed bucket without a control record".to_owned(),
            ));
        };
        let meta = entry.key.meta_value().map_err(corrupt)?;
        let rows = inner.unpack_bucket(&id, &c, None, &mut |_| true)?;
        let mut data = Document::new();
        for name in c.min.keys() {
            let mut col = Document::new();
            for (i, (_, row)) in rows.iter().enumerate() {
                if let Some(v) = row.get(name) {
                    col.insert(i.to_string(), v.clone());
                }
            }
            data.insert(name.clone(), col);
        }
        let mut bucket = doc! {
            "_id": ObjectId::from_bytes(id),
            "control": {
                "version": c.version(),
                "min": c.min.clone(),
                "max": c.max.clone(),
                "count": i64::from(c.count),
            },
        };
        if let Some(m) = meta
            && spec.meta_field.is_some()
        {
            bucket.insert("meta", m);
        }
        bucket.insert("data", Bson::Document(data));
        out.push(bucket);
    }
    Ok(out)
}
