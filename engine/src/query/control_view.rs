//! A bucket's control record read in place (SPEC §4.1, §4.3, §4.5): the fields queries prune
//! and answer with, without building a `bson::Document` for `control.min`/`control.max`
//! (the stored layout is in `docs/keys.md`).

use bson::{Bson, RawDocument};
use tscoll_catalog::{BucketId, BucketSums, FieldSums};

use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::mql::filter::ControlBounds;

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
    /// The stored form of the fields' sums (`BucketSums::encode`), when the record has it.
    pub(crate) sums: Option<&'a [u8]>,
}

impl ControlBytes {
    /// Wraps a stored control record.
    pub(crate) fn from_slice(bytes: fjall::Slice) -> ControlBytes {
        ControlBytes(bytes)
    }

    /// Parses the view: one pass over the top-level fields, by their bytes; `min` and `max`
    /// are borrowed as they are stored.
    ///
    /// # Errors
    /// A message when the record is not a control record.
    pub(crate) fn view(&self) -> std::result::Result<ControlView<'_>, String> {
        match fast_view(&self.0) {
            Some(v) => Ok(v),
            None => self.checked_view(),
        }
    }

    /// [`ControlBytes::view`] through the `bson` crate's reader, which explains what is wrong
    /// with a bad record.
    fn checked_view(&self) -> std::result::Result<ControlView<'_>, String> {
        let d = RawDocument::from_bytes(&self.0[..]).map_err(|e| format!("control record: {e}"))?;
        let (mut version, mut min_time, mut max_time, mut count, mut min, mut max) =
            (None, None, None, None, None, None);
        let mut sums = None;
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
                "sums" => sums = v.as_binary().map(|b| b.bytes),
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
            sums,
        })
    }
}

/// The view of a well-formed control record, read field by field from its bytes (element
/// type, name, fixed or length-prefixed value), without validating the names or values it
/// does not use; `None` when the bytes are not what the writer produces, or a field is
/// missing (the caller then reads it with the `bson` crate for a precise message).
fn fast_view(bytes: &[u8]) -> Option<ControlView<'_>> {
    let declared = usize::try_from(i32::from_le_bytes(bytes.get(..4)?.try_into().ok()?)).ok()?;
    if declared != bytes.len() || bytes.last() != Some(&0) {
        return None;
    }
    let (mut version, mut min_time, mut max_time, mut count, mut min, mut max) =
        (None, None, None, None, None, None);
    let mut sums = None;
    for element in elements(bytes) {
        let (ty, name, value) = element?;
        let value = value?;
        let le8 = || {
            value
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map(i64::from_le_bytes)
        };
        match (name, ty) {
            (b"version", 0x10) => {
                version = value
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map(i32::from_le_bytes);
            }
            (b"minTime", 0x09) => min_time = le8(),
            (b"maxTime", 0x09) => max_time = le8(),
            (b"count", 0x12) => count = le8(),
            (b"min", 0x03) => min = Some(RawDocument::from_bytes(value).ok()?),
            (b"max", 0x03) => max = Some(RawDocument::from_bytes(value).ok()?),
            // Binary, subtype 0: length, subtype, bytes.
            (b"sums", 0x05) if value.get(4) == Some(&0) => sums = value.get(5..),
            _ => {}
        }
    }
    Some(ControlView {
        min_time: min_time?,
        max_time: max_time?,
        count: u64::try_from(count?).ok()?,
        sorted: version? == 2,
        min: min?,
        max: max?,
        sums,
    })
}

/// The length of a BSON element value of type `ty` starting `rest`, for every type of the
/// BSON spec; `None` for an unknown type or bytes too short to tell (the walk ends there).
fn element_len(ty: u8, rest: &[u8]) -> Option<usize> {
    let prefix = || {
        rest.get(..4)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_le_bytes)
            .and_then(|n| usize::try_from(n).ok())
    };
    let cstring = |from: usize| {
        rest.get(from..)?
            .iter()
            .position(|&b| b == 0)
            .map(|n| n + 1)
    };
    match ty {
        0x01 | 0x09 | 0x11 | 0x12 => Some(8),
        0x10 => Some(4),
        0x08 => Some(1),
        0x07 => Some(12),
        0x0A | 0x06 | 0x7F | 0xFF => Some(0),
        0x13 => Some(16),
        // Documents, arrays and code with scope: the length prefix counts itself.
        0x03 | 0x04 | 0x0F => prefix(),
        0x02 | 0x0D | 0x0E => prefix().map(|n| n + 4),
        0x05 => prefix().map(|n| n + 5),
        // A regular expression: pattern and options, two C strings.
        0x0B => {
            let pattern = cstring(0)?;
            Some(pattern + cstring(pattern)?)
        }
        // A DBPointer: a string, then an ObjectId.
        0x0C => prefix().map(|n| n + 4 + 12),
        _ => None,
    }
}

/// One element of a document read in place: its type byte, name and value bytes (`None`
/// when [`element_len`] does not know the type's length).
type Element<'a> = (u8, &'a [u8], Option<&'a [u8]>);

/// The elements of the BSON document `bytes` read in place, without validating them: each
/// `(type, name, value bytes)`, the value `None` for a type whose length [`element_len`] does
/// not compute (the walk ends there); an item `None` when the bytes are malformed (the walk
/// ends too). The elements must end exactly at the document's closing zero.
fn elements(bytes: &[u8]) -> impl Iterator<Item = Option<Element<'_>>> {
    let end = bytes.len().saturating_sub(1);
    let mut pos = 4;
    std::iter::from_fn(move || {
        if pos >= end {
            return None;
        }
        let item = (|| {
            let ty = bytes[pos];
            let name_len = bytes.get(pos + 1..end)?.iter().position(|&b| b == 0)?;
            let name = &bytes[pos + 1..pos + 1 + name_len];
            let at = pos + 2 + name_len;
            let Some(len) = element_len(ty, bytes.get(at..end)?) else {
                return Some((ty, name, None));
            };
            let value = bytes.get(at..at + len).filter(|_| at + len <= end)?;
            pos = at + len;
            Some((ty, name, Some(value)))
        })();
        if !matches!(item, Some((_, _, Some(_)))) {
            pos = end; // nothing can be read past this element
        }
        Some(item)
    })
}

/// The value of `field` in a stored control document (`control.min` or `control.max`):
/// found by comparing names as bytes; numbers, dates and object ids are read in place, other
/// types through the `bson` crate.
fn control_value(d: &RawDocument, field: &str) -> Option<Bson> {
    for element in elements(d.as_bytes()) {
        let (ty, name, value) = element?;
        let Some(value) = value else {
            return raw_get(d, field);
        };
        if name == field.as_bytes() {
            let le8 = || value.get(..8).and_then(|b| b.try_into().ok());
            return match ty {
                0x10 => value
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map(|b| Bson::Int32(i32::from_le_bytes(b))),
                0x12 => le8().map(|b| Bson::Int64(i64::from_le_bytes(b))),
                0x01 => le8().map(|b| Bson::Double(f64::from_le_bytes(b))),
                0x09 => le8()
                    .map(|b| Bson::DateTime(bson::DateTime::from_millis(i64::from_le_bytes(b)))),
                0x07 => value
                    .get(..12)
                    .and_then(|b| b.try_into().ok())
                    .map(|b| Bson::ObjectId(bson::oid::ObjectId::from_bytes(b))),
                _ => raw_get(d, field),
            };
        }
    }
    None
}

/// The keys of a stored control document, found by skipping values by their length;
/// `None` for a value whose length this reader does not compute.
fn field_keys(d: &RawDocument) -> Option<Vec<&[u8]>> {
    elements(d.as_bytes())
        .map(|e| e.and_then(|(_, name, value)| value.map(|_| name)))
        .collect()
}

impl ControlView<'_> {
    /// `control.min.<field>` as a value.
    pub(crate) fn min_of(&self, field: &str) -> Option<Bson> {
        control_value(self.min, field)
    }

    /// `control.max.<field>` as a value.
    pub(crate) fn max_of(&self, field: &str) -> Option<Bson> {
        control_value(self.max, field)
    }

    /// The fields' sums, in column order; `None` when the record has none (or they cannot
    /// be read: the bucket is then decoded to answer).
    pub(crate) fn sums(&self) -> Option<BucketSums> {
        BucketSums::decode(self.sums?, self.count).ok()
    }

    /// The sums of `field` in the bucket's `sums`, given the keys of `control.min`
    /// ([`ControlView::field_keys`]): no values when the bucket lacks the field; `None` when
    /// they are unknown (the field holds a Decimal128).
    pub(crate) fn field_sums(sums: &BucketSums, keys: &[&[u8]], field: &str) -> Option<FieldSums> {
        match keys.iter().position(|k| *k == field.as_bytes()) {
            None => Some(FieldSums::default()),
            Some(i) => sums.field(i),
        }
    }

    /// The keys of `control.min`, in order, read from its bytes in one pass.
    pub(crate) fn field_keys(&self) -> Vec<&[u8]> {
        field_keys(self.min).unwrap_or_else(|| {
            self.min
                .iter()
                .filter_map(std::result::Result::ok)
                .map(|(k, _)| k.as_str().as_bytes())
                .collect()
        })
    }

    /// Each field of `control.min`, in column order, with the BSON types of its
    /// `control.min` and `control.max` values.
    pub(crate) fn field_types(&self) -> Vec<(&str, u8, u8)> {
        let max: Vec<(u8, &[u8])> = elements(self.max.as_bytes())
            .map_while(|e| e.map(|(ty, name, _)| (ty, name)))
            .collect();
        elements(self.min.as_bytes())
            .map_while(|e| e)
            .enumerate()
            .filter_map(|(i, (ty, name, _))| {
                let max_type = match max.get(i) {
                    Some(&(t, n)) if n == name => t,
                    _ => max.iter().find(|(_, n)| *n == name).map_or(ty, |&(t, _)| t),
                };
                Some((std::str::from_utf8(name).ok()?, ty, max_type))
            })
            .collect()
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
    pub(crate) fn stored_control_bytes(&self, id: &BucketId) -> Result<Option<ControlBytes>> {
        Ok(self.store.control(id)?.map(ControlBytes))
    }

    /// The [`Error::Corruption`] of a bad control record.
    pub(crate) fn corrupt_control(&self, id: &BucketId, reason: String) -> Error {
        self.store.corrupt_control(id, reason)
    }
}

#[cfg(test)]
mod tests {
    use bson::spec::BinarySubtype;
    use bson::{Binary, Bson, DbPointer, JavaScriptCodeWithScope, Regex, Timestamp, doc};

    use super::*;

    #[test]
    fn every_bson_type_is_walked_over_to_the_fields_after_it() {
        let cstring = |s: &str| bson::raw::CString::try_from(s).expect("no NUL");
        let pointer: DbPointer = bson::Document::from_reader(
            &hex_bytes("1d0000000c7000050000006e732e630000000000000000000000000000")[..],
        )
        .ok()
        .and_then(|d| match d.get("p") {
            Some(Bson::DbPointer(p)) => Some(p.clone()),
            _ => None,
        })
        .expect("a DBPointer");
        let d = doc! {
            "double": 1.5, "string": "s", "doc": { "a": 1 }, "array": [1, "x"],
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "undefined": Bson::Undefined, "oid": bson::oid::ObjectId::from_bytes([7; 12]),
            "bool": true, "date": bson::DateTime::from_millis(5), "null": Bson::Null,
            "regex": Regex { pattern: cstring("a.c"), options: cstring("i") },
            "pointer": pointer,
            "code": Bson::JavaScriptCode("f()".into()), "symbol": Bson::Symbol("y".into()),
            "scope": JavaScriptCodeWithScope { code: "g()".into(), scope: doc! { "z": 1 } },
            "int32": 3_i32, "ts": Timestamp { time: 1, increment: 2 }, "int64": 4_i64,
            "decimal": bson::Decimal128::from_bytes([0; 16]),
            "min": Bson::MinKey, "max": Bson::MaxKey,
            "last": 9_i32,
        };
        let raw = bson::RawDocumentBuf::try_from(&d).expect("raw");
        let names: Vec<&[u8]> = elements(raw.as_bytes())
            .map(|e| {
                let (_, name, value) = e.expect("well formed");
                assert!(value.is_some(), "{}", String::from_utf8_lossy(name));
                name
            })
            .collect();
        let want: Vec<&[u8]> = d.keys().map(|k| k.as_bytes()).collect();
        assert_eq!(names, want);
    }

    fn hex_bytes(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect()
    }
}
