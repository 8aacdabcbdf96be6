//! Indexes of a time-series collection (SPEC §13): the default meta+time index and secondary
//! indexes on meta sub-fields and on measurement fields through `control.min`/`control.max`.

use bson::Document;
use tscoll_catalog::{BucketId, BucketKey};

use crate::collection::CollectionInner;
use crate::control::Control;
use crate::error::Result;
use crate::filter::Filter;
use crate::store::IndexEntry;

/// The index definitions of a collection, as persisted in its collection record.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Indexes {
    /// The default `{<metaField>: 1, <timeField>: 1}` index was dropped (SPEC ).
    pub(crate) default_dropped: bool,
}

impl Indexes {
    /// Reads the definitions from a collection record (`indexes` field; absent = defaults).
    pub(crate) fn from_record(record: &Document) -> Indexes {
        let Ok(d) = record.get_document("indexes") else {
            return Indexes::default();
        };
        Indexes {
            default_dropped: d.get_bool("defaultDropped").unwrap_or(false),
        }
    }

    /// The persisted form (the `indexes` field of the collection record).
    pub(crate) fn to_record(&self) -> Document {
        bson::doc! { "defaultDropped": self.default_dropped }
    }
}

impl CollectionInner {
    /// Adds to `wb` the secondary index changes of one bucket whose control record goes from
    /// `old` to `new` (`None` = absent) in series `key`.
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when reading an index fails.
    #[expect(clippy::unnecessary_wraps, reason = "secondary indexes write here")]
    pub(crate) fn index_bucket_change(
        &self,
        _wb: &mut fjall::OwnedWriteBatch,
        _id: &BucketId,
        _key: &BucketKey,
        _old: Option<&Control>,
        _new: Option<&Control>,
    ) -> Result<()> {
        Ok(())
    }

    /// The buckets a secondary index finds for `filter`, or `None` when no secondary index
    /// serves it (the caller then scans the meta+time index).
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when the scan fails.
    #[expect(clippy::unnecessary_wraps, reason = "secondary indexes answer here")]
    pub(crate) fn secondary_candidates(&self, _filter: &Filter) -> Result<Option<Vec<IndexEntry>>> {
        Ok(None)
    }
}
