//! Bucket keys: the normalized meta value of a series and its hash (SPEC §3, §6.1).

use bson::{Bson, Document};
use xxhash_rust::xxh3::xxh3_64;

use crate::value::{self, type_code};

/// The series a measurement belongs to: its normalized meta value as bytes, and their hash.
///
/// `bytes` is empty for the "no meta" series (the measurement lacks the meta field, or the
/// collection has no metaField), otherwise the BSON type byte followed by the normalized value
/// bytes (SPEC ): two measurements are of one series iff these bytes are equal.
#[derive(Clone, Debug, Default)]
pub struct BucketKey {
    /// Type byte + normalized value bytes; empty for no meta.
    pub bytes: Vec<u8>,
    /// xxh3-64 of `bytes`; picks the catalog stripe and prefixes the meta+time index.
    pub hash: u64,
}

// Equal keys have equal bytes, hence equal hashes: comparing and hashing the hash first
// keeps map lookups from reading the (often hundreds of bytes long) normalized value twice.
impl PartialEq for BucketKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.bytes == other.bytes
    }
}

impl Eq for BucketKey {}

impl std::hash::Hash for BucketKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl BucketKey {
    /// The key of the "no meta" series.
    #[must_use]
    pub fn no_meta() -> Self {
        BucketKey {
            bytes: Vec::new(),
            hash: xxh3_64(&[]),
        }
    }

    /// The key for a meta value, normalizing it (SPEC ).
    #[must_use]
    pub fn from_meta(meta: Option<&Bson>) -> Self {
        let mut bytes = Vec::new();
        if let Some(m) = meta {
            write_normalized(m, &mut bytes);
        }
        Self::from_bytes(bytes)
    }

    /// The hash of the key of `meta` ([`BucketKey::from_meta`]'s `hash`), its normalized
    /// bytes written into `scratch` (cleared first) rather than a new buffer: for callers that
    /// hash many values (a cluster routing measurements to shards).
    #[must_use]
    pub fn hash_of(meta: Option<&Bson>, scratch: &mut Vec<u8>) -> u64 {
        scratch.clear();
        if let Some(m) = meta {
            write_normalized(m, scratch);
        }
        xxh3_64(scratch)
    }

    /// The key for already normalized bytes (as stored).
    #[must_use]
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let hash = xxh3_64(&bytes);
        BucketKey { bytes, hash }
    }

    /// Whether this is the "no meta" series.
    #[must_use]
    pub fn is_no_meta(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The normalized meta value (SPEC ), `None` for the "no meta" series.
    ///
    /// # Errors
    /// A message when the bytes are not a valid value (corrupt storage).
    pub fn meta_value(&self) -> Result<Option<Bson>, String> {
        let Some((&t, payload)) = self.bytes.split_first() else {
            return Ok(None);
        };
        value::from_type_and_payload(t, payload).map(Some)
    }
}

/// Writes `type byte ‖ value bytes` of `v` with the fields of every object, at every depth,
/// sorted by name bytes (SPEC ). Arrays keep their order; their objects are normalized.
pub fn write_normalized(v: &Bson, out: &mut Vec<u8>) {
    out.push(type_code(v));
    write_value(v, Order::Sorted, out);
}

/// Writes `type byte ‖ value bytes` of `v` as [`write_normalized`] does, with the fields of
/// every object in the order they were written. Two values write the same bytes exactly when
/// they are identical as written (same fields in the same order, same types, doubles equal
/// bit for bit), and identical values normalize to the same bytes: an insert recognizes a
/// meta value met before from these bytes without sorting its fields.
pub fn write_as_written(v: &Bson, out: &mut Vec<u8>) {
    out.push(type_code(v));
    write_value(v, Order::AsWritten, out);
}

/// The order in which a document's fields are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// By name bytes (SPEC ).
    Sorted,
    /// As the document holds them.
    AsWritten,
}

fn write_value(v: &Bson, order: Order, out: &mut Vec<u8>) {
    match v {
        Bson::Document(d) => write_document(d, order, out),
        Bson::Array(a) => {
            let start = begin_doc(out);
            let mut name = itoa_buf();
            for (i, e) in a.iter().enumerate() {
                out.push(type_code(e));
                out.extend_from_slice(index_name(i, &mut name));
                out.push(0);
                write_value(e, order, out);
            }
            end_doc(out, start);
        }
        Bson::Double(d) => out.extend_from_slice(&d.to_le_bytes()),
        Bson::Int32(i) => out.extend_from_slice(&i.to_le_bytes()),
        Bson::Int64(i) => out.extend_from_slice(&i.to_le_bytes()),
        Bson::DateTime(t) => out.extend_from_slice(&t.timestamp_millis().to_le_bytes()),
        Bson::Boolean(b) => out.push(u8::from(*b)),
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => {
            let len = i32::try_from(s.len() + 1).unwrap_or(i32::MAX);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        Bson::ObjectId(o) => out.extend_from_slice(&o.bytes()),
        Bson::Decimal128(d) => out.extend_from_slice(&d.bytes()),
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => {}
        other => out.extend_from_slice(&value::raw_value_bytes(other)),
    }
}

fn write_document(d: &Document, order: Order, out: &mut Vec<u8>) {
    let start = begin_doc(out);
    if order == Order::AsWritten {
        for (k, v) in d {
            write_element(k, v, order, out);
        }
        end_doc(out, start);
        return;
    }
    let mut stack_order = [0usize; 32];
    let mut heap_order = Vec::new();
    let perm: &mut [usize] = if d.len() <= stack_order.len() {
        let o = &mut stack_order[..d.len()];
        for (i, slot) in o.iter_mut().enumerate() {
            *slot = i;
        }
        o
    } else {
        heap_order.extend(0..d.len());
        &mut heap_order
    };
    if perm.len() > 1 {
        let entries: Vec<(&String, &Bson)> = d.iter().collect();
        perm.sort_by(|&a, &b| entries[a].0.as_bytes().cmp(entries[b].0.as_bytes()));
        for &i in perm.iter() {
            let (k, v) = entries[i];
            write_element(k, v, order, out);
        }
    } else {
        for (k, v) in d {
            write_element(k, v, order, out);
        }
    }
    end_doc(out, start);
}

#[inline]
fn write_element(k: &str, v: &Bson, order: Order, out: &mut Vec<u8>) {
    if let Bson::String(s) = v {
        // A string, the most common element of a meta value (a tag): written in place, its
        // bytes reserved once.
        let len = i32::try_from(s.len() + 1).unwrap_or(i32::MAX);
        out.reserve(k.len() + s.len() + 7);
        out.push(tscoll_codec::tag::STRING);
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        out.push(0);
        return;
    }
    out.push(type_code(v));
    out.extend_from_slice(k.as_bytes());
    out.push(0);
    write_value(v, order, out);
}

fn begin_doc(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    start
}

fn end_doc(out: &mut Vec<u8>, start: usize) {
    out.push(0);
    let len = i32::try_from(out.len() - start).unwrap_or(i32::MAX);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

fn index_name(mut i: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut pos = buf.len();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (i % 10) as u8;
        i /= 10;
        if i == 0 {
            break;
        }
    }
    &buf[pos..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn key(v: Bson) -> BucketKey {
        BucketKey::from_meta(Some(&v))
    }

    #[test]
    fn r_3_1_fields_sorted_at_every_depth() {
        let k = key(Bson::Document(doc! {"c": 1, "b": {"f": true, "d": 0}}));
        assert_eq!(
            k.meta_value().unwrap(),
            Some(Bson::Document(doc! {"b": {"d": 0, "f": true}, "c": 1}))
        );
        let arr = key(Bson::Array(vec![
            Bson::Document(doc! {"z": 1, "a": 2}),
            Bson::Int32(3),
        ]));
        assert_eq!(
            arr.meta_value().unwrap(),
            Some(Bson::Array(vec![
                Bson::Document(doc! {"a": 2, "z": 1}),
                Bson::Int32(3)
            ]))
        );
    }

    #[test]
    fn r_3_2_equality_is_binary() {
        assert_eq!(
            key(Bson::Document(doc! {"a": 1, "b": 1})),
            key(Bson::Document(doc! {"b": 1, "a": 1}))
        );
        assert_ne!(
            key(Bson::Document(doc! {"a": [1, 2, 3]})),
            key(Bson::Document(doc! {"a": [2, 1, 3]}))
        );
        assert_ne!(key(Bson::Null), BucketKey::no_meta());
        assert_ne!(key(Bson::Null), key(Bson::Int32(0)));
        assert_ne!(key(Bson::Double(1.0)), key(Bson::Int32(1)));
        assert_ne!(key(Bson::Int32(1)), key(Bson::Int64(1)));
        assert_ne!(key(Bson::Double(0.0)), key(Bson::Double(-0.0)));
        assert_ne!(key(Bson::String("a".into())), key(Bson::String("A".into())));
    }

    #[test]
    fn written_bytes_keep_the_order_and_tell_values_apart() {
        let written = |v: Bson| {
            let mut out = Vec::new();
            write_as_written(&v, &mut out);
            out
        };
        let normalized = |v: Bson| key(v).bytes;
        // A value already in normalized order writes its normalized bytes.
        let sorted = Bson::Document(doc! {"a": 1, "b": {"c": [2.5, {"d": "x"}]}});
        assert_eq!(written(sorted.clone()), normalized(sorted));
        // Reordered, at the top or deeper: other bytes, the same normalized ones.
        let top = Bson::Document(doc! {"b": {"c": [2.5, {"d": "x"}]}, "a": 1});
        assert_ne!(written(top.clone()), normalized(top.clone()));
        let deep = Bson::Document(doc! {"a": 1, "b": {"y": 0, "c": 1}});
        let deep_sorted = Bson::Document(doc! {"a": 1, "b": {"c": 1, "y": 0}});
        assert_ne!(written(deep.clone()), written(deep_sorted.clone()));
        assert_eq!(normalized(deep), normalized(deep_sorted));
        // Values that differ only in type or sign bit write different bytes.
        assert_ne!(written(Bson::Int32(1)), written(Bson::Int64(1)));
        assert_ne!(written(Bson::Double(0.0)), written(Bson::Double(-0.0)));
        assert_ne!(
            written(Bson::String("a".into())),
            written(Bson::Symbol("a".into()))
        );
        // The bytes are the value's BSON: they read back as the value, fields in order.
        let back = |bytes: Vec<u8>| value::from_type_and_payload(bytes[0], &bytes[1..]).unwrap();
        assert_eq!(
            back(written(top.clone())),
            top,
            "written bytes read back as the value"
        );
    }

    /// Tags (string elements, written by their own path) write the document's BSON bytes,
    /// as the bson crate writes them, at the top and nested.
    #[test]
    fn string_elements_write_the_documents_bson() {
        let d = doc! {
            "hostname": "host_0", "": "", "région": "eu-ouest-é", "n": 1,
            "inner": {"s": "x", "t": ""}, "list": ["a", {"u": "v"}],
        };
        let mut out = Vec::new();
        write_as_written(&Bson::Document(d.clone()), &mut out);
        let mut bson = Vec::new();
        d.to_writer(&mut bson).unwrap();
        assert_eq!(out[0], 0x03);
        assert_eq!(out[1..], bson[..]);
    }

    #[test]
    fn hash_of_is_the_keys_hash() {
        let mut scratch = vec![1, 2, 3];
        for v in [
            None,
            Some(Bson::Int32(5)),
            Some(Bson::Document(bson::doc! { "b": 1, "a": "x" })),
        ] {
            assert_eq!(
                BucketKey::hash_of(v.as_ref(), &mut scratch),
                BucketKey::from_meta(v.as_ref()).hash
            );
        }
    }

    #[test]
    fn normalized_bytes_are_valid_bson() {
        let v = Bson::Document(
            doc! {"y": [ {"b": 1, "a": null} ], "x": "s", "big": {"k2": 1_i64, "k1": 2.5}},
        );
        let k = key(v);
        let back = k.meta_value().unwrap().unwrap();
        assert_eq!(
            back,
            Bson::Document(
                doc! {"big": {"k1": 2.5, "k2": 1_i64}, "x": "s", "y": [ {"a": null, "b": 1} ]}
            )
        );
    }
}
