//! The read path (SPEC §14): index scan → bucket pruning with control (§14.4) → decode only the
//! needed columns → per-row filter → unpack (§14.1) → sort on time → limit.

use std::collections::HashSet;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::{BucketId, BucketKey};
use tscoll_codec::ColumnIter;

use crate::collection::{Collection, CollectionInner};
use crate::control::Control;
use crate::error::{Error, ErrorCode, Result};
use crate::filter::Filter;
use crate::keys::{hex, parse_index_key, time_bytes};

/// Order of results on the time field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// Options of [`Collection::find`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindOptions {
    /// A MongoDB projection on top-level fields: inclusion (`{a: 1}`, `_id` kept unless
    /// `_id: 0`) or exclusion (`{a: 0}`). Default = every field.
    pub projection: Option<Document>,
    /// Sort on the time field. Default = bucket order, rows in stored order (SPEC R-14.1.3).
    pub sort: Option<SortOrder>,
    /// At most this many measurements. Default = all.
    pub limit: Option<usize>,
}

enum Projection {
    All,
    Include(HashSet<String>),
    Exclude(HashSet<String>),
}

impl Projection {
    fn parse(p: Option<&Document>) -> Result<Projection> {
        let Some(p) = p else {
            return Ok(Projection::All);
        };
        let mut include = HashSet::new();
        let mut exclude = HashSet::new();
        for (k, v) in p {
            if k.contains('.') || k.starts_with('$') {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    format!("projection on '{k}': only top-level fields are supported"),
                ));
            }
            let on = match v {
                Bson::Boolean(b) => *b,
                Bson::Int32(i) => *i != 0,
                Bson::Int64(i) => *i != 0,
                Bson::Double(d) => *d != 0.0,
                _ => {
                    return Err(Error::rejected(
                        ErrorCode::BadValue,
                        format!("projection value of '{k}' must be 0 or 1"),
                    ));
                }
            };
            if on {
                include.insert(k.clone())
            } else {
                exclude.insert(k.clone())
            };
        }
        if !include.is_empty() {
            let id_excluded = exclude.remove("_id");
            if !exclude.is_empty() {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    "cannot mix inclusion and exclusion in a projection",
                ));
            }
            if !id_excluded {
                include.insert("_id".to_owned());
            }
            Ok(Projection::Include(include))
        } else {
            Ok(Projection::Exclude(exclude))
        }
    }

    fn keeps(&self, field: &str) -> bool {
        match self {
            Projection::All => true,
            Projection::Include(s) => s.contains(field),
            Projection::Exclude(s) => !s.contains(field),
        }
    }
}

impl Collection {
    /// Finds measurements matching a MongoDB-style filter (SPEC §14).
    ///
    /// Supported: equality and `$in` on the meta field and its sub-fields (`"meta.series"`);
    /// `$eq/$gt/$gte/$lt/$lte` on the time field (date operands; others match nothing) and on
    /// measurement fields (dotted paths too); `$in` on measurement fields; `$and`. Whole-meta
    /// equality is field-order sensitive (SPEC R-3.4). Each result has the shape of SPEC §14.1:
    /// time field, meta field, then the bucket's other columns.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..10).map(|i| doc! { "t": DateTime::from_millis(i * 1000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let opts = FindOptions { sort: Some(SortOrder::Descending), limit: Some(3), ..Default::default() };
    /// let last = coll.find(&doc! { "m": "a", "t": { "$gte": DateTime::from_millis(5000) } }, &opts)?;
    /// assert_eq!(last.iter().map(|d| d.get_i64("v").unwrap()).collect::<Vec<_>>(), [9, 8, 7]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `BadValue` for an unsupported operator or projection; [`Error::Storage`],
    /// [`Error::Codec`] or [`Error::Corruption`] when stored data cannot be read.
    pub fn find(&self, filter: &Document, options: &FindOptions) -> Result<Vec<Document>> {
        self.inner.find(filter, options)
    }
}

/// A candidate bucket from the index: id and normalized meta bytes.
pub(crate) struct Candidate {
    pub(crate) id: BucketId,
    pub(crate) meta: Vec<u8>,
}

impl CollectionInner {
    /// Scans the meta+time index for buckets whose meta and min time may match.
    pub(crate) fn candidates(&self, filter: &Filter) -> Result<Vec<Candidate>> {
        let spec = self.spec();
        let Some((lo, hi)) = filter.min_time_bounds(spec.bucket_max_span_seconds * 1000) else {
            return Ok(Vec::new());
        };
        if let Some(entries) = self.secondary_candidates(filter)? {
            return Ok(entries
                .into_iter()
                .filter(|e| e.min_time >= lo && e.min_time <= hi)
                .filter(|e| {
                    e.key
                        .meta_value()
                        .is_ok_and(|m| filter.matches_meta(m.as_ref()))
                })
                .map(|e| Candidate {
                    id: e.id,
                    meta: e.key.bytes,
                })
                .collect());
        }
        let mut out = Vec::new();
        let mut scan = |range: (Vec<u8>, Vec<u8>)| -> Result<()> {
            for item in self.idx.range(range.0..=range.1) {
                let (k, v) = item
                    .into_inner()
                    .map_err(Error::storage("scanning the meta+time index"))?;
                let Some((_, min_time, id)) = parse_index_key(&k) else {
                    continue;
                };
                if min_time < lo || min_time > hi {
                    continue;
                }
                let key = BucketKey::from_bytes(v.to_vec());
                let meta = key.meta_value().map_err(|reason| Error::Corruption {
                    keyspace: format!("c{}_idx", self.id),
                    key: hex(&k),
                    reason,
                })?;
                if filter.matches_meta(meta.as_ref()) {
                    out.push(Candidate {
                        id,
                        meta: key.bytes,
                    });
                }
            }
            Ok(())
        };
        match filter.meta_equalities() {
            Some(values) if spec.meta_field.is_some() => {
                for v in values {
                    // R-3.4: the filter value is not normalized; it must match byte for byte.
                    let mut bytes = Vec::new();
                    bytes.push(v.element_type() as u8);
                    bytes.extend_from_slice(&tscoll_catalog::value::raw_value_bytes(v));
                    let hash = BucketKey::from_bytes(bytes).hash.to_be_bytes();
                    let mut a = hash.to_vec();
                    a.extend_from_slice(&time_bytes(lo));
                    let mut b = hash.to_vec();
                    b.extend_from_slice(&time_bytes(hi));
                    b.extend_from_slice(&[0xff; 12]);
                    scan((a, b))?;
                }
            }
            _ => scan((Vec::new(), vec![0xff; 29]))?,
        }
        Ok(out)
    }

    fn find(&self, filter_doc: &Document, options: &FindOptions) -> Result<Vec<Document>> {
        let spec = self.spec();
        let filter = Filter::parse(filter_doc, &spec.time_field, spec.meta_field.as_deref())?;
        let projection = Projection::parse(options.projection.as_ref())?;
        let filter_fields: HashSet<&str> = filter.fields().collect();
        let time_field = spec.time_field.clone();
        let mut results: Vec<(i64, Document)> = Vec::new();
        let early_limit = if options.sort.is_none() {
            options.limit
        } else {
            None
        };
        'buckets: for cand in self.candidates(&filter)? {
            let Some(control) = self.control(&cand.id)? else {
                continue;
            };
            if !filter.bucket_may_match(
                control.min_time,
                control.max_time,
                &control.min,
                &control.max,
            ) {
                continue;
            }
            let whole = filter.whole_bucket_matches(control.min_time, control.max_time);
            let meta = BucketKey::from_bytes(cand.meta)
                .meta_value()
                .map_err(|reason| Error::Corruption {
                    keyspace: format!("c{}_idx", self.id),
                    key: hex(&cand.id),
                    reason,
                })?;
            let mut keep = |name: &str| {
                name == time_field || projection.keeps(name) || filter_fields.contains(name)
            };
            let rows = self.unpack_bucket(&cand.id, &control, meta.as_ref(), &mut keep)?;
            for (t, mut doc) in rows {
                if !whole && !filter.matches_row(&doc, t) {
                    continue;
                }
                if !matches!(projection, Projection::All) {
                    let drop: Vec<String> = doc
                        .keys()
                        .filter(|k| !projection.keeps(k))
                        .cloned()
                        .collect();
                    for k in drop {
                        doc.remove(&k);
                    }
                }
                results.push((t, doc));
                if early_limit.is_some_and(|l| results.len() >= l) {
                    break 'buckets;
                }
            }
        }
        match options.sort {
            Some(SortOrder::Ascending) => results.sort_by_key(|(t, _)| *t),
            Some(SortOrder::Descending) => results.sort_by_key(|(t, _)| std::cmp::Reverse(*t)),
            None => {}
        }
        if let Some(l) = options.limit {
            results.truncate(l);
        }
        Ok(results.into_iter().map(|(_, d)| d).collect())
    }

    /// Unpacks a bucket into measurements (SPEC §14.1): time, meta, then the other columns in
    /// the bucket's column order; rows in stored order. Returns `(time, document)` pairs.
    pub(crate) fn unpack_bucket(
        &self,
        id: &BucketId,
        control: &Control,
        meta: Option<&Bson>,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Vec<(i64, Document)>> {
        let spec = self.spec();
        let time_field = spec.time_field.as_str();
        let order: Vec<&str> = control
            .min
            .keys()
            .map(String::as_str)
            .filter(|n| *n != time_field)
            .collect();
        let segments = self.read_segments(id, &mut |n| n == time_field || keep(n))?;
        let corrupt = |reason: String| Error::Corruption {
            keyspace: format!("c{}_data", self.id),
            key: hex(id),
            reason,
        };
        let mut out = Vec::with_capacity(control.count as usize);
        for (_, seg) in &segments {
            let Some((_, time_col)) = seg.columns.iter().find(|(n, _)| n == time_field) else {
                return Err(corrupt("segment without a time column".to_owned()));
            };
            let mut cols: Vec<(&str, ColumnIter<'_>)> = order
                .iter()
                .filter_map(|name| {
                    seg.columns
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(n, c)| (n.as_str(), c.iter()))
                })
                .collect();
            for tv in time_col.iter() {
                let t = match tscoll_catalog::value::to_bson(tv).map_err(&corrupt)? {
                    Some(Bson::DateTime(d)) => d.timestamp_millis(),
                    _ => return Err(corrupt("time column holds a non-date".to_owned())),
                };
                let mut doc = Document::new();
                if keep(time_field) {
                    doc.insert(time_field, DateTime::from_millis(t));
                }
                if let (Some(m), Some(name)) = (meta, spec.meta_field.as_deref())
                    && keep(name)
                {
                    doc.insert(name, m.clone());
                }
                for (name, it) in &mut cols {
                    if let Some(v) = it.next()
                        && let Some(b) = tscoll_catalog::value::to_bson(v).map_err(&corrupt)?
                    {
                        doc.insert(*name, b);
                    }
                }
                out.push((t, doc));
            }
        }
        Ok(out)
    }
}
