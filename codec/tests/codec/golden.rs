//! Golden files: `codec/tests/golden/v{N}_{case}.bin` are blobs written by format version N. A
//! missing file of the current version is written (commit it); every committed file of every
//! version must decode to its case, forever. `v1_corrupt_checksum.bin` must stay a corruption
//! error.

use std::path::PathBuf;

use tscoll_codec::{Error, FORMAT_VERSION, decode_bucket, read_header};

use crate::common;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_files_decode_forever() {
    let dir = dir();
    std::fs::create_dir_all(&dir).unwrap();
    for case in common::CASES {
        let path = dir.join(format!("v{FORMAT_VERSION}_{case}.bin"));
        if !path.exists() {
            std::fs::write(&path, common::encode(&common::case(case))).unwrap();
        }
    }
    let corrupt = dir.join(format!("v{FORMAT_VERSION}_corrupt_checksum.bin"));
    if FORMAT_VERSION == 1 && !corrupt.exists() {
        let mut blob = common::encode(&common::case("weather"));
        let mid = blob.len() / 2;
        blob[mid] ^= 0x10;
        std::fs::write(&corrupt, blob).unwrap();
    }

    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_owned();
        let Some(stem) = file.strip_suffix(".bin") else {
            continue;
        };
        let (version, case) = stem
            .split_once('_')
            .expect("golden file name v{N}_{case}.bin");
        let version: u8 = version.strip_prefix('v').unwrap().parse().unwrap();
        assert!(
            (1..=FORMAT_VERSION).contains(&version),
            "{file}: version from the future"
        );
        let blob = std::fs::read(&path).unwrap();
        if case == "corrupt_checksum" {
            assert!(
                matches!(decode_bucket(&blob), Err(Error::Corruption(_))),
                "{file}"
            );
        } else {
            assert!(common::CASES.contains(&case), "{file}: unknown case");
            let got = decode_bucket(&blob).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(
                common::same(&got, &common::case(case)),
                "{file}: content differs"
            );
            assert_eq!(read_header(&blob).unwrap().version, version);
        }
        checked += 1;
    }
    assert!(checked > common::CASES.len(), "golden files missing");
}

/// The golden files of the current version exercise every bytes encoding the encoder writes,
/// so a change to any of them shows up as a golden file that no longer decodes.
#[test]
fn current_golden_cases_cover_the_bytes_encodings() {
    use tscoll_codec::BytesEncoding;
    let seen: Vec<_> = current_layouts().iter().filter_map(|l| l.bytes).collect();
    for e in [
        BytesEncoding::Plain,
        BytesEncoding::Dict,
        BytesEncoding::DictCoded,
        BytesEncoding::ObjectId,
    ] {
        assert!(seen.contains(&e), "no golden case uses {e:?}");
    }
}

/// The golden files of the current version exercise every int encoding the encoder writes,
/// and the entropy-coded sections in orders 0 and 1.
#[test]
fn current_golden_cases_cover_the_int_encodings() {
    use tscoll_codec::IntEncoding;
    let seen: Vec<_> = current_layouts()
        .iter()
        .filter_map(|l| l.ints.map(|i| (i.encoding, i.order)))
        .collect();
    for e in [IntEncoding::Packed, IntEncoding::Coded, IntEncoding::Sparse] {
        assert!(
            seen.iter().any(|&(s, _)| s == e),
            "no golden case uses {e:?}"
        );
    }
    for order in [0, 1] {
        assert!(
            seen.contains(&(IntEncoding::Coded, order)),
            "no golden case codes order {order}"
        );
    }
}

/// The golden files of the current version exercise every float encoding the encoder writes
/// for real data (decimals, multiples of a base, raw bits).
#[test]
fn current_golden_cases_cover_the_float_encodings() {
    use tscoll_codec::FloatEncoding;
    let seen: Vec<_> = current_layouts()
        .iter()
        .filter_map(|l| l.floats.map(|f| f.encoding))
        .collect();
    for e in [FloatEncoding::Alp, FloatEncoding::Mult] {
        assert!(seen.contains(&e), "no golden case uses {e:?}: {seen:?}");
    }
    assert!(
        seen.contains(&FloatEncoding::Xor) || seen.contains(&FloatEncoding::Bits),
        "no golden case keeps raw bits: {seen:?}"
    );
}

/// The column layouts the current encoder writes for every golden case.
fn current_layouts() -> Vec<tscoll_codec::ColumnLayout> {
    let mut all = Vec::new();
    for case in common::CASES {
        let b = common::case(case);
        let cols: Vec<(&str, &tscoll_codec::Column)> =
            b.columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let (_, layouts) = tscoll_codec::encode_bucket_with_layout(b.row_count, &cols).unwrap();
        all.extend(layouts);
    }
    all
}
