//! Compressed inputs (`.xz`, `.gz`, `.zst`, by extension or magic bytes) and stdin.

mod common;

use std::io::Write;

use common::{Scratch, good_ndjson};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip")
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(data).expect("xz");
    e.finish().expect("xz")
}

fn zst(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).expect("zstd")
}

#[test]
fn xz_gz_and_zst_files() {
    let s = Scratch::new();
    let text = good_ndjson();
    for (name, bytes) in [
        ("in.ndjson.xz", xz(text.as_bytes())),
        ("in.ndjson.gz", gzip(text.as_bytes())),
        ("in.ndjson.zst", zst(text.as_bytes())),
        // No telling extension: the magic bytes decide.
        ("in_xz.data", xz(text.as_bytes())),
    ] {
        let coll = name.replace('.', "_");
        s.create(&coll);
        let file = s.file(name, &bytes);
        s.run("ingest", &[&coll, &file]).ok();
        assert_eq!(s.values(&coll), (1..=10).collect::<Vec<_>>(), "{name}");
    }
}

#[test]
fn stdin_plain_and_compressed() {
    let s = Scratch::new();
    let text = good_ndjson();
    for (coll, bytes) in [
        ("plain", text.as_bytes().to_vec()),
        ("gz", gzip(text.as_bytes())),
        ("zst", zst(text.as_bytes())),
    ] {
        s.create(coll);
        let run = s.run_with_stdin("ingest", &[coll, "-"], Some(&bytes)).ok();
        assert!(
            run.stderr().contains("<stdin>: 10 measurements inserted"),
            "{}",
            run.stderr()
        );
        assert_eq!(s.values(coll), (1..=10).collect::<Vec<_>>(), "{coll}");
    }
}

#[test]
fn bad_lines_on_stdin_are_named_stdin() {
    let s = Scratch::new();
    s.create("m");
    let text = format!("{}not json\n", good_ndjson());
    let run = s
        .run_with_stdin("ingest", &["m", "-", "--unordered"], Some(text.as_bytes()))
        .failed();
    assert!(
        run.stderr().contains("<stdin>:11: malformed JSON"),
        "{}",
        run.stderr()
    );
}
