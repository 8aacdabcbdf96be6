//! Which shard holds a measurement: a hash of its **shard key**'s value — the meta field, or
//! a path inside it such as `tags.hostname` — normalized as series are (fields sorted at
//! every depth, SPEC R-3.1), modulo the number of shards. Every measurement of one series
//! has the same meta value, hence the same shard key value: a series, and every bucket of
//! it, lives in one shard.
//!
//! The same rule prunes queries: a filter that pins the shard key to a value (or a list of
//! values) can only match measurements of that value's shard.

use bson::{Bson, Document};
use tscoll_engine::BucketKey;

use crate::Error;

/// A collection's shard key: the meta field or a dotted path inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardKey {
    path: String,
}

impl ShardKey {
    /// The key at `path` (`tags`, `tags.hostname`) of a collection whose meta field is
    /// `meta_field`.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the collection has no meta field, or `path` is neither the
    /// meta field nor a path inside it (a key outside the meta field would spread one series,
    /// whose measurements may differ there, over several shards).
    pub fn new(path: &str, meta_field: Option<&str>) -> Result<ShardKey, Error> {
        let Some(meta) = meta_field else {
            return Err(Error::Invalid(
                "a collection without a metaField has one series and one shard: its shard \
                 key must be left unset"
                    .into(),
            ));
        };
        let inside = path == meta
            || path
                .strip_prefix(meta)
                .is_some_and(|rest| rest.starts_with('.') && rest.len() > 1);
        if !inside || path.split('.').any(str::is_empty) {
            return Err(Error::Invalid(format!(
                "the shard key '{path}' must be the metaField '{meta}' or a path inside it \
                 ('{meta}.hostname')"
            )));
        }
        Ok(ShardKey {
            path: path.to_owned(),
        })
    }

    /// The key of a collection: the meta field, or no key (one shard receives every
    /// measurement's series alike) when it has none.
    #[must_use]
    pub fn of_meta(meta_field: Option<&str>) -> Option<ShardKey> {
        meta_field.map(|m| ShardKey { path: m.to_owned() })
    }

    /// The dotted path of the key.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The value of the key in `doc`; `None` when a part of the path is missing or not a
    /// document.
    #[must_use]
    pub fn value_of<'a>(&self, doc: &'a Document) -> Option<&'a Bson> {
        let mut parts = self.path.split('.');
        let mut value = doc.get(parts.next()?)?;
        for part in parts {
            match value {
                Bson::Document(d) => value = d.get(part)?,
                _ => return None,
            }
        }
        Some(value)
    }

    /// The shard (of `shards`, at least 1) of the measurement `doc`.
    #[must_use]
    pub fn shard_of(&self, doc: &Document, shards: usize) -> usize {
        shard_of_value(self.value_of(doc), shards)
    }

    /// [`ShardKey::shard_of`] with the value's normalized bytes written into `scratch`, so
    /// that routing many measurements allocates nothing per measurement.
    #[must_use]
    pub fn shard_of_with(&self, doc: &Document, shards: usize, scratch: &mut Vec<u8>) -> usize {
        shard_of_hash(BucketKey::hash_of(self.value_of(doc), scratch), shards)
    }

    /// The shards whose measurements may match `filter` (a filter as the SQL layer writes
    /// it: a clause, or `$and` of clauses, each `{path: {op: value}}`): the shard of the
    /// value when a clause pins the key with `$eq`, the shards of the values with `$in`;
    /// `None` when no clause does. Only strings, ObjectIds, booleans and dates pin the key:
    /// a number equals numbers of other types, which are other series.
    #[must_use]
    pub fn shards_for(&self, filter: &Document, shards: usize) -> Option<Vec<usize>> {
        let mut found: Option<Vec<usize>> = None;
        let mut clauses: Vec<&Document> = vec![filter];
        if let Ok(all) = filter.get_array("$and") {
            clauses.extend(all.iter().filter_map(Bson::as_document));
        }
        for clause in clauses {
            let Some(cond) = clause.get(&self.path) else {
                continue;
            };
            let values: Vec<&Bson> = match cond {
                Bson::Document(ops) if ops.len() == 1 => match ops.iter().next() {
                    Some((op, v)) if op == "$eq" => vec![v],
                    Some((op, Bson::Array(vs))) if op == "$in" => vs.iter().collect(),
                    _ => continue,
                },
                Bson::Document(_) => continue,
                v => vec![v],
            };
            if !values.iter().all(|v| pins(v)) {
                continue;
            }
            let mut set: Vec<usize> = values
                .iter()
                .map(|v| shard_of_value(Some(v), shards))
                .collect();
            set.sort_unstable();
            set.dedup();
            // Several pinning clauses: the shards all of them allow.
            found = Some(match found {
                None => set,
                Some(before) => before.into_iter().filter(|s| set.contains(s)).collect(),
            });
        }
        found
    }
}

/// Whether an equality with `v` matches values of `v`'s own BSON type only.
fn pins(v: &Bson) -> bool {
    matches!(
        v,
        Bson::String(_) | Bson::ObjectId(_) | Bson::Boolean(_) | Bson::DateTime(_)
    )
}

/// The shard (of `shards`, at least 1) of a shard key value (`None`: the key is missing).
#[must_use]
pub fn shard_of_value(value: Option<&Bson>, shards: usize) -> usize {
    shard_of_hash(BucketKey::from_meta(value).hash, shards)
}

/// The shard (of `shards`, at least 1) of a value whose key hashes to `hash`.
fn shard_of_hash(hash: u64, shards: usize) -> usize {
    let n = u64::try_from(shards.max(1)).unwrap_or(u64::MAX);
    usize::try_from(hash % n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn the_key_must_be_the_meta_field_or_inside_it() {
        assert!(ShardKey::new("tags", Some("tags")).is_ok());
        assert!(ShardKey::new("tags.hostname", Some("tags")).is_ok());
        for bad in ["tagsx", "tag", "usage", "tags.", "tags..a", ""] {
            assert!(ShardKey::new(bad, Some("tags")).is_err(), "{bad}");
        }
        assert!(ShardKey::new("tags", None).is_err());
    }

    #[test]
    fn field_order_does_not_move_a_series() {
        let key = ShardKey::new("tags", Some("tags")).unwrap();
        let a = doc! { "tags": { "a": 1, "b": "x" } };
        let b = doc! { "tags": { "b": "x", "a": 1 } };
        for n in 1..8 {
            assert_eq!(key.shard_of(&a, n), key.shard_of(&b, n));
        }
    }

    #[test]
    fn a_pinned_key_names_its_shard() {
        let key = ShardKey::new("tags.hostname", Some("tags")).unwrap();
        let docs: Vec<Document> = (0..50)
            .map(|i| doc! { "tags": { "hostname": format!("host_{i}"), "rack": i } })
            .collect();
        for d in &docs {
            let host = d.get_document("tags").unwrap().get("hostname").unwrap();
            let f = doc! { "$and": [ { "time": { "$gte": 0 } }, { "tags.hostname": { "$eq": host.clone() } } ] };
            assert_eq!(key.shards_for(&f, 3), Some(vec![key.shard_of(d, 3)]));
        }
        let f = doc! { "tags.hostname": { "$in": ["host_1", "host_2", "host_3"] } };
        let mut want: Vec<usize> = docs[1..4].iter().map(|d| key.shard_of(d, 3)).collect();
        want.sort_unstable();
        want.dedup();
        assert_eq!(key.shards_for(&f, 3), Some(want));
        // Numbers, ranges and other paths do not pin it.
        assert_eq!(
            key.shards_for(&doc! { "tags.hostname": { "$eq": 5_i64 } }, 3),
            None
        );
        assert_eq!(
            key.shards_for(&doc! { "tags.hostname": { "$gt": "a" } }, 3),
            None
        );
        assert_eq!(
            key.shards_for(&doc! { "tags.rack": { "$eq": "a" } }, 3),
            None
        );
        // A missing key is a value of its own.
        let missing = doc! { "tags": { "rack": 1 } };
        assert_eq!(key.shard_of(&missing, 3), shard_of_value(None, 3));
    }

    #[test]
    fn routing_with_a_scratch_buffer_agrees() {
        let key = ShardKey::new("tags", Some("tags")).unwrap();
        let mut scratch = Vec::new();
        for i in 0..100 {
            let d = doc! { "tags": { "h": format!("host_{i}"), "r": i } };
            assert_eq!(key.shard_of_with(&d, 7, &mut scratch), key.shard_of(&d, 7));
        }
    }

    #[test]
    fn series_spread_over_every_shard() {
        let key = ShardKey::new("tags.hostname", Some("tags")).unwrap();
        let mut counts = [0usize; 3];
        for i in 0..300 {
            counts[key.shard_of(&doc! { "tags": { "hostname": format!("host_{i}") } }, 3)] += 1;
        }
        assert!(counts.iter().all(|&c| c > 60), "{counts:?}");
    }
}
