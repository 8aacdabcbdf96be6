//! Compressed inputs (`.xz`, `.gz`, `.zst`, by extension or magic bytes) and stdin.

use std::io::Write;

use crate::common::{Scratch, good_ndjson};

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

/// `n` measurement lines, `v` = 1..=n, with values that do not compress to nothing.
fn many_lines(n: u32) -> String {
    let mut x = 0x9e37_79b9_u32;
    (1..=n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            format!(
                "{{\"ts\":{{\"$date\":{{\"$numberLong\":\"{}\"}}}},\"meta\":{{\"series\":\"s{}\"}},\"v\":{i},\"r\":{x}}}\n",
                1_451_606_400_000 + u64::from(i) * 1000,
                i % 7
            )
        })
        .collect()
}

/// What a decoder yields of a truncated stream before its error: the complete lines in it
/// and whether a cut line follows them.
fn decodable_prefix(mut decoder: impl std::io::Read) -> (usize, bool) {
    let mut text = Vec::new();
    let mut buf = [0_u8; 8192];
    loop {
        match decoder.read(&mut buf) {
            Ok(0) => panic!("a truncated stream must end with an error"),
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    let complete = text.iter().filter(|&&b| b == b'\n').count();
    (complete, text.last() != Some(&b'\n'))
}

#[test]
fn truncated_compressed_input_keeps_every_complete_line() {
    let s = Scratch::new();
    let text = many_lines(12_000);
    for (name, bytes) in [
        ("cut.ndjson.gz", gzip(text.as_bytes())),
        ("cut.ndjson.xz", xz(text.as_bytes())),
    ] {
        let cut = &bytes[..bytes.len() / 2];
        let (complete, partial) = if name.ends_with(".gz") {
            decodable_prefix(flate2::read::MultiGzDecoder::new(cut))
        } else {
            decodable_prefix(liblzma::read::XzDecoder::new_multi_decoder(cut))
        };
        // More than one batch of 5000, and the cut falls inside a line.
        assert!(complete > 5000 && complete < 12_000, "{name}: {complete}");
        assert!(partial, "{name}: the cut should fall inside a line");

        let coll = name.replace('.', "_");
        s.create(&coll);
        let file = s.file(name, cut);
        let run = s.run("ingest", &[&coll, &file]).failed();
        let stderr = run.stderr();
        let want = format!(
            "{file}:{}: input ends inside a compressed frame",
            complete + 1
        );
        assert!(stderr.contains(&want), "{name}: want {want:?} in\n{stderr}");
        assert!(
            stderr.contains(&format!("{file}: {complete} measurements inserted")),
            "{name}: no summary line in\n{stderr}"
        );
        // Every complete line, and not the cut one.
        let want: Vec<i64> = (1..=i64::try_from(complete).expect("count")).collect();
        assert_eq!(s.values(&coll), want, "{name}");
    }
}

#[test]
fn truncated_compressed_csv_keeps_every_complete_row() {
    let s = Scratch::new();
    let mut text = "ts,series,v,r\n".to_owned();
    for i in 1..=9000_u64 {
        let r = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
        text.push_str(&format!(
            "{},s{},{i},{r}\n",
            1_451_606_400_000 + i * 1000,
            i % 5
        ));
    }
    let bytes = gzip(text.as_bytes());
    let cut = &bytes[..bytes.len() * 2 / 3];
    let (complete, partial) = decodable_prefix(flate2::read::MultiGzDecoder::new(cut));
    assert!(complete > 5001 && partial, "{complete}");
    s.create("csv");
    let file = s.file("cut.csv.gz", cut);
    let run = s
        .run(
            "ingest",
            &[
                "csv",
                &file,
                "--csv-time-format",
                "epoch-ms",
                "--csv-meta-columns",
                "series",
            ],
        )
        .failed();
    // Lines count the header: the cut row is line `complete + 1`.
    let want = format!(
        "{file}:{}: input ends inside a compressed frame",
        complete + 1
    );
    assert!(
        run.stderr().contains(&want),
        "want {want:?} in\n{}",
        run.stderr()
    );
    let want: Vec<i64> = (1..i64::try_from(complete).expect("count")).collect();
    assert_eq!(s.values("csv"), want);
}
