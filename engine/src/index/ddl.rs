//! The index API of a collection (MongoDB's `createIndexes`, `dropIndexes`, `listIndexes` and
//! collMod `index: {hidden}` on a time-series collection, SPEC §13).

use std::sync::{Arc, Mutex, PoisonError};

use bson::{Document, doc};

use crate::collection::{Collection, CollectionInner};
use crate::error::{Error, ErrorCode, Result};
use crate::options::CollectionSpec;

use super::spec::{self, Definition};
use super::{IndexOptions, Indexes, SecondaryIndex};

/// Serializes index creation, dropping and hiding (rare operations; a build may be long).
static DDL: Mutex<()> = Mutex::new(());

/// Most indexes of a collection, the default index included (MongoDB's limit, less `_id_`).
const MAX_INDEXES: usize = 63;

fn not_found(message: String) -> Error {
    Error::rejected(ErrorCode::IndexNotFound, message)
}

/// SPEC R-13.1: buckets are clustered by `_id`; there is no `_id_` index to drop or hide.
fn id_index() -> Error {
    not_found(
        "index not found with name [_id_]: a time-series collection is clustered by bucket _id \
         and has no _id index (SPEC R-13.1)"
            .to_owned(),
    )
}

/// The default index as a definition, when the collection has it.
fn default_definition(indexes: &Indexes, spec: &CollectionSpec) -> Option<Definition> {
    Some(Definition {
        name: indexes.default_index_name(spec)?,
        key: spec::default_key(spec)?,
        components: spec::default_components(),
        sparse: false,
        partial: None,
        hidden: indexes.default_hidden,
    })
}

impl CollectionInner {
    fn update_indexes(&self, f: impl FnOnce(&mut Indexes)) {
        f(&mut self.indexes.write().unwrap_or_else(PoisonError::into_inner));
    }

    /// Waits until every commit that may have computed its index changes under the previous
    /// index definitions has landed (they hold the commit gate from computing to committing).
    fn drain_commits(&self) {
        drop(
            self.commit_gate
                .write()
                .unwrap_or_else(PoisonError::into_inner),
        );
    }

    /// Removes secondary index `ix` from the definitions and deletes its keyspace.
    fn remove_secondary(&self, ix: &Arc<SecondaryIndex>) -> Result<()> {
        let ks = ix.keyspace(&self.fjall, self.id)?;
        self.update_indexes(|i| i.secondary.retain(|s| !Arc::ptr_eq(s, ix)));
        self.drain_commits();
        self.fjall
            .delete_keyspace(ks)
            .map_err(Error::storage("deleting a secondary index keyspace"))
    }

    /// Drops the default index (SPEC R-13.2): the directory stays, the flag is set.
    fn drop_default(&self) {
        self.update_indexes(|i| {
            i.default_dropped = true;
            i.default_name = None;
            i.default_hidden = false;
        });
    }
}

impl Collection {
    /// Creates an index (MongoDB's `createIndexes` on a time-series collection, SPEC §13) and
    /// returns its name: `options.name`, or MongoDB's generated `<field>_<direction>_...`.
    ///
    /// Keys in user form: `<metaField>` and `<metaField>.<path>` (→ `meta`, `meta.<path>`),
    /// the time field (→ `control.min/max.<time>`), measurement fields (→
    /// `control.min/max.<field>`), ascending (`1`) or descending (`-1`), compound in any mix
    /// (SPEC R-13.3). Existing buckets are indexed before the call returns; commits keep the
    /// index current from then on. Creating the default key `{<metaField>: 1, <timeField>: 1}`
    /// after it was dropped restores the default index (R-13.2).
    ///
    /// An identical index (same key, name and options) already existing is a success that
    /// changes nothing.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// assert_eq!(coll.create_index(&doc! { "temp": -1 }, &IndexOptions::default())?, "temp_-1");
    /// let names: Vec<String> = coll
    ///     .list_indexes()?
    ///     .iter()
    ///     .map(|d| d.get_str("name").unwrap().to_owned())
    ///     .collect();
    /// assert_eq!(names, ["m_1_t_1", "temp_-1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// * `InvalidOptions`: `unique`; text indexes ("Text indexes are not supported on
    ///   time-series collections"); `sparse` on a measurement field; `expireAfterSeconds`
    ///   without a partial filter on the meta field (R-13.4) or on a non-time field.
    /// * `BadValue`: a non-numeric direction on the time field; a special index type on a
    ///   measurement field (R-13.3); a `partialFilterExpression` tscoll cannot evaluate; the
    ///   name `_id_`.
    /// * `CannotCreateIndex`: hashed, 2d, 2dsphere, geoHaystack and wildcard indexes (R-13.5);
    ///   partial TTL indexes (R-10.5); an empty or malformed key pattern; `sparse` with a
    ///   partial filter; more than 63 indexes.
    /// * `IndexKeySpecsConflict`: an index of that name exists with another key.
    /// * `IndexOptionsConflict`: an index with that key exists under another name, or with
    ///   that name and other options.
    /// * [`Error::Storage`] when fjall fails.
    pub fn create_index(&self, keys: &Document, options: &IndexOptions) -> Result<String> {
        self.inner.writable()?;
        let _ddl = DDL.lock().unwrap_or_else(PoisonError::into_inner);
        let inner = &self.inner;
        let spec = inner.spec();
        let def = spec::validate(keys, options, &spec)?;
        let current = inner.indexes();
        let default = default_definition(&current, &spec);
        for e in default
            .iter()
            .chain(current.secondary.iter().map(|s| &s.def))
        {
            if e.name == def.name {
                if e.components != def.components {
                    return Err(Error::rejected(
                        ErrorCode::IndexKeySpecsConflict,
                        format!(
                            "An existing index has the same name as the requested index but a \
                             different key. Requested index: {}, existing index: {}",
                            def.user_doc(),
                            e.user_doc()
                        ),
                    ));
                }
                if e.same_options(&def) {
                    return Ok(def.name);
                }
                return Err(Error::rejected(
                    ErrorCode::IndexOptionsConflict,
                    format!(
                        "An equivalent index already exists with the same name but different \
                         options. Requested index: {}, existing index: {}",
                        def.user_doc(),
                        e.user_doc()
                    ),
                ));
            }
            if e.components == def.components {
                return Err(Error::rejected(
                    ErrorCode::IndexOptionsConflict,
                    format!("Index already exists with a different name: {}", e.name),
                ));
            }
        }
        if usize::from(default.is_some()) + current.secondary.len() >= MAX_INDEXES {
            return Err(Error::rejected(
                ErrorCode::CannotCreateIndex,
                format!("add index fails, too many indexes (at most {MAX_INDEXES})"),
            ));
        }
        if spec.meta_field.is_some()
            && current.default_dropped
            && def.components == spec::default_components()
            && !def.sparse
            && def.partial.is_none()
        {
            // R-13.2: the default index again (its directory never went away).
            let generated = spec::default_key(&spec).map(|k| spec::generated_name(&k));
            inner.update_indexes(|i| {
                i.default_dropped = false;
                i.default_name = (Some(&def.name) != generated.as_ref()).then(|| def.name.clone());
                i.default_hidden = def.hidden;
            });
            inner.save_record()?;
            return Ok(def.name);
        }
        let mut no = current.next_no.max(1);
        while inner
            .fjall
            .keyspace_exists(&crate::storage::keys::secondary_index_keyspace(
                inner.id, no,
            ))
        {
            no += 1;
        }
        let name = def.name.clone();
        let building = Arc::new(SecondaryIndex::new(def, no, false));
        // Registered (not ready) before the build, so commits maintain it meanwhile.
        inner.update_indexes(|i| {
            i.next_no = no + 1;
            i.secondary.push(Arc::clone(&building));
        });
        // Commits from now on maintain it; the build then sees every earlier commit.
        inner.drain_commits();
        inner.flush_open()?;
        if let Err(e) = inner.build_index(&building) {
            let _ = inner.remove_secondary(&building);
            return Err(e);
        }
        let mut ready = (*building).clone();
        ready.ready = true;
        let ready = Arc::new(ready);
        inner.update_indexes(|i| {
            for s in &mut i.secondary {
                if Arc::ptr_eq(s, &building) {
                    *s = Arc::clone(&ready);
                }
            }
        });
        inner.save_record()?;
        Ok(name)
    }

    /// Drops the index called `name` (MongoDB's `dropIndexes`); `"*"` drops every index.
    ///
    /// Dropping the default index keeps the bucket directory but disables query-based
    /// reopening (SPEC R-13.2, R-6.8.4); see `docs/keys.md`.
    ///
    /// # Errors
    /// `IndexNotFound` for `_id_` (SPEC R-13.1) and for an unknown name; [`Error::Storage`]
    /// when fjall fails.
    pub fn drop_index(&self, name: &str) -> Result<()> {
        self.inner.writable()?;
        let _ddl = DDL.lock().unwrap_or_else(PoisonError::into_inner);
        let inner = &self.inner;
        if name == "_id_" {
            return Err(id_index());
        }
        let spec = inner.spec();
        let current = inner.indexes();
        if name == "*" {
            if current.default_index_name(&spec).is_some() {
                inner.drop_default();
            }
            inner.save_record()?;
            for s in &current.secondary {
                inner.remove_secondary(s)?;
            }
            return inner.save_record();
        }
        if current.default_index_name(&spec).as_deref() == Some(name) {
            inner.drop_default();
            return inner.save_record();
        }
        let Some(ix) = current.secondary.iter().find(|s| s.def.name == name) else {
            return Err(not_found(format!("index not found with name [{name}]")));
        };
        inner.update_indexes(|i| i.secondary.retain(|s| !Arc::ptr_eq(s, ix)));
        inner.save_record()?;
        inner.remove_secondary(ix)
    }

    /// Drops the index with key pattern `keys` (user form), as `dropIndexes` with a key.
    ///
    /// # Errors
    /// `IndexNotFound` when the pattern does not convert (SPEC R-13.3) or no index has it;
    /// [`Error::Storage`] when fjall fails.
    pub fn drop_index_by_key(&self, keys: &Document) -> Result<()> {
        let name = self.index_name_by_key(keys)?;
        self.drop_index(&name)
    }

    /// The name of the index with key pattern `keys` (user form).
    ///
    /// # Errors
    /// `IndexNotFound` when the pattern does not convert (SPEC R-13.3) or no index has it.
    fn index_name_by_key(&self, keys: &Document) -> Result<String> {
        let spec = self.inner.spec();
        let components = spec::components(keys, &spec)
            .map_err(|e| not_found(format!("can't find index with key: {keys} ({e})")))?;
        let current = self.inner.indexes();
        default_definition(&current, &spec)
            .filter(|d| d.components == components)
            .map(|d| d.name)
            .or_else(|| {
                current
                    .secondary
                    .iter()
                    .find(|s| s.def.components == components)
                    .map(|s| s.def.name.clone())
            })
            .ok_or_else(|| not_found(format!("can't find index with key: {keys}")))
    }

    /// As [`Collection::hide_index`] for the index with key pattern `keys` (user form, SPEC
    /// R-13.3), as collMod `index: {keyPattern, hidden}` (SPEC R-12.4).
    ///
    /// # Errors
    /// `IndexNotFound` when the pattern does not convert (SPEC R-13.3) or no index has it;
    /// [`Error::Storage`] when the record cannot be saved.
    pub fn hide_index_by_key(&self, keys: &Document, hidden: bool) -> Result<()> {
        let name = self.index_name_by_key(keys)?;
        self.hide_index(&name, hidden)
    }

    /// Hides or unhides an index (collMod `index: {name, hidden}`, SPEC R-12.4): a hidden
    /// index is maintained but queries do not use it.
    ///
    /// # Errors
    /// `IndexNotFound` for `_id_` (SPEC R-13.1) and for an unknown name; [`Error::Storage`]
    /// when the record cannot be saved.
    pub fn hide_index(&self, name: &str, hidden: bool) -> Result<()> {
        self.inner.writable()?;
        let _ddl = DDL.lock().unwrap_or_else(PoisonError::into_inner);
        let inner = &self.inner;
        if name == "_id_" {
            return Err(id_index());
        }
        let spec = inner.spec();
        let current = inner.indexes();
        if current.default_index_name(&spec).as_deref() == Some(name) {
            inner.update_indexes(|i| i.default_hidden = hidden);
            return inner.save_record();
        }
        let Some(ix) = current
            .secondary
            .iter()
            .find(|s| s.def.name == name && s.ready)
        else {
            return Err(not_found(format!("index not found with name [{name}]")));
        };
        let mut changed = (**ix).clone();
        changed.def.hidden = hidden;
        let changed = Arc::new(changed);
        inner.update_indexes(|i| {
            for s in &mut i.secondary {
                if Arc::ptr_eq(s, ix) {
                    *s = Arc::clone(&changed);
                }
            }
        });
        inner.save_record()
    }

    /// The indexes in user form, as MongoDB's `listIndexes` shows them for a time-series
    /// collection: `{v: 2, key: {...}, name: "..."}` plus `sparse`, `partialFilterExpression`
    /// and `hidden` when set. The default index comes first (SPEC R-13.2); there is no `_id_`
    /// (R-13.1).
    ///
    /// # Errors
    /// None today; reserved for storage errors.
    pub fn list_indexes(&self) -> Result<Vec<Document>> {
        let spec = self.inner.spec();
        let current = self.inner.indexes();
        Ok(default_definition(&current, &spec)
            .map(|d| d.user_doc())
            .into_iter()
            .chain(
                current
                    .secondary
                    .iter()
                    .filter(|s| s.ready)
                    .map(|s| s.def.user_doc()),
            )
            .collect())
    }

    /// The indexes in bucket form (SPEC R-13.3), as `listIndexes` on the buckets collection
    /// shows them: e.g. `{v: 2, key: {meta: 1, "control.min.t": 1, "control.max.t": 1}, name:
    /// "m_1_t_1"}`; indexes on measurement fields or with a partial filter carry their user
    /// form as `originalSpec`.
    ///
    /// # Errors
    /// None today; reserved for storage errors.
    pub fn list_indexes_bucket_form(&self) -> Result<Vec<Document>> {
        let spec = self.inner.spec();
        let current = self.inner.indexes();
        let mut out = Vec::new();
        if let Some(d) = default_definition(&current, &spec) {
            let mut b = doc! { "v": 2, "key": spec::bucket_key(&d.key, &spec), "name": &d.name };
            if d.hidden {
                b.insert("hidden", true);
            }
            out.push(b);
        }
        out.extend(
            current
                .secondary
                .iter()
                .filter(|s| s.ready)
                .map(|s| s.def.bucket_doc(&spec)),
        );
        Ok(out)
    }
}
