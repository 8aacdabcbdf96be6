//! Every prefix of a blob (and of every column body) is an error, never a panic.

use tscoll_codec::{Error, decode_bucket, decode_column, encode_column, read_header};

use crate::common;

#[test]
fn every_prefix_of_a_blob_is_an_error() {
    for name in ["weather", "all_types", "object_ids", "text", "tsbs_cpu"] {
        let blob = common::encode(&common::case(name));
        for len in 0..blob.len() {
            let err = decode_bucket(&blob[..len]).expect_err("a prefix must not decode");
            assert!(
                matches!(err, Error::Truncated { .. } | Error::Corruption(_)),
                "{name} prefix {len}: {err:?}"
            );
            assert!(read_header(&blob[..len]).is_err());
        }
    }
}

#[test]
fn every_prefix_of_a_column_body_is_an_error() {
    for name in [
        "weather",
        "nab",
        "all_types",
        "object_ids",
        "floats_special",
        "int_extremes",
        "text",
        "tsbs_cpu",
    ] {
        let bucket = common::case(name);
        for (col_name, col) in &bucket.columns {
            let (body, _) = encode_column(col).unwrap();
            for len in 0..body.len() {
                let err = decode_column(&body[..len], col.len())
                    .expect_err(&format!("{name}/{col_name}: prefix {len} must not decode"));
                assert!(
                    matches!(err, Error::Truncated { .. } | Error::Corruption(_)),
                    "{err:?}"
                );
            }
        }
    }
}

#[test]
fn every_prefix_with_a_fixed_checksum_is_an_error_or_a_value() {
    // With a valid checksum the column decoders see the truncated bodies.
    let blob = common::encode(&common::case("weather"));
    for len in 0..blob.len() {
        let mut b = blob[..len].to_vec();
        common::fix_crc(&mut b);
        let _ = decode_bucket(&b);
    }
}
