//! `$unwind`: one document per element of an array field, the field set to the element.
//! `"$path"` or `{path, includeArrayIndex, preserveNullAndEmptyArrays}` as MongoDB: a value
//! that is not an array passes as a one-element array (its index `null`); a null, missing or
//! empty array field drops the document, unless `preserveNullAndEmptyArrays` (an empty array
//! is then removed from the document, a null kept). Documents are produced as they are read:
//! one input document at a time.

use bson::{Bson, Document};

use super::stage::Docs;
use crate::direct_write::update::{set_path, unset_path};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::lookup;

/// The documents one input document becomes.
type Out = Box<dyn Iterator<Item = Result<Document>> + Send>;

/// A parsed `$unwind`.
pub(super) struct Unwind {
    /// The array field's path.
    path: Vec<String>,
    /// The field given each element's index (an `Int64`), if any.
    index: Option<Vec<String>>,
    preserve: bool,
}

fn err(code: u32, message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

fn field_path(s: &str) -> Option<Vec<String>> {
    let parts: Vec<String> = s.split('.').map(str::to_owned).collect();
    if s.is_empty() || parts.iter().any(|p| p.is_empty() || p.starts_with('$')) {
        return None;
    }
    Some(parts)
}

impl Unwind {
    /// Parses `"$path"` or `{path: "$path", includeArrayIndex?, preserveNullAndEmptyArrays?}`.
    ///
    /// # Errors
    /// MongoDB's codes: `Location15981` for a specification neither a string nor a document,
    /// `Location28818` for a path without `$`, `Location28812` for a document without
    /// `path`, `Location28809` / `Location28810` for options of the wrong type,
    /// `Location28822` for an index field starting with `$`, `Location28811` for an unknown
    /// option.
    pub(super) fn parse(spec: &Bson) -> Result<Unwind> {
        let path_of = |v: &Bson| -> Result<Vec<String>> {
            let Bson::String(s) = v else {
                return Err(err(28808, "$unwind: the path must be a string"));
            };
            let Some(rest) = s.strip_prefix('$') else {
                return Err(err(
                    28818,
                    format!("path option to $unwind stage should be prefixed with a '$': {s}"),
                ));
            };
            field_path(rest).ok_or_else(|| err(28818, format!("$unwind: invalid path '{s}'")))
        };
        match spec {
            Bson::String(_) => Ok(Unwind {
                path: path_of(spec)?,
                index: None,
                preserve: false,
            }),
            Bson::Document(d) => {
                let mut path = None;
                let mut index = None;
                let mut preserve = false;
                for (k, v) in d {
                    match k.as_str() {
                        "path" => path = Some(path_of(v)?),
                        "includeArrayIndex" => {
                            let Bson::String(s) = v else {
                                return Err(err(
                                    28810,
                                    "expected a non-empty string for the includeArrayIndex \
                                     option to $unwind stage",
                                ));
                            };
                            if s.starts_with('$') {
                                return Err(err(
                                    28822,
                                    format!(
                                        "includeArrayIndex option to $unwind stage should not \
                                         be prefixed with a '$': {s}"
                                    ),
                                ));
                            }
                            index = Some(field_path(s).ok_or_else(|| {
                                err(
                                    28810,
                                    "expected a non-empty string for the includeArrayIndex \
                                     option to $unwind stage",
                                )
                            })?);
                        }
                        "preserveNullAndEmptyArrays" => {
                            let Bson::Boolean(b) = v else {
                                return Err(err(
                                    28809,
                                    "expected a boolean for the preserveNullAndEmptyArrays \
                                     option to $unwind stage",
                                ));
                            };
                            preserve = *b;
                        }
                        other => {
                            return Err(err(
                                28811,
                                format!("unrecognized option to $unwind stage: {other}"),
                            ));
                        }
                    }
                }
                let path = path.ok_or_else(|| err(28812, "no path specified to $unwind stage"))?;
                Ok(Unwind {
                    path,
                    index,
                    preserve,
                })
            }
            other => Err(err(
                15981,
                format!(
                    "expected either a string or an object as specification for $unwind stage, \
                     got {other}"
                ),
            )),
        }
    }

    /// The documents of one input document, made as they are read (each a copy of the
    /// document without the array, given one element).
    fn unwind(self: &std::sync::Arc<Self>, doc: Document) -> Result<Out> {
        let value = self
            .path
            .split_first()
            .and_then(|(f, rest)| lookup(doc.get(f), rest));
        let parts: Vec<&str> = self.path.iter().map(String::as_str).collect();
        match value {
            Some(Bson::Array(items)) if !items.is_empty() => {
                let items = items.clone();
                let mut base = doc;
                // The field keeps its place: each copy's value replaces the null.
                set_path(&mut base, &parts, Bson::Null)?;
                let this = std::sync::Arc::clone(self);
                Ok(Box::new(items.into_iter().enumerate().map(
                    move |(i, item)| {
                        let mut d = base.clone();
                        let parts: Vec<&str> = this.path.iter().map(String::as_str).collect();
                        set_path(&mut d, &parts, item)?;
                        this.set_index(&mut d, Bson::Int64(i64::try_from(i).unwrap_or(i64::MAX)))?;
                        Ok(d)
                    },
                )))
            }
            Some(Bson::Array(_)) => {
                if !self.preserve {
                    return Ok(Box::new(std::iter::empty()));
                }
                let mut d = doc;
                unset_path(&mut d, &parts);
                self.set_index(&mut d, Bson::Null)?;
                Ok(Box::new(std::iter::once(Ok(d))))
            }
            None | Some(Bson::Null | Bson::Undefined) => {
                if !self.preserve {
                    return Ok(Box::new(std::iter::empty()));
                }
                let mut d = doc;
                self.set_index(&mut d, Bson::Null)?;
                Ok(Box::new(std::iter::once(Ok(d))))
            }
            Some(_) => {
                let mut d = doc;
                self.set_index(&mut d, Bson::Null)?;
                Ok(Box::new(std::iter::once(Ok(d))))
            }
        }
    }

    fn set_index(&self, d: &mut Document, i: Bson) -> Result<()> {
        if let Some(index) = &self.index {
            let ip: Vec<&str> = index.iter().map(String::as_str).collect();
            set_path(d, &ip, i)?;
        }
        Ok(())
    }

    /// Unwinds `docs` as they are read.
    pub(super) fn run(self, docs: Docs) -> Docs {
        let this = std::sync::Arc::new(self);
        Box::new(docs.flat_map(move |d| -> Out {
            match d.and_then(|d| this.unwind(d)) {
                Ok(out) => out,
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        }))
    }
}
