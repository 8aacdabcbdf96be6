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
use crate::filter::Filter;

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

impl Collection {
    /// Updates every measurement matching `filter` (SPEC §11.2, MongoDB 8.0 `multi: true`).
    /// Same as [`Collection::update_many_with`] without upsert.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..4).map(|i| doc! { "t": DateTime::from_millis(i * 1000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let r = coll.update_many(&doc! { "v": { "$gte": 2 } }, &doc! { "$inc": { "v": 10 } })?;
    /// assert_eq!((r.matched, r.modified), (2, 2));
    /// assert_eq!(coll.count(&doc! { "v": { "$gte": 12 } })?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::update_many_with`].
    pub fn update_many(&self, filter: &Document, update: &Document) -> Result<UpdateResult> {
        self.update_many_with(filter, update, &UpdateOptions::default())
    }

    /// Updates every measurement matching `filter` (the filter language of
    /// [`Collection::find`]) with the update operators of `update`: `$set`, `$unset`,
    /// `$inc`, `$mul`, `$min`, `$max`, `$rename`, `$currentDate`, `$setOnInsert`, and on
    /// array fields `$push` (with `$each`, `$position`, `$slice`, `$sort`), `$addToSet`
    /// (with `$each`), `$pull`, `$pullAll`, `$pop`; dotted paths reach sub-documents and
    /// array elements by index (SPEC §11.2, MongoDB 8.0).
    ///
    /// With a filter on the meta field only and operators that change only the meta field,
    /// each matching bucket moves whole to its new (renormalized, R-3.1) series. Otherwise
    /// every candidate bucket (control pruning, SPEC §14.4) is unpacked: measurements the
    /// update changes are taken out — the bucket is written back under its `_id` with the
    /// rest, or removed when none is left — and placed again (§6.2) as new measurements in
    /// new buckets. The whole update is one atomic write: after a crash it happened whole or
    /// not at all, and a failing measurement changes nothing. Changed buckets are cleared
    /// from the catalog first (R-7.4.1). The changed buckets are held in memory until the
    /// write.
    ///
    /// # Errors
    /// - `FailedToParse`: a replacement document (use [`Collection::replace_one`]), an unknown
    ///   operator, operators mixed with fields.
    /// - `ConflictingUpdateOperators`: two operators on the same path or nested paths.
    /// - `TypeMismatch`: `$inc`/`$mul` of a non-number; `BadValue`: an array operator on a
    ///   non-array, a positional path, or an updated (or upserted) measurement whose time
    ///   field is missing or not a datetime; `PathNotViable`: a path through a scalar. On any
    ///   of these nothing changes.
    /// - `BadValue` for a filter [`Collection::find`] does not support; storage errors as
    ///   [`Collection::delete_many`].
    pub fn update_many_with(
        &self,
        filter: &Document,
        update: &Document,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.inner.update(filter, update, true, options.upsert)
    }

    /// Updates one measurement matching `filter` (MongoDB 8.0 `multi: false`), the first
    /// found in no particular order. `update` is update operators as in
    /// [`Collection::update_many_with`], or a replacement document (the measurement becomes
    /// it, keeping its `_id` when the replacement has none).
    ///
    /// # Errors
    /// As [`Collection::update_many_with`] (a replacement is accepted here).
    pub fn update_one(
        &self,
        filter: &Document,
        update: &Document,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.inner.update(filter, update, false, options.upsert)
    }

    /// Replaces one measurement matching `filter` by `replacement` (MongoDB's `replaceOne`),
    /// keeping its `_id` when `replacement` has none; with upsert and no match, inserts
    /// `replacement`.
    ///
    /// # Errors
    /// `FailedToParse` when `replacement` holds update operators; otherwise as
    /// [`Collection::update_one`].
    pub fn replace_one(
        &self,
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
        self.inner
            .update(filter, replacement, false, options.upsert)
    }
}

impl CollectionInner {
    fn update(
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
