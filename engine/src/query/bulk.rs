//! Reading the control records and segments of many candidate buckets. Bucket `_id`s start
//! with the bucket's min time (SPEC ), so the candidates of a query over many series
//! are packed into an id range: when they are a large share of the buckets in that range
//! they are read with one sequential scan of the `ctl` (or `data`) keyspace merged with the
//! sorted candidate ids, which costs a fraction of one point lookup per bucket; otherwise
//! with point lookups, in id order.

use tscoll_catalog::BucketId;
use tscoll_codec::Bucket;

use super::control_view::ControlBytes;
use crate::collection::CollectionInner;
use crate::error::Result;

/// Candidates below this count are always read with point lookups.
const DENSE_MIN: usize = 1024;

/// Whether `wanted` buckets out of about `in_range` in their id range are read by a scan:
/// at least a quarter of the range.
pub(crate) fn dense(wanted: usize, in_range: Option<u64>) -> bool {
    wanted >= DENSE_MIN && in_range.is_some_and(|n| (wanted as u64).saturating_mul(4) >= n)
}

impl CollectionInner {
    /// Calls `f(i, control)` for every `ids[i]` that has a control record, in id order.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails, or what `f` returns.
    pub(crate) fn for_each_stored_control(
        &self,
        ids: &[BucketId],
        dense: bool,
        f: &mut dyn FnMut(usize, ControlBytes) -> Result<()>,
    ) -> Result<()> {
        let order = id_order(ids);
        if !dense {
            for i in order {
                if let Some(c) = self.stored_control_bytes(&ids[i])? {
                    f(i, c)?;
                }
            }
            return Ok(());
        }
        let (Some(&first), Some(&last)) = (order.first(), order.last()) else {
            return Ok(());
        };
        let mut next = order.iter().copied().peekable();
        for item in self.store.controls_between(&ids[first], &ids[last]) {
            let (id, v) = item?;
            while next.peek().is_some_and(|&i| ids[i] < id) {
                next.next(); // removed since the index was read
            }
            if let Some(&i) = next.peek()
                && ids[i] == id
            {
                next.next();
                f(i, ControlBytes::from_slice(v))?;
            }
        }
        Ok(())
    }

    /// Calls `f(i, segments)` for every `ids[i]` with its segments decoded (the time column
    /// and the columns `keep` accepts), in id order.
    ///
    /// # Errors
    /// [`Error::Storage`] or [`Error::Codec`] when a segment cannot be read, or what `f`
    /// returns.
    pub(crate) fn for_each_stored_bucket(
        &self,
        ids: &[BucketId],
        dense: bool,
        keep: &mut dyn FnMut(&str) -> bool,
        f: &mut dyn FnMut(usize, Vec<Bucket>) -> Result<()>,
    ) -> Result<()> {
        let time_field = self.spec().time_field;
        let mut keep = |n: &str| n == time_field || keep(n);
        let order = id_order(ids);
        if !dense {
            for i in order {
                let segments = self.read_segments(&ids[i], &mut keep)?;
                f(i, segments.into_iter().map(|(_, b)| b).collect())?;
            }
            return Ok(());
        }
        let (Some(&first), Some(&last)) = (order.first(), order.last()) else {
            return Ok(());
        };
        let mut next = order.iter().copied().peekable();
        let mut current: Option<(usize, Vec<Bucket>)> = None;
        for item in self.store.segments_between(&ids[first], &ids[last]) {
            let item = item?;
            let id = &item.id;
            if current.as_ref().is_some_and(|(i, _)| ids[*i] != *id)
                && let Some((i, segs)) = current.take()
            {
                f(i, segs)?;
            }
            if current.is_none() {
                while next.peek().is_some_and(|&i| ids[i] < *id) {
                    next.next();
                }
                match next.peek() {
                    Some(&i) if ids[i] == *id => {
                        next.next();
                        current = Some((i, Vec::new()));
                    }
                    _ => continue,
                }
            }
            if let Some((_, segs)) = &mut current {
                segs.push(tscoll_codec::decode_bucket_projected(
                    &item.blob, &mut keep,
                )?);
            }
        }
        if let Some((i, segs)) = current {
            f(i, segs)?;
        }
        Ok(())
    }
}

/// Positions of `ids` sorted by id.
pub(crate) fn id_order(ids: &[BucketId]) -> Vec<usize> {
    if ids.is_sorted() {
        return (0..ids.len()).collect();
    }
    // Each id (96 bits, big-endian) with its position in the low 32 bits: one integer sort.
    if let Ok(n) = u32::try_from(ids.len()) {
        let mut keys: Vec<u128> = ids
            .iter()
            .zip(0..n)
            .map(|(id, i)| {
                let mut b = [0u8; 16];
                b[..12].copy_from_slice(id);
                u128::from_be_bytes(b) | u128::from(i)
            })
            .collect();
        keys.sort_unstable();
        return keys.into_iter().map(|k| (k as u32) as usize).collect();
    }
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_unstable_by_key(|&i| ids[i]);
    order
}
