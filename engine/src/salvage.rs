//! Copying what is readable of a damaged database into a new one ([`Database::salvage_into`],
//! `tscoll salvage`): every collection is created again with the same options, every
//! measurement of every data segment that decodes is inserted again (a damaged segment is
//! skipped, the other segments of its bucket are kept), the indexes are created again, and
//! what could not be copied is listed with what its control record says of it. Everything is
//! read from one fjall snapshot of the source, which is not changed.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError};

use bson::{Bson, DateTime, Document};
use fjall::{Readable, Snapshot};
use tscoll_catalog::{BucketId, BucketKey};

use crate::collection::{Collection, CollectionInner, bucketing};
use crate::control::Control;
use crate::damage::{bucket_read_failure, read_failure};
use crate::db::Database;
use crate::error::{Error, ErrorCode, Result};
use crate::index::IndexOptions;
use crate::journal::RecoveryReport;
use crate::options::{CollectionSpec, TimeseriesOptions};
use crate::recovery::LogRecovery;
use crate::storage::keys::{
    SAME_AS_SERIES_RECORD, hex, parse_control_key, parse_data_key, parse_index_key,
    parse_retired_key, parse_series_record, parse_series_record_key,
};
use crate::verify::{fmt_time, read_rows, secondary_meta};
use crate::write::{Durability, InsertOptions};

/// Measurements inserted into the new collection per `insert_many` call.
const CHUNK: usize = 10_000;

/// What a bucket's control record says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlSummary {
    /// `control.count`: measurements in the bucket.
    pub count: u32,
    /// `control.min.<time>` (ms, rounded down when the bucket was opened).
    pub min_time: i64,
    /// `control.max.<time>` (ms).
    pub max_time: i64,
}

impl std::fmt::Display for ControlSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} measurements from {} to {}",
            self.count,
            fmt_time(self.min_time),
            fmt_time(self.max_time)
        )
    }
}

/// A bucket whose measurements were not all copied ([`SalvageReport::lost`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LostBucket {
    /// The collection.
    pub collection: String,
    /// The bucket `_id` in hex.
    pub bucket: String,
    /// The segments skipped, each with why (a segment that does not decode).
    pub segments: Vec<(u32, String)>,
    /// Why the bucket is listed besides its segments: no data, an unknown series, rejected
    /// measurements, fewer measurements than its control record counts.
    pub reasons: Vec<String>,
    /// What its control record says, when it is readable.
    pub control: Option<ControlSummary>,
    /// Measurements of the bucket that were copied.
    pub copied: u64,
}

impl LostBucket {
    /// Measurements lost as far as the control record tells (`control.count` less those
    /// copied); `None` without a readable control record.
    #[must_use]
    pub fn measurements_lost(&self) -> Option<u64> {
        self.control
            .map(|c| u64::from(c.count).saturating_sub(self.copied))
    }
}

impl std::fmt::Display for LostBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bucket {}:", self.collection, self.bucket)?;
        let mut sep = " ";
        for (no, why) in &self.segments {
            write!(f, "{sep}segment {no} skipped ({why})")?;
            sep = "; ";
        }
        for why in &self.reasons {
            write!(f, "{sep}{why}")?;
            sep = "; ";
        }
        match (&self.control, self.measurements_lost()) {
            (Some(c), Some(lost)) => {
                write!(f, "; control: {c}; {} copied, {lost} lost", self.copied)
            }
            _ => write!(
                f,
                "; control record unreadable or missing; {} copied",
                self.copied
            ),
        }
    }
}

/// What was copied of one collection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SalvagedCollection {
    /// The collection.
    pub name: String,
    /// Buckets read (every id with a control record, data or an index entry).
    pub buckets: u64,
    /// Data segments copied whole.
    pub segments: u64,
    /// Measurements copied.
    pub measurements: u64,
    /// Secondary indexes created again.
    pub indexes: u64,
}

/// The outcome of [`Database::salvage_into`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SalvageReport {
    /// Every collection, by name.
    pub collections: Vec<SalvagedCollection>,
    /// Every bucket not copied whole, by collection and bucket id.
    pub lost: Vec<LostBucket>,
    /// What else went wrong: keyspaces that could not be read to the end, indexes that could
    /// not be created again.
    pub warnings: Vec<String>,
    /// What opening the source dropped from its damaged journal
    /// ([`Database::open_recovering`]).
    pub recovery: Option<RecoveryReport>,
    /// What opening the database dropped from write-ahead logs: torn last records, and
    /// damaged records with every later one ([`Database::log_recovery`]).
    pub log: Vec<LogRecovery>,
}

impl SalvageReport {
    /// Measurements copied, over every collection.
    #[must_use]
    pub fn measurements(&self) -> u64 {
        self.collections.iter().map(|c| c.measurements).sum()
    }

    /// Measurements lost as far as the control records of the damaged buckets tell.
    #[must_use]
    pub fn measurements_lost(&self) -> u64 {
        self.lost
            .iter()
            .filter_map(LostBucket::measurements_lost)
            .sum()
    }

    /// Whether everything was copied: nothing lost, no warning, nothing dropped when the
    /// source was opened (a torn last log record, which a crash leaves, does not count).
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.lost.is_empty()
            && self.warnings.is_empty()
            && self.recovery.is_none()
            && !self.log.iter().any(|l| l.damaged)
    }
}

impl Database {
    /// Copies every readable measurement of every collection into `target` (an empty
    /// database, like `sqlite3 .recover`): each collection is created in `target` with the
    /// same options and index definitions; the measurements of every data segment that
    /// decodes are inserted (rows in stored order, fields in the bucket's order, the meta
    /// value from the bucket directory or, when its entry is gone, from another bucket of the
    /// same series or a secondary index); a damaged segment is skipped and the other
    /// segments of its bucket are kept. The report lists every bucket not copied whole with
    /// what its control record says of it (count, time range). The source is read from one
    /// snapshot and not changed; `target` is closed (made durable) at the end.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    /// let db = Database::open(a.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let m = doc! { "t": DateTime::from_millis(0), "m": 1, "v": 2.5 };
    /// coll.insert_many(&[m], &InsertOptions::default())?;
    /// let copy = Database::open(b.path(), DatabaseOptions::default())?;
    /// let report = db.salvage_into(&copy)?;
    /// assert!(report.is_complete());
    /// assert_eq!(report.measurements(), 1);
    /// assert_eq!(copy.collection("c")?.find(&doc! {}, &FindOptions::default())?.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidOptions` when `target` is this database; `NamespaceExists` when `target`
    /// already has a collection of one of the names; [`Error::Storage`] when writing to
    /// `target` fails. What cannot be read from the source is reported, not returned.
    pub fn salvage_into(&self, target: &Database) -> Result<SalvageReport> {
        if Arc::ptr_eq(&self.inner, &target.inner) {
            return Err(Error::rejected(
                ErrorCode::InvalidOptions,
                "salvage needs another database to copy into",
            ));
        }
        let mut colls = self.collections();
        colls.sort_by(|a, b| a.name().cmp(b.name()));
        for c in &colls {
            // The source's rows held in memory are stored first, to be read with the rest.
            c.inner.flush_open()?;
            if target.collection(c.name()).is_ok() {
                return Err(Error::rejected(
                    ErrorCode::NamespaceExists,
                    format!(
                        "the target database already has a collection '{}'; salvage into an \
                         empty database",
                        c.name()
                    ),
                ));
            }
        }
        let snap = self.inner.fjall.snapshot();
        let mut report = SalvageReport {
            recovery: self.recovery_report(),
            log: self.log_recovery(),
            ..SalvageReport::default()
        };
        for c in &colls {
            let copy = create_like(target, c)?;
            let mut out = SalvagedCollection {
                name: c.name().to_owned(),
                ..SalvagedCollection::default()
            };
            let spec = c.spec();
            let mut run = Run {
                coll: &c.inner,
                target: &copy,
                snap: &snap,
                time_field: spec.time_field,
                meta_field: spec.meta_field,
                out: &mut out,
                lost: Vec::new(),
                warnings: &mut report.warnings,
                pending: Vec::new(),
                owners: Vec::new(),
                secondary_metas: None,
            };
            run.copy_buckets()?;
            let lost = std::mem::take(&mut run.lost);
            copy_indexes(c, &copy, &mut out, &mut report.warnings)?;
            report.lost.extend(lost);
            report.collections.push(out);
        }
        target.close()?;
        Ok(report)
    }
}

/// Creates collection `c` again in `target`, with the same effective options.
fn create_like(target: &Database, c: &Collection) -> Result<Collection> {
    let spec = c.spec();
    let mut opts = TimeseriesOptions::new(spec.time_field.clone());
    opts.meta_field.clone_from(&spec.meta_field);
    opts.expire_after_seconds = spec.expire_after_seconds;
    match spec.granularity {
        Some(g) => opts.granularity = Some(g),
        None => {
            opts.bucket_max_span_seconds = Some(spec.bucket_max_span_seconds);
            opts.bucket_rounding_seconds = Some(spec.bucket_max_span_seconds);
        }
    }
    let copy = target.create_collection(c.name(), &opts)?;
    if copy.spec() != spec {
        // Options changed by collMod since creation (SPEC §12): taken over as they are.
        set_spec(&copy.inner, &spec)?;
    }
    Ok(copy)
}

fn set_spec(inner: &CollectionInner, spec: &CollectionSpec) -> Result<()> {
    *inner.spec.write().unwrap_or_else(PoisonError::into_inner) = spec.clone();
    inner.catalog.set_spec(bucketing(spec));
    inner.save_record()
}

/// Creates the indexes of `c` again in `copy`: the default index's state (dropped, name,
/// hidden), then every built secondary index.
fn copy_indexes(
    c: &Collection,
    copy: &Collection,
    out: &mut SalvagedCollection,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let indexes = c.inner.indexes();
    if indexes.default_dropped || indexes.default_name.is_some() || indexes.default_hidden {
        {
            let mut w = copy
                .inner
                .indexes
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            w.default_dropped = indexes.default_dropped;
            w.default_name.clone_from(&indexes.default_name);
            w.default_hidden = indexes.default_hidden;
        }
        copy.inner.save_record()?;
    }
    for s in indexes.secondary.iter().filter(|s| s.ready) {
        let options = IndexOptions {
            name: Some(s.def.name.clone()),
            sparse: s.def.sparse,
            partial_filter_expression: s.def.partial.as_ref().map(|(d, _)| d.clone()),
            hidden: s.def.hidden,
            ..IndexOptions::default()
        };
        match copy.create_index(&s.def.key, &options) {
            Ok(_) => out.indexes += 1,
            Err(e) => warnings.push(format!(
                "{}: index '{}' {} was not created again: {e}",
                c.name(),
                s.def.name,
                s.def.key
            )),
        }
    }
    Ok(())
}

/// The copy of one collection.
struct Run<'a> {
    coll: &'a CollectionInner,
    target: &'a Collection,
    snap: &'a Snapshot,
    time_field: String,
    meta_field: Option<String>,
    out: &'a mut SalvagedCollection,
    lost: Vec<LostBucket>,
    warnings: &'a mut Vec<String>,
    /// Measurements waiting to be inserted.
    pending: Vec<Document>,
    /// The bucket each pending measurement comes from, with what its control record says.
    owners: Vec<(BucketId, Option<ControlSummary>)>,
    /// Meta bytes by bucket id, from the secondary indexes (read when first needed).
    secondary_metas: Option<HashMap<BucketId, Vec<u8>>>,
}

/// The bucket directory as read: meta bytes by bucket id and by hash (`None` for a hash two
/// series share).
#[derive(Default)]
struct Directory {
    by_id: HashMap<BucketId, Arc<[u8]>>,
    by_hash: HashMap<u64, Option<Arc<[u8]>>>,
}

impl Run<'_> {
    fn warn(&mut self, what: String) {
        self.warnings.push(format!("{}: {what}", self.coll.name));
    }

    /// Copies every bucket: the data keyspace is read in key order; buckets known from the
    /// control records and the directory but not met there are read one by one (their data
    /// is gone, or the scan failed before them).
    fn copy_buckets(&mut self) -> Result<()> {
        let dir = self.read_directory();
        let mut known: BTreeSet<BucketId> = dir.by_id.keys().copied().collect();
        for item in self.snap.iter(self.coll.store.raw().control) {
            match item.key() {
                Ok(k) => match parse_control_key(&k) {
                    Some(id) => {
                        known.insert(id);
                    }
                    // Retirement markers guard a write-ahead log the copy does not take.
                    None if parse_retired_key(&k).is_some() => {}
                    None => self.warn(format!("control record key {} skipped", hex(&k))),
                },
                Err(e) => {
                    let why = read_failure(self.coll.store.raw().control, &e);
                    self.warn(format!(
                        "the control records cannot be listed to the end: {why}"
                    ));
                    break;
                }
            }
        }
        let mut current: Option<(BucketId, Vec<(u32, fjall::Slice)>)> = None;
        let mut data_ok = true;
        for item in self.snap.iter(self.coll.store.raw().data) {
            let (k, v) = match item.into_inner() {
                Ok(kv) => kv,
                Err(e) => {
                    let why = read_failure(self.coll.store.raw().data, &e);
                    self.warn(format!(
                        "the data cannot be read in one pass: {why}; the remaining buckets are \
                         read one by one"
                    ));
                    data_ok = false;
                    break;
                }
            };
            let Some((id, seg)) = parse_data_key(&k) else {
                self.warn(format!("data key {} skipped", hex(&k)));
                continue;
            };
            if let Some((cid, segs)) = current.take_if(|(cid, _)| *cid != id) {
                known.remove(&cid);
                self.copy_bucket(&dir, &cid, Ok(segs))?;
            }
            current
                .get_or_insert_with(|| (id, Vec::new()))
                .1
                .push((seg, v));
        }
        if let Some((cid, segs)) = current.take() {
            known.remove(&cid);
            self.copy_bucket(&dir, &cid, Ok(segs))?;
        }
        for id in known {
            let segs = if data_ok {
                Ok(Vec::new())
            } else {
                self.read_segments(&id)
            };
            self.copy_bucket(&dir, &id, segs)?;
        }
        self.flush()
    }

    /// The bucket directory (meta+time index).
    fn read_directory(&mut self) -> Directory {
        let mut dir = Directory::default();
        // The last series record met: its hash and meta.
        let mut record: Option<(u64, Option<Vec<u8>>)> = None;
        for item in self.snap.iter(self.coll.store.raw().index) {
            let (k, v) = match item.into_inner() {
                Ok(kv) => kv,
                Err(e) => {
                    let why = read_failure(self.coll.store.raw().index, &e);
                    self.warn(format!(
                        "the bucket directory cannot be read to the end: {why}"
                    ));
                    break;
                }
            };
            if let Some(hash) = parse_series_record_key(&k) {
                // A series record: it sorts before the entries of its hash that refer to it.
                let meta = parse_series_record(&v).and_then(|r| r.meta.map(<[u8]>::to_vec));
                record = Some((hash, meta));
                continue;
            }
            let Some((hash, _, id)) = parse_index_key(&k) else {
                continue;
            };
            let bytes = if v[..] == SAME_AS_SERIES_RECORD {
                match &record {
                    Some((h, Some(meta))) if *h == hash => meta.clone(),
                    // The record is lost: the bucket's meta is looked for elsewhere.
                    _ => continue,
                }
            } else {
                v.to_vec()
            };
            let key = BucketKey::from_bytes(bytes);
            if key.meta_value().is_err() {
                continue; // the entry is damaged: its bucket's meta is looked for elsewhere
            }
            let bytes: Arc<[u8]> = Arc::from(key.bytes.as_slice());
            dir.by_hash
                .entry(key.hash)
                .and_modify(|m| {
                    if m.as_deref() != Some(&bytes[..]) {
                        *m = None;
                    }
                })
                .or_insert_with(|| Some(Arc::clone(&bytes)));
            dir.by_id.insert(id, bytes);
        }
        dir
    }

    fn read_segments(
        &self,
        id: &BucketId,
    ) -> std::result::Result<Vec<(u32, fjall::Slice)>, String> {
        crate::damage::read_segments(self.snap, self.coll.store.raw().data, id)
    }

    /// The meta value of a bucket's series: from its directory entry, else from another
    /// bucket of the series (same hash in the control record), else from a secondary index.
    fn meta_of(
        &mut self,
        dir: &Directory,
        id: &BucketId,
        control: Option<&Control>,
    ) -> std::result::Result<Option<Bson>, String> {
        let decode = |b: &[u8]| BucketKey::from_bytes(b.to_vec()).meta_value();
        if let Some(b) = dir.by_id.get(id) {
            return decode(b);
        }
        if let Some(Some(b)) = control.and_then(|c| dir.by_hash.get(&c.meta_hash)) {
            return decode(b);
        }
        if self.secondary_metas.is_none() {
            self.secondary_metas = Some(secondary_meta(self.coll, self.snap));
        }
        if let Some(b) = self.secondary_metas.as_ref().and_then(|m| m.get(id)) {
            let key = BucketKey::from_bytes(b.clone());
            if control.is_none_or(|c| c.meta_hash == key.hash) {
                return key.meta_value();
            }
        }
        if self.meta_field.is_none()
            || control.is_some_and(|c| c.meta_hash == BucketKey::no_meta().hash)
        {
            return Ok(None);
        }
        Err("its series (meta value) is unknown: no index entry holds it".to_owned())
    }

    /// Copies one bucket's readable segments (`segments` as read) and lists what is lost.
    fn copy_bucket(
        &mut self,
        dir: &Directory,
        id: &BucketId,
        segments: std::result::Result<Vec<(u32, fjall::Slice)>, String>,
    ) -> Result<()> {
        self.out.buckets += 1;
        let mut lost = LostBucket {
            collection: self.coll.name.clone(),
            bucket: hex(id),
            segments: Vec::new(),
            reasons: Vec::new(),
            control: None,
            copied: 0,
        };
        let control = match self.snap.get(self.coll.store.raw().control, id) {
            Ok(Some(v)) => match Control::decode(&v) {
                Ok(c) => Some(c),
                Err(e) => {
                    lost.reasons.push(format!("control record unreadable: {e}"));
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                let why = bucket_read_failure(&e);
                lost.reasons
                    .push(format!("control record unreadable: {why}"));
                None
            }
        };
        lost.control = control.as_ref().map(|c| ControlSummary {
            count: c.count,
            min_time: c.min_time,
            max_time: c.max_time,
        });
        let segments = match segments {
            Ok(s) => s,
            Err(e) => {
                lost.reasons.push(format!("segments unreadable: {e}"));
                Vec::new()
            }
        };
        if segments.is_empty() && lost.reasons.is_empty() {
            lost.reasons.push("no data segments".to_owned());
        }
        let meta = match self.meta_of(dir, id, control.as_ref()) {
            Ok(m) => Some(m),
            Err(e) => {
                if !segments.is_empty() {
                    lost.reasons.push(e);
                }
                None
            }
        };
        if let Some(meta) = meta {
            let order: Vec<&str> = control
                .as_ref()
                .map(|c| c.min.keys().map(String::as_str).collect())
                .unwrap_or_default();
            for (no, value) in &segments {
                match self.segment_documents(value, meta.as_ref(), &order) {
                    Ok(docs) => {
                        self.out.segments += 1;
                        lost.copied += docs.len() as u64;
                        for d in docs {
                            self.pending.push(d);
                            self.owners.push((*id, lost.control));
                        }
                    }
                    Err(e) => lost.segments.push((*no, e)),
                }
            }
        }
        if let Some(c) = &lost.control
            && lost.segments.is_empty()
            && lost.reasons.is_empty()
            && u64::from(c.count) > lost.copied
        {
            lost.reasons.push(format!(
                "control.count is {}, the segments hold {}",
                c.count, lost.copied
            ));
        }
        self.out.measurements += lost.copied;
        if !lost.segments.is_empty() || !lost.reasons.is_empty() {
            self.lost.push(lost);
        }
        if self.pending.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// The measurements of one segment: time, meta, then the fields in `order` (the bucket's
    /// column order), then any other field of the segment.
    fn segment_documents(
        &self,
        blob: &[u8],
        meta: Option<&Bson>,
        order: &[&str],
    ) -> std::result::Result<Vec<Document>, String> {
        let seg = tscoll_codec::decode_bucket(blob).map_err(|e| e.to_string())?;
        let rows = read_rows(&seg, &self.time_field)?;
        let mut cols: Vec<usize> = order
            .iter()
            .filter_map(|n| rows.columns.iter().position(|(c, _)| c == n))
            .collect();
        for i in 0..rows.columns.len() {
            if !cols.contains(&i) {
                cols.push(i);
            }
        }
        let mut docs = Vec::with_capacity(rows.times.len());
        for (r, &t) in rows.times.iter().enumerate() {
            let mut d = Document::new();
            d.insert(self.time_field.clone(), DateTime::from_millis(t));
            if let (Some(name), Some(m)) = (&self.meta_field, meta) {
                d.insert(name.clone(), m.clone());
            }
            for &c in &cols {
                let (name, values) = &rows.columns[c];
                if let Some(v) = &values[r] {
                    d.insert(name.clone(), v.clone());
                }
            }
            docs.push(d);
        }
        Ok(docs)
    }

    /// Inserts the pending measurements into the new collection; those it rejects are listed
    /// as lost with their bucket.
    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let options = InsertOptions {
            ordered: false,
            durability: Durability::Buffered,
        };
        let result = self.target.insert_many(&self.pending, &options)?;
        let mut per_bucket: HashMap<BucketId, u64> = HashMap::new();
        if !result.errors.is_empty() {
            for (id, _) in &self.owners {
                *per_bucket.entry(*id).or_default() += 1;
            }
        }
        for e in &result.errors {
            let Some((id, control)) = self.owners.get(e.index).copied() else {
                continue;
            };
            self.out.measurements = self.out.measurements.saturating_sub(1);
            let bucket = hex(&id);
            let at = match self.lost.iter().position(|l| l.bucket == bucket) {
                Some(i) => i,
                None => {
                    self.lost.push(LostBucket {
                        collection: self.coll.name.clone(),
                        bucket,
                        segments: Vec::new(),
                        reasons: Vec::new(),
                        control,
                        copied: per_bucket.get(&id).copied().unwrap_or(0),
                    });
                    self.lost.len() - 1
                }
            };
            let l = &mut self.lost[at];
            l.copied = l.copied.saturating_sub(1);
            l.reasons
                .push(format!("a measurement was rejected: {}", e.message));
        }
        self.pending.clear();
        self.owners.clear();
        Ok(())
    }
}
