//! A query filter over plain documents: what `$match` does in a pipeline, for documents that
//! are not measurements of a collection (a catalog listing, a command's result).

use bson::Document;

use super::filter::Filter;
use crate::Result;

/// The time field name no document has: every field of a plain document is a measurement
/// field (the same rule as a pipeline's `$match` after its first stage).
const NO_TIME: &str = "\u{1}";

/// A MongoDB query filter (`{name: "weather"}`, `{"options.timeseries": {$exists: true}}`,
/// `{$or: [...]}`, `$expr`, …) matched against plain documents, with the operators and rules
/// of [`Collection::find`](crate::Collection::find)'s filters (SPEC §14.2).
///
/// ```
/// # use bson::doc;
/// # use tscoll_engine::DocumentFilter;
/// let f = DocumentFilter::new(&doc! { "name": { "$regex": "^wea" }, "type": "timeseries" })?;
/// assert!(f.matches(&doc! { "name": "weather", "type": "timeseries" })?);
/// assert!(!f.matches(&doc! { "name": "cpu", "type": "timeseries" })?);
/// # Ok::<(), tscoll_engine::Error>(())
/// ```
#[derive(Debug)]
pub struct DocumentFilter(Filter);

impl DocumentFilter {
    /// Parses a filter.
    ///
    /// # Errors
    /// `BadValue` (or the operator's own code) for an unknown operator or a malformed
    /// argument, as [`Collection::find`](crate::Collection::find).
    pub fn new(filter: &Document) -> Result<DocumentFilter> {
        Ok(DocumentFilter(Filter::parse(filter, NO_TIME, None)?))
    }

    /// Whether `doc` matches.
    ///
    /// # Errors
    /// An expression (`$expr`) that fails on the document, with MongoDB's code.
    pub fn matches(&self, doc: &Document) -> Result<bool> {
        self.0
            .matches_row(doc, 0, None)
            .map_err(super::expr::EvalError::into_query_error)
    }
}
