//! Upsert (SPEC §11.2 [8.0+]): when an update with `upsert` matches nothing, one measurement
//! is inserted: the filter's equalities (`{f: v}`, `{f: {$eq: v}}`, inside `$and`) with the
//! update operators applied (`$setOnInsert` included), or the replacement document with the
//! filter's `_id` equality. It gets a generated `_id` when it has none.

use bson::{Bson, DateTime, Document};

use super::operators::set_path;
use super::{Apply, Modification, UpdateResult};
use crate::InsertOptions;
use crate::collection::CollectionInner;
use crate::error::{Error, Result};

impl CollectionInner {
    pub(super) fn upsert(&self, filter: &Document, update: &Modification) -> Result<UpdateResult> {
        let mut base = Document::new();
        equalities(filter, &mut base)?;
        let doc = match update {
            Modification::Operators(_) | Modification::Pipeline(_) => update.apply(
                &base,
                &Apply {
                    inserting: true,
                    now: DateTime::now(),
                    matched: None,
                },
            )?,
            Modification::Replacement(r) => {
                let mut d = Document::new();
                if let Some(id) = base.get("_id").filter(|_| !r.contains_key("_id")) {
                    d.insert("_id", id.clone());
                }
                d.extend(r.clone());
                d
            }
        };
        // `_id` first, generated when missing, as MongoDB stores an upserted document.
        let id = doc.get("_id").cloned().unwrap_or_else(|| {
            Bson::ObjectId(crate::write::ids::generate(1).next().unwrap_or_default())
        });
        let mut measurement = Document::new();
        measurement.insert("_id", id.clone());
        for (k, v) in doc {
            if k != "_id" {
                measurement.insert(k, v);
            }
        }
        let r = self
            .insert_many(
                std::slice::from_ref(&measurement),
                &InsertOptions::default(),
            )
            .or_else(Error::into_insert_result)?;
        if let Some(e) = r.errors.first() {
            return Err(Error::rejected(
                e.code,
                format!("the upserted measurement cannot be stored: {}", e.message),
            ));
        }
        Ok(UpdateResult {
            upserted_id: Some(id),
            ..UpdateResult::default()
        })
    }
}

/// Adds the filter's equality fields to `out` (dotted paths as sub-documents).
fn equalities(filter: &Document, out: &mut Document) -> Result<()> {
    for (k, v) in filter {
        if k == "$and" {
            if let Bson::Array(items) = v {
                for item in items {
                    if let Bson::Document(d) = item {
                        equalities(d, out)?;
                    }
                }
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        let value = match v {
            Bson::Document(d) if d.keys().next().is_some_and(|f| f.starts_with('$')) => {
                match d.get("$eq") {
                    Some(eq) => eq.clone(),
                    None => continue,
                }
            }
            other => other.clone(),
        };
        let parts: Vec<&str> = k.split('.').collect();
        set_path(out, &parts, value)?;
    }
    Ok(())
}
