//! Delta transforms of order 0, 1 and 2 (wrapping `i64` arithmetic, so every input, including
//! jumps across the whole `i64` range, round-trips).
//!
//! Order `k` replaces the sequence by its `k`-th difference, in place: after the transform
//! `v[0]` is the first value, `v[1]` (order 2) the first delta, and `v[k..]` the residuals
//! (deltas for order 1, deltas of deltas for order 2).

/// Applies the order-`order` difference in place.
pub(crate) fn encode(v: &mut [i64], order: u8) {
    for j in 0..usize::from(order) {
        let Some(rest) = v.get_mut(j..) else { return };
        let Some((first, tail)) = rest.split_first_mut() else {
            return;
        };
        let mut prev = *first;
        for x in tail {
            let cur = *x;
            *x = cur.wrapping_sub(prev);
            prev = cur;
        }
    }
}

/// Undoes [`encode`] in place.
pub(crate) fn decode(v: &mut [i64], order: u8) {
    if order == 2 {
        // Both passes in one: the running delta, then the running value.
        if let [first, second, rest @ ..] = v {
            let mut delta = *second;
            let mut value = first.wrapping_add(delta);
            *second = value;
            for x in rest {
                delta = delta.wrapping_add(*x);
                value = value.wrapping_add(delta);
                *x = value;
            }
        }
        return;
    }
    for j in (0..usize::from(order)).rev() {
        let Some(rest) = v.get_mut(j..) else { continue };
        let Some((first, tail)) = rest.split_first_mut() else {
            continue;
        };
        let mut acc = *first;
        for x in tail {
            acc = acc.wrapping_add(*x);
            *x = acc;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_round_trip_with_wrapping() {
        let values = vec![0, 5, i64::MAX, i64::MIN, -1, 7, 7, 7, 1000, i64::MIN + 3];
        for order in 0..=2 {
            for len in 0..=values.len() {
                let mut v = values[..len].to_vec();
                encode(&mut v, order);
                decode(&mut v, order);
                assert_eq!(v, &values[..len]);
            }
        }
    }

    #[test]
    fn regular_sequence_has_zero_second_difference() {
        let mut v: Vec<i64> = (0..10).map(|i| 1_000 + 60_000 * i).collect();
        encode(&mut v, 2);
        assert_eq!(&v[..2], &[1_000, 60_000]);
        assert!(v[2..].iter().all(|&x| x == 0));
    }
}
