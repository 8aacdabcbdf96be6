//! Order-preserving keys of the engine's keyspaces (`docs/keys.md`). The only place that
//! writes big-endian integers: keys sort as unsigned bytes.

use tscoll_catalog::BucketId;

/// Name of the keyspace holding collection records (name → options).
pub(crate) const COLLECTIONS_KEYSPACE: &str = "collections";

/// Keyspace names of collection number `id`: bucket segments, control records, meta+time index.
pub(crate) fn keyspace_names(id: u64) -> [String; 3] {
    [
        format!("c{id}_data"),
        format!("c{id}_ctl"),
        format!("c{id}_idx"),
    ]
}

/// Keyspace name of the rollups of collection `id` (`docs/keys.md`, "Rollups").
pub(crate) fn rollup_keyspace(id: u64) -> String {
    format!("c{id}_rollup")
}

/// Rollup key of a bucket at one resolution: `resolution (4, BE, seconds) ‖ bucket id (12)`
/// (resolutions are whole seconds, at most 366 days).
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "resolutions are whole seconds between 1 s and 366 d"
)]
pub(crate) fn rollup_key(res: i64, id: &BucketId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&((res / 1000) as u32).to_be_bytes());
    k[4..].copy_from_slice(id);
    k
}

/// Parses a rollup key: `(resolution (ms), bucket id)`; `None` for another key (a names
/// row's).
pub(crate) fn parse_rollup_key(k: &[u8]) -> Option<(i64, BucketId)> {
    if k.len() != 16 {
        return None;
    }
    let res = i64::from(u32::from_be_bytes(k[..4].try_into().ok()?)) * 1000;
    let id: BucketId = k[4..].try_into().ok()?;
    Some((res, id))
}

/// Key of a rollup names row: `0 (4) ‖ names hash (4, BE)` (no resolution is 0).
pub(crate) fn rollup_names_key(hash: u32) -> [u8; 8] {
    let mut k = [0u8; 8];
    k[4..].copy_from_slice(&hash.to_be_bytes());
    k
}

/// Keyspace name of secondary index number `no` of collection `id` (SPEC §13,
/// `docs/keys.md` "Secondary indexes").
pub(crate) fn secondary_index_keyspace(id: u64, no: u32) -> String {
    format!("c{id}_i{no}")
}

/// A time (ms) as 8 bytes that sort like the signed value: sign bit flipped, big-endian.
#[expect(clippy::cast_sign_loss, reason = "order-preserving bit pattern")]
pub(crate) fn time_bytes(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

/// Inverse of [`time_bytes`].
#[expect(clippy::cast_possible_wrap, reason = "order-preserving bit pattern")]
pub(crate) fn time_from_bytes(b: [u8; 8]) -> i64 {
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

/// Data key of one segment of a bucket: `bucket id (12) ‖ segment number (4, BE)`.
pub(crate) fn data_key(id: &BucketId, segment: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..12].copy_from_slice(id);
    k[12..].copy_from_slice(&segment.to_be_bytes());
    k
}

/// Key of a bucket's retirement marker in the control keyspace: `bucket id (12) ‖ 0x00`, so
/// it sorts right after the bucket's control record and scans of control records (12-byte
/// keys) skip it. Its value is the log position (16 bytes) before which the log's rows of the
/// bucket are stale: the bucket was rewritten, moved or removed there (`docs/durability.md`).
pub(crate) fn retired_key(id: &BucketId) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[..12].copy_from_slice(id);
    k
}

/// Meta+time index key (SPEC §13, R-13.5): `meta hash (8, BE) ‖ min time (8) ‖ bucket id (12)`.
/// The entry's value is [`SAME_AS_SERIES_RECORD`] when the bucket's series is the one its
/// hash's [series record](series_record_key) holds, else the full normalized meta (hash
/// collisions are told apart by it).
pub(crate) fn index_key(hash: u64, min_time: i64, id: &BucketId) -> [u8; 28] {
    let mut k = [0u8; 28];
    k[..8].copy_from_slice(&hash.to_be_bytes());
    k[8..16].copy_from_slice(&time_bytes(min_time));
    k[16..].copy_from_slice(id);
    k
}

/// Key of the series record of meta hash `hash` in the index keyspace: the 8 bytes of the
/// hash alone, so it sorts before every entry of the hash and entry scans (28-byte keys)
/// skip it. Its value is [`series_record_value`]: the meta of the first series stored under
/// the hash, kept once for all its buckets, and whether another series shares the hash.
pub(crate) fn series_record_key(hash: u64) -> [u8; 8] {
    hash.to_be_bytes()
}

/// Value of an index entry whose bucket belongs to the series its hash's record holds: one
/// zero byte, which no normalized meta is (they start with a BSON type byte, and the no-meta
/// series' is empty).
pub(crate) const SAME_AS_SERIES_RECORD: [u8; 1] = [0];

/// Flag of a series record: another series has used the same meta hash.
const SHARED: u8 = 1;

/// A series record's value: flags (u8: 1 = another series shares the hash) ‖ the normalized
/// meta bytes of the series it holds.
pub(crate) fn series_record_value(shared: bool, meta: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 + meta.len());
    v.push(if shared { SHARED } else { 0 });
    v.extend_from_slice(meta);
    v
}

/// A series record as read ([`series_record_value`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SeriesRecord<'a> {
    /// Whether more than one series has used the hash.
    pub(crate) shared: bool,
    /// The normalized meta of the series whose entries refer to the record; `None` for the
    /// empty record earlier versions wrote as a collision marker (their entries all hold
    /// their meta).
    pub(crate) meta: Option<&'a [u8]>,
}

/// Parses a series record's value; `None` when its flags are not known.
pub(crate) fn parse_series_record(v: &[u8]) -> Option<SeriesRecord<'_>> {
    match v.split_first() {
        None => Some(SeriesRecord {
            shared: true,
            meta: None,
        }),
        Some((&flags, meta)) if flags & !SHARED == 0 => Some(SeriesRecord {
            shared: flags & SHARED != 0,
            meta: Some(meta),
        }),
        Some(_) => None,
    }
}

/// Splits an index key into `(hash, min time, bucket id)`.
pub(crate) fn parse_index_key(k: &[u8]) -> Option<(u64, i64, BucketId)> {
    let hash = u64::from_be_bytes(k.get(..8)?.try_into().ok()?);
    let t = time_from_bytes(k.get(8..16)?.try_into().ok()?);
    if k.len() != 28 {
        return None;
    }
    let id: BucketId = k.get(16..28)?.try_into().ok()?;
    Some((hash, t, id))
}

/// Splits a data key into `(bucket id, segment number)`; `None` when it is not 16 bytes.
pub(crate) fn parse_data_key(k: &[u8]) -> Option<(BucketId, u32)> {
    if k.len() != 16 {
        return None;
    }
    let id: BucketId = k.get(..12)?.try_into().ok()?;
    let segment = u32::from_be_bytes(k.get(12..16)?.try_into().ok()?);
    Some((id, segment))
}

/// The bucket id of a control record key; `None` when it is not 12 bytes.
pub(crate) fn parse_control_key(k: &[u8]) -> Option<BucketId> {
    k.try_into().ok()
}

/// The bucket id of a retirement marker's key ([`retired_key`]); `None` for other keys.
pub(crate) fn parse_retired_key(k: &[u8]) -> Option<BucketId> {
    match k {
        [id @ .., 0] if id.len() == 12 => id.try_into().ok(),
        _ => None,
    }
}

/// The meta hash of a series record's key ([`series_record_key`]); `None` for other keys.
pub(crate) fn parse_series_record_key(k: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(k).ok().map(u64::from_be_bytes)
}

/// The bucket id a secondary index entry points at: its key's last 12 bytes (`docs/keys.md`,
/// "Secondary indexes"); `None` for a key too short to hold one.
pub(crate) fn secondary_entry_bucket(k: &[u8]) -> Option<BucketId> {
    let start = k.len().checked_sub(12)?;
    k.get(start..)?.try_into().ok()
}

/// The index key prefix of every entry of a meta hash (entries of `hash` sort from it up to
/// the prefix of `hash + 1`).
pub(crate) fn hash_prefix(hash: u64) -> [u8; 8] {
    hash.to_be_bytes()
}

/// Inclusive key bounds of the index entries of `hash` with min time in `[lo, hi]`.
pub(crate) fn hash_time_range(hash: u64, lo: i64, hi: i64) -> ([u8; 16], [u8; 28]) {
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&hash.to_be_bytes());
    a[8..].copy_from_slice(&time_bytes(lo));
    let mut b = [0xffu8; 28];
    b[..8].copy_from_slice(&hash.to_be_bytes());
    b[8..16].copy_from_slice(&time_bytes(hi));
    (a, b)
}

/// Hex form of a key, for error messages.
pub(crate) fn hex(k: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(k.len() * 2);
    for b in k {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_bytes_sort_like_times() {
        let times = [i64::MIN, -86_400_000, -1, 0, 1, 1_700_000_000_000, i64::MAX];
        for w in times.windows(2) {
            assert!(time_bytes(w[0]) < time_bytes(w[1]));
            assert_eq!(time_from_bytes(time_bytes(w[0])), w[0]);
        }
    }

    #[test]
    fn data_control_and_secondary_keys_decode() {
        let id = [3u8; 12];
        assert_eq!(parse_data_key(&data_key(&id, 7)), Some((id, 7)));
        assert_eq!(parse_data_key(&id), None);
        assert_eq!(parse_control_key(&id), Some(id));
        assert_eq!(parse_control_key(&data_key(&id, 0)), None);
        assert_eq!(parse_series_record_key(&series_record_key(9)), Some(9));
        assert_eq!(parse_series_record_key(&index_key(9, 0, &id)), None);
        let mut k = vec![13, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        k.extend_from_slice(&id);
        assert_eq!(secondary_entry_bucket(&k), Some(id));
        assert_eq!(secondary_entry_bucket(&id[..11]), None);
    }

    #[test]
    fn index_keys_round_trip() {
        let id = [7u8; 12];
        let k = index_key(42, -5, &id);
        assert_eq!(parse_index_key(&k), Some((42, -5, id)));
    }

    #[test]
    fn series_records_round_trip() {
        for shared in [false, true] {
            for meta in [&b""[..], b"\x02\x03\x00\x00\x00ab\x00"] {
                let v = series_record_value(shared, meta);
                let r = parse_series_record(&v).unwrap();
                assert_eq!((r.shared, r.meta), (shared, Some(meta)));
            }
        }
        // The empty value of earlier versions: a shared hash, meta unknown.
        let old = parse_series_record(&[]).unwrap();
        assert_eq!((old.shared, old.meta), (true, None));
        assert_eq!(parse_series_record(&[4, 1]), None);
    }
}
