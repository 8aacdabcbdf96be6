//! The index API of a collection (MongoDB's `createIndexes`, `dropIndexes`, `listIndexes` and
//! collMod `index: {hidden}` on a time-series collection, SPEC §13).

use std::sync::{Arc, Mutex, PoisonError};

use bson::{Document, doc};

use crate::collection::{Collection, CollectionInner};
use crate::error::{Error, ErrorCode, Result};
use crate::options::CollectionSpec;
use crate::storage::keyspaces;

use super::spec::{self, Definition};
use super::{IndexOptions, Indexes, SecondaryIndex};

/// Serializes index creation, dropping and hiding (rare operations; a build may be long).
static DDL: Mutex<()> = Mutex::new(());

/// Most indexes of a collection, the default index included (MongoDB's limit, less `_id_`).
const MAX_INDEXES: usize = 63;

fn not_found(message: String) -> Error {
    Error::rejected(ErrorCode::IndexNotFound, message)
}

/// SPEC: buckets are clustered by `_id`; there is no `_id_` index to drop or hide.
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
        keyspaces::delete(&self.fjall, ks, "deleting a secondary index keyspace")
    }

    /// Drops the default index (SPEC ): the directory stays, the flag is set.
    fn drop_default(&self) {
        self.update_indexes(|i| {
            i.default_dropped = true;
            i.default_name = None;
            i.default_hidden = false;
        });
    }
}

pub(crate) fn create_index(
    coll: &Collection,
    keys: &Document,
    options: &IndexOptions,
) -> Result<String> {
    coll.inner.writable()?;
    let _ddl = DDL.lock().unwrap_or_else(PoisonError::into_inner);
    let inner = &coll.inner;
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
        // the default index again (its directory never went away).
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
    while keyspaces::secondary_index_exists(&inner.fjall, inner.id, no) {
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

pub(crate) fn drop_index(coll: &Collection, name: &str) -> Result<()> {
    coll.inner.writable()?;
    let _ddl = DDL.lock().unwrap_or_else(PoisonError::into_inner);
    let inner = &coll.inner;
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

pub(crate) fn drop_index_by_key(coll: &Collection, keys: &Document) -> Result<()> {
    let name = index_name_by_key(coll, keys)?;
    coll.drop_index(&name)
}

pub(crate) fn index_name_by_key(coll: &Collection, keys: &Document) -> Result<String> {
    let spec = coll.inner.spec();
    let components = spec::components(keys, &spec)
        .map_err(|e| not_found(format!("can't find index with key: {keys} ({e})")))?;
    let current = coll.inner.indexes();
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

pub(crate) fn hide_index_by_key(coll: &Collection, keys: &Document, hidden: bool) -> Result<()> {
    let name = index_name_by_key(coll, keys)?;
    coll.hide_index(&name, hidden)
}

pub(crate) fn hide_index(coll: &Collection, name: &str, hidden: bool) -> Result<()> {
    coll.inner.writable()?;
    let _ddl = DDL.lock().unwrap_or_else(PoisonError::into_inner);
    let inner = &coll.inner;
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

pub(crate) fn list_indexes(coll: &Collection) -> Result<Vec<Document>> {
    let spec = coll.inner.spec();
    let current = coll.inner.indexes();
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

pub(crate) fn list_indexes_bucket_form(coll: &Collection) -> Result<Vec<Document>> {
    let spec = coll.inner.spec();
    let current = coll.inner.indexes();
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
