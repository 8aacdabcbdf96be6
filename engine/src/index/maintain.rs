//! Secondary index entries of a bucket, their maintenance on every commit and direct write,
//! and the build of a new index over the stored buckets (SPEC ).

use std::collections::{HashMap, HashSet};
use std::sync::PoisonError;

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Document, doc};
use tscoll_catalog::value::canonical_rank;
use tscoll_catalog::{BucketId, BucketKey};

use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::storage::control::Control;
use crate::storage::keys::hex;

use super::SecondaryIndex;
use super::keyenc::{ABSENT, UNKNOWN, encode, invert};
use super::spec::{Component, Definition};

/// Entries written per fjall batch while building an index.
const BUILD_BATCH: usize = 1000;

/// What a bucket's control record says of one measurement (or time) path.
#[derive(Debug, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "short-lived, one per index and bucket change"
)]
pub(crate) enum Bounds {
    /// No measurement of the bucket has the path.
    Absent,
    /// Control cannot bound the path's values (mixed types, arrays, objects; SPEC,
    /// the bucket must be read by any query on the path.
    Unknown,
    /// Every value at the path lies in `[lo, hi]`, both of one canonical type.
    Values(Bson, Bson),
}

/// The bounds of `path` in `control.min` / `control.max` (per-path extremes, SPEC ).
pub(crate) fn measurement_bounds(min: &Document, max: &Document, path: &[String]) -> Bounds {
    let Some((first, rest)) = path.split_first() else {
        return Bounds::Unknown;
    };
    let (mut lo, mut hi) = (min.get(first), max.get(first));
    for p in rest {
        match (lo, hi) {
            (None, None) => return Bounds::Absent,
            (Some(Bson::Document(a)), Some(Bson::Document(b))) => {
                lo = a.get(p);
                hi = b.get(p);
            }
            // A scalar has no sub-field: every measurement lacks the path.
            (Some(a), Some(b))
                if !matches!(a, Bson::Array(_) | Bson::Document(_))
                    && !matches!(b, Bson::Array(_) | Bson::Document(_))
                    && canonical_rank(a) == canonical_rank(b) =>
            {
                return Bounds::Absent;
            }
            _ => return Bounds::Unknown,
        }
    }
    match (lo, hi) {
        (None, None) => Bounds::Absent,
        (Some(a), Some(b))
            if !matches!(a, Bson::Array(_) | Bson::Document(_))
                && !matches!(b, Bson::Array(_) | Bson::Document(_))
                && canonical_rank(a) == canonical_rank(b) =>
        {
            Bounds::Values(a.clone(), b.clone())
        }
        _ => Bounds::Unknown,
    }
}

/// The bounds of a control-based component.
fn component_bounds(c: &Component, control: &Control) -> Bounds {
    match c {
        Component::Time { .. } => Bounds::Values(
            Bson::DateTime(DateTime::from_millis(control.min_time)),
            Bson::DateTime(DateTime::from_millis(control.max_time)),
        ),
        Component::Measurement { path, .. } => measurement_bounds(&control.min, &control.max, path),
        Component::Meta { .. } => Bounds::Unknown,
    }
}

/// Appends the two key parts of a control-based component: `min ‖ max` ascending, `max ‖
/// min` inverted descending.
fn push_min_max(bounds: &Bounds, descending: bool, out: &mut Vec<u8>) {
    match bounds {
        Bounds::Values(lo, hi) => {
            if descending {
                encode(hi, true, out);
                encode(lo, true, out);
            } else {
                encode(lo, false, out);
                encode(hi, false, out);
            }
        }
        Bounds::Absent | Bounds::Unknown => {
            let tag = if *bounds == Bounds::Absent {
                ABSENT
            } else {
                UNKNOWN
            };
            let start = out.len();
            out.extend_from_slice(&[tag, tag]);
            if descending {
                invert(&mut out[start..]);
            }
        }
    }
}

/// Appends a meta value at a path as one key part (`ABSENT` when missing).
fn push_meta(v: Option<&Bson>, descending: bool, out: &mut Vec<u8>) {
    match v {
        Some(v) => encode(v, descending, out),
        None => {
            out.push(if descending { !ABSENT } else { ABSENT });
        }
    }
}

/// The value at `path` below a meta value: sub-fields of objects only, as the filter reads
/// meta paths (SPEC §14.2).
pub(crate) fn lookup<'a>(v: Option<&'a Bson>, path: &[String]) -> Option<&'a Bson> {
    let mut cur = v?;
    for p in path {
        cur = match cur {
            Bson::Document(d) => d.get(p)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The non-array values an array holds, at any depth (MongoDB matches a scalar operand
/// against every element, SPEC §14.2).
fn flatten<'a>(v: &'a Bson, out: &mut Vec<&'a Bson>) {
    match v {
        Bson::Array(items) => {
            for i in items {
                flatten(i, out);
            }
        }
        other => out.push(other),
    }
}

/// The entries `(key, value)` of one bucket in a secondary index (`docs/keys.md`): none when
/// the bucket is outside a partial or sparse index or lacks the leading measurement field;
/// one per distinct element when the leading meta value is an array.
pub(crate) fn bucket_entries(
    def: &Definition,
    id: &BucketId,
    meta_bytes: &[u8],
    meta: Option<&Bson>,
    control: &Control,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    if let Some((_, f)) = &def.partial
        && !(f.matches_meta(meta)
            && f.bucket_may_match(
                control.min_time,
                control.max_time,
                &control.min,
                &control.max,
            ))
    {
        return Vec::new();
    }
    if def.sparse
        && def.components.iter().all(|c| match c {
            Component::Meta { path, .. } => lookup(meta, path).is_none(),
            _ => false,
        })
    {
        return Vec::new();
    }
    let Some((lead, rest)) = def.components.split_first() else {
        return Vec::new();
    };
    let mut tail = Vec::new();
    for c in rest {
        match c {
            Component::Meta { path, descending } => {
                push_meta(lookup(meta, path), *descending, &mut tail);
            }
            other => push_min_max(
                &component_bounds(other, control),
                other.descending(),
                &mut tail,
            ),
        }
    }
    tail.extend_from_slice(id);
    let mut value = doc! {
        "t": control.min_time,
        "m": Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: meta_bytes.to_vec() }),
    };
    let mut leads: Vec<Vec<u8>> = Vec::new();
    match lead {
        Component::Meta { path, descending } => match lookup(meta, path) {
            Some(v @ Bson::Array(_)) => {
                let mut items = Vec::new();
                flatten(v, &mut items);
                let mut seen = HashSet::new();
                for item in items {
                    let mut k = Vec::new();
                    encode(item, *descending, &mut k);
                    if seen.insert(k.clone()) {
                        leads.push(k);
                    }
                }
            }
            other => {
                let mut k = Vec::new();
                push_meta(other, *descending, &mut k);
                leads.push(k);
            }
        },
        other => {
            let bounds = component_bounds(other, control);
            if bounds == Bounds::Absent {
                return Vec::new(); // no query on the field can match the bucket
            }
            let mut k = Vec::new();
            push_min_max(&bounds, other.descending(), &mut k);
            if let Bounds::Values(lo, hi) = bounds {
                value.insert("lo", lo);
                value.insert("hi", hi);
            }
            leads.push(k);
        }
    }
    let mut value_bytes = Vec::new();
    // Writing a Document into a Vec cannot fail.
    let _ = value.to_writer(&mut value_bytes);
    leads
        .into_iter()
        .map(|mut k| {
            k.extend_from_slice(&tail);
            (k, value_bytes.clone())
        })
        .collect()
}

impl CollectionInner {
    /// The normalized meta value of a series, for index entries.
    fn entry_meta(&self, key: &BucketKey) -> Result<Option<Bson>> {
        key.meta_value().map_err(|reason| Error::Corruption {
            keyspace: format!("c{}_idx", self.id),
            key: hex(&key.bytes),
            reason,
        })
    }

    /// Whether the collection has secondary indexes (SPEC §13) to maintain on commits.
    pub(crate) fn has_secondary_indexes(&self) -> bool {
        !self
            .indexes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .secondary
            .is_empty()
    }

    /// Adds to `wb` the secondary index changes of one bucket whose control record goes from
    /// `old` to `new` (`None` = absent) in series `key`: the entries of `old` that `new` does
    /// not have are removed, the new or changed ones written. Without secondary indexes this
    /// only takes a read lock; an index on meta fields alone is skipped while the bucket stays
    /// in its series (its entries cannot change).
    ///
    /// # Errors
    /// [`Error::Storage`] when an index keyspace cannot be opened; [`Error::Corruption`] for
    /// undecodable meta bytes.
    pub(crate) fn index_bucket_change(
        &self,
        wb: &mut crate::storage::StoreBatch,
        id: &BucketId,
        key: &BucketKey,
        old: Option<&Control>,
        new: Option<&Control>,
    ) -> Result<()> {
        let indexes = self.indexes.read().unwrap_or_else(PoisonError::into_inner);
        if indexes.secondary.is_empty() {
            return Ok(());
        }
        let same_series = old.is_some() && new.is_some();
        let mut meta: Option<Option<Bson>> = None;
        for ix in &indexes.secondary {
            if same_series && !ix.depends_on_control() {
                continue;
            }
            if meta.is_none() {
                meta = Some(self.entry_meta(key)?);
            }
            let m = meta.as_ref().and_then(Option::as_ref);
            let entries = |c: Option<&Control>| {
                c.map(|c| bucket_entries(&ix.def, id, &key.bytes, m, c))
                    .unwrap_or_default()
            };
            let (before, after) = (entries(old), entries(new));
            if before == after {
                continue;
            }
            let ks = ix.keyspace(&self.fjall, self.id)?;
            let after_keys: HashMap<&[u8], &[u8]> = after
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_slice()))
                .collect();
            let before_keys: HashMap<&[u8], &[u8]> = before
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_slice()))
                .collect();
            for (k, _) in &before {
                if !after_keys.contains_key(k.as_slice()) {
                    wb.remove(&ks, k.clone());
                }
            }
            for (k, v) in &after {
                if before_keys.get(k.as_slice()) != Some(&v.as_slice()) {
                    wb.insert(&ks, k.clone(), v.clone());
                }
            }
        }
        Ok(())
    }

    /// Writes the entries of every stored bucket into a new index. The index is registered
    /// and the commits computed under the old definitions have landed (the commit gate)
    /// before the build starts, so every later commit maintains it and one pass over the
    /// stored buckets covers the rest. Entries are only added: an entry made stale by a
    /// concurrent commit (the build read the control record just before) only costs a bucket
    /// read in a query, never a missed bucket.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] for undecodable records.
    pub(crate) fn build_index(&self, ix: &SecondaryIndex) -> Result<()> {
        let ks = ix.keyspace(&self.fjall, self.id)?;
        let mut wb = self.store.batch();
        let mut pending = 0;
        for e in self.all_buckets()? {
            let Some(control) = self.control(&e.id)? else {
                continue; // removed meanwhile
            };
            let meta = self.entry_meta(&e.key)?;
            for (k, v) in bucket_entries(&ix.def, &e.id, &e.key.bytes, meta.as_ref(), &control) {
                wb.insert(&ks, k, v);
                pending += 1;
            }
            if pending >= BUILD_BATCH {
                let full = std::mem::replace(&mut wb, self.store.batch());
                full.commit("building a secondary index")?;
                pending = 0;
            }
        }
        wb.commit("building a secondary index")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_of_paths() {
        let min = doc! { "a": 1, "o": { "x": "a" }, "s": 1, "arr": [1, 2], "mixed": 1 };
        let max = doc! { "a": 5, "o": { "x": "z" }, "s": 3, "arr": [3, 4], "mixed": "x" };
        let p = |s: &str| s.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            measurement_bounds(&min, &max, &p("a")),
            Bounds::Values(Bson::Int32(1), Bson::Int32(5))
        );
        assert_eq!(
            measurement_bounds(&min, &max, &p("o.x")),
            Bounds::Values(Bson::String("a".into()), Bson::String("z".into()))
        );
        assert_eq!(measurement_bounds(&min, &max, &p("o.y")), Bounds::Absent);
        assert_eq!(measurement_bounds(&min, &max, &p("s.y")), Bounds::Absent);
        assert_eq!(measurement_bounds(&min, &max, &p("nope")), Bounds::Absent);
        assert_eq!(measurement_bounds(&min, &max, &p("o")), Bounds::Unknown);
        assert_eq!(measurement_bounds(&min, &max, &p("arr")), Bounds::Unknown);
        assert_eq!(measurement_bounds(&min, &max, &p("arr.0")), Bounds::Unknown);
        assert_eq!(measurement_bounds(&min, &max, &p("mixed")), Bounds::Unknown);
    }
}
