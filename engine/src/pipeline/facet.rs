//! `$facet`: several sub-pipelines over the same input, their results gathered into one
//! document, `{<name>: [<results>]}`. The input is read once and kept for the sub-pipelines:
//! in memory up to the pipeline's memory budget, in a temporary file past it (each
//! sub-pipeline then reads it back), so the memory held stays bounded; the document made may
//! hold at most 100 MiB of results, as MongoDB's (`Location4031700` past it). Inside a
//! `$facet` every stage may be used but `$facet` itself (`Location40600`, as MongoDB).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::sync::Arc;

use bson::{Bson, Document};
use tscoll_catalog::value::{document_size, value_size};

use super::stage::{Docs, Stage, run};
use crate::collection::Collection;
use crate::error::{Error, ErrorCode, Result};

/// The most bytes of results the document of a `$facet` holds (MongoDB's
/// `internalQueryFacetMaxOutputDocSizeBytes`).
const MAX_OUTPUT_BYTES: u64 = 100 * 1024 * 1024;

fn err(code: u32, message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

/// A parsed `$facet`: each output field and its sub-pipeline.
pub(super) struct Facet {
    facets: Vec<(String, Vec<Stage>)>,
}

impl Facet {
    /// Parses `{<name>: [<stage>, ...], ...}`.
    ///
    /// # Errors
    /// MongoDB's codes: `Location15947` when the specification is not a document,
    /// `Location40169` when it is empty, `Location40170` for a sub-pipeline not an array,
    /// `Location40171` for an empty one, `Location40600` for a `$facet` inside; a stage's
    /// own errors.
    pub(super) fn parse(spec: &Bson) -> Result<Facet> {
        let Bson::Document(d) = spec else {
            return Err(err(
                15947,
                "a facet's fields must be specified in an object",
            ));
        };
        if d.is_empty() {
            return Err(err(
                40169,
                "the $facet specification must be a non-empty object",
            ));
        }
        let mut facets = Vec::new();
        for (name, v) in d {
            if name.is_empty() || name.starts_with('$') || name.contains('.') {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    format!("$facet: '{name}' is not a valid output field name"),
                ));
            }
            let Bson::Array(stages) = v else {
                return Err(err(
                    40170,
                    format!("arguments to $facet must be arrays, {name} is {v}"),
                ));
            };
            if stages.is_empty() {
                return Err(err(
                    40171,
                    format!("sub-pipeline in $facet stage cannot be empty: {name}"),
                ));
            }
            let mut parsed = Vec::with_capacity(stages.len());
            for s in stages {
                let Bson::Document(s) = s else {
                    return Err(err(
                        40170,
                        format!("$facet: each stage of '{name}' must be a document, not {s}"),
                    ));
                };
                if s.contains_key("$facet") {
                    return Err(err(
                        40600,
                        "$facet is not allowed to be used within a $facet stage",
                    ));
                }
                parsed.push(Stage::parse(s)?);
            }
            facets.push((name.clone(), parsed));
        }
        Ok(Facet { facets })
    }

    /// Gives the sub-pipelines' `$lookup` stages the database of `coll`.
    pub(super) fn bind(&mut self, coll: &Collection) {
        for (_, stages) in &mut self.facets {
            super::stage::bind(stages, coll);
        }
    }

    /// Runs the sub-pipelines over `docs`: reads the whole input here.
    ///
    /// # Errors
    /// The input's errors, a sub-pipeline's errors, `Location4031700` when the results pass
    /// 100 MiB, [`Error::Io`] when the input cannot be kept in a temporary file.
    pub(super) fn run(self, docs: Docs, budget: u64) -> Result<Docs> {
        let spool = Spool::fill(docs, budget)?;
        let mut out = Document::new();
        let mut bytes = 0u64;
        for (name, stages) in self.facets {
            let mut results = Vec::new();
            for d in run(stages, spool.replay()?, budget)? {
                let d = Bson::Document(d?);
                bytes += value_size(&d);
                if bytes > MAX_OUTPUT_BYTES {
                    return Err(err(
                        4_031_700,
                        format!(
                            "document constructed by $facet is more than the limit of \
                             {MAX_OUTPUT_BYTES} bytes"
                        ),
                    ));
                }
                results.push(d);
            }
            out.insert(name, results);
        }
        Ok(Box::new(std::iter::once(Ok(out))))
    }
}

/// Documents kept to be read several times: in memory up to a budget of bytes, then all in
/// a temporary file.
enum Spool {
    Memory(Arc<Vec<Document>>),
    File(File),
}

fn io(context: &str, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{context}: {e}")))
}

impl Spool {
    fn fill(docs: Docs, budget: u64) -> Result<Spool> {
        let mut held = Vec::new();
        let mut bytes = 0u64;
        let mut writer: Option<BufWriter<File>> = None;
        for d in docs {
            let d = d?;
            if let Some(w) = &mut writer {
                d.to_writer(&mut *w)
                    .map_err(|e| io("writing $facet's input", std::io::Error::other(e)))?;
                continue;
            }
            bytes += document_size(&d);
            held.push(d);
            if bytes > budget {
                let file = tempfile::tempfile().map_err(|e| io("creating $facet's file", e))?;
                let mut w = BufWriter::new(file);
                for d in held.drain(..) {
                    d.to_writer(&mut w)
                        .map_err(|e| io("writing $facet's input", std::io::Error::other(e)))?;
                }
                writer = Some(w);
            }
        }
        match writer {
            Some(mut w) => {
                w.flush().map_err(|e| io("writing $facet's input", e))?;
                let file = w
                    .into_inner()
                    .map_err(|e| io("writing $facet's input", e.into_error()))?;
                Ok(Spool::File(file))
            }
            None => Ok(Spool::Memory(Arc::new(held))),
        }
    }

    /// The documents, from the first.
    fn replay(&self) -> Result<Docs> {
        match self {
            Spool::Memory(docs) => {
                let docs = Arc::clone(docs);
                Ok(Box::new((0..docs.len()).map(move |i| Ok(docs[i].clone()))))
            }
            Spool::File(f) => {
                let mut f = f.try_clone().map_err(|e| io("reading $facet's input", e))?;
                f.seek(SeekFrom::Start(0))
                    .map_err(|e| io("reading $facet's input", e))?;
                let mut r = BufReader::new(f);
                Ok(Box::new(std::iter::from_fn(move || match r.fill_buf() {
                    Ok([]) => None,
                    Ok(_) => Some(
                        Document::from_reader(&mut r)
                            .map_err(|e| io("reading $facet's input", std::io::Error::other(e))),
                    ),
                    Err(e) => Some(Err(io("reading $facet's input", e))),
                })))
            }
        }
    }
}
