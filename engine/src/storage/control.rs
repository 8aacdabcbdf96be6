//! The control record of a bucket (SPEC §4.1, §4.3, §4.5): what the catalog needs to reopen it
//! and what queries prune with, stored apart from the column data (`docs/architecture.md`, write path).

use std::collections::HashMap;

use bson::{Bson, Document};
use tscoll_catalog::{BucketId, BucketPart, BucketSums, FieldSums, StoredBucket};
use tscoll_codec::Column;

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
    /// The fields' sums (in the order of `min`); `None` when unknown.
    pub(crate) sums: Option<BucketSums>,
}

impl Control {
    /// `control.version`: 2 sorted, 3 unsorted (SPEC §4.2).
    pub(crate) fn version(&self) -> i32 {
        if self.sorted { 2 } else { 3 }
    }

    /// The control record of a bucket once `part` is stored: not closed, the next segment
    /// after the part's.
    pub(crate) fn of_part(part: &BucketPart) -> Control {
        Control {
            sorted: part.sorted,
            min_time: part.min_time,
            max_time: part.max_time,
            count: part.count,
            size_estimate: part.size_estimate,
            next_segment: part.segment_no + 1,
            closed: false,
            meta_hash: part.key.hash,
            uncompressed_bytes: part.uncompressed_bytes,
            min: part.control.min(),
            max: part.control.max(),
            sums: part.sums.clone(),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let h = Head {
            sorted: self.sorted,
            min_time: self.min_time,
            max_time: self.max_time,
            count: self.count,
            size_estimate: self.size_estimate,
            next_segment: self.next_segment,
            closed: self.closed,
            meta_hash: self.meta_hash,
            uncompressed_bytes: self.uncompressed_bytes,
        };
        let sums = self.sums.as_ref().map(|s| s.encode(u64::from(self.count)));
        encode_record(&h, &self.min, &self.max, sums.as_deref())
    }

    #[expect(clippy::cast_sign_loss, reason = "stored as BSON int64 bit patterns")]
    pub(crate) fn decode(bytes: &[u8]) -> Result<Control, String> {
        let mut d = Document::from_reader(bytes).map_err(|e| format!("control record: {e}"))?;
        let int = |k: &str| {
            d.get_i64(k)
                .map_err(|_| format!("control record lacks '{k}'"))
        };
        let date = |k: &str| {
            d.get_datetime(k)
                .map(|t| t.timestamp_millis())
                .map_err(|_| format!("control record lacks '{k}'"))
        };
        let count = u32::try_from(int("count")?).map_err(|_| "bad count".to_owned())?;
        // Sums that cannot be read are dropped: the bucket is then decoded to answer.
        let sums = match d.get("sums") {
            Some(Bson::Binary(b)) => BucketSums::decode(&b.bytes, u64::from(count)).ok(),
            _ => None,
        };
        let version = d
            .get_i32("version")
            .map_err(|_| "control record lacks 'version'".to_owned())?;
        let control = Control {
            sorted: version == 2,
            min_time: date("minTime")?,
            max_time: date("maxTime")?,
            count,
            size_estimate: int("size")? as u64,
            next_segment: u32::try_from(int("segments")?)
                .map_err(|_| "bad segment count".to_owned())?,
            closed: matches!(d.get("closed"), Some(Bson::Boolean(true))),
            meta_hash: int("hash")? as u64,
            uncompressed_bytes: int("raw")? as u64,
            min: Document::new(),
            max: Document::new(),
            sums,
        };
        // The min and max documents are moved out of the record, not copied.
        let mut take_document = |k: &str| match d.remove(k) {
            Some(Bson::Document(doc)) => Ok(doc),
            _ => Err(format!("control record lacks '{k}'")),
        };
        Ok(Control {
            min: take_document("min")?,
            max: take_document("max")?,
            ..control
        })
    }

    /// The catalog's form of the bucket, for reopening it (SPEC §6.8).
    pub(crate) fn into_stored(self, id: BucketId, key_bytes: Vec<u8>) -> StoredBucket {
        StoredBucket {
            id,
            key_bytes,
            min_time: self.min_time,
            max_time: self.max_time,
            count: self.count,
            uncompressed_bytes: self.uncompressed_bytes,
            size_estimate: self.size_estimate,
            sorted: self.sorted,
            next_segment: self.next_segment,
            closed: self.closed,
            min: self.min,
            max: self.max,
            sums: self.sums,
        }
    }
}

/// The sums of a bucket whose fields are the keys of `min`: per field, its `stored` sums
/// (the sums of a record whose fields are the keys of the document given with them) plus
/// those of every row of its column in `columns`.
pub(crate) fn merged_sums(
    min: &Document,
    stored: Option<(&Document, &BucketSums)>,
    columns: &[(String, Column)],
) -> BucketSums {
    // Positions by name: a bucket may have many fields.
    let stored_at: HashMap<&str, usize> = stored.map_or_else(HashMap::new, |(stored_min, _)| {
        stored_min
            .keys()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i))
            .collect()
    });
    let column_of: HashMap<&str, &Column> = columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
    let fields = min
        .keys()
        .map(|name| {
            let before = stored.map_or(Some(FieldSums::default()), |(_, sums)| {
                stored_at
                    .get(name.as_str())
                    .map_or(Some(FieldSums::default()), |&i| sums.field(i))
            });
            let added = column_of
                .get(name.as_str())
                .map_or(Some(FieldSums::default()), |c| {
                    FieldSums::of_rows(c, 0, c.len())
                });
            match (before, added) {
                (Some(mut a), Some(b)) => {
                    a.merge(&b);
                    Some(a)
                }
                _ => None,
            }
        })
        .collect();
    BucketSums { fields }
}

/// The scalar part of a control record.
struct Head {
    sorted: bool,
    min_time: i64,
    max_time: i64,
    count: u32,
    size_estimate: u64,
    next_segment: u32,
    closed: bool,
    meta_hash: u64,
    uncompressed_bytes: u64,
}

/// Writes the control record as a BSON document, field by field, `min` and `max` serialized in
/// place, without a copy of them. Fields:
/// `version` (int32), `minTime`, `maxTime` (dates), `count`, `size`, `segments`, `hash`, `raw`
/// (int64), `min`, `max` (documents), `sums` (binary, subtype 0: [`BucketSums::encode`], when
/// known), `closed` (bool, only when true); `docs/keys.md`.
#[expect(
    clippy::cast_possible_wrap,
    reason = "stored as BSON int64 bit patterns"
)]
fn encode_record(h: &Head, min: &Document, max: &Document, sums: Option<&[u8]>) -> Vec<u8> {
    fn name(out: &mut Vec<u8>, tag: u8, name: &str) {
        out.push(tag);
        out.extend_from_slice(name.as_bytes());
        out.push(0);
    }
    fn int64(out: &mut Vec<u8>, key: &str, v: i64) {
        name(out, 0x12, key);
        out.extend_from_slice(&v.to_le_bytes());
    }
    fn date(out: &mut Vec<u8>, key: &str, v: i64) {
        name(out, 0x09, key);
        out.extend_from_slice(&v.to_le_bytes());
    }
    fn document(out: &mut Vec<u8>, key: &str, d: &Document) {
        name(out, 0x03, key);
        if d.to_writer(&mut *out).is_err() {
            // Only unrepresentable documents fail to serialize; keep the record readable.
            out.extend_from_slice(&[5, 0, 0, 0, 0]);
        }
    }
    let mut out = Vec::with_capacity(160 + 24 * (min.len() + max.len()));
    out.extend_from_slice(&[0; 4]);
    name(&mut out, 0x10, "version");
    out.extend_from_slice(&(if h.sorted { 2_i32 } else { 3 }).to_le_bytes());
    date(&mut out, "minTime", h.min_time);
    date(&mut out, "maxTime", h.max_time);
    int64(&mut out, "count", i64::from(h.count));
    int64(&mut out, "size", h.size_estimate as i64);
    int64(&mut out, "segments", i64::from(h.next_segment));
    int64(&mut out, "hash", h.meta_hash as i64);
    int64(&mut out, "raw", h.uncompressed_bytes as i64);
    document(&mut out, "min", min);
    document(&mut out, "max", max);
    if let Some(sums) = sums
        && let Ok(len) = i32::try_from(sums.len())
    {
        name(&mut out, 0x05, "sums");
        out.extend_from_slice(&len.to_le_bytes());
        out.push(0);
        out.extend_from_slice(sums);
    }
    if h.closed {
        name(&mut out, 0x08, "closed");
        out.push(1);
    }
    out.push(0);
    let len = i32::try_from(out.len()).unwrap_or(i32::MAX);
    out[..4].copy_from_slice(&len.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use bson::{Bson, DateTime, doc, oid::ObjectId};

    use super::*;

    /// The record as a BSON document built with the `bson` crate, for comparison.
    #[expect(clippy::cast_possible_wrap, reason = "as stored")]
    fn reference(c: &Control) -> Vec<u8> {
        let mut d = doc! {
            "version": c.version(),
            "minTime": DateTime::from_millis(c.min_time),
            "maxTime": DateTime::from_millis(c.max_time),
            "count": i64::from(c.count),
            "size": c.size_estimate as i64,
            "segments": i64::from(c.next_segment),
            "hash": c.meta_hash as i64,
            "raw": c.uncompressed_bytes as i64,
            "min": c.min.clone(),
            "max": c.max.clone(),
        };
        if let Some(sums) = &c.sums {
            d.insert(
                "sums",
                bson::Binary {
                    subtype: bson::spec::BinarySubtype::Generic,
                    bytes: sums.encode(u64::from(c.count)),
                },
            );
        }
        if c.closed {
            d.insert("closed", true);
        }
        d.to_vec().expect("serializable")
    }

    #[test]
    fn encoded_record_is_the_bson_document_and_decodes_back() {
        let sums = BucketSums {
            fields: vec![
                Some(tscoll_catalog::FieldSums {
                    count: 1000,
                    ints: -(1 << 100),
                    m2: 2.5,
                    longs: true,
                    squares: None,
                    ..Default::default()
                }),
                None,
            ],
        };
        for (sorted, closed, sums) in [(true, false, None), (false, true, Some(sums))] {
            let c = Control {
                sorted,
                min_time: -62_135_596_800_000,
                max_time: 1_700_000_000_123,
                count: 1000,
                size_estimate: u64::MAX,
                next_segment: 7,
                closed,
                meta_hash: 0x8000_0000_0000_0001,
                uncompressed_bytes: 123_456,
                min: doc! {"_id": ObjectId::from_bytes([1; 12]), "t": DateTime::from_millis(0),
                "a": {"b": [1, "x", Bson::Null]}, "s": "é"},
                max: doc! {"t": DateTime::from_millis(5), "v": 2.5},
                sums,
            };
            let bytes = c.encode();
            assert_eq!(bytes, reference(&c));
            assert_eq!(Control::decode(&bytes), Ok(c));
        }
    }
}
