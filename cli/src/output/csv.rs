//! Measurements written as CSV, as `mongoexport --type=csv` writes them: one column per
//! field path (embedded documents flattened to dotted names, e.g. `meta.series`), in the
//! order first seen in a first pass; `tscoll ingest --csv-meta-columns …` reads the file
//! back.
//!
//! Values: strings as they are; int and long in decimal; doubles in their shortest exact
//! form (`NaN`, `Infinity`, `-Infinity` when not finite); booleans `true`/`false`; dates in
//! RFC 3339 with milliseconds (`2016-01-01T00:00:00.000Z`; outside years 0 to 9999 with an
//! ISO 8601 expanded year, `+010000-01-01T00:00:00.000Z`, which `ingest` reads back as
//! well); ObjectIds in hex; null and a
//! missing field as an empty cell; arrays, empty documents and every other type as relaxed
//! Extended JSON.

use std::collections::HashMap;
use std::io::Write;

use bson::{Bson, Document};

use crate::cmd::{IsoMillis, RelaxedExtJson};

/// The columns of a CSV export: every field path seen, in the order first seen.
#[derive(Debug, Default)]
pub(crate) struct CsvColumns {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl CsvColumns {
    /// Adds the field paths of `doc`.
    pub(crate) fn add(&mut self, doc: &Document) {
        flatten(doc, "", &mut |path, _| {
            if !self.index.contains_key(path) {
                self.index.insert(path.to_owned(), self.names.len());
                self.names.push(path.to_owned());
            }
            Ok(())
        })
        .unwrap_or(());
    }
}

/// Calls `f` with each leaf's dotted path and value (embedded non-empty documents are
/// walked into).
fn flatten(
    doc: &Document,
    prefix: &str,
    f: &mut impl FnMut(&str, &Bson) -> Result<(), String>,
) -> Result<(), String> {
    for (name, value) in doc {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match value {
            Bson::Document(d) if !d.is_empty() => flatten(d, &path, f)?,
            v => f(&path, v)?,
        }
    }
    Ok(())
}

/// Writes documents as CSV rows under a header of the columns.
pub(crate) struct CsvOut<W: Write> {
    writer: csv::Writer<W>,
    columns: CsvColumns,
    row: Vec<String>,
}

impl<W: Write> CsvOut<W> {
    /// Writes the header.
    ///
    /// # Errors
    /// Writing fails.
    pub(crate) fn new(out: W, columns: CsvColumns) -> std::io::Result<Self> {
        let mut writer = csv::Writer::from_writer(out);
        // No match: no columns, and no header line either (an empty file).
        if !columns.names.is_empty() {
            writer.write_record(&columns.names)?;
        }
        let row = vec![String::new(); columns.names.len()];
        Ok(Self {
            writer,
            columns,
            row,
        })
    }

    /// Writes one document as a row.
    ///
    /// # Errors
    /// A field the first pass did not see (the collection changed; kind `Other`), or
    /// writing fails.
    pub(crate) fn push(&mut self, doc: &Document) -> std::io::Result<()> {
        for cell in &mut self.row {
            cell.clear();
        }
        let (index, row) = (&self.columns.index, &mut self.row);
        flatten(doc, "", &mut |path, value| {
            let i = *index.get(path).ok_or_else(|| {
                format!(
                    "field '{path}' was not in the first pass: the collection changed during \
                     the export; run it again"
                )
            })?;
            write_cell(&mut row[i], value);
            Ok(())
        })
        .map_err(std::io::Error::other)?;
        self.writer.write_record(&self.row).map_err(Into::into)
    }

    /// Flushes the rows written; returns the output.
    ///
    /// # Errors
    /// Writing fails.
    pub(crate) fn finish(self) -> std::io::Result<W> {
        self.writer
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

/// Writes one value's cell text into `cell`.
fn write_cell(cell: &mut String, value: &Bson) {
    use std::fmt::Write as _;
    match value {
        Bson::String(s) => cell.push_str(s),
        Bson::Int32(x) => {
            let _ = write!(cell, "{x}");
        }
        Bson::Int64(x) => {
            let _ = write!(cell, "{x}");
        }
        Bson::Double(x) if x.is_nan() => cell.push_str("NaN"),
        Bson::Double(x) if x.is_infinite() => {
            cell.push_str(if *x > 0.0 { "Infinity" } else { "-Infinity" });
        }
        Bson::Double(x) => {
            // serde_json writes the shortest text that reads back to the same double.
            cell.push_str(&serde_json::to_string(x).unwrap_or_default());
        }
        Bson::Boolean(b) => cell.push_str(if *b { "true" } else { "false" }),
        Bson::DateTime(d) => {
            let _ = write!(cell, "{}", IsoMillis(d.timestamp_millis()));
        }
        Bson::ObjectId(id) => cell.push_str(&id.to_hex()),
        Bson::Null => {}
        other => cell.push_str(&relaxed(other)),
    }
}

fn relaxed(value: &Bson) -> String {
    serde_json::to_string(&RelaxedExtJson::exact(value)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn columns_are_dotted_paths_in_first_seen_order_and_cells_read_back() {
        let docs = [
            doc! { "ts": bson::DateTime::from_millis(1_451_606_400_000), "meta": {"s": "a"}, "x": 1 },
            doc! { "ts": bson::DateTime::from_millis(1), "meta": {"s": "b,c"}, "y": 0.1, "x": bson::Bson::Null, "z": [1, 2], "e": {} },
            doc! { "ts": bson::DateTime::from_millis(-62_167_219_200_001) },
        ];
        let mut columns = CsvColumns::default();
        for d in &docs {
            columns.add(d);
        }
        let mut out = CsvOut::new(Vec::new(), columns).unwrap();
        for d in &docs {
            out.push(d).unwrap();
        }
        let text = String::from_utf8(out.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "ts,meta.s,x,y,z,e\n\
             2016-01-01T00:00:00.000Z,a,1,,,\n\
             1970-01-01T00:00:00.001Z,\"b,c\",,0.1,\"[1,2]\",{}\n\
             -000001-12-31T23:59:59.999Z,,,,,\n"
        );
    }

    #[test]
    fn doubles_keep_their_type_and_exact_value() {
        let mut cell = String::new();
        for (x, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e300, "1e+300"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            cell.clear();
            write_cell(&mut cell, &Bson::Double(x));
            assert_eq!(cell, want);
        }
    }

    #[test]
    fn every_date_is_written_as_text_that_reads_back() {
        use crate::input::csv::TimeFormat;
        let cases = [
            (i64::MIN, "-292275055-05-16T16:47:04.192Z"),
            (-62_167_219_200_001, "-000001-12-31T23:59:59.999Z"),
            (-62_167_219_200_000, "0000-01-01T00:00:00.000Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
            (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
            (i64::MAX, "+292278994-08-17T07:12:55.807Z"),
        ];
        let mut cell = String::new();
        for (ms, want) in cases {
            cell.clear();
            write_cell(&mut cell, &Bson::DateTime(bson::DateTime::from_millis(ms)));
            assert_eq!(cell, want);
            let read = TimeFormat::Rfc3339.parse_time(&cell).expect(want);
            assert_eq!(read.timestamp_millis(), ms, "{want}");
        }
        // Every day boundary over 1200 years around year 0, and around 10000.
        for start in [
            -62_167_219_200_000_i64 - 600 * 31_556_952_000,
            240_000_000_000_000,
        ] {
            for day in 0..438_300 {
                let ms = start + day * 86_400_000 + 3_599_999;
                cell.clear();
                write_cell(&mut cell, &Bson::DateTime(bson::DateTime::from_millis(ms)));
                let read = TimeFormat::Rfc3339.parse_time(&cell).expect("reads back");
                assert_eq!(read.timestamp_millis(), ms, "{cell}");
            }
        }
        // Offsets and the relaxed forms hold with an expanded year too.
        for (text, ms) in [
            ("+010000-01-01T01:00:00+01:00", 253_402_300_800_000),
            ("+010000-01-01 00:00:00", 253_402_300_800_000),
            ("+010000-01-01", 253_402_300_800_000),
        ] {
            let read = TimeFormat::Rfc3339.parse_time(text).expect(text);
            assert_eq!(read.timestamp_millis(), ms, "{text}");
        }
        for bad in [
            "+10-01-01T00:00:00Z",
            "+292278994-08-17T07:12:55.808Z",
            "+x",
        ] {
            assert!(TimeFormat::Rfc3339.parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_field_the_first_pass_missed_is_an_error() {
        let mut columns = CsvColumns::default();
        columns.add(&doc! { "a": 1 });
        let mut out = CsvOut::new(Vec::new(), columns).unwrap();
        let e = out.push(&doc! { "a": 1, "b": 2 }).unwrap_err().to_string();
        assert!(e.contains("field 'b'"), "{e}");
    }
}
