//! CSV with a header line, mapped to measurements by a [`CsvMapping`].
//!
//! One column is the time (RFC 3339 text, epoch milliseconds or epoch seconds); some columns
//! form the meta object; the others (all, or those `--csv-columns` selects and renames) become
//! measurement fields. A field cell's type comes from its text: an integer is int32 when it
//! fits, else int64; any other number is a double; everything else is a string. A meta cell
//! (a tag) is a string, as NDJSON and Parquet give tags, so the same data from any format is
//! the same series. A type given to a column (`--csv-types`, typed headers) overrides both.
//! An empty cell is an omitted field (as `mongoimport --ignoreBlanks` and the shared data sets
//! do). Typed columns are parsed straight into Arrow columns as untyped ones are.

use std::io::{self, Read};

use bson::{Bson, Document};

use super::columns::{NotColumnar, Scalar, Table, next_column, push_field};
use super::times::EpochUnit;
pub(crate) use super::times::TimeFormat;
use super::{Record, at_line};

/// The BSON value a CSV cell's text stands for: int32, int64, double or string.
pub(crate) fn typed_value(text: &str) -> Bson {
    match typed_scalar(text) {
        Scalar::Int(i) => match i32::try_from(i) {
            Ok(small) => Bson::Int32(small),
            Err(_) => Bson::Int64(i),
        },
        Scalar::Double(f) => Bson::Double(f),
        _ => Bson::String(text.to_owned()),
    }
}

/// [`typed_value`] as a column value: an integer (int32 when it fits, int64 otherwise), a
/// double or a string.
fn typed_scalar(text: &str) -> Scalar<'_> {
    if let Ok(i) = text.parse::<i64>() {
        return Scalar::Int(i);
    }
    let numeric_chars = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    // A finite number only: `1e999` stays text, as `NaN` and `Infinity` do (give the column
    // the type `double` to read those as doubles).
    if numeric_chars
        && text.bytes().any(|b| b.is_ascii_digit())
        && let Ok(f) = text.parse::<f64>()
        && f.is_finite()
    {
        return Scalar::Double(f);
    }
    Scalar::Str(text)
}

/// The type a CSV column's cells are read as: by their text (`Auto`), or one named type
/// (`--csv-types`, or a `name.type()` header with `--csv-columns-have-types`, as mongoimport's
/// `--columnsHaveTypes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CellType {
    /// int32, int64 or a finite double when the text is one, else a string.
    Auto,
    /// The text as it is.
    String,
    /// A 32-bit integer.
    Int32,
    /// A 64-bit integer.
    Int64,
    /// A double; also `NaN`, `Infinity`, `-Infinity`.
    Double,
    /// `true`/`false` in any case, or `1`/`0`.
    Bool,
    /// A date written as the format says (`date`: RFC 3339 or the lenient forms of the
    /// time column; `date_ms`: ms since the epoch; a typed header: its layout).
    Date(TimeFormat),
}

impl CellType {
    /// Parses a type name: `auto`, `string`, `int32`, `int64`, `double`, `boolean` (`bool`),
    /// `date`, `date_ms`.
    ///
    /// # Errors
    /// An unknown name.
    pub(crate) fn parse(name: &str) -> Result<CellType, String> {
        Ok(match name {
            "auto" => CellType::Auto,
            "string" => CellType::String,
            "int32" => CellType::Int32,
            "int64" => CellType::Int64,
            "double" => CellType::Double,
            "boolean" | "bool" => CellType::Bool,
            "date" => CellType::Date(TimeFormat::Rfc3339),
            "date_ms" => CellType::Date(TimeFormat::Epoch(EpochUnit::Millis)),
            other => {
                return Err(format!(
                    "unknown CSV column type '{other}' (auto, string, int32, int64, double, \
                     boolean, date, date_ms)"
                ));
            }
        })
    }

    /// The value of a cell's text.
    ///
    /// # Errors
    /// The text is not a value of the type.
    pub(crate) fn value(&self, text: &str) -> Result<Bson, String> {
        Ok(match self.scalar(text)? {
            Scalar::Int(i) => match i32::try_from(i) {
                Ok(small) => Bson::Int32(small),
                Err(_) => Bson::Int64(i),
            },
            Scalar::Long(i) => Bson::Int64(i),
            Scalar::Double(f) => Bson::Double(f),
            Scalar::Bool(b) => Bson::Boolean(b),
            Scalar::Str(s) => Bson::String(s.to_owned()),
            Scalar::Date(ms) => Bson::DateTime(bson::DateTime::from_millis(ms)),
        })
    }

    /// The value of a cell's text as a column value: what [`CellType::value`] gives, for the
    /// columnar path (the same value either way).
    ///
    /// # Errors
    /// The text is not a value of the type.
    pub(crate) fn scalar<'a>(&self, text: &'a str) -> Result<Scalar<'a>, String> {
        let bad = |what: &str| format!("'{text}' is not {what}");
        Ok(match self {
            CellType::Auto => typed_scalar(text),
            CellType::String => Scalar::Str(text),
            CellType::Int32 => Scalar::Int(i64::from(
                text.trim().parse::<i32>().map_err(|_| bad("an int32"))?,
            )),
            CellType::Int64 => Scalar::Long(text.trim().parse().map_err(|_| bad("an int64"))?),
            CellType::Double => {
                let t = text.trim();
                let f = match t {
                    "NaN" | "nan" => f64::NAN,
                    "Infinity" | "inf" | "+Infinity" => f64::INFINITY,
                    "-Infinity" | "-inf" => f64::NEG_INFINITY,
                    _ => t
                        .parse::<f64>()
                        .ok()
                        .filter(|f| f.is_finite())
                        .ok_or_else(|| bad("a finite double"))?,
                };
                Scalar::Double(f)
            }
            CellType::Bool => {
                let t = text.trim();
                if t.eq_ignore_ascii_case("true") || t == "1" {
                    Scalar::Bool(true)
                } else if t.eq_ignore_ascii_case("false") || t == "0" {
                    Scalar::Bool(false)
                } else {
                    return Err(bad("a boolean (true, false, 1, 0)"));
                }
            }
            CellType::Date(format) => Scalar::Date(format.parse_time(text)?.timestamp_millis()),
        })
    }
}

/// Splits a `name.type()` header (mongoimport's `--columnsHaveTypes`) into the name and the
/// type. A date type's argument is its layout, as mongoimport reads it: `date(LAYOUT)` and
/// `date_go(LAYOUT)` a Go layout (`2006-01-02 15:04:05`), `date_ms(LAYOUT)` a Microsoft one
/// (`yyyy-MM-dd HH:mm:ss`), `date_oracle(LAYOUT)` an Oracle one (`YYYY-MM-DD HH24:MI:SS`);
/// without one, `date()` is RFC 3339 and `date_ms()` ms since the epoch.
///
/// # Errors
/// A header without a `.type()` suffix, an unknown type, or a layout that does not convert.
pub(crate) fn split_typed_header(header: &str) -> Result<(String, CellType), String> {
    let bad = || format!("CSV header '{header}' is not NAME.TYPE() (--csv-columns-have-types)");
    let open = header.rfind('(').ok_or_else(bad)?;
    if !header.ends_with(')') {
        return Err(bad());
    }
    let dot = header[..open].rfind('.').ok_or_else(bad)?;
    let name = &header[..dot];
    let ty = &header[dot + 1..open];
    if name.is_empty() {
        return Err(bad());
    }
    let argument = &header[open + 1..header.len() - 1];
    let ty = match ty {
        "date" | "date_go" | "date_ms" | "date_oracle" if !argument.is_empty() => {
            let format = TimeFormat::typed_header(ty, argument)
                .map_err(|e| format!("CSV header '{header}': {e}"))?;
            return Ok((name.to_owned(), CellType::Date(format)));
        }
        "date_go" | "date_oracle" => "date",
        "decimal" => {
            return Err(format!(
                "CSV header '{header}': decimal columns are not supported"
            ));
        }
        t => t,
    };
    Ok((name.to_owned(), CellType::parse(ty)?))
}

/// Parses `--csv-types`: `a=bool,b=date`.
///
/// # Errors
/// An entry without `=` or an unknown type.
pub(crate) fn parse_type_list(spec: &str) -> Result<Vec<(String, CellType)>, String> {
    spec.split(',')
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (name, ty) = e
                .split_once('=')
                .ok_or_else(|| format!("--csv-types: '{e}' is not COLUMN=TYPE"))?;
            Ok((name.trim().to_owned(), CellType::parse(ty.trim())?))
        })
        .collect()
}

/// How CSV columns become a measurement.
#[derive(Clone, Debug)]
pub(crate) struct CsvMapping {
    /// Header of the time column.
    pub(crate) time_column: String,
    /// How the time column is written.
    pub(crate) time_format: TimeFormat,
    /// Headers of the columns that form the meta object (in this order).
    pub(crate) meta_columns: Vec<String>,
    /// The measurement fields as `(column header, field name)`; `None` = every column that is
    /// neither the time nor a meta column, under its own name.
    pub(crate) columns: Option<Vec<(String, String)>>,
    /// The collection's time field.
    pub(crate) time_field: String,
    /// The collection's meta field (required when `meta_columns` is not empty).
    pub(crate) meta_field: Option<String>,
    /// The field delimiter. Default = `,`.
    pub(crate) delimiter: u8,
    /// Types of columns by header (`--csv-types`); the others are `Auto`.
    pub(crate) types: Vec<(String, CellType)>,
    /// Headers are `name.type()` (`--csv-columns-have-types`).
    pub(crate) columns_have_types: bool,
}

/// Parses `--csv-columns`: `a,b=x,c` selects columns `a`, `b` and `c` and stores `b` as
/// field `x`.
///
/// # Errors
/// An empty column or field name.
pub(crate) fn parse_column_list(spec: &str) -> Result<Vec<(String, String)>, String> {
    spec.split(',')
        .map(|item| {
            let (column, field) = item.split_once('=').unwrap_or((item, item));
            let (column, field) = (column.trim(), field.trim());
            if column.is_empty() || field.is_empty() {
                Err(format!(
                    "bad --csv-columns item '{item}' (expected COLUMN or COLUMN=FIELD)"
                ))
            } else {
                Ok((column.to_owned(), field.to_owned()))
            }
        })
        .collect()
}

/// The mapping resolved against a header line: column positions.
#[derive(Debug)]
struct Resolved {
    time: usize,
    meta: Vec<(usize, String)>,
    fields: Vec<(usize, String)>,
    /// The type of every column, by position.
    types: Vec<CellType>,
}

/// Reads CSV records as measurements; yields one [`Record`] per data line.
pub(crate) struct CsvReader<R> {
    reader: csv::Reader<R>,
    mapping: CsvMapping,
    resolved: Resolved,
    record: csv::StringRecord,
}

impl<R: Read> CsvReader<R> {
    /// Reads the header line and resolves the mapping's columns.
    ///
    /// # Errors
    /// The header cannot be read, a named column is not in it, or meta columns are given for
    /// a collection without a meta field.
    pub(crate) fn new(input: R, mut mapping: CsvMapping) -> io::Result<Self> {
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(mapping.delimiter)
            .has_headers(true)
            .from_reader(input);
        let headers = reader
            .headers()
            .map_err(|e| {
                if e.is_io_error() {
                    at_line(1, csv_to_io(e))
                } else {
                    csv_to_io(e)
                }
            })?
            .clone();
        let mut names: Vec<String> = Vec::with_capacity(headers.len());
        let mut types: Vec<CellType> = Vec::with_capacity(headers.len());
        // Whether each column's type was given (a typed header or `--csv-types`).
        let mut given = vec![mapping.columns_have_types; headers.len()];
        for h in &headers {
            if mapping.columns_have_types {
                let (name, ty) = split_typed_header(h).map_err(invalid)?;
                names.push(name);
                types.push(ty);
            } else {
                names.push(h.to_owned());
                types.push(CellType::Auto);
            }
        }
        for (name, ty) in &mapping.types {
            let i = names.iter().position(|h| h == name).ok_or_else(|| {
                invalid(format!(
                    "--csv-types names column '{name}', which is not in the CSV header ({})",
                    names.join(",")
                ))
            })?;
            types[i] = ty.clone();
            given[i] = true;
        }
        let position = |name: &str| {
            names.iter().position(|h| h == name).ok_or_else(|| {
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                invalid(format!(
                    "no column '{name}' in the CSV header ({})",
                    known.join(",")
                ))
            })
        };
        let time = position(&mapping.time_column)?;
        // A date type of the time column (a typed header's layout) says how its times are
        // written, unless the time format is given.
        if let Some(CellType::Date(format)) = types.get(time)
            && mapping.time_format == TimeFormat::Rfc3339
        {
            mapping.time_format = format.clone();
        }
        if !mapping.meta_columns.is_empty() && mapping.meta_field.is_none() {
            return Err(invalid(
                "--csv-meta-columns given, but the collection has no meta field".to_owned(),
            ));
        }
        // A meta column named `<metaField>.key` (as `find --format csv` writes them) is
        // stored as `key` of the meta object.
        let meta_prefix = mapping.meta_field.as_ref().map(|m| format!("{m}."));
        let meta = mapping
            .meta_columns
            .iter()
            .map(|name| {
                let key = meta_prefix
                    .as_deref()
                    .and_then(|p| name.strip_prefix(p))
                    .filter(|k| !k.is_empty())
                    .unwrap_or(name);
                Ok((position(name)?, key.to_owned()))
            })
            .collect::<io::Result<Vec<_>>>()?;
        // Meta columns are tags: strings unless typed otherwise (`docs/cli.md`), as NDJSON
        // and Parquet give them, so that the same data from any format is the same series.
        for (m, _) in &meta {
            if !given[*m] {
                types[*m] = CellType::String;
            }
        }
        let fields = match &mapping.columns {
            Some(list) => list
                .iter()
                .filter(|(column, _)| *column != mapping.time_column)
                .map(|(column, field)| Ok((position(column)?, field.clone())))
                .collect::<io::Result<Vec<_>>>()?,
            None => names
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != time && !meta.iter().any(|(m, _)| m == i))
                .map(|(i, name)| (i, name.clone()))
                .collect(),
        };
        Ok(CsvReader {
            reader,
            mapping,
            resolved: Resolved {
                time,
                meta,
                fields,
                types,
            },
            record: csv::StringRecord::new(),
        })
    }

    /// Reads the next record into `record`: its line, or why it is bad; `None` at the end of
    /// the input.
    ///
    /// # Errors
    /// A read error, marked with the line where the record it cut begins.
    pub(crate) fn read(
        &mut self,
        record: &mut csv::StringRecord,
    ) -> Option<io::Result<(u64, Result<(), String>)>> {
        // Where the next record begins: the line a read error cuts.
        let next_line = self.reader.position().line();
        match self.reader.read_record(record) {
            Ok(false) => None,
            Ok(true) => Some(Ok((
                record.position().map_or(0, csv::Position::line),
                Ok(()),
            ))),
            Err(e) if e.is_io_error() => Some(Err(at_line(next_line, csv_to_io(e)))),
            Err(e) => {
                let line = e.position().map_or(0, csv::Position::line);
                let reason = match e.kind() {
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => {
                        format!("expected {expected_len} fields, found {len}")
                    }
                    csv::ErrorKind::Utf8 { .. } => "field is not valid UTF-8".to_owned(),
                    _ => e.to_string(),
                };
                Some(Ok((line, Err(reason))))
            }
        }
    }

    /// Appends the measurement of `record` to the columns of `table` as one row, fields in
    /// the order [`CsvReader::document`] inserts them.
    ///
    /// # Errors
    /// [`NotColumnar`] when the columns cannot hold it as the document path stores it (a
    /// bad time, a cell of another kind than its column's, a field given twice); the table
    /// is then unusable.
    pub(crate) fn push_columns(
        &self,
        record: &csv::StringRecord,
        table: &mut Table<'_>,
    ) -> Result<(), NotColumnar> {
        let cell = |i: usize| record.get(i).unwrap_or("");
        let time_text = cell(self.resolved.time);
        if time_text.trim().is_empty() {
            return Err(NotColumnar);
        }
        let time = self
            .mapping
            .time_format
            .parse_time(time_text)
            .map_err(|_| NotColumnar)?;
        let (row, columns) = table.next_row();
        let mut next = 0;
        let time = Scalar::Date(time.timestamp_millis());
        push_field(columns, &self.mapping.time_field, &mut next, row, time)?;
        if let Some(meta_field) = &self.mapping.meta_field
            && !self.resolved.meta.is_empty()
        {
            let i = next_column(columns, meta_field, &mut next)?;
            let children = columns.get_mut(i).ok_or(NotColumnar)?.open_struct(row)?;
            let mut next_child = 0;
            for (m, name) in &self.resolved.meta {
                if !cell(*m).is_empty() {
                    push_field(children, name, &mut next_child, row, self.scalar(*m, cell)?)?;
                }
            }
        }
        let mut values = 0;
        for (f, field) in &self.resolved.fields {
            if !cell(*f).is_empty() {
                push_field(columns, field, &mut next, row, self.scalar(*f, cell)?)?;
                values += 1;
            }
        }
        table.end_row(values);
        Ok(())
    }

    /// The value of cell `i` as a column value; a cell that is not of its column's type
    /// leaves the batch to the document path, which rejects its row with the reason.
    fn scalar<'a>(
        &self,
        i: usize,
        cell: impl Fn(usize) -> &'a str,
    ) -> Result<Scalar<'a>, NotColumnar> {
        self.resolved.types[i]
            .scalar(cell(i))
            .map_err(|_| NotColumnar)
    }

    /// Builds the measurement of the current record.
    fn to_document(&self) -> Result<Document, String> {
        self.document(&self.record)
    }

    /// Builds the measurement of `record`.
    ///
    /// # Errors
    /// The time cell is empty or not a time of the mapping's format.
    pub(crate) fn document(&self, record: &csv::StringRecord) -> Result<Document, String> {
        let cell = |i: usize| record.get(i).unwrap_or("");
        let time_text = cell(self.resolved.time);
        if time_text.trim().is_empty() {
            return Err(format!("empty time column '{}'", self.mapping.time_column));
        }
        let mut doc = Document::new();
        doc.insert(
            &self.mapping.time_field,
            self.mapping.time_format.parse_time(time_text)?,
        );
        if let Some(meta_field) = &self.mapping.meta_field
            && !self.resolved.meta.is_empty()
        {
            let mut meta = Document::new();
            for (i, name) in &self.resolved.meta {
                if !cell(*i).is_empty() {
                    meta.insert(name, self.cell_value(*i, cell(*i))?);
                }
            }
            doc.insert(meta_field, meta);
        }
        for (i, field) in &self.resolved.fields {
            if !cell(*i).is_empty() {
                doc.insert(field, self.cell_value(*i, cell(*i))?);
            }
        }
        Ok(doc)
    }

    /// The value of the cell `text` of column `i`, by the column's type.
    fn cell_value(&self, i: usize, text: &str) -> Result<Bson, String> {
        match &self.resolved.types[i] {
            CellType::Auto => Ok(typed_value(text)),
            ty => ty.value(text).map_err(|e| format!("column {}: {e}", i + 1)),
        }
    }
}

/// Turns a csv error that is an I/O error into one; others stay messages.
fn csv_to_io(e: csv::Error) -> io::Error {
    if e.is_io_error() {
        match e.into_kind() {
            csv::ErrorKind::Io(io) => io,
            other => io::Error::other(format!("{other:?}")),
        }
    } else {
        io::Error::new(io::ErrorKind::InvalidData, e.to_string())
    }
}

impl<R: Read> Iterator for CsvReader<R> {
    type Item = io::Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut record = std::mem::take(&mut self.record);
        let next = self.read(&mut record);
        self.record = record;
        Some(next?.map(|(line, read)| Record {
            line: line.into(),
            doc: read.and_then(|()| self.to_document()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use bson::DateTime;

    use super::*;

    fn mapping() -> CsvMapping {
        CsvMapping {
            time_column: "date".into(),
            time_format: TimeFormat::Rfc3339,
            meta_columns: vec!["city".into()],
            columns: None,
            time_field: "ts".into(),
            meta_field: Some("meta".into()),
            delimiter: b',',
            types: Vec::new(),
            columns_have_types: false,
        }
    }

    fn read(text: &str, mapping: CsvMapping) -> Vec<Record> {
        CsvReader::new(text.as_bytes(), mapping)
            .expect("header")
            .map(|r| r.expect("io"))
            .collect()
    }

    #[test]
    fn typed_columns_by_flag_and_by_header() {
        let mut m = mapping();
        m.types = parse_type_list("ok=bool,when=date,n=int64,x=double,s=string").expect("types");
        let docs = read(
            "date,city,ok,when,n,x,s,auto\n\
             2016-01-01T00:00:00Z,A,True,2016-02-01T00:00:00Z,5,NaN,007,1e999\n",
            m,
        );
        let d = docs[0].doc.as_ref().expect("document");
        assert_eq!(d.get("ok"), Some(&Bson::Boolean(true)));
        assert!(matches!(d.get("when"), Some(Bson::DateTime(_))));
        assert_eq!(d.get("n"), Some(&Bson::Int64(5)));
        assert!(matches!(d.get("x"), Some(Bson::Double(x)) if x.is_nan()));
        assert_eq!(d.get("s"), Some(&Bson::String("007".into())));
        // Auto typing never makes an infinity out of an overflowing number.
        assert_eq!(d.get("auto"), Some(&Bson::String("1e999".into())));
        // A cell that is not of its column's type rejects the row, naming the column.
        let mut m = mapping();
        m.types = parse_type_list("ok=bool").expect("types");
        let bad = read("date,city,ok\n2016-01-01T00:00:00Z,A,maybe\n", m);
        let e = bad[0].doc.as_ref().expect_err("not a boolean");
        assert!(e.contains("column 3") && e.contains("boolean"), "{e}");
        // mongoimport's typed headers.
        let mut m = mapping();
        m.time_column = "date".into();
        m.columns_have_types = true;
        let docs = read(
            "date.date(2006-01-02),city.string(),flag.boolean(),n.int32()\n\
             2016-01-01,A,false,12\n",
            m,
        );
        let d = docs[0].doc.as_ref().expect("document");
        assert_eq!(
            d.get("ts"),
            Some(&Bson::DateTime(DateTime::from_millis(1_451_606_400_000)))
        );
        assert_eq!(d.get("flag"), Some(&Bson::Boolean(false)));
        assert_eq!(d.get("n"), Some(&Bson::Int32(12)));
        assert!(split_typed_header("plain").is_err());
        assert!(CellType::parse("money").is_err());
    }

    #[test]
    fn types_cells_by_their_text() {
        assert_eq!(typed_value("12"), Bson::Int32(12));
        assert_eq!(typed_value("-3000000000"), Bson::Int64(-3_000_000_000));
        assert_eq!(typed_value("1.5"), Bson::Double(1.5));
        assert_eq!(typed_value("1e3"), Bson::Double(1000.0));
        assert_eq!(typed_value("NaN"), Bson::String("NaN".into()));
        assert_eq!(typed_value("inf"), Bson::String("inf".into()));
        assert_eq!(typed_value("-"), Bson::String("-".into()));
        assert_eq!(typed_value("NNW"), Bson::String("NNW".into()));
    }

    #[test]
    fn parses_times() {
        let ms = |t: &str, f: TimeFormat| f.parse_time(t).map(DateTime::timestamp_millis);
        let (epoch_s, epoch_ms) = (
            TimeFormat::Epoch(EpochUnit::Seconds),
            TimeFormat::Epoch(EpochUnit::Millis),
        );
        assert_eq!(
            ms("2016-05-02T00:00:00Z", TimeFormat::Rfc3339),
            Ok(1_462_147_200_000)
        );
        assert_eq!(
            ms("2016-05-02T08:00:00+08:00", TimeFormat::Rfc3339),
            Ok(1_462_147_200_000)
        );
        assert_eq!(
            ms("2016-05-02 00:00:00", TimeFormat::Rfc3339),
            Ok(1_462_147_200_000)
        );
        assert_eq!(ms("2016-05-02", TimeFormat::Rfc3339), Ok(1_462_147_200_000));
        assert_eq!(
            ms("2016-05-02T00:00:00.250", TimeFormat::Rfc3339),
            Ok(1_462_147_200_250)
        );
        assert_eq!(ms("1462147200250", epoch_ms.clone()), Ok(1_462_147_200_250));
        assert_eq!(ms("1462147200", epoch_s.clone()), Ok(1_462_147_200_000));
        assert_eq!(ms("1462147200.25", epoch_s.clone()), Ok(1_462_147_200_250));
        assert!(ms("yesterday", TimeFormat::Rfc3339).is_err());
        assert!(ms("1.5", epoch_ms).is_err());
        assert!(ms("NaN", epoch_s).is_err());
        assert!(TimeFormat::parse("epoch-minutes").is_err());
    }

    #[test]
    fn maps_time_meta_and_fields_and_omits_empty_cells() {
        let text = "date,city,temp,wind,weather\n\
                    2012-01-01,Seattle,12.8,4.7,drizzle\n\
                    2012-01-02,Seattle,,5,rain\n";
        let records = read(text, mapping());
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].line.line, 2);
        let doc = records[0].doc.as_ref().expect("ok");
        assert_eq!(
            doc,
            &bson::doc! {
                "ts": DateTime::from_millis(1_325_376_000_000),
                "meta": { "city": "Seattle" },
                "temp": 12.8, "wind": 4.7, "weather": "drizzle",
            }
        );
        let doc = records[1].doc.as_ref().expect("ok");
        assert!(!doc.contains_key("temp"));
        assert_eq!(doc.get("wind"), Some(&Bson::Int32(5)));
    }

    #[test]
    fn selects_and_renames_columns() {
        let mut m = mapping();
        m.columns = Some(parse_column_list("temp=temperature, weather").expect("list"));
        let records = read(
            "date,city,temp,wind,weather\n2012-01-01,Seattle,1,2,sun\n",
            m,
        );
        let doc = records[0].doc.as_ref().expect("ok");
        let keys: Vec<&str> = doc.keys().map(String::as_str).collect();
        assert_eq!(keys, ["ts", "meta", "temperature", "weather"]);
        assert!(parse_column_list("a,,b").is_err());
    }

    #[test]
    fn bad_rows_are_reported_with_their_line_and_reading_goes_on() {
        let text =
            "date,city,temp\n2012-01-01,A,1\nnot a date,A,2\n2012-01-03,A\n,A,4\n2012-01-05,A,5\n";
        let records = read(text, mapping());
        let summary: Vec<(u64, bool)> = records
            .iter()
            .map(|r| (r.line.line, r.doc.is_ok()))
            .collect();
        assert_eq!(
            summary,
            [(2, true), (3, false), (4, false), (5, false), (6, true)]
        );
        assert!(
            records[1]
                .doc
                .as_ref()
                .expect_err("time")
                .contains("not a date")
        );
        assert!(
            records[2]
                .doc
                .as_ref()
                .expect_err("len")
                .contains("expected 3 fields")
        );
        assert!(
            records[3]
                .doc
                .as_ref()
                .expect_err("empty")
                .contains("empty time")
        );
    }

    #[test]
    fn unknown_columns_and_missing_meta_field_are_setup_errors() {
        let mut m = mapping();
        m.time_column = "when".into();
        let err = CsvReader::new("date,city\n".as_bytes(), m)
            .err()
            .expect("fails");
        assert!(err.to_string().contains("no column 'when'"), "{err}");
        let mut m = mapping();
        m.meta_field = None;
        let err = CsvReader::new("date,city\n".as_bytes(), m)
            .err()
            .expect("fails");
        assert!(err.to_string().contains("no meta field"), "{err}");
    }

    #[test]
    fn other_delimiters() {
        let mut m = mapping();
        m.delimiter = b';';
        m.time_format = TimeFormat::Epoch(EpochUnit::Seconds);
        let records = read("date;city;v\n0;X;1\n", m);
        assert_eq!(
            records[0].doc.as_ref().expect("ok").get("v"),
            Some(&Bson::Int32(1))
        );
    }

    /// The columns and the documents of every record of `text` (time field `t`, meta field
    /// `m` from the columns `host` and `rack`), or `None` when the records are not columnar.
    fn columns_and_documents(text: &str) -> Option<(arrow_array::RecordBatch, Vec<Document>)> {
        typed_columns_and_documents(text, "")
    }

    /// [`columns_and_documents`] with the columns typed by `types` (`--csv-types`).
    fn typed_columns_and_documents(
        text: &str,
        types: &str,
    ) -> Option<(arrow_array::RecordBatch, Vec<Document>)> {
        let mapping = CsvMapping {
            time_column: "time".into(),
            time_format: TimeFormat::Rfc3339,
            meta_columns: vec!["host".into(), "rack".into()],
            columns: None,
            time_field: "t".into(),
            meta_field: Some("m".into()),
            delimiter: b',',
            types: parse_type_list(types).expect("types"),
            columns_have_types: false,
        };
        let mut reader = CsvReader::new(text.as_bytes(), mapping).expect("header");
        let mut table = Table::new("t", Some("m"));
        let mut docs = Vec::new();
        let mut record = csv::StringRecord::new();
        let mut columnar = true;
        while let Some(read) = reader.read(&mut record) {
            let (_, read) = read.expect("io");
            read.expect("record");
            columnar &= reader.push_columns(&record, &mut table).is_ok();
            match reader.document(&record) {
                Ok(doc) => docs.push(doc),
                Err(_) => columnar = false,
            }
        }
        let batch = table.finish().ok().filter(|_| columnar)?;
        Some((batch, docs))
    }

    #[test]
    fn records_stored_through_columns_as_through_documents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db =
            tscoll_engine::Database::open(dir.path(), tscoll_engine::DatabaseOptions::default())
                .expect("open");
        let text = "time,host,rack,a,b,c,d\n\
                    2016-01-01T00:00:00Z,h1,1,5,x,1.5,3000000000\n\
                    2016-01-01 00:00:10,h1,,7,,2.0,-3000000000\n\
                    2016-01-01,,2,,\"y,z\",-1e3,\n";
        let (batch, docs) = columns_and_documents(text).expect("columnar");
        let [(a, ea), (b, eb)] = crate::input::columns::stored_both_ways(&db, "c", &batch, &docs);
        assert_eq!(a.len(), 3);
        assert_eq!(a, b);
        assert_eq!(ea, eb);
    }

    /// Typed columns (and meta columns, strings unless typed) go through the columns too,
    /// storing what the documents store: an int64 column of small numbers stays int64, a
    /// double column takes `NaN`, a boolean column `1`, a date column its dates.
    #[test]
    fn typed_records_stored_through_columns_as_through_documents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db =
            tscoll_engine::Database::open(dir.path(), tscoll_engine::DatabaseOptions::default())
                .expect("open");
        let text = "time,host,rack,n,x,ok,day,s
                    2016-01-01T00:00:00Z,h1,65,5,NaN,1,2016-02-01T00:00:00Z,007
                    2016-01-01 00:00:10,h1,007,-3000000000,2,false,2016-02-02,1e3
                    2016-01-01,h2,,,-Infinity,TRUE,,x
";
        let types = "n=int64,x=double,ok=boolean,day=date,s=string";
        for (name, types, rack) in [
            ("s", types.to_owned(), Bson::String("65".into())),
            ("i", format!("{types},rack=int32"), Bson::Int32(65)),
        ] {
            let (batch, docs) =
                typed_columns_and_documents(text, &types).expect("typed columns are columnar");
            assert_eq!(docs[0].get("n"), Some(&Bson::Int64(5)));
            assert_eq!(
                docs[0].get_document("m").expect("meta").get("rack"),
                Some(&rack),
                "a meta column is a string unless typed"
            );
            let [(a, ea), (b, eb)] =
                crate::input::columns::stored_both_ways(&db, name, &batch, &docs);
            assert_eq!(a.len(), 3);
            assert_eq!(a, b);
            assert_eq!(ea, eb);
        }
    }

    #[test]
    fn records_the_columns_cannot_hold_exactly_are_refused() {
        for text in [
            // A column of int32 and int64 cells, of numbers and strings.
            "time,host,rack,a\n2016-01-01,h,1,1\n2016-01-01,h,1,3000000000\n",
            "time,host,rack,a\n2016-01-01,h,1,1\n2016-01-01,h,1,x\n",
            // A bad or empty time (the document path reports it).
            "time,host,rack,a\nyesterday,h,1,1\n",
            "time,host,rack,a\n,h,1,1\n",
            // A field first met after a later one: the row lists them in another order.
            "time,host,rack,a,b\n2016-01-01,h,1,,1\n2016-01-01,h,1,1,1\n",
            // No meta cell in any record: an empty sub-document has no column.
            "time,host,rack,a\n2016-01-01,,,1\n",
        ] {
            assert!(columns_and_documents(text).is_none(), "{text}");
        }
    }
}
