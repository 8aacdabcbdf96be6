//! Damaged bytes give an error or a value, never a panic: every bit flip, and 0x00 / 0xFF at
//! every offset, of sample blobs (with and without a fixed-up checksum) and column bodies.

use tscoll_codec::{Error, decode_bucket, decode_column, encode_column};

use crate::common;

/// An offset and what to do to its byte.
type Mutation = (usize, Box<dyn Fn(u8) -> u8>);

fn mutations(len: usize) -> impl Iterator<Item = Mutation> {
    (0..len).flat_map(|i| {
        let mut m: Vec<Mutation> = Vec::new();
        for bit in 0..8 {
            m.push((i, Box::new(move |b| b ^ (1 << bit))));
        }
        m.push((i, Box::new(|_| 0x00)));
        m.push((i, Box::new(|_| 0xFF)));
        m
    })
}

#[test]
fn damaged_blobs_fail_the_checksum() {
    let blob = common::encode(&common::case("weather"));
    for (i, f) in mutations(blob.len()) {
        let mut b = blob.clone();
        b[i] = f(b[i]);
        if b == blob {
            continue;
        }
        let err = decode_bucket(&b).expect_err("damage must be detected");
        assert!(
            matches!(
                err,
                Error::Corruption(_) | Error::UnsupportedVersion(_) | Error::Truncated { .. }
            ),
            "offset {i}: {err:?}"
        );
    }
}

#[test]
fn damaged_blobs_with_a_valid_checksum_never_panic() {
    for name in [
        "weather",
        "all_types",
        "nab",
        "object_ids",
        "floats_special",
        "text",
        "tsbs_cpu",
    ] {
        let blob = common::encode(&common::case(name));
        for (i, f) in mutations(blob.len() - 4) {
            let mut b = blob.clone();
            b[i] = f(b[i]);
            common::fix_crc(&mut b);
            if let Ok(bucket) = decode_bucket(&b) {
                for (_, c) in &bucket.columns {
                    assert_eq!(c.len(), bucket.row_count);
                }
            }
        }
    }
}

#[test]
fn damaged_column_bodies_never_panic() {
    for name in [
        "weather",
        "all_types",
        "int_extremes",
        "floats_special",
        "object_ids",
        "text",
        "tsbs_cpu",
    ] {
        let bucket = common::case(name);
        for (_, col) in &bucket.columns {
            let (body, _) = encode_column(col).unwrap();
            for (i, f) in mutations(body.len()) {
                let mut b = body.clone();
                b[i] = f(b[i]);
                for rows in [col.len(), col.len() + 1, col.len().saturating_sub(1)] {
                    if let Ok(c) = decode_column(&b, rows) {
                        assert_eq!(c.len(), rows);
                    }
                }
            }
        }
    }
}

#[test]
fn hostile_headers_are_rejected_cheaply() {
    // A tiny blob claiming the maximum rows and columns must not allocate for them.
    let mut b = b"TSCB\x01".to_vec();
    b.extend_from_slice(&[0x80, 0x80, 0x40]); // 2^20 rows
    b.extend_from_slice(&[0x80, 0x80, 0x04]); // 2^16 columns
    b.extend_from_slice(&[0; 4]);
    common::fix_crc(&mut b);
    assert!(matches!(decode_bucket(&b), Err(Error::Corruption(_))));
    // Wrong magic, version 0, a future version.
    assert!(matches!(
        decode_bucket(b"XXXX\x01\0\0\0\0\0\0"),
        Err(Error::Corruption(_))
    ));
    assert!(matches!(
        decode_bucket(b"TSCB\x00\0\0\0\0\0\0"),
        Err(Error::Corruption(_))
    ));
    let future = tscoll_codec::FORMAT_VERSION + 1;
    let mut b = b"TSCB".to_vec();
    b.push(future);
    b.extend_from_slice(&[0; 6]);
    assert_eq!(decode_bucket(&b), Err(Error::UnsupportedVersion(future)));
}
