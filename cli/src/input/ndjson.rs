//! Newline-delimited MongoDB Extended JSON (what `mongoexport` writes), relaxed or canonical.
//!
//! Each line is parsed with `serde_json` (field order kept) and converted to a
//! `bson::Document` by the bson crate's Extended JSON support: `{"$date": ...}` becomes a
//! datetime, `{"$numberLong": "5"}` an int64, `{"$oid": ...}` an ObjectId,
//! `{"$numberDouble": "NaN"}` a double, and so on. Plain JSON integers become int32 when they
//! fit and int64 otherwise; numbers with a fraction or exponent become doubles.

use std::io::{self, BufRead};

use bson::Document;

use super::{Position, Record, at_line};

/// Parses one JSON object in Extended JSON into a document.
///
/// # Errors
/// A message saying why: malformed JSON (with the column), a value that is not an object, or
/// an Extended JSON wrapper with a bad payload (e.g. `{"$date": "yesterday"}`).
pub(crate) fn parse_document(text: &str) -> Result<Document, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    json_to_document(value)
}

/// Levels of objects and arrays `serde_json` reads in one document, the document itself the
/// first (its recursion limit of 128 stops at the 128th).
pub(crate) const MAX_NESTING: usize = 127;

/// The message of a JSON parse error: what is wrong and where (the column, and the line
/// within the text when it spans lines).
fn json_error(e: &serde_json::Error) -> String {
    let reason = e.to_string();
    if reason.starts_with("recursion limit exceeded") {
        let at = if e.line() > 1 {
            format!("line {} column {} of the document", e.line(), e.column())
        } else {
            format!("column {}", e.column())
        };
        return format!(
            "malformed JSON: objects and arrays nest more than {MAX_NESTING} levels deep, the \
             limit (at {at})"
        );
    }
    format!("malformed JSON: {reason}")
}

/// Converts a parsed JSON value (which must be an object) from Extended JSON to a document.
///
/// # Errors
/// The value is not an object, or an Extended JSON wrapper inside it is invalid.
pub(crate) fn json_to_document(value: serde_json::Value) -> Result<Document, String> {
    match value {
        serde_json::Value::Object(mut map) => {
            map.values_mut().for_each(modernize);
            Document::try_from(map).map_err(|e| format!("invalid Extended JSON: {e}"))
        }
        other => Err(format!(
            "expected a JSON object, found {}",
            json_kind(&other)
        )),
    }
}

/// Rewrites the legacy Extended JSON forms inside `value` (what `mongoexport` wrote before
/// 4.2, and drivers' legacy or "strict mode" JSON) to the forms of Extended JSON v2 the bson
/// crate reads, in place:
///
/// * `{"$date": "2014-02-14T14:30:00.000+0000"}`: an offset without a colon
///   (`+hhmm`, `-hhmm`) becomes `+hh:mm`;
/// * `{"$binary": "<base64>", "$type": "<hex>"}` becomes
///   `{"$binary": {"base64": …, "subType": …}}` (a one-digit type is padded: `"0"` is `"00"`);
/// * `{"$regex": "<pattern>", "$options": "<flags>"}` becomes
///   `{"$regularExpression": {"pattern": …, "options": …}}`.
///
/// Anything else is left as it is (and reported by the bson crate when it is not valid).
pub(crate) fn modernize(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Array(items) => items.iter_mut().for_each(modernize),
        Value::Object(map) => {
            let legacy = match map.iter().next() {
                Some((k, _)) if k.starts_with('$') => legacy_wrapper(map),
                _ => None,
            };
            match legacy {
                Some(v) => *value = v,
                None => map.values_mut().for_each(modernize),
            }
        }
        _ => {}
    }
}

/// The Extended JSON v2 form of a legacy wrapper object (see [`modernize`]); `None` when
/// `map` is not one.
fn legacy_wrapper(map: &serde_json::Map<String, serde_json::Value>) -> Option<serde_json::Value> {
    use serde_json::{Value, json};
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    match map.len() {
        1 => {
            let date = text("$date")?;
            colon_offset(date).map(|d| json!({ "$date": d }))
        }
        2 => {
            if let (Some(bytes), Some(subtype)) = (text("$binary"), text("$type")) {
                let subtype = if subtype.len() == 1 {
                    format!("0{subtype}")
                } else {
                    subtype.to_owned()
                };
                return Some(json!({ "$binary": { "base64": bytes, "subType": subtype } }));
            }
            let (pattern, options) = (text("$regex")?, text("$options")?);
            Some(json!({ "$regularExpression": { "pattern": pattern, "options": options } }))
        }
        _ => None,
    }
}

/// `text` with its `+hhmm` or `-hhmm` offset written `+hh:mm`; `None` when it has no such
/// offset after a time.
fn colon_offset(text: &str) -> Option<String> {
    let split = text.len().checked_sub(5)?;
    let (head, offset) = (text.get(..split)?, text.get(split..)?);
    let bytes = offset.as_bytes();
    let digits = bytes[1..].iter().all(u8::is_ascii_digit);
    (matches!(bytes[0], b'+' | b'-') && digits && head.contains('T'))
        .then(|| format!("{head}{}:{}", &offset[..3], &offset[3..]))
}

/// The JSON type name of a value, for messages.
fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Reads NDJSON line by line, without parsing: [`NdjsonLines::next_line`] gives each
/// non-blank line's text (or why it is not text). An input whose first non-blank byte is `[`
/// is a JSON array of documents instead (what `mongoimport --jsonArray` reads and most APIs
/// write): its elements are given one at a time, as they are read (the array is never held
/// whole), each with the number of the line it starts on.
///
/// Blank lines (and a trailing `\r` of CRLF files) are skipped; line numbers count every
/// line from 1, so they match what an editor shows. A read error (e.g. a truncated
/// compressed input) comes after every complete line before it, marked with the number of
/// the line it cut ([`at_line`]).
pub(crate) struct NdjsonLines<R> {
    reader: R,
    line_no: u64,
    buf: Vec<u8>,
    layout: Layout,
    /// Elements of the JSON array given so far.
    elements: u64,
}

/// How the input holds its documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// Not looked at yet.
    Unknown,
    /// One document per line.
    Lines,
    /// A JSON array; `true` once its closing `]` was read.
    Array(bool),
}

/// What one byte of an array does to the element being read.
enum Step {
    /// Part of the element (or whitespace between elements).
    Continue,
    /// A `,` ended the element.
    Element,
    /// The `]` ended the element and the array.
    End,
}

impl<R: BufRead> NdjsonLines<R> {
    /// A reader of `reader`'s lines.
    pub(crate) fn new(reader: R) -> Self {
        NdjsonLines {
            reader,
            line_no: 0,
            buf: Vec::new(),
            layout: Layout::Unknown,
            elements: 0,
        }
    }

    /// Skips leading whitespace (counting its lines) and tells lines from a JSON array.
    fn detect(&mut self) -> io::Result<()> {
        loop {
            let chunk = self
                .reader
                .fill_buf()
                .map_err(|e| at_line(self.line_no + 1, e))?;
            if chunk.is_empty() {
                self.layout = Layout::Lines;
                return Ok(());
            }
            let blank = chunk.iter().take_while(|b| b.is_ascii_whitespace()).count();
            let newlines = chunk[..blank].iter().filter(|b| **b == b'\n').count();
            let first = chunk.get(blank).copied();
            self.line_no += newlines as u64;
            self.reader.consume(blank);
            match first {
                None => {}
                Some(b'[') => {
                    self.reader.consume(1);
                    self.layout = Layout::Array(false);
                    return Ok(());
                }
                Some(_) => {
                    self.layout = Layout::Lines;
                    return Ok(());
                }
            }
        }
    }

    /// The position of the next element of a JSON array, which starts on `line`.
    fn element_at(&mut self, line: u64) -> Position {
        let element = Some(self.elements);
        self.elements += 1;
        Position { line, element }
    }

    /// The next element of a JSON array: its first line and index, and its text.
    fn next_element(&mut self) -> Option<io::Result<(Position, Result<&str, String>)>> {
        if self.layout == Layout::Array(true) {
            return None;
        }
        self.buf.clear();
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        let mut start: Option<u64> = None;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) => return Some(Err(at_line(self.line_no + 1, e))),
            };
            if chunk.is_empty() {
                self.layout = Layout::Array(true);
                let at = self.element_at(start.unwrap_or(self.line_no + 1));
                return Some(Ok((
                    at,
                    Err("the JSON array is not closed: the input ends inside it".to_owned()),
                )));
            }
            let mut used = 0;
            let mut step = Step::Continue;
            for &b in chunk {
                used += 1;
                if in_string {
                    self.buf.push(b);
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                    }
                    if b == b'\n' {
                        self.line_no += 1;
                    }
                    continue;
                }
                match b {
                    b',' if depth == 0 => {
                        step = Step::Element;
                        break;
                    }
                    b']' if depth == 0 => {
                        step = Step::End;
                        break;
                    }
                    b'\n' => {
                        self.line_no += 1;
                        self.buf.push(b);
                        continue;
                    }
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                if start.is_none() && !b.is_ascii_whitespace() {
                    start = Some(self.line_no + 1);
                }
                self.buf.push(b);
            }
            self.reader.consume(used);
            match step {
                Step::Continue => {}
                Step::End if start.is_none() => {
                    self.layout = Layout::Array(true);
                    return None;
                }
                Step::Element | Step::End => {
                    if matches!(step, Step::End) {
                        self.layout = Layout::Array(true);
                    }
                    let at = self.element_at(start.unwrap_or(self.line_no + 1));
                    if start.is_none() {
                        return Some(Ok((
                            at,
                            Err("an empty element in the JSON array".to_owned()),
                        )));
                    }
                    let text = std::str::from_utf8(&self.buf)
                        .map(str::trim)
                        .map_err(|e| format!("element is not valid UTF-8: {e}"));
                    return Some(Ok((at, text)));
                }
            }
        }
    }

    /// The next non-blank line (or element of a JSON array): where it is and its text, or
    /// why it is not text (invalid UTF-8); `None` at the end of the input.
    ///
    /// # Errors
    /// A read error, marked with the line it cut.
    pub(crate) fn next_line(&mut self) -> Option<io::Result<(Position, Result<&str, String>)>> {
        if self.layout == Layout::Unknown
            && let Err(e) = self.detect()
        {
            self.layout = Layout::Lines;
            return Some(Err(e));
        }
        if matches!(self.layout, Layout::Array(_)) {
            return self.next_element();
        }
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                // The bytes of the line read so far (a line cut by the error) are dropped.
                Err(e) => return Some(Err(at_line(self.line_no + 1, e))),
            }
            self.line_no += 1;
            let blank = match std::str::from_utf8(&self.buf) {
                Ok(text) => text.trim().is_empty(),
                Err(_) => false,
            };
            if blank {
                continue;
            }
            let text = std::str::from_utf8(&self.buf)
                .map(|text| text.trim_end_matches(['\n', '\r']))
                .map_err(|e| format!("line is not valid UTF-8: {e}"));
            return Some(Ok((Position::from(self.line_no), text)));
        }
    }
}

/// Reads NDJSON line by line; yields one [`Record`] per non-blank line (see
/// [`NdjsonLines`]).
pub(crate) struct NdjsonReader<R> {
    lines: NdjsonLines<R>,
}

impl<R: BufRead> NdjsonReader<R> {
    /// A reader of `reader`'s lines.
    pub(crate) fn new(reader: R) -> Self {
        NdjsonReader {
            lines: NdjsonLines::new(reader),
        }
    }
}

impl<R: BufRead> Iterator for NdjsonReader<R> {
    type Item = io::Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.lines.next_line()?.map(|(line, text)| Record {
            line,
            doc: text.and_then(parse_document),
        }))
    }
}

#[cfg(test)]
mod tests {
    use bson::{Bson, DateTime, doc, oid::ObjectId};

    use super::*;

    /// Every item of `input` as `(line, text or error)`.
    fn items(input: &str) -> Vec<(u64, Result<String, String>)> {
        let mut lines = NdjsonLines::new(input.as_bytes());
        let mut out = Vec::new();
        while let Some(item) = lines.next_line() {
            let (at, text) = item.expect("read");
            out.push((at.line, text.map(str::to_owned)));
        }
        out
    }

    #[test]
    fn a_json_array_gives_its_elements_with_their_lines() {
        let input =
            "\n  [\n {\"a\": 1},\n {\"b\": [1, {\"c\": \"],\\\"x\"}]},\n\n  {\"d\":\n 2}\n]\n";
        assert_eq!(
            items(input),
            [
                (3, Ok("{\"a\": 1}".to_owned())),
                (4, Ok("{\"b\": [1, {\"c\": \"],\\\"x\"}]}".to_owned())),
                (6, Ok("{\"d\":\n 2}".to_owned())),
            ]
        );
        let docs: Vec<Document> = items(input)
            .into_iter()
            .map(|(_, t)| parse_document(&t.expect("text")).expect("document"))
            .collect();
        assert_eq!(docs[1], doc! { "b": [1, { "c": "],\"x" }] });
        assert!(items("[]").is_empty());
        assert!(items(" [ ] ").is_empty());
    }

    #[test]
    fn a_broken_json_array_is_an_error_not_a_panic() {
        let unclosed = items("[{\"a\": 1},\n{\"b\": 2}");
        assert_eq!(unclosed[0], (1, Ok("{\"a\": 1}".to_owned())));
        assert!(
            unclosed[1]
                .1
                .as_ref()
                .is_err_and(|e| e.contains("not closed")),
            "{unclosed:?}"
        );
        let empty = items("[{\"a\": 1},,{\"b\": 2}]");
        assert!(
            empty[1]
                .1
                .as_ref()
                .is_err_and(|e| e.contains("empty element")),
            "{empty:?}"
        );
        assert_eq!(empty.len(), 3);
        // Unbalanced brackets reach the parser, which says what is wrong.
        let odd = items("[}, 5]");
        assert_eq!(odd.len(), 2);
        assert!(parse_document(odd[0].1.as_ref().expect("text")).is_err());
        assert!(parse_document(odd[1].1.as_ref().expect("text")).is_err());
    }

    #[test]
    fn relaxed_and_canonical_forms() {
        let doc = parse_document(
            r#"{"ts":{"$date":"2014-02-14T14:30:00Z"},"old":{"$date":{"$numberLong":"-1000"}},
               "i":1,"big":3000000000,"d":1.5,"whole":2.0,"l":{"$numberLong":"7"},
               "n":{"$numberDouble":"NaN"},"ci":{"$numberInt":"3"},
               "id":{"$oid":"5f1d7b3c9d8e4a2b1c0f3e4d"},"s":"x","b":true,"z":null,
               "arr":[1,{"$numberLong":"2"}],"meta":{"series":"a","source":"b"}}"#,
        )
        .expect("parse");
        assert_eq!(
            doc.get("ts"),
            Some(&Bson::DateTime(DateTime::from_millis(1_392_388_200_000)))
        );
        assert_eq!(
            doc.get("old"),
            Some(&Bson::DateTime(DateTime::from_millis(-1000)))
        );
        assert_eq!(doc.get("i"), Some(&Bson::Int32(1)));
        assert_eq!(doc.get("big"), Some(&Bson::Int64(3_000_000_000)));
        assert_eq!(doc.get("d"), Some(&Bson::Double(1.5)));
        assert_eq!(doc.get("whole"), Some(&Bson::Double(2.0)));
        assert_eq!(doc.get("l"), Some(&Bson::Int64(7)));
        assert!(matches!(doc.get("n"), Some(Bson::Double(x)) if x.is_nan()));
        assert_eq!(doc.get("ci"), Some(&Bson::Int32(3)));
        let oid = ObjectId::parse_str("5f1d7b3c9d8e4a2b1c0f3e4d").expect("oid");
        assert_eq!(doc.get("id"), Some(&Bson::ObjectId(oid)));
        assert_eq!(doc.get("z"), Some(&Bson::Null));
        assert_eq!(
            doc.get("arr"),
            Some(&Bson::Array(vec![Bson::Int32(1), Bson::Int64(2)]))
        );
        // Field order is the line's order (not sorted), also inside sub-documents.
        let keys: Vec<&str> = doc.keys().map(String::as_str).collect();
        assert_eq!(keys.first(), Some(&"ts"));
        assert_eq!(keys.last(), Some(&"meta"));
        let meta = doc.get_document("meta").expect("meta");
        assert_eq!(meta.keys().collect::<Vec<_>>(), ["series", "source"]);
    }

    #[test]
    fn legacy_extended_json_of_old_mongoexport() {
        let doc = parse_document(
            r#"{"ts":{"$date":"2014-02-14T14:30:00.000+0000"},
               "west":{"$date":"2014-02-14T09:30:00.250-0500"},
               "bin":{"$binary":"AQID","$type":"00"},"one":{"$binary":"AQID","$type":"5"},
               "re":{"$regex":"^a.c$","$options":"i"},
               "sub":{"d":[{"$date":"1970-01-01T00:00:01.000+0000"}]}}"#,
        )
        .expect("legacy forms");
        let ms = 1_392_388_200_000;
        assert_eq!(
            doc.get("ts"),
            Some(&Bson::DateTime(DateTime::from_millis(ms)))
        );
        assert_eq!(
            doc.get("west"),
            Some(&Bson::DateTime(DateTime::from_millis(ms + 250)))
        );
        let binary = |subtype| {
            Bson::Binary(bson::Binary {
                subtype,
                bytes: vec![1, 2, 3],
            })
        };
        assert_eq!(
            doc.get("bin"),
            Some(&binary(bson::spec::BinarySubtype::Generic))
        );
        assert_eq!(
            doc.get("one"),
            Some(&binary(bson::spec::BinarySubtype::Md5))
        );
        let v2 =
            parse_document(r#"{"re":{"$regularExpression":{"pattern":"^a.c$","options":"i"}}}"#)
                .expect("v2 regex");
        assert!(matches!(doc.get("re"), Some(Bson::RegularExpression(_))));
        assert_eq!(doc.get("re"), v2.get("re"));
        let nested = doc
            .get_document("sub")
            .and_then(|s| s.get_array("d"))
            .expect("nested");
        assert_eq!(nested[0], Bson::DateTime(DateTime::from_millis(1000)));
        // Malformed legacy forms are still reported.
        let e = parse_document(r#"{"b":{"$binary":"AQID","$type":"zz"}}"#).expect_err("type");
        assert!(e.starts_with("invalid Extended JSON"), "{e}");
        let e = parse_document(r#"{"d":{"$date":"2014-02-14+0000"}}"#).expect_err("no time");
        assert!(e.starts_with("invalid Extended JSON"), "{e}");
    }

    #[test]
    fn decimals_parse_to_the_nearest_double() {
        let doc = parse_document(r#"{"v":95.19255849999999,"w":0.1}"#).expect("parse");
        assert_eq!(doc.get("v"), Some(&Bson::Double(95.192_558_499_999_99)));
        assert_eq!(doc.get("w"), Some(&Bson::Double(0.1)));
    }

    #[test]
    fn bad_lines_say_why() {
        let e = parse_document(r#"{"a":1"#).expect_err("truncated");
        assert!(e.starts_with("malformed JSON"), "{e}");
        let e = parse_document("[1,2]").expect_err("array");
        assert_eq!(e, "expected a JSON object, found an array");
        let e = parse_document(r#"{"ts":{"$date":"yesterday"}}"#).expect_err("bad date");
        assert!(e.starts_with("invalid Extended JSON"), "{e}");
        let deep = |levels: usize| {
            format!(
                "{{\"t\":1,\"a\":{}1{}}}",
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        // The document is a level, its arrays the others.
        assert!(parse_document(&deep(MAX_NESTING - 1)).is_ok());
        let e = parse_document(&deep(MAX_NESTING)).expect_err("too deep");
        assert_eq!(
            e,
            "malformed JSON: objects and arrays nest more than 127 levels deep, the limit \
             (at column 138)"
        );
    }

    #[test]
    fn reader_numbers_lines_and_skips_blank_ones() {
        let text = "{\"a\":1}\r\n\n{\"a\":\n  \n{\"a\":3}";
        let records: Vec<Record> = NdjsonReader::new(text.as_bytes())
            .map(|r| r.expect("io"))
            .collect();
        let lines: Vec<u64> = records.iter().map(|r| r.line.line).collect();
        assert_eq!(lines, [1, 3, 5]);
        assert_eq!(
            records[0].doc.as_ref().expect("ok").get("a"),
            Some(&Bson::Int32(1))
        );
        assert!(records[1].doc.is_err());
        assert_eq!(
            records[2].doc.as_ref().expect("ok").get("a"),
            Some(&Bson::Int32(3))
        );
    }

    #[test]
    fn invalid_utf8_is_a_bad_line_not_the_end() {
        let mut bytes = b"{\"a\":1}\n{\"a\":\"".to_vec();
        bytes.extend([0xff, 0xfe]);
        bytes.extend(b"\"}\n{\"a\":2}\n");
        let records: Vec<Record> = NdjsonReader::new(bytes.as_slice())
            .map(|r| r.expect("io"))
            .collect();
        assert_eq!(records.len(), 3);
        assert!(
            records[1]
                .doc
                .as_ref()
                .expect_err("utf-8")
                .contains("UTF-8")
        );
        assert_eq!(records[2].line.line, 3);
        assert!(records[2].doc.is_ok());
    }
}
