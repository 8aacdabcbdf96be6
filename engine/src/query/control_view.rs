//! A bucket's control record read in place (SPEC §4.1, §4.3, §4.5): the fields queries prune
//! and answer with, without building a `bson::Document` for `control.min`/`control.max`
//! (the stored layout is in `docs/keys.md`).

use bson::{Bson, RawDocument};
use tscoll_catalog::BucketId;

use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::filter::ControlBounds;
use crate::keys::hex;

/// The stored control record of one bucket, owned (the bytes as fjall returned them).
pub(crate) struct ControlBytes(fjall::Slice);

/// A borrowed view of a control record.
pub(crate) struct ControlView<'a> {
    /// Rounded min time, ms (`control.min.<time>`, R-4.3.1).
    pub(crate) min_time: i64,
    /// Exact max time, ms (`control.max.<time>`).
    pub(crate) max_time: i64,
    /// Number of measurements (`control.count`, §4.5).
    pub(crate) count: u64,
    /// Rows in time order across the bucket (`control.version` 2, R-4.2.4).
    pub(crate) sorted: bool,
    /// `control.min`: per field, in the bucket's column order.
    pub(crate) min: &'a RawDocument,
    /// `control.max`.
    pub(crate) max: &'a RawDocument,
}

impl ControlBytes {
    /// Wraps a stored control record.
    pub(crate) fn from_slice(bytes: fjall::Slice) -> ControlBytes {
        ControlBytes(bytes)
    }

    /// Parses the view.
    ///
    /// # Errors
    /// A message when the record is not a control record.
    pub(crate) fn view(&self) -> std::result::Result<ControlView<'_>, String> {
        let d = RawDocument::from_bytes(&self.0[..]).map_err(|e| format!("control record: {e}"))?;
        let (mut version, mut min_time, mut max_time, mut count, mut min, mut max) =
            (None, None, None, None, None, None);
        // One pass over the top-level fields.
        for element in d {
            let (k, v) = element.map_err(|e| format!("control record: {e}"))?;
            match k.as_str() {
                "version" => version = v.as_i32(),
                "minTime" => min_time = v.as_datetime().map(|t| t.timestamp_millis()),
                "maxTime" => max_time = v.as_datetime().map(|t| t.timestamp_millis()),
                "count" => count = v.as_i64(),
                "min" => min = v.as_document(),
                "max" => max = v.as_document(),
                _ => {}
            }
        }
        let lacks = |k: &str| format!("control record lacks '{k}'");
        Ok(ControlView {
            min_time: min_time.ok_or_else(|| lacks("minTime"))?,
            max_time: max_time.ok_or_else(|| lacks("maxTime"))?,
            count: u64::try_from(count.ok_or_else(|| lacks("count"))?)
                .map_err(|_| "bad count".to_owned())?,
            sorted: version.ok_or_else(|| lacks("version"))? == 2,
            min: min.ok_or_else(|| lacks("min"))?,
            max: max.ok_or_else(|| lacks("max"))?,
        })
    }
}

impl ControlView<'_> {
    /// `control.min.<field>` as a value.
    pub(crate) fn min_of(&self, field: &str) -> Option<Bson> {
        raw_get(self.min, field)
    }

    /// `control.max.<field>` as a value.
    pub(crate) fn max_of(&self, field: &str) -> Option<Bson> {
        raw_get(self.max, field)
    }

    /// The bucket's field names in column order (the keys of `control.min`, §4.8).
    pub(crate) fn field_names(&self) -> impl Iterator<Item = &str> {
        self.min
            .iter()
            .filter_map(std::result::Result::ok)
            .map(|(k, _)| k.as_str())
    }
}

fn raw_get(d: &RawDocument, field: &str) -> Option<Bson> {
    d.get(field)
        .ok()
        .flatten()
        .and_then(|v| Bson::try_from(v).ok())
}

impl ControlBounds for ControlView<'_> {
    fn bounds(&self, field: &str) -> (Option<Bson>, Option<Bson>) {
        (self.min_of(field), self.max_of(field))
    }
}

impl CollectionInner {
    /// The control record of a bucket as stored, or `None` when the bucket is gone (removed
    /// after the index was scanned).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn control_bytes(&self, id: &BucketId) -> Result<Option<ControlBytes>> {
        Ok(self
            .ctl
            .get(id)
            .map_err(Error::storage("reading a control record"))?
            .map(ControlBytes))
    }

    /// The [`Error::Corruption`] of a bad control record.
    pub(crate) fn corrupt_control(&self, id: &BucketId, reason: String) -> Error {
        Error::Corruption {
            keyspace: format!("c{}_ctl", self.id),
            key: hex(id),
            reason,
        }
    }
}
