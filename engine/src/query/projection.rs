//! Projections (SPEC §14.3): inclusion or exclusion of fields at any depth (`{"meta.series": 1}`,
//! `{"loc.coordinates": 0}`), applied while unpacking so that columns the result does not
//! hold are not decoded; the parts of a kept field's value that a dotted path selects are cut
//! from the value afterwards, as MongoDB does (inside documents, and inside the documents of
//! arrays).

use std::collections::{HashMap, HashSet};

use bson::{Bson, Document};

use crate::error::{Error, ErrorCode, Result};

/// A parsed projection.
pub(crate) enum Projection {
    /// Every field.
    All,
    /// Only these fields (`_id` included unless excluded).
    Include(Paths),
    /// Every field but these.
    Exclude(Paths),
}

/// The fields of a projection, by top-level field.
#[derive(Default)]
pub(crate) struct Paths {
    /// Fields named whole (`{a: 1}`).
    whole: HashSet<String>,
    /// The dotted paths under a top-level field (`{"a.b": 1}`: `a` → `[["b"]]`).
    sub: HashMap<String, Vec<Vec<String>>>,
}

impl Paths {
    fn add(&mut self, path: &str) -> Result<()> {
        let mut parts = path.split('.');
        let top = parts.next().unwrap_or_default().to_owned();
        let rest: Vec<String> = parts.map(str::to_owned).collect();
        if top.is_empty() || rest.iter().any(String::is_empty) {
            return Err(bad(format!("projection on '{path}': empty field name")));
        }
        let collision = || bad(format!("projection on '{path}': path collision at '{top}'"));
        if rest.is_empty() {
            if self.sub.contains_key(&top) {
                return Err(collision());
            }
            self.whole.insert(top);
            return Ok(());
        }
        if self.whole.contains(&top) {
            return Err(collision());
        }
        let subs = self.sub.entry(top.clone()).or_default();
        if subs
            .iter()
            .any(|s| s.starts_with(&rest) || rest.starts_with(s))
        {
            return Err(collision());
        }
        subs.push(rest);
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.whole.is_empty() && self.sub.is_empty()
    }
}

impl Projection {
    /// Parses a MongoDB projection.
    ///
    /// # Errors
    /// `BadValue` for a `$` field or operator (`$slice`, `$elemMatch`, `$meta`: not
    /// supported), a value other than 0/1/bool, inclusion mixed with exclusion (other than
    /// `_id: 0`), an empty field name, or two paths of which one holds the other (a path
    /// collision).
    pub(crate) fn parse(p: Option<&Document>) -> Result<Projection> {
        let Some(p) = p else {
            return Ok(Projection::All);
        };
        crate::document::require_storable("projection", p)?;
        let mut include = Paths::default();
        let mut exclude = Paths::default();
        let mut id: Option<bool> = None;
        for (k, v) in p {
            if k.starts_with('$') || k.contains(".$") {
                return Err(bad(format!(
                    "projection on '{k}': positional and '$' projections are not supported"
                )));
            }
            let on = match v {
                Bson::Boolean(b) => *b,
                Bson::Int32(i) => *i != 0,
                Bson::Int64(i) => *i != 0,
                Bson::Double(d) => *d != 0.0,
                Bson::Document(d) if d.keys().next().is_some_and(|o| o.starts_with('$')) => {
                    let op = d.keys().next().map_or("", String::as_str);
                    return Err(bad(format!(
                        "projection operator {op} on '{k}' is not supported; project the \
                         whole field instead"
                    )));
                }
                _ => {
                    return Err(bad(format!("projection value of '{k}' must be 0 or 1")));
                }
            };
            if k == "_id" {
                id = Some(on);
            } else if on {
                include.add(k)?;
            } else {
                exclude.add(k)?;
            }
        }
        if !include.is_empty() || (exclude.is_empty() && id == Some(true)) {
            if !exclude.is_empty() {
                return Err(bad(
                    "cannot mix inclusion and exclusion in a projection".to_owned()
                ));
            }
            if id != Some(false) {
                include.whole.insert("_id".to_owned());
            }
            Ok(Projection::Include(include))
        } else {
            if id == Some(false) {
                exclude.whole.insert("_id".to_owned());
            }
            Ok(Projection::Exclude(exclude))
        }
    }

    /// Whether top-level field `field` is part of the result (whole or in part).
    pub(crate) fn keeps(&self, field: &str) -> bool {
        match self {
            Projection::All => true,
            Projection::Include(p) => p.whole.contains(field) || p.sub.contains_key(field),
            Projection::Exclude(p) => !p.whole.contains(field),
        }
    }

    /// Whether kept values are cut by dotted paths ([`Projection::cut`]).
    pub(crate) fn cuts(&self) -> bool {
        match self {
            Projection::All => false,
            Projection::Include(p) | Projection::Exclude(p) => !p.sub.is_empty(),
        }
    }

    /// Whether a dotted path of the projection cuts the values of top-level field `field`
    /// ([`Projection::cut`] may change them).
    pub(crate) fn cuts_field(&self, field: &str) -> bool {
        match self {
            Projection::All => false,
            Projection::Include(p) => p.sub.contains_key(field) && !p.whole.contains(field),
            Projection::Exclude(p) => p.sub.contains_key(field),
        }
    }

    /// The value of kept top-level field `field` as the result holds it: the parts a
    /// dotted path selects (inclusion) or the value without them (exclusion); `None` when
    /// nothing of it is left (an inclusion of `a.b` where `a` is not a document or array).
    pub(crate) fn cut(&self, field: &str, value: Bson) -> Option<Bson> {
        match self {
            Projection::Include(p) => match p.sub.get(field) {
                Some(paths) if !p.whole.contains(field) => include(value, paths),
                _ => Some(value),
            },
            Projection::Exclude(p) => match p.sub.get(field) {
                Some(paths) => Some(exclude(value, paths)),
                None => Some(value),
            },
            Projection::All => Some(value),
        }
    }

    /// A result document with every dotted path applied ([`Projection::cut`]).
    pub(crate) fn cut_document(&self, doc: Document) -> Document {
        if !self.cuts() {
            return doc;
        }
        doc.into_iter()
            .filter_map(|(k, v)| self.cut(&k, v).map(|v| (k, v)))
            .collect()
    }
}

/// The rest of the paths that start with field `k`.
fn under(paths: &[Vec<String>], k: &str) -> Vec<Vec<String>> {
    paths
        .iter()
        .filter(|p| p.first().is_some_and(|f| f == k))
        .map(|p| p[1..].to_vec())
        .collect()
}

/// The parts of `value` that `paths` (each relative to it) select.
fn include(value: Bson, paths: &[Vec<String>]) -> Option<Bson> {
    match value {
        Bson::Document(d) => {
            let mut out = Document::new();
            for (k, v) in d {
                let under = under(paths, &k);
                if under.is_empty() {
                    continue;
                }
                if under.iter().any(Vec::is_empty) {
                    out.insert(k, v);
                } else if let Some(v) = include(v, &under) {
                    out.insert(k, v);
                }
            }
            Some(Bson::Document(out))
        }
        // In an array, the documents keep their selected parts; other elements go.
        Bson::Array(items) => Some(Bson::Array(
            items
                .into_iter()
                .filter(|i| matches!(i, Bson::Document(_) | Bson::Array(_)))
                .filter_map(|i| include(i, paths))
                .collect(),
        )),
        _ => None,
    }
}

/// `value` without the parts `paths` (each relative to it) select.
fn exclude(value: Bson, paths: &[Vec<String>]) -> Bson {
    match value {
        Bson::Document(d) => Bson::Document(
            d.into_iter()
                .filter_map(|(k, v)| {
                    let under = under(paths, &k);
                    if under.is_empty() {
                        Some((k, v))
                    } else if under.iter().any(Vec::is_empty) {
                        None
                    } else {
                        Some((k, exclude(v, &under)))
                    }
                })
                .collect(),
        ),
        Bson::Array(items) => Bson::Array(items.into_iter().map(|i| exclude(i, paths)).collect()),
        other => other,
    }
}

fn bad(message: String) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    fn project(p: Document, d: Document) -> Document {
        let p = Projection::parse(Some(&p)).expect("projection");
        let kept: Document = d.into_iter().filter(|(k, _)| p.keeps(k)).collect();
        p.cut_document(kept)
    }

    #[test]
    fn dotted_paths_cut_documents_and_the_documents_of_arrays_as_mongodb() {
        let d = doc! {
            "_id": 1, "t": 5,
            "m": { "series": "s1", "site": { "x": 1, "y": 2 } },
            "loc": { "type": "Point", "coordinates": [1.5, 2.5] },
            "arr": [{ "a": 1, "b": 2 }, 3, { "b": 4 }, [{ "a": 5 }]],
            "n": 7,
        };
        assert_eq!(
            project(doc! { "m.series": 1, "t": 1 }, d.clone()),
            doc! { "_id": 1, "t": 5, "m": { "series": "s1" } }
        );
        assert_eq!(
            project(doc! { "m.site.y": 1, "_id": 0 }, d.clone()),
            doc! { "m": { "site": { "y": 2 } } }
        );
        assert_eq!(
            project(doc! { "arr.a": 1, "n.x": 1, "_id": 0 }, d.clone()),
            doc! { "arr": [{ "a": 1 }, {}, [{ "a": 5 }]] }
        );
        assert_eq!(
            project(
                doc! { "loc.coordinates": 0, "m.site": 0, "arr.b": 0 },
                d.clone()
            ),
            doc! {
                "_id": 1, "t": 5, "m": { "series": "s1" }, "loc": { "type": "Point" },
                "arr": [{ "a": 1 }, 3, {}, [{ "a": 5 }]], "n": 7,
            }
        );
        assert_eq!(
            project(doc! { "_id": 0 }, doc! { "_id": 1, "a": 2 }),
            doc! { "a": 2 }
        );
        assert_eq!(
            project(doc! { "_id": 1 }, doc! { "_id": 1, "a": 2 }),
            doc! { "_id": 1 }
        );
        assert_eq!(
            project(doc! { "_id": 1, "a": 0 }, doc! { "_id": 1, "a": 2, "b": 3 }),
            doc! { "_id": 1, "b": 3 }
        );
    }

    #[test]
    fn collisions_operators_and_mixtures_are_bad_values() {
        for p in [
            doc! { "m": 1, "m.series": 1 },
            doc! { "m.a.b": 1, "m.a": 1 },
            doc! { "a": 1, "b": 0 },
            doc! { "a.": 1 },
            doc! { "arr": { "$slice": 2 } },
            doc! { "arr": { "$elemMatch": { "a": 1 } } },
            doc! { "arr.$": 1 },
            doc! { "$meta": 1 },
            doc! { "a": "yes" },
        ] {
            let err = Projection::parse(Some(&p)).err().expect("refused");
            assert_eq!(err.code(), ErrorCode::BadValue, "{p}: {err}");
        }
    }
}
