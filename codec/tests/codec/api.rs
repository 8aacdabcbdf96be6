//! API contract: argument errors, projection, header reading, limits.

use tscoll_codec::{
    Column, Error, MAX_ROWS, decode_bucket, decode_bucket_projected, encode_bucket, read_header,
    tag,
};

use crate::common;

#[test]
fn unequal_lengths_and_repeated_names_are_invalid() {
    let mut a = Column::new();
    a.push_int(tag::INT32, 1);
    let b = Column::new();
    assert!(matches!(
        encode_bucket(1, &[("a", &a), ("b", &b)]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        encode_bucket(1, &[("a", &a), ("a", &a)]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        encode_bucket(2, &[("a", &a)]),
        Err(Error::InvalidArgument(_))
    ));
    let mut big = Column::new();
    big.push_missing_n(MAX_ROWS + 1);
    assert!(matches!(
        encode_bucket(MAX_ROWS + 1, &[("a", &big)]),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn projection_skips_columns_and_keeps_order() {
    let bucket = common::case("weather");
    let blob = common::encode(&bucket);
    let mut asked = Vec::new();
    let got = decode_bucket_projected(&blob, &mut |n| {
        asked.push(n.to_owned());
        n == "wd" || n == "ts"
    })
    .unwrap();
    assert_eq!(
        asked,
        bucket
            .columns
            .iter()
            .map(|(n, _)| n.clone())
            .collect::<Vec<_>>()
    );
    let names: Vec<&str> = got.columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ts", "wd"]);
    assert_eq!(got.row_count, 256);
    let none = decode_bucket_projected(&blob, &mut |_| false).unwrap();
    assert!(none.columns.is_empty());
}

#[test]
fn header_lists_names_and_sizes() {
    let bucket = common::case("weather");
    let blob = common::encode(&bucket);
    let h = read_header(&blob).unwrap();
    assert_eq!(h.version, tscoll_codec::FORMAT_VERSION);
    assert_eq!(h.row_count, 256);
    let names: Vec<&str> = h.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ts", "TEMP", "PRES", "PM2.5", "wd", "sparse"]);
    assert!(h.columns.iter().map(|c| c.encoded_len).sum::<usize>() < blob.len());
}

#[test]
fn every_case_round_trips() {
    for case in common::CASES {
        let bucket = common::case(case);
        let blob = common::encode(&bucket);
        assert!(
            common::same(&decode_bucket(&blob).unwrap(), &bucket),
            "{case}"
        );
    }
}

#[test]
fn empty_and_unicode_names() {
    let mut a = Column::new();
    a.push_float(1.0);
    let blob = encode_bucket(1, &[("", &a), ("température.°C", &a)]).unwrap();
    let got = decode_bucket(&blob).unwrap();
    assert_eq!(got.columns[1].0, "température.°C");
}
