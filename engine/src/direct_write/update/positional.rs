//! Positional update paths (MongoDB 8.0): `$` (the array element the query matched), `$[]`
//! (every element) and `$[<identifier>]` (the elements an array filter of the update's
//! `arrayFilters` matches), nested at any depth (`"a.$[i].b.$[j]"`). A path is parsed once
//! into [`Part`]s; before an update applies it to a measurement, it is expanded against the
//! measurement into the concrete paths it names (`"a.0.b.2"`, ...).

use bson::{Bson, Document};

use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::Filter;

/// One part of a parsed update path.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Part {
    /// A field name (or an array index, when all digits).
    Name(String),
    /// `$`: the position the query matched.
    First,
    /// `$[]`: every element.
    All,
    /// `$[<identifier>]`: the elements the array filter at this index matches.
    Filtered(usize),
}

/// One of an update's `arrayFilters`: its identifier and its filter on an element (the
/// element is seen as the value of a field named by the identifier).
#[derive(Clone, Debug)]
pub(super) struct ArrayFilter {
    id: String,
    filter: Filter,
}

/// A field name no stored time field can have (a filter parsed for an element needs one).
const NO_TIME: &str = "\u{1}";

fn bad(msg: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::BadValue, msg)
}

fn failed_to_parse(msg: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::FailedToParse, msg)
}

/// The top-level field names of an array filter, through `$and`/`$or`/`$nor`.
fn top_names<'a>(d: &'a Document, out: &mut Vec<&'a str>) -> Result<()> {
    for (k, v) in d {
        match k.as_str() {
            "$and" | "$or" | "$nor" => {
                if let Bson::Array(items) = v {
                    for item in items {
                        if let Bson::Document(d) = item {
                            top_names(d, out)?;
                        }
                    }
                }
            }
            other if other.starts_with('$') => {
                return Err(failed_to_parse(format!(
                    "Cannot use an expression without a top-level field name in arrayFilters ({other})"
                )));
            }
            path => out.push(path.split('.').next().unwrap_or(path)),
        }
    }
    Ok(())
}

/// Parses an update's `arrayFilters`.
///
/// # Errors
/// `FailedToParse` for a filter without a field name (or with a top-level operator other
/// than `$and`, `$or`, `$nor`), with two different top-level names, or two filters with the
/// same identifier; `BadValue` for an identifier that is not an
/// alphanumeric string beginning with a lowercase letter, or a malformed filter.
pub(super) fn parse_array_filters(filters: &[Document]) -> Result<Vec<ArrayFilter>> {
    let mut out: Vec<ArrayFilter> = Vec::with_capacity(filters.len());
    for d in filters {
        let mut names = Vec::new();
        top_names(d, &mut names)?;
        let Some(id) = names.first().copied() else {
            return Err(failed_to_parse(
                "Cannot use an expression without a top-level field name in arrayFilters",
            ));
        };
        if let Some(other) = names.iter().find(|n| **n != id) {
            return Err(failed_to_parse(format!(
                "Error parsing array filter :: caused by :: Expected a single top-level field name, found '{id}' and '{other}'"
            )));
        }
        let valid = id.starts_with(|c: char| c.is_ascii_lowercase())
            && id.chars().all(|c| c.is_ascii_alphanumeric());
        if !valid {
            return Err(bad(format!(
                "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '{id}'"
            )));
        }
        if out.iter().any(|f| f.id == id) {
            return Err(failed_to_parse(format!(
                "Found multiple array filters with the same top-level field name {id}"
            )));
        }
        out.push(ArrayFilter {
            id: id.to_owned(),
            filter: Filter::parse(d, NO_TIME, None)?,
        });
    }
    Ok(out)
}

impl ArrayFilter {
    /// The identifier.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    fn matches(&self, element: &Bson) -> bool {
        let mut one = Document::new();
        one.insert(self.id.as_str(), element.clone());
        self.filter.matches_row(&one, 0, None).unwrap_or(false)
    }
}

/// Parses an update path into parts, marking the array filters it uses in `used`.
///
/// # Errors
/// `BadValue` for an empty field name, a `$`-prefixed name that is not positional, two `$`,
/// a positional first part, or an identifier without an array filter.
pub(super) fn parse_path(
    path: &str,
    filters: &[ArrayFilter],
    used: &mut [bool],
) -> Result<Vec<Part>> {
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(bad(format!(
            "the update path '{path}' contains an empty field name"
        )));
    }
    let mut parts = Vec::new();
    for (i, p) in path.split('.').enumerate() {
        let part = if p == "$" {
            if parts.contains(&Part::First) {
                return Err(bad(format!(
                    "Too many positional (i.e. '$') elements found in path '{path}'"
                )));
            }
            Part::First
        } else if p == "$[]" {
            Part::All
        } else if let Some(id) = p.strip_prefix("$[").and_then(|r| r.strip_suffix(']')) {
            let Some(at) = filters.iter().position(|f| f.id == id) else {
                return Err(bad(format!(
                    "No array filter found for identifier '{id}' in path '{path}'"
                )));
            };
            used[at] = true;
            Part::Filtered(at)
        } else if p.starts_with('$') {
            return Err(bad(format!(
                "the update path '{path}' holds the '$'-prefixed field name '{p}', which is not valid for storage"
            )));
        } else {
            Part::Name(p.to_owned())
        };
        if i == 0 && part != Part::Name(p.to_owned()) {
            return Err(bad(format!(
                "Cannot have positional (i.e. '$' or '$[...]') element in the first position in path '{path}'"
            )));
        }
        parts.push(part);
    }
    Ok(parts)
}

/// Whether parts hold a positional element.
pub(super) fn is_dynamic(parts: &[Part]) -> bool {
    parts.iter().any(|p| !matches!(p, Part::Name(_)))
}

/// The concrete paths `parts` names in `doc`: `$` is `matched`, `$[]` each element of the
/// array there, `$[<identifier>]` each element its filter matches.
///
/// # Errors
/// `BadValue` when `$` has no match from the query, or `$[]`/`$[<identifier>]` meets a
/// missing field or a value that is not an array.
pub(super) fn expand(
    doc: &Document,
    parts: &[Part],
    matched: Option<usize>,
    filters: &[ArrayFilter],
) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::new();
    let mut prefix = Vec::with_capacity(parts.len());
    let Some((Part::Name(first), rest)) = parts.split_first() else {
        return Ok(out);
    };
    prefix.push(first.clone());
    let ctx = Expand { matched, filters };
    ctx.walk(doc.get(first), rest, &mut prefix, &mut out)?;
    Ok(out)
}

struct Expand<'a> {
    matched: Option<usize>,
    filters: &'a [ArrayFilter],
}

impl Expand<'_> {
    fn walk(
        &self,
        v: Option<&Bson>,
        parts: &[Part],
        prefix: &mut Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) -> Result<()> {
        let Some((part, rest)) = parts.split_first() else {
            out.push(prefix.clone());
            return Ok(());
        };
        let child = |name: &str| match v {
            Some(Bson::Document(d)) => d.get(name),
            Some(Bson::Array(a)) => name.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        match part {
            Part::Name(name) => {
                prefix.push(name.clone());
                self.walk(child(name), rest, prefix, out)?;
                prefix.pop();
            }
            Part::First => {
                let Some(i) = self.matched else {
                    return Err(bad(
                        "The positional operator did not find the match needed from the query.",
                    ));
                };
                let name = i.to_string();
                prefix.push(name.clone());
                self.walk(child(&name), rest, prefix, out)?;
                prefix.pop();
            }
            Part::All | Part::Filtered(_) => {
                let items = match v {
                    Some(Bson::Array(items)) => items,
                    None => {
                        return Err(bad(format!(
                            "The path '{}' must exist in the document in order to apply array updates.",
                            prefix.join(".")
                        )));
                    }
                    Some(other) => {
                        return Err(bad(format!(
                            "Cannot apply array updates to non-array element {}: {other}",
                            prefix.join(".")
                        )));
                    }
                };
                for (i, e) in items.iter().enumerate() {
                    if let Part::Filtered(f) = part
                        && !self.filters[*f].matches(e)
                    {
                        continue;
                    }
                    prefix.push(i.to_string());
                    self.walk(Some(e), rest, prefix, out)?;
                    prefix.pop();
                }
            }
        }
        Ok(())
    }
}

/// Checks that no two concrete paths of different operators are equal or one inside the
/// other (`(path, operator)` pairs).
///
/// # Errors
/// `ConflictingUpdateOperators` naming the two paths.
pub(super) fn check_expanded(paths: &mut [(Vec<String>, usize)]) -> Result<()> {
    paths.sort();
    for pair in paths.windows(2) {
        let ((a, i), (b, j)) = (&pair[0], &pair[1]);
        if i != j && b.starts_with(a) {
            return Err(Error::rejected(
                ErrorCode::ConflictingUpdateOperators,
                format!(
                    "Update created a conflict at '{}' (with '{}')",
                    b.join("."),
                    a.join(".")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    fn paths(
        doc: &Document,
        path: &str,
        matched: Option<usize>,
        filters: &[Document],
    ) -> Vec<String> {
        let filters = parse_array_filters(filters).expect("filters");
        let mut used = vec![false; filters.len()];
        let parts = parse_path(path, &filters, &mut used).expect("path");
        expand(doc, &parts, matched, &filters)
            .expect("expand")
            .iter()
            .map(|p| p.join("."))
            .collect()
    }

    #[test]
    fn paths_expand_to_the_elements_they_name() {
        let d = doc! { "a": [{ "b": [1, 5] }, { "b": [7] }, { "c": 1 }] };
        assert_eq!(paths(&d, "a.$[].c", None, &[]), ["a.0.c", "a.1.c", "a.2.c"]);
        assert_eq!(paths(&d, "a.$.b", Some(1), &[]), ["a.1.b"]);
        assert_eq!(
            paths(
                &d,
                "a.$[x].b.$[y]",
                None,
                &[
                    doc! { "x.b": { "$exists": true } },
                    doc! { "y": { "$gte": 5 } }
                ]
            ),
            ["a.0.b.1", "a.1.b.0"]
        );
        // No element matching: no path, nothing to do.
        assert!(paths(&d, "a.$[x]", None, &[doc! { "x": 99 }]).is_empty());
        // `$` past the end of an array is a path like any other (a set pads with nulls).
        assert_eq!(paths(&d, "z.$", Some(3), &[]), ["z.3"]);
    }

    #[test]
    fn bad_paths_and_array_filters_are_refused_with_mongodb_codes() {
        let f = parse_array_filters(&[doc! { "x": 1 }]).expect("filters");
        let mut used = vec![false];
        let code = |r: Result<Vec<Part>>| r.map(|_| ()).unwrap_err().code();
        assert_eq!(
            code(parse_path("a.$.b.$", &f, &mut used)),
            ErrorCode::BadValue
        );
        assert_eq!(
            code(parse_path("$[x].a", &f, &mut used)),
            ErrorCode::BadValue
        );
        assert_eq!(
            code(parse_path("a.$[y]", &f, &mut used)),
            ErrorCode::BadValue
        );
        assert_eq!(
            code(parse_path("a.$bad", &f, &mut used)),
            ErrorCode::BadValue
        );
        assert_eq!(code(parse_path("a..b", &f, &mut used)), ErrorCode::BadValue);
        let mut used = vec![false];
        parse_path("a.b", &f, &mut used).expect("path");
        assert!(!used[0]);
        parse_path("a.$[x]", &f, &mut used).expect("path");
        assert!(used[0]);
        let filters = |d: Vec<Document>| parse_array_filters(&d).unwrap_err().code();
        assert_eq!(filters(vec![doc! {}]), ErrorCode::FailedToParse);
        assert_eq!(
            filters(vec![doc! { "$expr": true }]),
            ErrorCode::FailedToParse
        );
        assert_eq!(
            filters(vec![doc! { "x": 1, "y.a": 1 }]),
            ErrorCode::FailedToParse
        );
        assert_eq!(
            filters(vec![doc! { "x": 1 }, doc! { "x.a": 1 }]),
            ErrorCode::FailedToParse
        );
        assert_eq!(filters(vec![doc! { "Xa": 1 }]), ErrorCode::BadValue);
        assert_eq!(filters(vec![doc! { "1a": 1 }]), ErrorCode::BadValue);
        // `$or` of conditions on one identifier is one filter.
        parse_array_filters(&[doc! { "$or": [{ "x.a": 1 }, { "x.b": 2 }] }]).expect("filters");
    }

    #[test]
    fn all_positional_needs_an_array() {
        let f = parse_array_filters(&[]).expect("filters");
        let parts = parse_path("a.$[]", &f, &mut []).expect("path");
        for d in [doc! {}, doc! { "a": 1 }, doc! { "a": { "b": 1 } }] {
            let e = expand(&d, &parts, None, &f).unwrap_err();
            assert_eq!(e.code(), ErrorCode::BadValue, "{d}");
        }
        let parts = parse_path("a.$", &f, &mut []).expect("path");
        let e = expand(&doc! { "a": [1] }, &parts, None, &f).unwrap_err();
        assert_eq!(e.code(), ErrorCode::BadValue);
    }

    #[test]
    fn expanded_paths_of_two_operators_may_not_meet() {
        let p = |s: &str| s.split('.').map(str::to_owned).collect::<Vec<_>>();
        let mut ok = vec![(p("a.0.b"), 0), (p("a.1.b"), 0), (p("a.0.c"), 1)];
        check_expanded(&mut ok).expect("disjoint");
        let mut same = vec![(p("a.0"), 0), (p("a.1"), 0), (p("a.1"), 1)];
        assert_eq!(
            check_expanded(&mut same).unwrap_err().code(),
            ErrorCode::ConflictingUpdateOperators
        );
        let mut inside = vec![(p("a.1.b"), 0), (p("a.1"), 1), (p("a.0.b"), 0)];
        assert_eq!(
            check_expanded(&mut inside).unwrap_err().code(),
            ErrorCode::ConflictingUpdateOperators
        );
    }
}
