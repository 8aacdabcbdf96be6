//! `tscoll bench codec`: the codec comparison on real data, as a table and as JSON lines.

use crate::common::{self, tscoll};

fn data(file: &str) -> String {
    format!("{}/../data/{file}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn json_lines_have_every_figure_and_a_pooled_line() {
    let run = tscoll(
        &[
            "bench",
            "codec",
            "--json",
            "--min-time-ms",
            "1",
            &data("noaa_weather_daily.ndjson.xz"),
        ],
        None,
    )
    .ok();
    let lines = run.json_lines();
    let (pooled, kinds) = lines.split_last().expect("at least the pooled line");
    assert_eq!(pooled["kind"], "pooled");
    let ratio = pooled["ratio_to_pco"].as_f64().expect("ratio_to_pco");
    assert!(ratio > 0.0 && ratio < 2.0, "{ratio}");
    // NOAA daily weather: regular daily timestamps, short decimals, a tag string.
    let names: Vec<&str> = kinds.iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert!(names.contains(&"timestamps_regular"), "{names:?}");
    assert!(names.contains(&"floats_dec_le4"), "{names:?}");
    assert!(names.contains(&"strings_tags"), "{names:?}");
    let mut numeric = 0;
    for k in kinds {
        for key in [
            "n",
            "tscoll_bits_per_value",
            "zstd_bits_per_value",
            "encode_mb_s",
            "decode_mb_s",
        ] {
            assert!(k[key].as_f64().is_some_and(|v| v > 0.0), "{key} in {k}");
        }
        if k["kind"]
            .as_str()
            .is_some_and(|n| !n.starts_with("strings"))
        {
            assert!(k["pco_bits_per_value"].as_f64().is_some(), "{k}");
            numeric += k["n"].as_u64().unwrap();
        } else {
            assert!(k["pco_bits_per_value"].is_null(), "{k}");
        }
    }
    assert_eq!(pooled["n"].as_u64(), Some(numeric));
    // 2922 rows: the time field and four numeric fields.
    assert_eq!(numeric, 5 * 2922);
}

#[test]
fn table_by_default_and_errors_name_the_file() {
    let run = tscoll(
        &[
            "bench",
            "codec",
            "--detail",
            "--min-time-ms",
            "1",
            &data("noaa_weather_daily.ndjson.xz"),
        ],
        None,
    )
    .ok();
    let out = run.stdout();
    assert!(out.contains("pooled (numeric)"), "{out}");
    assert!(out.contains("noaa_weather_daily / temp_max"), "{out}");

    let scratch = common::Scratch::new();
    let bad = scratch.file(
        "bad.ndjson",
        b"{\"ts\": {\"$date\": \"2016-01-01T00:00:00Z\"}}\nnot json\n",
    );
    let run = tscoll(&["bench", "codec", &bad], None).failed();
    assert!(run.stderr().contains("bad.ndjson:2"), "{}", run.stderr());
}
