//! Set-up shared by the catalog's SPEC tests: one series `m: "s"` of a collection with time
//! field `t`, a 1-hour span and minute rounding (granularity seconds), and a storage double
//! whose reopening query finds one given bucket.

use std::sync::Arc;

use bson::{Bson, DateTime, Document, doc};
use tscoll_catalog::{
    BucketCatalog, BucketId, BucketKey, BucketSource, BucketingSpec, CatalogOptions, QueryOutcome,
    SourceError, StoredBucket,
};

/// One hour (ms): the bucket span.
pub(crate) const HOUR: i64 = 3_600_000;
/// A whole hour (ms since the epoch): the tests' base time.
pub(crate) const T0: i64 = 1000 * HOUR;

/// A catalog with default parameters, span 1 h, rounding 1 min.
pub(crate) fn catalog() -> Arc<BucketCatalog> {
    Arc::new(BucketCatalog::new(
        BucketingSpec {
            time_field: "t".to_owned(),
            meta_field: Some("m".to_owned()),
            max_span_ms: HOUR,
            rounding_ms: 60_000,
        },
        CatalogOptions::default(),
    ))
}

/// The series `m: "s"`.
pub(crate) fn key() -> BucketKey {
    BucketKey::from_meta(Some(&Bson::String("s".to_owned())))
}

/// A measurement of the series `ms` after `T0`, with `v: v`.
pub(crate) fn doc_at(ms: i64, v: i64) -> Document {
    doc! { "t": DateTime::from_millis(T0 + ms), "m": "s", "v": v }
}

/// A storage whose reopening query always finds its bucket, when it has one.
pub(crate) struct Finds(pub(crate) Option<StoredBucket>);

impl BucketSource for Finds {
    fn fetch(&self, _: &BucketKey, id: &BucketId) -> Result<Option<StoredBucket>, SourceError> {
        Ok(self.0.clone().filter(|b| b.id == *id))
    }
    fn query(
        &self,
        _: &BucketKey,
        _: i64,
        _: i64,
        _: u32,
        _: u64,
    ) -> Result<QueryOutcome, SourceError> {
        Ok(match &self.0 {
            Some(b) => QueryOutcome::Hit(Box::new(b.clone())),
            None => QueryOutcome::Miss,
        })
    }
}
