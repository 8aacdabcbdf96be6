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
mod upsert;

use bson::{Bson, Document};

use crate::collection::{Collection, CollectionInner};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::Filter;

pub(crate) use operators::{Update, set_path, unset_path};

/// Options of [`Collection::update_one`], [`Collection::update_many_with`] and
/// [`Collection::replace_one`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateOptions {
    /// Insert one measurement when nothing matches (MongoDB's `upsert`). Default `false`.
    pub upsert: bool,
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
    update: &Document,
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
    coll.inner
        .update(filter, replacement, false, options.upsert)
}

impl CollectionInner {
    pub(crate) fn update(
        &self,
        filter_doc: &Document,
        update_doc: &Document,
        multi: bool,
        upsert: bool,
    ) -> Result<UpdateResult> {
        self.writable()?;
        let update = Update::parse(update_doc)?;
        if multi && matches!(update, Update::Replacement(_)) {
            return Err(Error::rejected(
                ErrorCode::FailedToParse,
                "multi update is not supported for replacement-style update",
            ));
        }
        let spec = self.spec();
        let filter = Filter::parse(filter_doc, &spec.time_field, spec.meta_field.as_deref())?;
        let out = match spec.meta_field.as_deref() {
            Some(meta_field) if multi && filter.meta_only() && update.meta_only(meta_field) => {
                self.update_meta(&filter, &update, meta_field)?
            }
            _ => self.update_measurements(&filter, &update, multi)?,
        };
        if out.matched == 0 && upsert {
            return self.upsert(filter_doc, &update);
        }
        Ok(out)
    }
}
