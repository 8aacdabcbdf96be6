//! `$lookup`: each document given an array of the documents of another collection of the
//! same database that match it. Forms:
//!
//! - `{from, localField, foreignField, as}`: the documents of `from` whose `foreignField`
//!   equals the document's `localField` (missing as null, which matches null and missing; an
//!   array local value matches any of its elements; equality as in a `find` filter, so a
//!   whole meta document matches the meta field);
//! - `{from, pipeline, as}`: the results of `pipeline` over all of `from` (computed once);
//! - `{from, localField, foreignField, pipeline, as}`: the results of `pipeline` over the
//!   matching documents;
//! - with `let: {<name>: <expression>}` besides `pipeline`: the expressions evaluated on
//!   each input document, and their values put in the sub-pipeline where it reads `$$<name>`
//!   (in the expressions of its stages, and in `$match` under `$expr`, as MongoDB reads
//!   them), as literals.
//!
//! The foreign collection is read per input document with a `find` (or an aggregation whose
//! leading `$match` is the equality, pushed down to the read), each result kept for the
//! next documents with the same local value in a cache bounded in entries and bytes (cleared
//! when full). A collection `from` that does not exist is empty, as in MongoDB.

use std::collections::BTreeMap;
use std::sync::Arc;

use bson::{Bson, Document, doc};
use tscoll_catalog::MAX_BSON_OBJECT_SIZE;
use tscoll_catalog::value::document_size;

use super::bind::bind_stage;
use super::group::Key;
use super::stage::{Docs, Stage, evaluate, expression};
use crate::Database;
use crate::collection::Collection;
use crate::direct_write::update::set_path;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::Expr;
use crate::mql::filter::lookup;
use crate::query::FindOptions;

/// The most local values whose foreign documents are kept.
const CACHE_ENTRIES: usize = 4096;

/// A parsed `$lookup`.
pub(super) struct Lookup {
    from: String,
    /// `localField` and `foreignField`, when given.
    fields: Option<(Vec<String>, String)>,
    /// The output array's path.
    as_path: Vec<String>,
    pipeline: Option<Vec<Document>>,
    /// The variables of `let` and their expressions.
    vars: Vec<(String, Expr)>,
    /// The database of the collection the pipeline runs on ([`Lookup::bind`]).
    db: Option<Database>,
    /// Foreign documents per local value, and their bytes.
    cache: BTreeMap<Key, Arc<Vec<Document>>>,
    cached_bytes: u64,
}

fn parse_error(message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::FailedToParse, message)
}

fn string(name: &str, v: &Bson) -> Result<String> {
    match v {
        Bson::String(s) => Ok(s.clone()),
        other => Err(parse_error(format!(
            "$lookup argument '{name}' must be a string, found {other}"
        ))),
    }
}

fn path(name: &str, s: &str) -> Result<Vec<String>> {
    let parts: Vec<String> = s.split('.').map(str::to_owned).collect();
    if s.is_empty() || parts.iter().any(|p| p.is_empty() || p.starts_with('$')) {
        return Err(parse_error(format!(
            "$lookup argument '{name}' is not a valid field path: '{s}'"
        )));
    }
    Ok(parts)
}

impl Lookup {
    /// Parses `{from, localField?, foreignField?, pipeline?, as}`.
    ///
    /// # Errors
    /// `FailedToParse` (as MongoDB) for a specification of the wrong shape: not a document,
    /// `from` or `as` missing, neither `pipeline` nor both `localField` and `foreignField`,
    /// an argument of the wrong type, an unknown argument; `BadValue` for `let`; a stage of
    /// `pipeline`'s own errors.
    pub(super) fn parse(spec: &Bson) -> Result<Lookup> {
        let Bson::Document(d) = spec else {
            return Err(parse_error(format!(
                "the $lookup specification must be an Object, not {spec}"
            )));
        };
        let mut from = None;
        let mut local = None;
        let mut foreign = None;
        let mut as_path = None;
        let mut pipeline = None;
        let mut vars = Vec::new();
        for (k, v) in d {
            match k.as_str() {
                "from" => from = Some(string(k, v)?),
                "localField" => local = Some(path(k, &string(k, v)?)?),
                "foreignField" => {
                    let s = string(k, v)?;
                    path(k, &s)?;
                    foreign = Some(s);
                }
                "as" => as_path = Some(path(k, &string(k, v)?)?),
                "pipeline" => {
                    let Bson::Array(stages) = v else {
                        return Err(parse_error(format!(
                            "$lookup argument 'pipeline' must be an array, found {v}"
                        )));
                    };
                    let mut docs = Vec::with_capacity(stages.len());
                    for s in stages {
                        let Bson::Document(s) = s else {
                            return Err(parse_error(format!(
                                "$lookup: each stage of 'pipeline' must be a document, not {s}"
                            )));
                        };
                        // Checked here; parsed again for each run.
                        Stage::parse(s)?;
                        docs.push(s.clone());
                    }
                    pipeline = Some(docs);
                }
                "let" => {
                    let Bson::Document(l) = v else {
                        return Err(parse_error(format!(
                            "$lookup argument 'let' must be an object, found {v}"
                        )));
                    };
                    for (name, e) in l {
                        let valid = name
                            .chars()
                            .next()
                            .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii())
                            && name
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii());
                        if !valid {
                            return Err(Error::rejected(
                                ErrorCode::FailedToParse,
                                format!(
                                    "$lookup: '{name}' is not a valid variable name (a \
                                     lowercase letter, then letters, digits and '_')"
                                ),
                            ));
                        }
                        vars.push((name.clone(), expression(e)?));
                    }
                }
                other => {
                    return Err(parse_error(format!("unknown argument to $lookup: {other}")));
                }
            }
        }
        let from = from.ok_or_else(|| parse_error("must specify 'from' field for a $lookup"))?;
        let as_path =
            as_path.ok_or_else(|| parse_error("must specify 'as' field for a $lookup"))?;
        let fields = match (local, foreign) {
            (Some(l), Some(f)) => Some((l, f)),
            (None, None) if pipeline.is_some() => None,
            _ => {
                return Err(parse_error(
                    "$lookup requires either 'pipeline' or both 'localField' and \
                     'foreignField' to be specified",
                ));
            }
        };
        if !vars.is_empty() && pipeline.is_none() {
            return Err(parse_error(
                "$lookup with 'let' must also specify a 'pipeline'",
            ));
        }
        Ok(Lookup {
            from,
            fields,
            as_path,
            pipeline,
            vars,
            db: None,
            cache: BTreeMap::new(),
            cached_bytes: 0,
        })
    }

    /// Gives the stage the database of `coll`, where `from` is found.
    pub(super) fn bind(&mut self, coll: &Collection) {
        self.db = coll.database();
    }

    /// The foreign documents matching `local` (`None` for the pipeline alone), through the
    /// pipeline with `vars` (the values of `let`, `None` when missing).
    fn foreign(&self, local: Option<&Bson>, vars: &[Option<Bson>]) -> Result<Vec<Document>> {
        let db = self.db.as_ref().ok_or_else(|| {
            Error::rejected(
                ErrorCode::InternalError,
                "$lookup: the database of the collection is closed",
            )
        })?;
        let coll = match db.collection(&self.from) {
            Ok(c) => c,
            Err(e) if e.code() == ErrorCode::NamespaceNotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let filter = match (local, &self.fields) {
            (Some(v), Some((_, foreign))) => {
                let test = match v {
                    Bson::Array(items) => doc! { "$in": items.clone() },
                    other => doc! { "$eq": other.clone() },
                };
                Some(doc! { foreign.clone(): test })
            }
            _ => None,
        };
        match &self.pipeline {
            None => coll.find(&filter.unwrap_or_default(), &FindOptions::default()),
            Some(stages) => {
                let mut all = Vec::with_capacity(stages.len() + 1);
                if let Some(f) = filter {
                    all.push(doc! { "$match": f });
                }
                if self.vars.is_empty() {
                    all.extend(stages.iter().cloned());
                } else {
                    let bound: Vec<(&str, Option<&Bson>)> = self
                        .vars
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .zip(vars.iter().map(Option::as_ref))
                        .collect();
                    all.extend(stages.iter().map(|s| bind_stage(s, &bound)));
                }
                coll.aggregate(&all)
            }
        }
    }

    /// One input document with its matches.
    fn one(&mut self, mut doc: Document, budget: u64) -> Result<Document> {
        let local = self.fields.as_ref().map(|(l, _)| {
            l.split_first()
                .and_then(|(f, rest)| lookup(doc.get(f), rest))
                .cloned()
                .unwrap_or(Bson::Null)
        });
        let vars = self
            .vars
            .iter()
            .map(|(_, e)| evaluate(e, &doc, "$lookup"))
            .collect::<Result<Vec<_>>>()?;
        let key = if vars.is_empty() {
            Key(local.clone().unwrap_or(Bson::Null))
        } else {
            // A missing value (`Undefined` here) is not a null.
            let mut k = vec![local.clone().unwrap_or(Bson::Null)];
            k.extend(vars.iter().map(|v| v.clone().unwrap_or(Bson::Undefined)));
            Key(Bson::Array(k))
        };
        let matches = match self.cache.get(&key) {
            Some(m) => Arc::clone(m),
            None => {
                let found = self.foreign(local.as_ref(), &vars)?;
                let bytes: u64 = found.iter().map(document_size).sum();
                if bytes > MAX_BSON_OBJECT_SIZE {
                    return Err(Error::rejected(
                        ErrorCode::Location(4568),
                        format!(
                            "$lookup: total size of documents in {} matching a document \
                             exceeds the maximum document size",
                            self.from
                        ),
                    ));
                }
                let found = Arc::new(found);
                if self.cache.len() >= CACHE_ENTRIES || self.cached_bytes + bytes > budget / 4 {
                    self.cache.clear();
                    self.cached_bytes = 0;
                }
                if bytes <= budget / 4 {
                    self.cached_bytes += bytes;
                    self.cache.insert(key, Arc::clone(&found));
                }
                found
            }
        };
        let parts: Vec<&str> = self.as_path.iter().map(String::as_str).collect();
        set_path(
            &mut doc,
            &parts,
            Bson::Array(matches.iter().cloned().map(Bson::Document).collect()),
        )?;
        Ok(doc)
    }

    /// Looks up each document of `docs` as it is read.
    pub(super) fn run(mut self, docs: Docs, budget: u64) -> Docs {
        Box::new(docs.map(move |d| self.one(d?, budget)))
    }
}
