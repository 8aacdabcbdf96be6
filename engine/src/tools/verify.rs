//! Checking every stored bucket of a database ([`Database::verify`], `tscoll verify`): the
//! segments decode (the codec checks each blob's checksum), the control records decode and
//! agree with the data (count, time range, `control.min`/`control.max`, sortedness), and the
//! meta+time index (the bucket directory) and the secondary indexes agree with the buckets
//! (`docs/keys.md`). Everything is read from one fjall snapshot, so a database in use is
//! checked at one point in time.

use std::collections::{BTreeMap, HashMap};
use std::iter::Peekable;
use std::sync::Arc;

use bson::{Bson, DateTime, Document};
use fjall::{Readable, Snapshot};
use tscoll_catalog::value::to_bson;
use tscoll_catalog::{BucketId, BucketKey, MinMax};
use tscoll_codec::{Bucket, ValueRef, tag};

use crate::collection::{Collection, CollectionInner};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::flush::replay::LogRecovery;
use crate::index::SecondaryIndex;
use crate::index::spec::Component;
use crate::storage::control::Control;
use crate::storage::fjall_journal::RecoveryReport;
use crate::storage::keys::{
    SAME_AS_SERIES_RECORD, hex, keyspace_names, parse_control_key, parse_data_key, parse_index_key,
    parse_retired_key, parse_series_record, parse_series_record_key, secondary_entry_bucket,
    secondary_index_keyspace,
};
use crate::storage::keyspaces;
use crate::tools::damage::{read_failure, read_segments};
use crate::wal::LogPosition;

/// What is wrong, in categories ([`Problem::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A keyspace could not be read to the end (a fjall error): what follows in it was not
    /// checked.
    Unreadable,
    /// A key of the wrong shape for its keyspace.
    MalformedKey,
    /// A data segment does not decode: checksum mismatch, malformed blob, a time column
    /// holding non-dates, a value that is not valid BSON.
    CorruptSegment,
    /// A control record does not decode.
    CorruptControl,
    /// The control record disagrees with the data: count, time range, `control.min` /
    /// `control.max`, sortedness, segment numbering.
    ControlMismatch,
    /// Data segments without a control record.
    MissingControl,
    /// A control record without data segments.
    MissingData,
    /// A bucket without its entry in the meta+time index (the bucket directory): queries and
    /// writes do not see it.
    MissingIndexEntry,
    /// A meta+time index entry without a bucket.
    DanglingIndexEntry,
    /// A meta+time index entry that disagrees with its bucket (meta hash, min time), whose
    /// meta bytes do not decode or do not hash to its key, or that refers to a series record
    /// that is missing; a series record that does not read.
    IndexEntryMismatch,
    /// A bucket a secondary index must list is not in it (or the index's keyspace is missing).
    MissingSecondaryEntry,
    /// A secondary index entry without a bucket.
    DanglingSecondaryEntry,
    /// A secondary index entry that disagrees with its bucket (min time, meta) or does not
    /// decode.
    SecondaryEntryMismatch,
}

impl ProblemKind {
    /// A short name, e.g. `corrupt-segment`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Unreadable => "unreadable",
            ProblemKind::MalformedKey => "malformed-key",
            ProblemKind::CorruptSegment => "corrupt-segment",
            ProblemKind::CorruptControl => "corrupt-control",
            ProblemKind::ControlMismatch => "control-mismatch",
            ProblemKind::MissingControl => "missing-control",
            ProblemKind::MissingData => "missing-data",
            ProblemKind::MissingIndexEntry => "missing-index-entry",
            ProblemKind::DanglingIndexEntry => "dangling-index-entry",
            ProblemKind::IndexEntryMismatch => "index-entry-mismatch",
            ProblemKind::MissingSecondaryEntry => "missing-secondary-entry",
            ProblemKind::DanglingSecondaryEntry => "dangling-secondary-entry",
            ProblemKind::SecondaryEntryMismatch => "secondary-entry-mismatch",
        }
    }
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One problem [`Database::verify`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// The collection.
    pub collection: String,
    /// The bucket `_id` in hex, when the problem is about one bucket.
    pub bucket: Option<String>,
    /// The category.
    pub kind: ProblemKind,
    /// What exactly is wrong (segment number, values, keyspace).
    pub detail: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.collection)?;
        if let Some(b) = &self.bucket {
            write!(f, " bucket {b}")?;
        }
        write!(f, ": {}: {}", self.kind, self.detail)
    }
}

/// The outcome of [`Database::verify`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Collections checked.
    pub collections: u64,
    /// Buckets checked (every id with a control record or data segments).
    pub buckets: u64,
    /// Data segments checked.
    pub segments: u64,
    /// Measurements in the segments that decode.
    pub measurements: u64,
    /// Meta+time index and secondary index entries checked.
    pub index_entries: u64,
    /// Every problem found, by collection, then in bucket order.
    pub problems: Vec<Problem>,
    /// What opening the database dropped from a damaged journal
    /// ([`Database::open_recovering`]).
    pub recovery: Option<RecoveryReport>,
    /// What opening the database dropped from write-ahead logs: torn last records, and
    /// damaged records with every later one ([`Database::log_recovery`]).
    pub log: Vec<LogRecovery>,
}

impl VerifyReport {
    /// Whether nothing is wrong: no problem found and nothing dropped when opening (a torn
    /// last log record, which a crash leaves, does not count).
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty() && self.recovery.is_none() && !self.log.iter().any(|l| l.damaged)
    }
}

impl Database {
    /// Checks every bucket of every collection (see `docs/cli.md`, `tscoll verify`): every
    /// data segment decodes (blob checksum included), every control record decodes and
    /// agrees with its data (`control.count`, `control.min`/`max`, the time range), every
    /// bucket has its meta+time index entry and the entries of its secondary indexes, and
    /// every index entry points at a bucket. Reads one snapshot; writes nothing.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let m = doc! { "t": DateTime::from_millis(0), "m": 1, "v": 2.5 };
    /// coll.insert_many(&[m], &InsertOptions::default())?;
    /// let report = db.verify()?;
    /// assert!(report.is_ok(), "{:?}", report.problems);
    /// assert_eq!((report.buckets, report.measurements), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// Storing the rows held in memory first may fail ([`Error::Storage`], [`Error::Io`]);
    /// what cannot be read is reported as a [`ProblemKind::Unreadable`] problem.
    pub fn verify(&self) -> Result<VerifyReport> {
        for c in self.collections() {
            c.inner.flush_open()?;
        }
        let snap = self.inner.fjall.snapshot();
        let mut colls = self.collections();
        colls.sort_by(|a, b| a.name().cmp(b.name()));
        let mut report = VerifyReport {
            recovery: self.recovery_report(),
            log: self.log_recovery(),
            ..VerifyReport::default()
        };
        for c in &colls {
            report.collections += 1;
            c.inner.verify(&snap, &mut report);
        }
        Ok(report)
    }

    /// Every key and value of keyspace `name`, in key order (for tests and inspection).
    ///
    /// # Errors
    /// [`Error::Rejected`] when there is no such keyspace; [`Error::Storage`] when fjall fails.
    #[doc(hidden)]
    pub fn raw_entries(&self, name: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        for c in self.collections() {
            c.inner.flush_open()?;
        }
        let ks = self.raw_keyspace(name)?;
        let mut out = Vec::new();
        for item in ks.iter() {
            let (k, v) = item
                .into_inner()
                .map_err(Error::storage("reading a keyspace"))?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// Writes (`Some`) or removes (`None`) one raw value of keyspace `name`, bypassing every
    /// check (to damage a database in tests).
    ///
    /// # Errors
    /// [`Error::Rejected`] when there is no such keyspace; [`Error::Storage`] when fjall fails.
    #[doc(hidden)]
    pub fn raw_write(&self, name: &str, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let ks = self.raw_keyspace(name)?;
        match value {
            Some(v) => ks.insert(key, v),
            None => ks.remove(key),
        }
        .map_err(Error::storage("writing a keyspace"))?;
        self.inner
            .fjall
            .persist(fjall::PersistMode::SyncAll)
            .map_err(Error::storage("persisting"))
    }

    fn raw_keyspace(&self, name: &str) -> Result<fjall::Keyspace> {
        keyspaces::open_existing(&self.inner.fjall, name)
    }
}

#[doc(hidden)]
pub(crate) fn storage_keyspaces(coll: &Collection) -> Vec<String> {
    let inner = &coll.inner;
    let mut out: Vec<String> = keyspace_names(inner.id).into();
    out.extend(
        inner
            .indexes()
            .secondary
            .iter()
            .map(|s| secondary_index_keyspace(inner.id, s.no)),
    );
    out
}

/// A decoded segment read as rows.
pub(crate) struct Rows {
    /// Time of each row (ms).
    pub(crate) times: Vec<i64>,
    /// Every other column in stored order: its name and one value per row (`None` where
    /// the measurement lacks the field).
    pub(crate) columns: Vec<(String, Vec<Option<Bson>>)>,
}

/// Reads a decoded segment as rows.
///
/// # Errors
/// A message when a column has the wrong length, the time column is missing or holds a
/// non-date, or a value is not valid BSON.
pub(crate) fn read_rows(seg: &Bucket, time_field: &str) -> std::result::Result<Rows, String> {
    let mut times = None;
    let mut columns = Vec::with_capacity(seg.columns.len());
    for (name, col) in &seg.columns {
        if col.len() != seg.row_count {
            return Err(format!("column '{name}' has the wrong length"));
        }
        if name == time_field {
            let mut t = Vec::with_capacity(seg.row_count);
            for v in col.iter() {
                match v {
                    ValueRef::Int(tag::DATETIME, ms) => t.push(ms),
                    _ => return Err("the time column holds a non-date".to_owned()),
                }
            }
            times = Some(t);
            continue;
        }
        let mut values = Vec::with_capacity(seg.row_count);
        for v in col.iter() {
            values.push(to_bson(v).map_err(|e| format!("column '{name}': {e}"))?);
        }
        if values.len() != seg.row_count {
            return Err(format!("column '{name}' has the wrong length"));
        }
        columns.push((name.clone(), values));
    }
    let times = times.ok_or_else(|| "the segment has no time column".to_owned())?;
    if times.len() != seg.row_count {
        return Err("the time column has the wrong length".to_owned());
    }
    Ok(Rows { times, columns })
}

/// Whether two values are the same BSON bytes (doubles bit for bit, field order included).
pub(crate) fn same_bson(a: &Bson, b: &Bson) -> bool {
    let bytes = |v: &Bson| {
        let mut d = Document::new();
        d.insert("", v.clone());
        d.to_vec().ok()
    };
    bytes(a) == bytes(b)
}

/// Meta bytes by bucket id, as the built secondary indexes hold them (`m` of each entry's
/// value); entries that do not decode are left out.
pub(crate) fn secondary_meta(
    coll: &CollectionInner,
    snap: &Snapshot,
) -> HashMap<BucketId, Vec<u8>> {
    let mut out = HashMap::new();
    for index in coll.indexes().secondary.iter().filter(|s| s.ready) {
        if !keyspaces::secondary_index_exists(&coll.fjall, coll.id, index.no) {
            continue;
        }
        let Ok(ks) = index.keyspace(&coll.fjall, coll.id) else {
            continue;
        };
        for item in snap.iter(&ks) {
            let Ok((k, v)) = item.into_inner() else {
                break;
            };
            let (Some(id), Ok(d)) = (secondary_entry_bucket(&k), Document::from_reader(&v[..]))
            else {
                continue;
            };
            if let Ok(m) = d.get_binary_generic("m") {
                out.entry(id).or_insert_with(|| m.clone());
            }
        }
    }
    out
}

/// A meta+time index entry as read.
struct DirEntry {
    hash: u64,
    min_time: i64,
    meta: Arc<[u8]>,
}

/// A secondary index entry's value as read: `t` and `m` (`None` when absent or undecodable).
struct SecondaryValue {
    t: Option<i64>,
    m: Option<Vec<u8>>,
}

/// One secondary index being checked.
struct SecondaryCheck {
    index: Arc<SecondaryIndex>,
    entries: HashMap<BucketId, Vec<SecondaryValue>>,
}

/// One bucket's data segments as read: `(segment number, value)`, or why they could not be
/// read.
type Segments = std::result::Result<Vec<(u32, fjall::Slice)>, String>;

/// Collects problems of one collection.
struct Checker<'a> {
    coll: &'a CollectionInner,
    report: &'a mut VerifyReport,
    time_field: String,
}

impl Checker<'_> {
    fn problem(&mut self, bucket: Option<&BucketId>, kind: ProblemKind, detail: String) {
        self.report.problems.push(Problem {
            collection: self.coll.name.clone(),
            bucket: bucket.map(|b| hex(b)),
            kind,
            detail,
        });
    }
}

/// The data keyspace read in key order, one bucket's segments at a time.
struct DataGroups<I: Iterator<Item = fjall::Result<fjall::KvPair>>> {
    items: Peekable<I>,
    /// No read failed so far.
    ok: bool,
    name: String,
}

impl<I: Iterator<Item = fjall::Result<fjall::KvPair>>> DataGroups<I> {
    /// The next bucket with its segments; `None` at the end or after a failure.
    fn next_group(&mut self, ck: &mut Checker<'_>) -> Option<(BucketId, Vec<(u32, fjall::Slice)>)> {
        let mut group: Option<(BucketId, Vec<(u32, fjall::Slice)>)> = None;
        while self.ok {
            let parsed = match self.items.peek() {
                None => break,
                Some(Ok((k, _))) => parse_data_key(k).ok_or_else(|| hex(k)),
                Some(Err(_)) => {
                    if let Some(Err(e)) = self.items.next() {
                        self.ok = false;
                        ck.problem(
                            None,
                            ProblemKind::Unreadable,
                            format!(
                                "keyspace {} (the buckets' data segments): {}; the buckets are \
                                 read one by one from there",
                                self.name,
                                read_failure(ck.coll.store.raw().data, &e)
                            ),
                        );
                    }
                    break;
                }
            };
            match parsed {
                Err(key) => {
                    self.items.next();
                    ck.problem(
                        None,
                        ProblemKind::MalformedKey,
                        format!(
                            "keyspace {}: key {key} is not a bucket id and a segment number",
                            self.name
                        ),
                    );
                }
                Ok((id, seg)) => {
                    if group.as_ref().is_some_and(|(g, _)| *g != id) {
                        break;
                    }
                    if let Some(Ok((_, v))) = self.items.next() {
                        group
                            .get_or_insert_with(|| (id, Vec::new()))
                            .1
                            .push((seg, v));
                    }
                }
            }
        }
        group
    }
}

impl CollectionInner {
    /// Checks the collection's buckets and indexes in `snap`, adding to `report`.
    fn verify(&self, snap: &Snapshot, report: &mut VerifyReport) {
        let mut ck = Checker {
            coll: self,
            report,
            time_field: self.spec().time_field,
        };
        let [data_name, ctl_name, idx_name] = keyspace_names(self.id);
        let mut dir = self.read_directory(snap, &idx_name, &mut ck);
        let mut secondary = self.read_secondary(snap, &mut ck);
        let mut data = DataGroups {
            items: snap
                .iter(self.store.raw().data)
                .map(fjall::Guard::into_inner)
                .peekable(),
            ok: true,
            name: data_name,
        };
        let mut pending = data.next_group(&mut ck);
        let mut ctl_ok = true;
        for item in snap.iter(self.store.raw().control) {
            let (k, v) = match item.into_inner() {
                Ok(kv) => kv,
                Err(e) => {
                    ctl_ok = false;
                    ck.problem(
                        None,
                        ProblemKind::Unreadable,
                        format!(
                            "keyspace {ctl_name} (the buckets' control records): {}; the \
                             buckets after the failure were not checked",
                            read_failure(self.store.raw().control, &e)
                        ),
                    );
                    break;
                }
            };
            if let Some(id) = parse_retired_key(&k) {
                // A retirement marker (docs/durability.md): a log position.
                if LogPosition::from_bytes(&v).is_none() {
                    ck.problem(
                        Some(&id),
                        ProblemKind::MalformedKey,
                        format!(
                            "keyspace {ctl_name}: the retirement marker of {} is not a log \
                             position",
                            hex(&id)
                        ),
                    );
                }
                continue;
            }
            let Some(id) = parse_control_key(&k) else {
                ck.problem(
                    None,
                    ProblemKind::MalformedKey,
                    format!("keyspace {ctl_name}: key {} is not a bucket id", hex(&k)),
                );
                continue;
            };
            while let Some((gid, segs)) = pending.take_if(|(gid, _)| *gid < id) {
                self.check_bucket(&mut ck, &gid, None, Ok(segs), &mut dir, &mut secondary);
                pending = data.next_group(&mut ck);
            }
            let segs = match pending.take_if(|(gid, _)| *gid == id) {
                Some((_, segs)) => {
                    pending = data.next_group(&mut ck);
                    Ok(segs)
                }
                None if data.ok => Ok(Vec::new()),
                None => self.read_segments_in(snap, &id),
            };
            self.check_bucket(&mut ck, &id, Some(&v[..]), segs, &mut dir, &mut secondary);
        }
        if !ctl_ok {
            return;
        }
        while let Some((gid, segs)) = pending.take() {
            self.check_bucket(&mut ck, &gid, None, Ok(segs), &mut dir, &mut secondary);
            pending = data.next_group(&mut ck);
        }
        for id in dir.keys() {
            ck.problem(
                Some(id),
                ProblemKind::DanglingIndexEntry,
                format!("keyspace {idx_name}: entry of a bucket that does not exist"),
            );
        }
        for s in secondary {
            let name = secondary_index_keyspace(self.id, s.index.no);
            let mut ids: Vec<&BucketId> = s.entries.keys().collect();
            ids.sort();
            for id in ids {
                ck.problem(
                    Some(id),
                    ProblemKind::DanglingSecondaryEntry,
                    format!(
                        "index '{}' (keyspace {name}): entry of a bucket that does not exist",
                        s.index.def.name
                    ),
                );
            }
        }
    }

    /// The meta+time index: entries by bucket id. Problems of single entries are reported.
    fn read_directory(
        &self,
        snap: &Snapshot,
        idx_name: &str,
        ck: &mut Checker<'_>,
    ) -> BTreeMap<BucketId, DirEntry> {
        let mut dir = BTreeMap::new();
        let mut metas: HashMap<Vec<u8>, Arc<[u8]>> = HashMap::new();
        // The last series record met: its hash and meta.
        let mut record: Option<(u64, Option<Vec<u8>>)> = None;
        for item in snap.iter(self.store.raw().index) {
            let (k, v) = match item.into_inner() {
                Ok(kv) => kv,
                Err(e) => {
                    ck.problem(
                        None,
                        ProblemKind::Unreadable,
                        format!(
                            "keyspace {idx_name} (the meta+time index): {}; the entries after \
                             the failure were not read",
                            read_failure(self.store.raw().index, &e)
                        ),
                    );
                    break;
                }
            };
            if let Some(hash) = parse_series_record_key(&k) {
                // A series record: it sorts before the entries of its hash that refer to it.
                record = Some((hash, None));
                match parse_series_record(&v) {
                    None => ck.problem(
                        None,
                        ProblemKind::IndexEntryMismatch,
                        format!(
                            "keyspace {idx_name}: the series record {} has unknown flags",
                            hex(&k)
                        ),
                    ),
                    Some(r) => {
                        let meta = r.meta.map(<[u8]>::to_vec);
                        if let Some(m) = &meta
                            && BucketKey::from_bytes(m.clone()).hash != hash
                        {
                            ck.problem(
                                None,
                                ProblemKind::IndexEntryMismatch,
                                format!(
                                    "keyspace {idx_name}: the meta of series record {} \
                                     hashes elsewhere",
                                    hex(&k)
                                ),
                            );
                        }
                        record = Some((hash, meta));
                    }
                }
                continue;
            }
            let Some((hash, min_time, id)) = parse_index_key(&k) else {
                ck.problem(
                    None,
                    ProblemKind::MalformedKey,
                    format!(
                        "keyspace {idx_name}: key {} is neither a series record's nor hash, \
                         min time and bucket id",
                        hex(&k)
                    ),
                );
                continue;
            };
            ck.report.index_entries += 1;
            let bytes = if v[..] == SAME_AS_SERIES_RECORD {
                match &record {
                    Some((h, Some(meta))) if *h == hash => meta.clone(),
                    _ => {
                        ck.problem(
                            Some(&id),
                            ProblemKind::IndexEntryMismatch,
                            format!(
                                "keyspace {idx_name}: the entry refers to a series record \
                                 that does not exist"
                            ),
                        );
                        continue;
                    }
                }
            } else {
                v.to_vec()
            };
            let key = BucketKey::from_bytes(bytes);
            if key.hash != hash {
                ck.problem(
                    Some(&id),
                    ProblemKind::IndexEntryMismatch,
                    format!(
                        "keyspace {idx_name}: the meta bytes hash to {:016x}, the key holds \
                         {hash:016x}",
                        key.hash
                    ),
                );
            }
            if let Err(e) = key.meta_value() {
                ck.problem(
                    Some(&id),
                    ProblemKind::IndexEntryMismatch,
                    format!("keyspace {idx_name}: the meta value does not decode: {e}"),
                );
            }
            let meta = metas
                .entry(key.bytes)
                .or_insert_with_key(|b| Arc::from(b.as_slice()))
                .clone();
            let entry = DirEntry {
                hash,
                min_time,
                meta,
            };
            if let Some(before) = dir.insert(id, entry) {
                ck.problem(
                    Some(&id),
                    ProblemKind::IndexEntryMismatch,
                    format!(
                        "keyspace {idx_name}: two entries for one bucket (hashes {:016x}, \
                         {hash:016x})",
                        before.hash
                    ),
                );
            }
        }
        dir
    }

    /// The entries of every built secondary index, by bucket id.
    fn read_secondary(&self, snap: &Snapshot, ck: &mut Checker<'_>) -> Vec<SecondaryCheck> {
        let mut out = Vec::new();
        for index in self.indexes().secondary.iter().filter(|s| s.ready) {
            let name = secondary_index_keyspace(self.id, index.no);
            let mut check = SecondaryCheck {
                index: Arc::clone(index),
                entries: HashMap::new(),
            };
            if !keyspaces::secondary_index_exists(&self.fjall, self.id, index.no) {
                ck.problem(
                    None,
                    ProblemKind::MissingSecondaryEntry,
                    format!(
                        "index '{}': its keyspace {name} does not exist",
                        index.def.name
                    ),
                );
                out.push(check);
                continue;
            }
            let ks = match index.keyspace(&self.fjall, self.id) {
                Ok(ks) => ks,
                Err(e) => {
                    ck.problem(
                        None,
                        ProblemKind::Unreadable,
                        format!("index '{}': {e}", index.def.name),
                    );
                    continue;
                }
            };
            for item in snap.iter(&ks) {
                let (k, v) = match item.into_inner() {
                    Ok(kv) => kv,
                    Err(e) => {
                        ck.problem(
                            None,
                            ProblemKind::Unreadable,
                            format!(
                                "keyspace {name} (index '{}'): {}; the entries after the \
                                 failure were not read",
                                index.def.name,
                                read_failure(&ks, &e)
                            ),
                        );
                        break;
                    }
                };
                let Some(id) = secondary_entry_bucket(&k) else {
                    ck.problem(
                        None,
                        ProblemKind::MalformedKey,
                        format!(
                            "keyspace {name}: key {} is too short to end with a bucket id",
                            hex(&k)
                        ),
                    );
                    continue;
                };
                ck.report.index_entries += 1;
                let value = Document::from_reader(&v[..]).ok();
                let t = value.as_ref().and_then(|d| d.get_i64("t").ok());
                let m = value
                    .as_ref()
                    .and_then(|d| d.get_binary_generic("m").ok())
                    .cloned();
                check
                    .entries
                    .entry(id)
                    .or_default()
                    .push(SecondaryValue { t, m });
            }
            out.push(check);
        }
        out
    }

    /// The segments of one bucket, read by a prefix scan.
    fn read_segments_in(&self, snap: &Snapshot, id: &BucketId) -> Segments {
        read_segments(snap, self.store.raw().data, id)
    }

    /// Checks one bucket: its control record (`None` = absent), its segments, its index
    /// entries (taken out of `dir` and `secondary`).
    fn check_bucket(
        &self,
        ck: &mut Checker<'_>,
        id: &BucketId,
        control: Option<&[u8]>,
        segments: Segments,
        dir: &mut BTreeMap<BucketId, DirEntry>,
        secondary: &mut [SecondaryCheck],
    ) {
        ck.report.buckets += 1;
        let has_record = control.is_some();
        let control = match control.map(Control::decode) {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                ck.problem(Some(id), ProblemKind::CorruptControl, e);
                None
            }
            None => None,
        };
        let entry = dir.remove(id);
        match (&control, &entry) {
            (Some(c), Some(e)) => {
                if e.hash != c.meta_hash {
                    ck.problem(
                        Some(id),
                        ProblemKind::IndexEntryMismatch,
                        format!(
                            "the index entry is under meta hash {:016x}, the control record \
                             says {:016x}",
                            e.hash, c.meta_hash
                        ),
                    );
                }
                if e.min_time != c.min_time {
                    ck.problem(
                        Some(id),
                        ProblemKind::IndexEntryMismatch,
                        format!(
                            "the index entry has min time {}, the control record {}",
                            fmt_time(e.min_time),
                            fmt_time(c.min_time)
                        ),
                    );
                }
            }
            (Some(_), None) => ck.problem(
                Some(id),
                ProblemKind::MissingIndexEntry,
                "the bucket has no entry in the meta+time index (queries and writes do not see \
                 it)"
                .to_owned(),
            ),
            (None, Some(_)) if !has_record => ck.problem(
                Some(id),
                ProblemKind::DanglingIndexEntry,
                "the meta+time index lists the bucket, but it has no control record".to_owned(),
            ),
            _ => {}
        }
        let segments = match segments {
            Ok(s) => s,
            Err(e) => {
                ck.problem(
                    Some(id),
                    ProblemKind::Unreadable,
                    format!("its segments cannot be read: {e}"),
                );
                return;
            }
        };
        if segments.is_empty() && has_record {
            ck.problem(
                Some(id),
                ProblemKind::MissingData,
                "the control record has no data segments".to_owned(),
            );
        }
        if !segments.is_empty() && !has_record {
            ck.problem(
                Some(id),
                ProblemKind::MissingControl,
                format!(
                    "{} data segment(s) without a control record",
                    segments.len()
                ),
            );
        }
        let mut rows_ok = true;
        let mut all: Vec<Rows> = Vec::with_capacity(segments.len());
        for (no, value) in &segments {
            ck.report.segments += 1;
            let decoded = tscoll_codec::decode_bucket(value)
                .map_err(|e| e.to_string())
                .and_then(|b| read_rows(&b, &ck.time_field));
            match decoded {
                Ok(rows) => {
                    ck.report.measurements += rows.times.len() as u64;
                    all.push(rows);
                }
                Err(e) => {
                    rows_ok = false;
                    ck.problem(
                        Some(id),
                        ProblemKind::CorruptSegment,
                        format!("segment {no}: {e}"),
                    );
                }
            }
            if let Some(c) = &control
                && *no >= c.next_segment
            {
                ck.problem(
                    Some(id),
                    ProblemKind::ControlMismatch,
                    format!(
                        "segment {no} is at or past the control record's segment count {}",
                        c.next_segment
                    ),
                );
            }
        }
        if let Some(c) = &control
            && rows_ok
            && !segments.is_empty()
        {
            for detail in control_mismatches(c, &all, &ck.time_field) {
                ck.problem(Some(id), ProblemKind::ControlMismatch, detail);
            }
        }
        let meta = entry.as_ref().map(|e| Arc::clone(&e.meta));
        for s in secondary.iter_mut() {
            let entries = s.entries.remove(id).unwrap_or_default();
            let label = format!(
                "index '{}' (keyspace {})",
                s.index.def.name,
                secondary_index_keyspace(self.id, s.index.no)
            );
            match &control {
                Some(c) => {
                    ck.check_secondary(id, &label, &s.index, c, meta.as_deref(), &entries);
                }
                None if !entries.is_empty() && !has_record => ck.problem(
                    Some(id),
                    ProblemKind::DanglingSecondaryEntry,
                    format!("{label}: entry of a bucket without a control record"),
                ),
                None => {}
            }
        }
    }
}

impl Checker<'_> {
    /// Checks one bucket's entries in one secondary index.
    fn check_secondary(
        &mut self,
        id: &BucketId,
        label: &str,
        index: &SecondaryIndex,
        control: &Control,
        meta: Option<&[u8]>,
        entries: &[SecondaryValue],
    ) {
        for e in entries {
            match e.t {
                Some(t) if t == control.min_time => {}
                Some(t) => self.problem(
                    Some(id),
                    ProblemKind::SecondaryEntryMismatch,
                    format!(
                        "{label}: the entry has min time {}, the control record {}",
                        fmt_time(t),
                        fmt_time(control.min_time)
                    ),
                ),
                None => self.problem(
                    Some(id),
                    ProblemKind::SecondaryEntryMismatch,
                    format!("{label}: the entry's value does not decode"),
                ),
            }
            if let (Some(m), Some(expected)) = (&e.m, meta)
                && m.as_slice() != expected
            {
                self.problem(
                    Some(id),
                    ProblemKind::SecondaryEntryMismatch,
                    format!("{label}: the entry holds another meta value than the bucket's"),
                );
            }
        }
        let meta_value = meta.and_then(|m| BucketKey::from_bytes(m.to_vec()).meta_value().ok());
        if entries.is_empty()
            && meta.is_some()
            && requires_entry(index, control, meta_value.as_ref().and_then(Option::as_ref))
        {
            self.problem(
                Some(id),
                ProblemKind::MissingSecondaryEntry,
                format!("{label}: the bucket has no entry"),
            );
        }
    }
}

/// Whether a bucket must have at least one entry in a secondary index (`docs/keys.md`,
/// "Secondary indexes"). `false` where that depends on more than its key's first component
/// (partial and sparse indexes, array values, nested measurement paths).
fn requires_entry(index: &SecondaryIndex, control: &Control, meta: Option<&Bson>) -> bool {
    let def = &index.def;
    if def.partial.is_some() || def.sparse {
        return false;
    }
    match def.components.first() {
        Some(Component::Time { .. }) => true,
        Some(Component::Meta { path, .. }) => {
            let mut cur = meta;
            for p in path {
                cur = match cur {
                    Some(Bson::Document(d)) => d.get(p),
                    _ => None,
                };
            }
            !matches!(cur, Some(Bson::Array(_)))
        }
        Some(Component::Measurement { path, .. }) => {
            path.len() == 1 && control.min.contains_key(&path[0])
        }
        None => false,
    }
}

/// What the control record says that the rows do not: count, time range, sortedness,
/// per-field `control.min` / `control.max`.
fn control_mismatches(c: &Control, segments: &[Rows], time_field: &str) -> Vec<String> {
    let mut out = Vec::new();
    let rows: usize = segments.iter().map(|r| r.times.len()).sum();
    if rows != c.count as usize {
        out.push(format!(
            "control.count is {}, the segments hold {rows} measurements",
            c.count
        ));
    }
    let mut times = segments.iter().flat_map(|r| r.times.iter().copied());
    if let Some(first) = times.next() {
        let (mut lo, mut hi, mut prev, mut sorted) = (first, first, first, true);
        for t in times {
            lo = lo.min(t);
            hi = hi.max(t);
            sorted &= t >= prev;
            prev = t;
        }
        if lo < c.min_time {
            out.push(format!(
                "the earliest measurement ({}) is before control.min.{time_field} ({})",
                fmt_time(lo),
                fmt_time(c.min_time)
            ));
        }
        if hi != c.max_time {
            out.push(format!(
                "the latest measurement is at {}, control.max.{time_field} says {}",
                fmt_time(hi),
                fmt_time(c.max_time)
            ));
        }
        if c.sorted && !sorted {
            out.push(
                "control.version is 2 (time-sorted) but the measurements are not in time order"
                    .to_owned(),
            );
        }
    }
    for (doc, which, t) in [(&c.min, "min", c.min_time), (&c.max, "max", c.max_time)] {
        match doc.get(time_field) {
            Some(Bson::DateTime(d)) if d.timestamp_millis() == t => {}
            other => out.push(format!(
                "control.{which}.{time_field} is {}, the record's {which} time is {}",
                other.map_or_else(|| "missing".to_owned(), ToString::to_string),
                fmt_time(t)
            )),
        }
    }
    let mut folded: Vec<(&str, MinMax)> = Vec::new();
    for seg in segments {
        for (name, values) in &seg.columns {
            let slot = match folded.iter().position(|(n, _)| n == name) {
                Some(i) => Some(i),
                None => values.iter().flatten().next().map(|v| {
                    folded.push((name, MinMax::new(v)));
                    folded.len() - 1
                }),
            };
            if let Some(i) = slot {
                for v in values.iter().flatten() {
                    folded[i].1.update(v);
                }
            }
        }
    }
    for (name, mm) in &folded {
        for (doc, which, expected) in [(&c.min, "min", mm.min()), (&c.max, "max", mm.max())] {
            match doc.get(*name) {
                Some(v) if same_bson(v, &expected) => {}
                Some(v) => out.push(format!(
                    "control.{which}.{name} is {v}, the measurements' {which} is {expected}"
                )),
                None => out.push(format!(
                    "control.{which} lacks field '{name}', which the measurements hold"
                )),
            }
        }
    }
    for name in c.min.keys() {
        if name != time_field && !folded.iter().any(|(n, _)| n == name) {
            out.push(format!(
                "control.min has field '{name}', which no measurement holds"
            ));
        }
    }
    if let Some(sums) = &c.sums {
        sum_mismatches(c, sums, segments, &mut out);
    }
    out
}

/// What the control record's sums say that the rows do not: per field, the number of
/// numeric values, the integer sum and which types occur (the double sums and squared
/// deviations depend on the order of additions, and are not compared).
fn sum_mismatches(
    c: &Control,
    sums: &tscoll_catalog::BucketSums,
    segments: &[Rows],
    out: &mut Vec<String>,
) {
    if sums.fields.len() > c.min.len() {
        out.push(format!(
            "control.sums has {} fields, control.min {}",
            sums.fields.len(),
            c.min.len()
        ));
        return;
    }
    for (i, name) in c.min.keys().enumerate() {
        let Some(stored) = sums.field(i) else {
            continue; // a Decimal128: no sums kept
        };
        let mut column = tscoll_codec::Column::new();
        for seg in segments {
            let values = seg.columns.iter().find(|(n, _)| n == name);
            for row in 0..seg.times.len() {
                match values
                    .and_then(|(_, v)| v.get(row))
                    .and_then(Option::as_ref)
                {
                    Some(Bson::Int32(x)) => column.push_int(tscoll_codec::tag::INT32, (*x).into()),
                    Some(Bson::Int64(x)) => column.push_int(tscoll_codec::tag::INT64, *x),
                    Some(Bson::Double(x)) => column.push_float(*x),
                    _ => column.push_missing(),
                }
            }
        }
        let Some(data) = tscoll_catalog::FieldSums::of_rows(&column, 0, column.len()) else {
            continue;
        };
        if (stored.count, stored.ints, stored.longs, stored.doubles)
            != (data.count, data.ints, data.longs, data.doubles)
        {
            out.push(format!(
                "control.sums.{name} counts {} numbers with integer sum {}, the \
                 measurements {} with {}",
                stored.count, stored.ints, data.count, data.ints
            ));
        }
    }
}

/// A time (ms) as ISO-8601, or the number when out of range.
pub(crate) fn fmt_time(ms: i64) -> String {
    DateTime::from_millis(ms)
        .try_to_rfc3339_string()
        .unwrap_or_else(|_| format!("{ms} ms"))
}
