//! Printing a [`Report`]: a text table, or JSON lines.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::measure::{KindFigures, Report, Sizes};

fn round(v: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (v * p).round() / p
}

fn opt(v: Option<f64>, digits: i32) -> Value {
    v.map_or(Value::Null, |v| json!(round(v, digits)))
}

fn kind_json(k: &KindFigures) -> Value {
    json!({
        "kind": k.kind.name(),
        "n": k.sizes.values,
        "chunks": k.sizes.chunks,
        "tscoll_bits_per_value": round(k.sizes.tscoll_bits(), 3),
        "pco_bits_per_value": opt(k.sizes.pco_bits(), 3),
        "zstd_bits_per_value": round(k.sizes.zstd_bits(), 3),
        "ratio_to_pco": opt(k.sizes.ratio_to_pco(), 3),
        "encode_mb_s": round(k.encode_mb_s, 1),
        "decode_mb_s": round(k.decode_mb_s, 1),
        "pco_decode_mb_s": opt(k.pco_decode_mb_s, 1),
    })
}

impl Report {
    /// One JSON object per kind, then `{"kind": "pooled", ...}` with `ratio_to_pco`.
    #[must_use]
    pub fn json_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .kinds
            .iter()
            .map(|k| kind_json(k).to_string())
            .collect();
        let p = &self.pooled;
        lines.push(
            json!({
                "kind": "pooled",
                "n": p.values,
                "chunks": p.chunks,
                "tscoll_bits_per_value": round(p.tscoll_bits(), 3),
                "pco_bits_per_value": opt(p.pco_bits(), 3),
                "zstd_bits_per_value": round(p.zstd_bits(), 3),
                "ratio_to_pco": opt(p.ratio_to_pco(), 4),
                "encode_mb_s": round(self.pooled_encode_mb_s, 1),
                "decode_mb_s": round(self.pooled_decode_mb_s, 1),
            })
            .to_string(),
        );
        lines
    }

    /// A text table by kind, the pooled line, and with `detail` one line per data set field.
    #[must_use]
    pub fn table(&self, detail: bool) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<22} {:>10} {:>8} {:>8} {:>7} {:>8} {:>9} {:>9} {:>9}",
            "kind (bits/value)",
            "values",
            "tscoll",
            "pco",
            "ratio",
            "zstd",
            "enc MB/s",
            "dec MB/s",
            "pco dec"
        );
        let row = |s: &mut String, name: &str, z: &Sizes, enc: f64, dec: f64, pdec: Option<f64>| {
            let _ = writeln!(
                s,
                "{:<22} {:>10} {:>8.3} {:>8} {:>7} {:>8.3} {:>9.0} {:>9.0} {:>9}",
                name,
                z.values,
                z.tscoll_bits(),
                z.pco_bits().map_or("-".to_owned(), |b| format!("{b:.3}")),
                z.ratio_to_pco()
                    .map_or("-".to_owned(), |r| format!("{r:.3}")),
                z.zstd_bits(),
                enc,
                dec,
                pdec.map_or("-".to_owned(), |d| format!("{d:.0}")),
            );
        };
        for k in &self.kinds {
            row(
                &mut s,
                k.kind.name(),
                &k.sizes,
                k.encode_mb_s,
                k.decode_mb_s,
                k.pco_decode_mb_s,
            );
        }
        row(
            &mut s,
            "pooled (numeric)",
            &self.pooled,
            self.pooled_encode_mb_s,
            self.pooled_decode_mb_s,
            None,
        );
        if detail {
            let _ = writeln!(
                s,
                "\n{:<40} {:<22} {:>9} {:>8} {:>8} {:>7} {:>8}",
                "data set / field", "kind", "values", "tscoll", "pco", "ratio", "zstd"
            );
            for f in &self.fields {
                let z = &f.sizes;
                let _ = writeln!(
                    s,
                    "{:<40} {:<22} {:>9} {:>8.3} {:>8} {:>7} {:>8.3}",
                    format!("{} / {}", f.source, f.field),
                    f.kind.name(),
                    z.values,
                    z.tscoll_bits(),
                    z.pco_bits().map_or("-".to_owned(), |b| format!("{b:.3}")),
                    z.ratio_to_pco()
                        .map_or("-".to_owned(), |r| format!("{r:.3}")),
                    z.zstd_bits(),
                );
            }
        }
        s
    }
}
