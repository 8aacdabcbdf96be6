//! Indexes of a time-series collection (SPEC §13): the default meta+time index and secondary
//! indexes on meta sub-fields, on measurement fields through `control.min`/`control.max`, and on
//! the time field.
//!
//! # The default index and the bucket directory
//!
//! A collection with a metaField reports the default index `{<metaField>: 1, <timeField>: 1}`
//! named `<metaField>_1_<timeField>_1`; without a metaField there is none. Physically
//! it is the `c{id}_idx` keyspace (meta hash ‖ min time ‖ bucket id), which is also the
//! **bucket directory**: every bucket of every series is listed there, and the write path,
//! direct writes, TTL and full scans depend on it. Dropping the default index therefore does
//! not delete that keyspace: it sets [`Indexes::default_dropped`] (persisted in the collection
//! record), after which
//!
//! * query-based reopening is disabled (R-6.8.4: the reopening query counts as failed and a
//!   new bucket is opened) unless another index qualifies: one without a partial filter whose
//!   bucket key starts with `meta, control.min.<time>` (or, without a metaField,
//!   `control.min.<time>`), e.g. `{m: 1, t: 1, x: 1}` or `{t: 1}`;
//! * the query planner stops using the meta hash prefix and scans the whole directory.
//!
//! Creating `{<metaField>: 1, <timeField>: 1}` again (without `sparse` or a partial filter)
//! clears the flag.
//!
//! # Secondary indexes
//!
//! Each secondary index has its own keyspace `c{id}_i{n}` (`n` from the collection record's
//! `nextIndexNo`) holding one entry per bucket (several for an array value of the leading
//! meta field): key = the bucket-form components in order ‖ bucket id, each component
//! encoded by [`keyenc`] (inverted when descending; a measurement or time field contributes
//! `control.min` then `control.max` ascending, `control.max` then `control.min`
//! descending); value = `{t: min time, m: normalized meta bytes, lo, hi}` (`lo`/`hi`: the
//! leading field's `control.min`/`control.max` when it is a measurement or time field), so a
//! scan yields the buckets without reading the directory. The keyspace is opened on first use
//! after the database opens, and deleted when the index or the collection is dropped.
//!
//! [`maintain`] keeps entries current on every commit and direct write (through
//! `CollectionInner::index_bucket_change`) and builds an index over existing buckets;
//! [`plan`] answers queries (`CollectionInner::secondary_candidates`); [`spec`] converts and
//! validates specifications; [`ddl`] is the public API on [`crate::Collection`].
//!
//! Not supported (typed errors): unique and text indexes (as MongoDB), hashed, 2d, 2dsphere,
//! geoHaystack and wildcard indexes, and partial TTL indexes (R-10.5: TTL is the
//! collection's `expireAfterSeconds`).

pub(crate) mod ddl;
pub(crate) mod keyenc;
mod maintain;
mod plan;
pub(crate) mod spec;

use std::sync::{Arc, OnceLock, PoisonError};

use bson::{Bson, Document, doc};

use crate::collection::CollectionInner;
use crate::error::Result;
use crate::mql::filter::{Filter, Pred};
use crate::options::CollectionSpec;
use crate::storage::keyspaces;

use spec::{Component, Definition};

/// Options of [`crate::Collection::create_index`] (MongoDB's `createIndexes` options that
/// tscoll honours or must reject, SPEC §13).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexOptions {
    /// Index name; default = MongoDB's generated name (`<field>_<direction>_...`).
    pub name: Option<String>,
    /// `unique`: rejected with `InvalidOptions` (SPEC ).
    pub unique: bool,
    /// `sparse`: buckets without any of the indexed meta fields get no entry. Only on meta and
    /// time fields (`InvalidOptions` on measurement fields, as MongoDB).
    pub sparse: bool,
    /// `partialFilterExpression`: only buckets that may hold measurements matching it are
    /// indexed; queries use the index only when their filter contains every predicate of it.
    pub partial_filter_expression: Option<Document>,
    /// `expireAfterSeconds` (a TTL index): rejected. Without a partial filter on the meta
    /// field with `InvalidOptions` (SPEC ); with one with `CannotCreateIndex`, because
    /// tscoll has no partial TTL indexes (SPEC; use the collection's
    /// `expireAfterSeconds`).
    pub expire_after_seconds: Option<i64>,
    /// `hidden`: the index is maintained but queries do not use it.
    pub hidden: bool,
}

impl IndexOptions {
    /// Options with only a name.
    #[must_use]
    pub fn named(name: impl Into<String>) -> Self {
        IndexOptions {
            name: Some(name.into()),
            ..IndexOptions::default()
        }
    }
}

/// The fjall keyspace of a secondary index, opened on first use. Clones share it.
#[derive(Clone, Default)]
struct KeyspaceSlot(Arc<OnceLock<fjall::Keyspace>>);

impl std::fmt::Debug for KeyspaceSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "open"
        } else {
            "not open"
        })
    }
}

/// A secondary index: its definition, keyspace number and state.
#[derive(Clone, Debug)]
pub(crate) struct SecondaryIndex {
    /// The definition.
    pub(crate) def: Definition,
    /// Keyspace number: the keyspace is `c{collection id}_i{no}`.
    pub(crate) no: u32,
    /// Built: queries and reopening may use it (entries are maintained from registration on).
    pub(crate) ready: bool,
    slot: KeyspaceSlot,
}

impl PartialEq for SecondaryIndex {
    fn eq(&self, other: &Self) -> bool {
        self.def == other.def && self.no == other.no && self.ready == other.ready
    }
}

impl SecondaryIndex {
    fn new(def: Definition, no: u32, ready: bool) -> Self {
        SecondaryIndex {
            def,
            no,
            ready,
            slot: KeyspaceSlot::default(),
        }
    }

    /// The index keyspace if it was opened already (an unopened one has nothing in memory).
    pub(crate) fn opened_keyspace(&self) -> Option<fjall::Keyspace> {
        self.slot.0.get().cloned()
    }

    /// The index keyspace of collection `coll_id`, opened (or created) on first use.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall cannot open it.
    pub(crate) fn keyspace(
        &self,
        fjall: &fjall::Database,
        coll_id: u64,
    ) -> Result<fjall::Keyspace> {
        if let Some(ks) = self.slot.0.get() {
            return Ok(ks.clone());
        }
        let ks = keyspaces::open_secondary_index(fjall, coll_id, self.no)?;
        Ok(self.slot.0.get_or_init(|| ks).clone())
    }

    /// Whether the entries of a bucket depend on its control record (not only on its meta):
    /// then every commit may change them.
    pub(crate) fn depends_on_control(&self) -> bool {
        self.def.components.iter().any(Component::uses_control)
            || self.def.partial.as_ref().is_some_and(|(_, f)| {
                f.preds
                    .iter()
                    .any(|p| !matches!(p, Pred::Meta { .. } | Pred::MetaIn { .. }))
            })
    }

    /// The persisted form (an element of the record's `indexes.secondary`).
    fn to_record(&self) -> Document {
        let mut d = doc! {
            "name": &self.def.name,
            "key": self.def.key.clone(),
            "no": i64::from(self.no),
        };
        if self.def.sparse {
            d.insert("sparse", true);
        }
        if let Some((p, _)) = &self.def.partial {
            d.insert("partialFilterExpression", p.clone());
        }
        if self.def.hidden {
            d.insert("hidden", true);
        }
        d
    }

    /// Reads a persisted definition back; `None` when it does not convert any more.
    fn from_record(d: &Document, spec: &CollectionSpec) -> Option<SecondaryIndex> {
        let key = d.get_document("key").ok()?.clone();
        let components = spec::components(&key, spec).ok()?;
        let partial = match d.get_document("partialFilterExpression") {
            Ok(p) => Some((
                p.clone(),
                Filter::parse(p, &spec.time_field, spec.meta_field.as_deref()).ok()?,
            )),
            Err(_) => None,
        };
        let def = Definition {
            name: d.get_str("name").ok()?.to_owned(),
            key,
            components,
            sparse: d.get_bool("sparse").unwrap_or(false),
            partial,
            hidden: d.get_bool("hidden").unwrap_or(false),
        };
        let no = u32::try_from(d.get_i64("no").ok()?).ok()?;
        Some(SecondaryIndex::new(def, no, true))
    }
}

/// The index definitions of a collection, as persisted in its collection record
/// (`indexes` field, `docs/keys.md`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Indexes {
    /// The default `{<metaField>: 1, <timeField>: 1}` index was dropped (SPEC ): the
    /// `c{id}_idx` keyspace stays (it is the bucket directory), but query-based reopening
    /// and the planner's meta prefix scans no longer use it.
    pub(crate) default_dropped: bool,
    /// The default index's name when it was created again under another name.
    pub(crate) default_name: Option<String>,
    /// The default index is hidden (collMod `index: {hidden: true}`).
    pub(crate) default_hidden: bool,
    /// Number of the next secondary index keyspace (`c{id}_i{n}`).
    pub(crate) next_no: u32,
    /// Secondary indexes in creation order.
    pub(crate) secondary: Vec<Arc<SecondaryIndex>>,
}

impl Indexes {
    /// Reads the definitions from a collection record (`indexes` field; absent = defaults).
    /// The record's `spec` gives the time and meta fields that secondary keys convert with.
    pub(crate) fn from_record(record: &Document) -> Indexes {
        let Ok(d) = record.get_document("indexes") else {
            return Indexes::default();
        };
        let spec = record
            .get_document("spec")
            .ok()
            .and_then(CollectionSpec::from_stored);
        let secondary = match (d.get_array("secondary"), &spec) {
            (Ok(items), Some(spec)) => items
                .iter()
                .filter_map(|b| match b {
                    Bson::Document(x) => SecondaryIndex::from_record(x, spec).map(Arc::new),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        Indexes {
            default_dropped: d.get_bool("defaultDropped").unwrap_or(false),
            default_name: d.get_str("defaultName").ok().map(str::to_owned),
            default_hidden: d.get_bool("defaultHidden").unwrap_or(false),
            next_no: d
                .get_i64("nextIndexNo")
                .ok()
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(1),
            secondary,
        }
    }

    /// The persisted form (the `indexes` field of the collection record). Indexes still
    /// being built are left out: after a crash during a build the index does not exist.
    pub(crate) fn to_record(&self) -> Document {
        let mut d = doc! {
            "defaultDropped": self.default_dropped,
            "nextIndexNo": i64::from(self.next_no.max(1)),
        };
        if let Some(n) = &self.default_name {
            d.insert("defaultName", n);
        }
        if self.default_hidden {
            d.insert("defaultHidden", true);
        }
        let secondary: Vec<Bson> = self
            .secondary
            .iter()
            .filter(|s| s.ready)
            .map(|s| Bson::Document(s.to_record()))
            .collect();
        if !secondary.is_empty() {
            d.insert("secondary", secondary);
        }
        d
    }

    /// The default index's name, when the collection has one and it was not dropped.
    pub(crate) fn default_index_name(&self, spec: &CollectionSpec) -> Option<String> {
        if self.default_dropped {
            return None;
        }
        let key = spec::default_key(spec)?;
        Some(
            self.default_name
                .clone()
                .unwrap_or_else(|| spec::generated_name(&key)),
        )
    }

    /// Whether an index supports query-based reopening (SPEC ): the default index, or
    /// a built index without a partial filter whose bucket key starts with `meta,
    /// control.min.<time>` (`control.min.<time>` without a metaField).
    pub(crate) fn serves_reopening(&self, has_meta: bool) -> bool {
        if has_meta && !self.default_dropped {
            return true;
        }
        self.secondary.iter().any(|s| {
            if !s.ready || s.def.partial.is_some() {
                return false;
            }
            let c = &s.def.components;
            if has_meta {
                matches!(c.first(), Some(Component::Meta { path, .. }) if path.is_empty())
                    && matches!(c.get(1), Some(Component::Time { descending: false }))
            } else {
                matches!(c.first(), Some(Component::Time { descending: false }))
            }
        })
    }
}

impl CollectionInner {
    /// Whether query-based reopening may run (SPEC ): see [`Indexes::serves_reopening`].
    pub(crate) fn reopening_index_exists(&self) -> bool {
        let has_meta = self
            .spec
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .meta_field
            .is_some();
        self.indexes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .serves_reopening(has_meta)
    }

    /// The keyspaces of the collection's secondary indexes (to delete them with the
    /// collection); those that cannot be opened are left out.
    pub(crate) fn secondary_keyspaces(&self) -> Vec<fjall::Keyspace> {
        self.indexes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .secondary
            .iter()
            .filter_map(|s| s.keyspace(&self.fjall, self.id).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::collection::TimeseriesOptions;

    #[test]
    fn record_round_trip() {
        let spec = TimeseriesOptions::new("t")
            .meta_field("m")
            .validate()
            .expect("spec");
        let key = doc! { "x": -1, "m.a": 1 };
        let def = spec::validate(
            &key,
            &IndexOptions {
                partial_filter_expression: Some(doc! { "m.a": { "$gt": 1 } }),
                hidden: true,
                ..IndexOptions::default()
            },
            &spec,
        )
        .expect("valid");
        let indexes = Indexes {
            default_dropped: true,
            default_name: Some("d".into()),
            default_hidden: false,
            next_no: 3,
            secondary: vec![
                Arc::new(SecondaryIndex::new(def, 2, true)),
                Arc::new(SecondaryIndex::new(
                    spec::validate(&doc! { "y": 1 }, &IndexOptions::default(), &spec)
                        .expect("valid"),
                    1,
                    false,
                )),
            ],
        };
        let record = doc! { "spec": spec.to_stored(), "indexes": indexes.to_record() };
        let back = Indexes::from_record(&record);
        assert_eq!(back.secondary.len(), 1, "unbuilt indexes are not persisted");
        assert_eq!(back.secondary[0], indexes.secondary[0]);
        assert!(back.default_dropped);
        assert_eq!(back.default_name.as_deref(), Some("d"));
        assert_eq!(back.next_no, 3);
        assert_eq!(Indexes::from_record(&doc! {}), Indexes::default());
    }
}
