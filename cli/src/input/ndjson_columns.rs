//! NDJSON lines parsed straight into Arrow columns, for `Collection::insert_record_batch`:
//! no `serde_json::Value`, no `bson::Document` per line. Each line is walked once by
//! `serde_json`'s streaming parser (the same parser, with the same number rules, as the
//! document path of [`super::ndjson`]) and its values are appended to one builder per field.
//!
//! The columns must say exactly what the document path would store, so a batch of lines is
//! taken only when every line holds what Arrow columns express the same way
//! ([`NotColumnar`] otherwise, and the batch goes through the document path, which stores
//! or reports each line exactly):
//!
//! * the line is an object, with no field name repeated, holding a NUL byte or starting with
//!   `$` (at any depth);
//! * every line lists its fields in the order of their first appearance in the batch (a
//!   field new to the batch after the others), at every depth: a bucket keeps its fields in
//!   one order, that of their first appearance in it, and the columnar insert meets each
//!   line's fields in the columns' order;
//! * every value of a field has one kind across the batch: int32 (a JSON integer in the
//!   int32 range), int64 (an integer outside it), double (a number with a fraction or an
//!   exponent, or an integer past the int64 range), boolean, string, date
//!   (`{"$date": "<RFC 3339>"}`), or a sub-document (an object with no `$`-key) whose fields
//!   each have one kind the same way;
//! * no JSON `null` (Arrow's null is a *missing* field), no array, no empty object, no other
//!   Extended JSON wrapper (`$oid`, `$numberLong`, canonical `$date`, …);
//! * the time field is a date in every line, and `_id`, when present, is in every line.
//!
//! A field missing from a line is a null in its column, which the columnar insert leaves out
//! of the measurement, as the document has no such field.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};

use super::columns::{Builder, NotColumnar, Scalar, Table, next_column};

/// NDJSON lines read into the Arrow columns of a [`Table`], one row per line.
pub(crate) struct NdjsonColumns<'t, 'a> {
    table: &'t mut Table<'a>,
}

impl<'t, 'a> NdjsonColumns<'t, 'a> {
    /// Lines into `table`'s columns.
    pub(crate) fn new(table: &'t mut Table<'a>) -> Self {
        NdjsonColumns { table }
    }

    /// Appends one line (a JSON object).
    ///
    /// # Errors
    /// [`NotColumnar`] when the line is not an object the columns hold exactly (including
    /// malformed JSON); the table is then unusable and the batch goes through the document
    /// path.
    pub(crate) fn push_line(&mut self, text: &str) -> Result<(), NotColumnar> {
        let mut de = serde_json::Deserializer::from_str(text);
        let (time, meta) = self.table.special();
        let (row, columns) = self.table.next_row();
        let fields = ObjectSeed {
            columns,
            row,
            special: Some(Special { time, meta }),
        }
        .deserialize(&mut de)
        .map_err(|_| NotColumnar)?;
        de.end().map_err(|_| NotColumnar)?;
        self.table.end_row(fields);
        Ok(())
    }
}

/// The collection's time and meta field names (at the top level only).
#[derive(Clone, Copy)]
struct Special<'a> {
    time: &'a str,
    meta: Option<&'a str>,
}

/// Any parse error: the batch is not columnar (the document path says why, if the line is
/// bad).
#[derive(Debug)]
struct Refused;

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not columnar")
    }
}

impl std::error::Error for Refused {}

impl de::Error for Refused {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Refused
    }
}

/// The fields of an object go into `columns` at row `row`, in the order of the columns (a
/// field new to the batch comes after all others); at the top level (`special` given) the
/// object's field values are counted.
struct ObjectSeed<'c, 's> {
    columns: &'c mut Vec<Builder>,
    row: usize,
    special: Option<Special<'s>>,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_, '_> {
    /// Field values counted (top level).
    type Value = u64;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_, '_> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u64, A::Error> {
        let mut counted = 0u64;
        let mut next = 0usize;
        let mut any = false;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            any = true;
            let name: &str = &key.0;
            if name.as_bytes().contains(&0) || name.starts_with('$') {
                return Err(de::Error::custom(Refused));
            }
            let i = next_column(self.columns, name, &mut next)
                .map_err(|_| de::Error::custom(Refused))?;
            if let Some(s) = self.special
                && name != s.time
                && Some(name) != s.meta
            {
                counted += 1;
            }
            let column = self
                .columns
                .get_mut(i)
                .ok_or_else(|| de::Error::custom(Refused))?;
            map.next_value_seed(ValueSeed {
                column,
                row: self.row,
            })?;
        }
        if !any && self.special.is_none() {
            // `{}`: an empty sub-document has no column to hold it.
            return Err(de::Error::custom(Refused));
        }
        Ok(counted)
    }
}

/// A string of the line (a field name, or the text of a `$date`), borrowed from the line
/// unless it holds escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// One value of a field, appended to its column at row `row`.
struct ValueSeed<'c> {
    column: &'c mut Builder,
    row: usize,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl ValueSeed<'_> {
    fn push<E: de::Error>(self, value: Scalar<'_>) -> Result<(), E> {
        self.column
            .push(self.row, value)
            .map_err(|_| E::custom(Refused))
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.push(Scalar::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.push(Scalar::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        // As the bson crate reads a JSON number: an integer past the int64 range is a double.
        match i64::try_from(v) {
            Ok(i) => self.push(Scalar::Int(i)),
            #[expect(clippy::cast_precision_loss, reason = "what the document path stores")]
            Err(_) => self.push(Scalar::Double(v as f64)),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.push(Scalar::Double(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<(), E> {
        self.push(Scalar::Str(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.push(Scalar::Str(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some(first) = map.next_key::<Text<'de>>()? else {
            return Err(de::Error::custom(Refused));
        };
        if first.0 == "$date" {
            // Relaxed `{"$date": "<RFC 3339>"}`, read as the bson crate reads it.
            let text = map.next_value::<Text<'de>>()?;
            let ms = bson::DateTime::parse_rfc3339_str(&text.0)
                .map_err(|_| de::Error::custom(Refused))?
                .timestamp_millis();
            if map.next_key::<Text<'de>>()?.is_some() {
                return Err(de::Error::custom(Refused));
            }
            return self.push(Scalar::Date(ms));
        }
        let children = self
            .column
            .open_struct(self.row)
            .map_err(|_| de::Error::custom(Refused))?;
        ObjectSeed {
            columns: children,
            row: self.row,
            special: None,
        }
        .visit_map(Prefixed {
            first: Some(first),
            rest: map,
        })?;
        Ok(())
    }
}

/// A map whose first key was already read.
struct Prefixed<'de, A> {
    first: Option<Text<'de>>,
    rest: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Prefixed<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(key) => {
                let name = match key.0 {
                    Cow::Borrowed(s) => {
                        seed.deserialize(de::value::BorrowedStrDeserializer::new(s))
                    }
                    Cow::Owned(s) => seed.deserialize(de::value::StringDeserializer::new(s)),
                };
                name.map(Some)
            }
            None => self.rest.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.rest.next_value_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use bson::Document;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    use tscoll_engine::{Database, DatabaseOptions};

    use arrow_array::RecordBatch;

    use super::*;
    use crate::input::columns::stored_both_ways;
    use crate::input::ndjson::parse_document;

    /// The columns of `lines`, or `NotColumnar`.
    fn columns(lines: &[&str]) -> Result<RecordBatch, NotColumnar> {
        let mut table = Table::new("t", Some("m"));
        let mut c = NdjsonColumns::new(&mut table);
        for line in lines {
            c.push_line(line)?;
        }
        table.finish()
    }

    /// Inserts `lines` through the columns and through documents into two collections of
    /// one database and returns what each stored and the errors each reported.
    fn both_ways(db: &Database, n: usize, lines: &[&str]) -> [(Vec<String>, Vec<usize>); 2] {
        let batch = columns(lines).expect("columnar");
        let docs: Vec<Document> = lines
            .iter()
            .map(|l| parse_document(l).expect("document"))
            .collect();
        stored_both_ways(db, &format!("n{n}"), &batch, &docs)
    }

    #[test]
    fn lines_stored_through_columns_as_through_documents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let lines = [
            r#"{"t":{"$date":"2016-01-01T00:00:00Z"},"m":{"host":"a","rack":"1"},"u":1,"s":"x"}"#,
            // A sub-document field missing, a string with escapes, another series.
            r#"{"t":{"$date":"2016-01-01T00:00:10.123+01:00"},"m":{"host":"b"},"u":2,"s":"\"é\n"}"#,
            // A field new to the batch; a sub-document missing a field.
            r#"{"t":{"$date":"2016-01-01T00:00:20Z"},"m":{"rack":"2"},"big":3000000000,"d":1.0}"#,
            r#"{"t":{"$date":"2016-01-01T00:00:30Z"},"m":{"host":"a","rack":"1"},"big":-3000000000,"d":2.5e3,"ok":true,"sub":{"x":1,"y":"z"}}"#,
            r#"{"t":{"$date":"2016-01-01T00:00:40Z"},"u":3,"sub":{"y":"w"},"huge":18446744073709551615}"#,
            r#"{"t":{"$date":"1969-12-31T23:59:59.999Z"},"ok":false}"#,
        ];
        let [(a, ea), (b, eb)] = both_ways(&db, 0, &lines);
        assert_eq!(a.len(), lines.len());
        assert_eq!(a, b);
        assert_eq!(ea, eb);
    }

    #[test]
    fn lines_the_columns_cannot_hold_exactly_are_refused() {
        let t = r#""t":{"$date":"2016-01-01T00:00:00Z"}"#;
        let refused: &[&[&str]] = &[
            // JSON null is a stored null, not a missing field.
            &[&format!(r#"{{{t},"a":null}}"#)],
            &[&format!(r#"{{{t},"a":[1,2]}}"#)],
            &[&format!(
                r#"{{{t},"a":{{"$oid":"5f1d7b3c9d8e4a2b1c0f3e4d"}}}}"#
            )],
            &[&format!(r#"{{{t},"a":{{"$numberLong":"5"}}}}"#)],
            &[r#"{"t":{"$date":{"$numberLong":"5"}}}"#],
            &[&format!(
                r#"{{{t},"a":{{"$date":"2016-01-01T00:00:00Z","x":1}}}}"#
            )],
            &[&format!(r#"{{{t},"a":{{}}}}"#)],
            &[&format!(r#"{{{t},"a":1,"a":2}}"#)],
            &[&format!(r#"{{{t},"a\u0000b":1}}"#)],
            &[&format!(r#"{{{t},"$a":1}}"#)],
            &[&format!(r#"{{{t},"a":{{"x":1,"x":2}}}}"#)],
            // A number kind changing within a column: int32 / double, int32 / int64.
            &[&format!(r#"{{{t},"a":1}}"#), &format!(r#"{{{t},"a":1.5}}"#)],
            &[
                &format!(r#"{{{t},"a":1}}"#),
                &format!(r#"{{{t},"a":3000000000}}"#),
            ],
            &[&format!(r#"{{{t},"a":"1"}}"#), &format!(r#"{{{t},"a":1}}"#)],
            // Fields in another order than before (a bucket stores its fields in one order).
            &[
                &format!(r#"{{{t},"a":1,"b":2}}"#),
                &format!(r#"{{{t},"b":1,"a":2}}"#),
            ],
            &[&format!(r#"{{"a":1,{t}}}"#), &format!(r#"{{{t},"a":2}}"#)],
            &[
                &format!(r#"{{{t},"a":{{"x":1,"y":2}}}}"#),
                &format!(r#"{{{t},"a":{{"y":1,"x":2}}}}"#),
            ],
            // The time field missing, or not a date, in some line.
            &[&format!(r#"{{{t},"a":1}}"#), r#"{"a":2}"#],
            &[r#"{"t":5}"#],
            // `_id` in some lines only (the others would get no generated one).
            &[&format!(r#"{{{t},"_id":1}}"#), &format!(r#"{{{t},"a":1}}"#)],
            // Not an object, or not JSON.
            &[r#"[1]"#],
            &[r#"{"t":"#],
            &[&format!(r#"{{{t}}} x"#)],
        ];
        for lines in refused {
            assert_eq!(columns(lines).err(), Some(NotColumnar), "{lines:?}");
            // Each of them still reads as documents, or is reported by the document path.
            for line in *lines {
                let _ = parse_document(line);
            }
        }
        // An `_id` in every line, and a meta value missing from some, are columns.
        let ok = [
            format!(r#"{{{t},"_id":1,"m":1}}"#),
            format!(r#"{{{t},"_id":2}}"#),
        ];
        let ok: Vec<&str> = ok.iter().map(String::as_str).collect();
        assert!(columns(&ok).is_ok());
    }

    /// JSON values of one kind (`kind` < [`KINDS`]).
    fn value(kind: usize) -> BoxedStrategy<String> {
        match kind {
            0 => any::<i32>().prop_map(|i| i.to_string()).boxed(),
            1 => any::<i64>().prop_map(|i| i.to_string()).boxed(),
            2 => any::<u64>().prop_map(|i| i.to_string()).boxed(),
            3 => (-1e6f64..1e6).prop_map(|d| format!("{d:?}")).boxed(),
            4 => any::<bool>().prop_map(|b| b.to_string()).boxed(),
            5 => "[a-c\"\\\\é]{0,3}"
                .prop_map(|s| serde_json::to_string(&s).unwrap_or_default())
                .boxed(),
            6 => (0i64..4_000_000_000_000)
                .prop_map(|ms| format!(r#"{{"$date":"{}"}}"#, rfc3339(ms)))
                .boxed(),
            7 => Just("null".to_owned()).boxed(),
            8 => Just(r#"{"x":1,"y":"s"}"#.to_owned()).boxed(),
            9 => Just(r#"{"y":"s"}"#.to_owned()).boxed(),
            _ => Just(r#"{"y":"s","x":1}"#.to_owned()).boxed(),
        }
    }

    /// Kinds of [`value`].
    const KINDS: usize = 11;

    fn rfc3339(ms: i64) -> String {
        bson::DateTime::from_millis(ms)
            .try_to_rfc3339_string()
            .unwrap_or_default()
    }

    /// A line: a time, maybe a meta value, and some of the fields `a`, `b`, `c`, usually in
    /// that order; each field's value of the kind `kinds` gives it, now and then of another.
    fn line(kinds: [usize; 3]) -> impl Strategy<Value = String> {
        let field = move |f: usize| {
            (prop::bool::weighted(0.05), 0..KINDS)
                .prop_flat_map(move |(other, k)| value(if other { k } else { kinds[f] }))
        };
        (
            0i64..100_000,
            prop::option::of(0u8..3),
            prop::sample::subsequence(vec![0usize, 1, 2], 0..=3),
            prop::bool::weighted(0.05),
            field(0),
            field(1),
            field(2),
        )
            .prop_map(|(ms, meta, mut names, reversed, a, b, c)| {
                let mut s = format!(r#"{{"t":{{"$date":"{}"}}"#, rfc3339(ms));
                if let Some(m) = meta {
                    s.push_str(&format!(r#","m":{{"h":"{m}"}}"#));
                }
                if reversed {
                    names.reverse();
                }
                let values = [a, b, c];
                for f in names {
                    s.push_str(&format!(r#","{}":{}"#, ["a", "b", "c"][f], values[f]));
                }
                s.push('}');
                s
            })
    }

    /// Batches of 1 to 11 lines.
    fn batch() -> impl Strategy<Value = Vec<String>> {
        prop::array::uniform3(0..KINDS)
            .prop_flat_map(|kinds| prop::collection::vec(line(kinds), 1..12))
    }

    /// Differential: whenever a batch of generated lines goes into columns, the columnar
    /// insert stores what `insert_many` of the lines' documents stores and rejects the same
    /// lines.
    #[test]
    fn columns_agree_with_documents_on_generated_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let mut runner = TestRunner::new(Config {
            cases: 64,
            ..Config::default()
        });
        let n = std::cell::Cell::new(0usize);
        runner
            .run(&batch(), |lines| {
                let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                if columns(&lines).is_ok() {
                    n.set(n.get() + 1);
                    let [(a, ea), (b, eb)] = both_ways(&db, n.get(), &lines);
                    prop_assert_eq!(a, b);
                    prop_assert_eq!(ea, eb);
                }
                Ok(())
            })
            .expect("property");
        // The generator must reach the columns often enough for the test to mean something.
        let columnar = n.get();
        assert!(columnar >= 8, "only {columnar} of 64 batches were columnar");
    }

    #[test]
    fn field_values_leave_out_time_and_meta() {
        let mut table = Table::new("t", Some("m"));
        let mut c = NdjsonColumns::new(&mut table);
        c.push_line(r#"{"t":{"$date":"2016-01-01T00:00:00Z"},"m":1,"a":1,"b":{"x":1}}"#)
            .expect("line");
        c.push_line(r#"{"t":{"$date":"2016-01-01T00:00:00Z"},"a":2}"#)
            .expect("line");
        assert_eq!(table.field_values(), [2, 1]);
        let batch = table.finish().expect("batch");
        assert_eq!(batch.num_rows(), 2);
        let names: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["t", "m", "a", "b"]);
    }

    #[test]
    fn a_bool_value_keeps_its_kind() {
        let batch = columns(&[
            r#"{"t":{"$date":"2016-01-01T00:00:00Z"},"a":true}"#,
            r#"{"t":{"$date":"2016-01-01T00:00:01Z"}}"#,
        ])
        .expect("columns");
        let a = batch.column(1);
        assert_eq!(a.data_type(), &arrow_schema::DataType::Boolean);
        assert_eq!(a.null_count(), 1);
    }
}
