//! Updates (SPEC §11.2, MongoDB 8.0): `update_one`/`update_many`/`replace_one` with any
//! filter, update operators on any field or a replacement document, and upsert.
//!
//! - A multi update with a filter on the meta field only whose operators change only the
//!   meta field moves whole buckets to their new series (`meta.rs`), without reading them.
//! - Anything else unpacks the candidate buckets (`measurements.rs`): matched measurements
//!   the update changes leave their buckets, which are written back with the rest, and go
//!   into new buckets through placement (§6.2); all of it is one atomic batch.
//! - With upsert and no match, one measurement is built from the filter's equalities and
//!   the update (`upsert.rs`) and inserted.

mod measurements;
mod meta;
mod operators;
mod positional;
mod upsert;

use bson::{Bson, Document};

use crate::collection::{Collection, CollectionInner};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::Filter;
use crate::pipeline::bind::bind_filter;

use operators::{Apply, Modification};
pub(crate) use operators::{set_path, type_name, unset_path};

/// An update as [`Collection::update_one`], [`Collection::update_many`] and
/// [`Collection::update_many_with`] take it (MongoDB's `u`): a document of update operators
/// (or, for `update_one`, a replacement document), or an update pipeline.
///
/// Converts from a `Document` or `&Document` (operators or replacement) and from a
/// `Vec<Document>`, a `&[Document]` or an array of documents (a pipeline), so
/// `coll.update_many(&filter, &doc! { "$set": { "a": 1 } })` and
/// `coll.update_many(&filter, [doc! { "$set": { "t2": { "$add": ["$a", 1] } } }])` both read
/// as they do in MongoDB.
///
/// The rules, and every difference from MongoDB 8.0: SPEC §11.2 and §14.6.5.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// Update operators (`{"$set": {...}, "$inc": {...}}`) or a replacement document.
    Document(Document),
    /// An update pipeline: stages `$addFields`/`$set`, `$project`, `$unset`,
    /// `$replaceRoot`/`$replaceWith`, run in order on each matched measurement, their
    /// expressions reading the measurement's fields (`$$ROOT` is the whole measurement).
    Pipeline(Vec<Document>),
}

impl From<Document> for Update {
    fn from(d: Document) -> Update {
        Update::Document(d)
    }
}

impl From<&Document> for Update {
    fn from(d: &Document) -> Update {
        Update::Document(d.clone())
    }
}

impl From<Vec<Document>> for Update {
    fn from(stages: Vec<Document>) -> Update {
        Update::Pipeline(stages)
    }
}

impl From<&Vec<Document>> for Update {
    fn from(stages: &Vec<Document>) -> Update {
        Update::Pipeline(stages.clone())
    }
}

impl From<&[Document]> for Update {
    fn from(stages: &[Document]) -> Update {
        Update::Pipeline(stages.to_vec())
    }
}

impl<const N: usize> From<[Document; N]> for Update {
    fn from(stages: [Document; N]) -> Update {
        Update::Pipeline(stages.to_vec())
    }
}

impl<const N: usize> From<&[Document; N]> for Update {
    fn from(stages: &[Document; N]) -> Update {
        Update::Pipeline(stages.to_vec())
    }
}

impl From<&Update> for Update {
    fn from(u: &Update) -> Update {
        u.clone()
    }
}

/// Options of [`Collection::update_one`], [`Collection::update_many_with`] and
/// [`Collection::replace_one`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateOptions {
    /// Insert one measurement when nothing matches (MongoDB's `upsert`). Default `false`.
    pub upsert: bool,
    /// MongoDB's `arrayFilters`: one filter per `$[<identifier>]` the update's paths use,
    /// on the array element as the field named by the identifier (`{"x": {"$gte": 100}}`,
    /// `{"x.grade": {"$gte": 85}}`). Each identifier is an alphanumeric string beginning
    /// with a lowercase letter, used by some path (else `FailedToParse`). Default empty.
    pub array_filters: Vec<Document>,
    /// MongoDB's update `let`: variables `{<name>: <expression>}`, each evaluated once
    /// before the update (a literal, `$$NOW`, operators over them; no field paths), read as
    /// `$$<name>` (or `$$<name>.<path>`) in the filter under `$expr` and in an update
    /// pipeline's expressions. A name begins with a lowercase letter and has letters,
    /// digits and `_` (else MongoDB's 16867); an expression that reads a field fails with
    /// 4890500. Default `None`.
    pub let_vars: Option<Document>,
}
/// Outcome of an update (MongoDB's `n`, `nModified`, `upserted`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateResult {
    /// Measurements the filter matched (`n`, less any upsert).
    pub matched: u64,
    /// Measurements the update changed (`nModified`): a matched measurement the update leaves
    /// as it was is not modified and stays where it is.
    pub modified: u64,
    /// Stored buckets changed: moved to another series, rewritten or removed.
    pub buckets_modified: u64,
    /// The `_id` of the measurement an upsert inserted (generated when neither the filter's
    /// equalities nor the update gave one).
    pub upserted_id: Option<Bson>,
}

pub(crate) fn update_many(
    coll: &Collection,
    filter: &Document,
    update: &Update,
) -> Result<UpdateResult> {
    coll.update_many_with(filter, update, &UpdateOptions::default())
}

pub(crate) fn replace_one(
    coll: &Collection,
    filter: &Document,
    replacement: &Document,
    options: &UpdateOptions,
) -> Result<UpdateResult> {
    if replacement.keys().any(|k| k.starts_with('$')) {
        return Err(Error::rejected(
            ErrorCode::FailedToParse,
            "a replacement document may not hold update operators ('$'-prefixed fields)",
        ));
    }
    coll.inner.update(
        filter,
        &Update::Document(replacement.clone()),
        false,
        options,
    )
}

impl CollectionInner {
    pub(crate) fn update(
        &self,
        filter_doc: &Document,
        update: &Update,
        multi: bool,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.writable()?;
        let mut vars = match &options.let_vars {
            Some(l) => crate::pipeline::bind::constants("update", l)?,
            None => Vec::new(),
        };
        // One `$$NOW` for the whole update: its filter and every stage of its pipeline.
        vars.push((
            "NOW".to_owned(),
            Some(Bson::DateTime(bson::DateTime::now())),
        ));
        let update = Modification::parse(update, &options.array_filters, &vars)?;
        if multi && matches!(update, Modification::Replacement(_)) {
            return Err(Error::rejected(
                ErrorCode::FailedToParse,
                "multi update is not supported for replacement-style update",
            ));
        }
        let bound_filter;
        let filter_doc = {
            let bound: Vec<(&str, Option<&Bson>)> =
                vars.iter().map(|(n, v)| (n.as_str(), v.as_ref())).collect();
            bound_filter = match bind_filter(&Bson::Document(filter_doc.clone()), &bound) {
                Bson::Document(d) => d,
                _ => filter_doc.clone(),
            };
            &bound_filter
        };
        let spec = self.spec();
        let filter = Filter::parse(filter_doc, &spec.time_field, spec.meta_field.as_deref())?;
        let out = match spec.meta_field.as_deref() {
            Some(meta_field) if multi && filter.meta_only() && update.meta_only(meta_field) => {
                self.update_meta(&filter, &update, meta_field)?
            }
            _ => self.update_measurements(&filter, &update, multi)?,
        };
        if out.matched == 0 && options.upsert {
            return self.upsert(filter_doc, &update);
        }
        Ok(out)
    }
}
