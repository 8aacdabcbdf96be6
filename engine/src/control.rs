//! The control record of a bucket (SPEC §4.1, §4.3, §4.5): what the catalog needs to reopen it
//! and what queries prune with, stored apart from the column data so a commit rewrites only it
//! and appends a segment (DESIGN "Write path rules").

use bson::{Bson, DateTime, Document, doc};
use tscoll_catalog::{BucketId, PreparedBatch, StoredBucket};

/// A bucket's control record as stored in the `ctl` keyspace (a BSON document).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Control {
    pub(crate) sorted: bool,
    pub(crate) min_time: i64,
    pub(crate) max_time: i64,
    pub(crate) count: u32,
    pub(crate) size_estimate: u64,
    pub(crate) next_segment: u32,
    pub(crate) closed: bool,
    pub(crate) meta_hash: u64,
    pub(crate) uncompressed_bytes: u64,
    pub(crate) min: Document,
    pub(crate) max: Document,
}

impl Control {
    /// `control.version`: 2 sorted, 3 unsorted (SPEC §4.2).
    pub(crate) fn version(&self) -> i32 {
        if self.sorted { 2 } else { 3 }
    }

    pub(crate) fn from_prepared(p: &PreparedBatch, previous_uncompressed: u64) -> Control {
        Control {
            sorted: p.sorted,
            min_time: p.min_time,
            max_time: p.max_time,
            count: p.count,
            size_estimate: p.size_estimate,
            next_segment: p.segment_no + 1,
            closed: false,
            meta_hash: p.key.hash,
            uncompressed_bytes: previous_uncompressed + p.uncompressed_bytes,
            min: p.control_min.clone(),
            max: p.control_max.clone(),
        }
    }

    #[expect(
        clippy::cast_possible_wrap,
        reason = "stored as BSON int64 bit patterns"
    )]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut d = doc! {
            "version": self.version(),
            "minTime": DateTime::from_millis(self.min_time),
            "maxTime": DateTime::from_millis(self.max_time),
            "count": i64::from(self.count),
            "size": self.size_estimate as i64,
            "segments": i64::from(self.next_segment),
            "hash": self.meta_hash as i64,
            "raw": self.uncompressed_bytes as i64,
            "min": self.min.clone(),
            "max": self.max.clone(),
        };
        if self.closed {
            d.insert("closed", true);
        }
        d.to_vec().unwrap_or_default()
    }

    #[expect(clippy::cast_sign_loss, reason = "stored as BSON int64 bit patterns")]
    pub(crate) fn decode(bytes: &[u8]) -> Result<Control, String> {
        let d = Document::from_reader(bytes).map_err(|e| format!("control record: {e}"))?;
        let int = |k: &str| {
            d.get_i64(k)
                .map_err(|_| format!("control record lacks '{k}'"))
        };
        let date = |k: &str| {
            d.get_datetime(k)
                .map(|t| t.timestamp_millis())
                .map_err(|_| format!("control record lacks '{k}'"))
        };
        let version = d
            .get_i32("version")
            .map_err(|_| "control record lacks 'version'".to_owned())?;
        Ok(Control {
            sorted: version == 2,
            min_time: date("minTime")?,
            max_time: date("maxTime")?,
            count: u32::try_from(int("count")?).map_err(|_| "bad count".to_owned())?,
            size_estimate: int("size")? as u64,
            next_segment: u32::try_from(int("segments")?)
                .map_err(|_| "bad segment count".to_owned())?,
            closed: matches!(d.get("closed"), Some(Bson::Boolean(true))),
            meta_hash: int("hash")? as u64,
            uncompressed_bytes: int("raw")? as u64,
            min: d
                .get_document("min")
                .map_err(|_| "control record lacks 'min'".to_owned())?
                .clone(),
            max: d
                .get_document("max")
                .map_err(|_| "control record lacks 'max'".to_owned())?
                .clone(),
        })
    }

    pub(crate) fn to_stored(&self, id: BucketId, key_bytes: Vec<u8>) -> StoredBucket {
        StoredBucket {
            id,
            key_bytes,
            min_time: self.min_time,
            max_time: self.max_time,
            count: self.count,
            size_estimate: self.size_estimate,
            sorted: self.sorted,
            next_segment: self.next_segment,
            closed: self.closed,
            min: self.min.clone(),
            max: self.max.clone(),
        }
    }
}
