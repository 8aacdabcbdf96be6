//! `$fill`: null and missing values of output fields filled, per partition (`partitionBy`,
//! an expression, or `partitionByFields`), in `sortBy` order:
//!
//! - `{value: <expression>}`: the expression's value on the document;
//! - `{method: "locf"}`: the last non-null value before it (the last observation carried
//!   forward); none before: left as it is;
//! - `{method: "linear"}`: interpolated between the non-null values before and after it, by
//!   the position of the one `sortBy` field (a number, or a date in ms); none on one side:
//!   left as it is. The non-null values must be numbers, the result is a double.
//!
//! Methods need `sortBy`; the input is then sorted by partition and `sortBy` with the
//! spilling sort of `$sort` and one partition is held at a time. With only `value` outputs
//! the documents stream (sorted first when `sortBy` is given).

use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_catalog::value::compare;

use super::stage::{Docs, evaluate, expression, sort_keys, sort_spec};
use crate::direct_write::update::set_path;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::Expr;
use crate::mql::filter::lookup;

const STAGE: &str = "$fill";

/// The field a document's partition value is kept in while the documents are sorted (a
/// name no measurement field has: it starts with a control character).
const PARTITION: &str = "\u{1}fill";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Locf,
    Linear,
}

/// One output field: its path and how it is filled.
struct Output {
    path: Vec<String>,
    fill: How,
}

enum How {
    Value(Expr),
    Method(Method),
}

/// A parsed `$fill`.
pub(super) struct Fill {
    partition: Option<Expr>,
    sort: Option<Vec<(Vec<String>, bool)>>,
    outputs: Vec<Output>,
}

fn bad(message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}

fn field_path(s: &str) -> Result<Vec<String>> {
    let parts: Vec<String> = s.split('.').map(str::to_owned).collect();
    if s.is_empty() || parts.iter().any(|p| p.is_empty() || p.starts_with('$')) {
        return Err(bad(format!("{STAGE}: '{s}' is not a valid field path")));
    }
    Ok(parts)
}

fn get<'a>(doc: &'a Document, path: &[String]) -> Option<&'a Bson> {
    path.split_first()
        .and_then(|(f, rest)| lookup(doc.get(f), rest))
}

fn nullish(v: Option<&Bson>) -> bool {
    matches!(v, None | Some(Bson::Null | Bson::Undefined))
}

fn set(doc: &mut Document, path: &[String], v: Bson) -> Result<()> {
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    set_path(doc, &parts, v)
}

impl Fill {
    /// Parses `{partitionBy?, partitionByFields?, sortBy?, output}`.
    ///
    /// # Errors
    /// `FailedToParse` when not a document or for an output neither `{value}` nor
    /// `{method: "linear" | "locf"}`, or a method without `sortBy`; `IDLFailedToParse`
    /// without `output`; `IDLUnknownField` for an unknown field; `Location6050204` for both
    /// `partitionBy` and `partitionByFields`; `BadValue` for `linear` with more than one
    /// `sortBy` field.
    pub(super) fn parse(spec: &Bson) -> Result<Fill> {
        let parse_error = |m: String| Error::rejected(ErrorCode::FailedToParse, m);
        let Bson::Document(d) = spec else {
            return Err(parse_error(format!(
                "{STAGE}: the specification must be an object, not {spec}"
            )));
        };
        let mut partition = None;
        let mut by_fields = None;
        let mut sort = None;
        let mut output = None;
        for (k, v) in d {
            match k.as_str() {
                "partitionBy" => partition = Some(expression(v)?),
                "partitionByFields" => {
                    let Bson::Array(a) = v else {
                        return Err(Error::rejected(
                            ErrorCode::TypeMismatch,
                            "BSON field '$fill.partitionByFields' is the wrong type, expected \
                             array",
                        ));
                    };
                    let mut paths = Vec::new();
                    for f in a {
                        let Bson::String(s) = f else {
                            return Err(Error::rejected(
                                ErrorCode::TypeMismatch,
                                "$fill: partitionByFields holds field names",
                            ));
                        };
                        field_path(s)?;
                        paths.push(Bson::String(format!("${s}")));
                    }
                    by_fields = Some(expression(&Bson::Array(paths))?);
                }
                "sortBy" => sort = Some(sort_keys(STAGE, v)?),
                "output" => {
                    let Bson::Document(o) = v else {
                        return Err(Error::rejected(
                            ErrorCode::TypeMismatch,
                            "BSON field '$fill.output' is the wrong type, expected object",
                        ));
                    };
                    output = Some(o);
                }
                other => {
                    return Err(Error::rejected(
                        ErrorCode::IdlUnknownField,
                        format!("BSON field '$fill.{other}' is an unknown field."),
                    ));
                }
            }
        }
        if partition.is_some() && by_fields.is_some() {
            return Err(Error::rejected(
                ErrorCode::Location(6_050_204),
                "Maximum one of 'partitionBy' and 'partitionByFields' can be specified in \
                 '$fill'",
            ));
        }
        let partition = partition.or(by_fields);
        let output = output.ok_or_else(|| {
            Error::rejected(
                ErrorCode::IdlFailedToParse,
                "BSON field '$fill.output' is missing but a required field",
            )
        })?;
        let mut outputs = Vec::new();
        for (name, spec) in output {
            let path = field_path(name)?;
            let how = match spec {
                Bson::Document(o) if o.len() == 1 && o.contains_key("value") => {
                    How::Value(expression(o.get("value").unwrap_or(&Bson::Null))?)
                }
                Bson::Document(o) if o.len() == 1 => match o.get("method") {
                    Some(Bson::String(m)) if m == "locf" => How::Method(Method::Locf),
                    Some(Bson::String(m)) if m == "linear" => How::Method(Method::Linear),
                    _ => {
                        return Err(parse_error(format!(
                            "{STAGE}: the method of '{name}' must be \"linear\" or \"locf\", \
                             not {spec}"
                        )));
                    }
                },
                _ => {
                    return Err(parse_error(format!(
                        "{STAGE}: output '{name}' must be {{value: <expression>}} or \
                         {{method: \"linear\" | \"locf\"}}, not {spec}"
                    )));
                }
            };
            outputs.push(Output { path, fill: how });
        }
        let methods: Vec<Method> = outputs
            .iter()
            .filter_map(|o| match o.fill {
                How::Method(m) => Some(m),
                How::Value(_) => None,
            })
            .collect();
        if !methods.is_empty() && sort.is_none() {
            return Err(parse_error(format!(
                "{STAGE}: 'sortBy' is required when an output uses a method"
            )));
        }
        if methods.contains(&Method::Linear) && sort.as_ref().is_some_and(|s| s.len() != 1) {
            return Err(bad(format!(
                "{STAGE}: the linear method needs 'sortBy' on exactly one field"
            )));
        }
        Ok(Fill {
            partition,
            sort,
            outputs,
        })
    }

    fn has_methods(&self) -> bool {
        self.outputs
            .iter()
            .any(|o| matches!(o.fill, How::Method(_)))
    }

    /// Sets the `value` outputs of one document.
    fn values(&self, mut doc: Document) -> Result<Document> {
        for o in &self.outputs {
            if let How::Value(e) = &o.fill
                && nullish(get(&doc, &o.path))
                && let Some(v) = evaluate(e, &doc, STAGE)?
            {
                set(&mut doc, &o.path, v)?;
            }
        }
        Ok(doc)
    }

    /// Fills the methods' outputs of one partition, sorted by `sortBy`.
    fn methods(&self, part: &mut [Document]) -> Result<()> {
        for o in &self.outputs {
            match o.fill {
                How::Method(Method::Locf) => {
                    let mut last: Option<Bson> = None;
                    for d in part.iter_mut() {
                        match get(d, &o.path) {
                            v if nullish(v) => {
                                if let Some(l) = &last {
                                    set(d, &o.path, l.clone())?;
                                }
                            }
                            v => last = v.cloned(),
                        }
                    }
                }
                How::Method(Method::Linear) => self.linear(part, &o.path)?,
                How::Value(_) => {}
            }
        }
        Ok(())
    }

    fn linear(&self, part: &mut [Document], path: &[String]) -> Result<()> {
        let Some(sort_path) = self.sort.as_ref().and_then(|s| s.first()).map(|k| &k.0) else {
            return Ok(());
        };
        #[expect(clippy::cast_precision_loss, reason = "positions as doubles")]
        let position = |d: &Document| -> Result<f64> {
            match get(d, sort_path) {
                Some(Bson::Int32(n)) => Ok(f64::from(*n)),
                Some(Bson::Int64(n)) => Ok(*n as f64),
                Some(Bson::Double(x)) => Ok(*x),
                Some(Bson::DateTime(t)) => Ok(t.timestamp_millis() as f64),
                other => Err(bad(format!(
                    "{STAGE}: the linear method needs a sortBy value that is a number or a \
                     date, not {}",
                    other.map_or_else(|| "missing".to_owned(), ToString::to_string)
                ))),
            }
        };
        #[expect(clippy::cast_precision_loss, reason = "interpolation in doubles")]
        let number = |v: &Bson| -> Result<f64> {
            match v {
                Bson::Int32(n) => Ok(f64::from(*n)),
                Bson::Int64(n) => Ok(*n as f64),
                Bson::Double(x) => Ok(*x),
                other => Err(Error::rejected(
                    ErrorCode::TypeMismatch,
                    format!("{STAGE}: the linear method fills numbers, not {other}"),
                )),
            }
        };
        // The last non-null value: its index, position and value.
        let mut last: Option<(usize, f64, f64)> = None;
        let mut previous: Option<f64> = None;
        for i in 0..part.len() {
            let x = position(&part[i])?;
            if previous.is_some_and(|p| p == x) {
                return Err(bad(format!(
                    "{STAGE}: the linear method needs distinct sortBy values in a partition \
                     ({x} repeats)"
                )));
            }
            previous = Some(x);
            let v = get(&part[i], path).cloned();
            if nullish(v.as_ref()) {
                continue;
            }
            let y = number(v.as_ref().unwrap_or(&Bson::Null))?;
            if let Some((j, x0, y0)) = last
                && i > j + 1
            {
                for d in &mut part[j + 1..i] {
                    let xk = position(d)?;
                    let yk = y0 + (y - y0) * (xk - x0) / (x - x0);
                    set(d, path, Bson::Double(yk))?;
                }
            }
            last = Some((i, x, y));
        }
        Ok(())
    }

    /// Fills `docs`: with methods, sorts the whole input here (spilling past `budget`
    /// bytes) and holds one partition at a time.
    ///
    /// # Errors
    /// The input's and the sort's errors, a partition expression failing; the others come
    /// as the result is read.
    pub(super) fn run(self, docs: Docs, budget: u64) -> Result<Docs> {
        let fill = std::sync::Arc::new(self);
        if !fill.has_methods() {
            let docs = match &fill.sort {
                Some(keys) => Box::new(sort_spec(keys.clone()).sort(docs, 0, None, budget)?),
                None => docs,
            };
            return Ok(Box::new(docs.map(move |d| fill.values(d?))));
        }
        let mut keys = Vec::new();
        if fill.partition.is_some() {
            keys.push((vec![PARTITION.to_owned()], false));
        }
        keys.extend(fill.sort.iter().flatten().cloned());
        let tagger = std::sync::Arc::clone(&fill);
        let tagged = docs.map(move |d| {
            let mut d = d?;
            if let Some(e) = &tagger.partition {
                let key = evaluate(e, &d, STAGE)?.unwrap_or(Bson::Null);
                d.insert(PARTITION, key);
            }
            Ok(d)
        });
        let mut sorted = sort_spec(keys).sort(tagged, 0, None, budget)?.peekable();
        let mut done = false;
        let parts = std::iter::from_fn(move || -> Option<Result<Vec<Document>>> {
            if done {
                return None;
            }
            let mut part: Vec<Document> = Vec::new();
            let mut key: Option<Bson> = None;
            loop {
                let same = match sorted.peek() {
                    None => false,
                    Some(Err(_)) => part.is_empty(),
                    Some(Ok(d)) => {
                        let k = d.get(PARTITION).cloned().unwrap_or(Bson::Null);
                        match &key {
                            None => {
                                key = Some(k);
                                true
                            }
                            Some(cur) => compare(cur, &k) == Ordering::Equal,
                        }
                    }
                };
                if !same {
                    break;
                }
                match sorted.next() {
                    Some(Ok(mut d)) => {
                        d.remove(PARTITION);
                        match fill.values(d) {
                            Ok(d) => part.push(d),
                            Err(e) => {
                                done = true;
                                return Some(Err(e));
                            }
                        }
                    }
                    Some(Err(e)) => {
                        done = true;
                        return Some(Err(e));
                    }
                    None => break,
                }
            }
            if part.is_empty() {
                done = true;
                return None;
            }
            if let Err(e) = fill.methods(&mut part) {
                done = true;
                return Some(Err(e));
            }
            Some(Ok(part))
        });
        Ok(Box::new(parts.flat_map(
            |p| -> Box<dyn Iterator<Item = Result<Document>> + Send> {
                match p {
                    Ok(docs) => Box::new(docs.into_iter().map(Ok)),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                }
            },
        )))
    }
}
