//! Variables put into specifications as constants: `$lookup`'s `let` (per input document)
//! and an update's `let` (once per update) replace `$$<name>` and `$$<name>.<path>` with
//! `{$literal: <value>}` where MongoDB reads variables — in the expressions of stages and in
//! filters under `$expr` — before the stages and filters are parsed.

use bson::{Bson, Document, doc};

use super::stage::{evaluate, expression};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::lookup;

/// Evaluates the variables of a command's `let` (`{<name>: <expression>}`), which may not read
/// documents: `$$NOW`, literals and operators over them. `op` names the command in errors.
///
/// # Errors
/// MongoDB's 16867 for a name that is not a user variable's (it begins with a lowercase
/// letter or a non-ASCII character and has letters, digits and `_` only: `NOW`, `ROOT`...
/// are refused), 4890500 for an expression that reads a field, an expression's own error.
pub(crate) fn constants(op: &str, let_vars: &Document) -> Result<Vec<(String, Option<Bson>)>> {
    let mut out = Vec::with_capacity(let_vars.len());
    for (name, spec) in let_vars {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii())
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !valid {
            return Err(Error::rejected(
                ErrorCode::Location(16867),
                format!("{op}: let: '{name}' is not a valid user variable name"),
            ));
        }
        let e = expression(spec)?;
        let mut fields = Vec::new();
        e.fields(&mut fields);
        if !fields.is_empty() {
            return Err(Error::rejected(
                ErrorCode::Location(4890500),
                format!(
                    "{op}: let: '{name}' tried to access a field, but this is not allowed \
                     because command let expressions run before any document is examined"
                ),
            ));
        }
        out.push((name.clone(), evaluate(&e, &Document::new(), op)?));
    }
    Ok(out)
}

/// A field no document has: a path to it reads as missing.
const MISSING: &str = "$\u{1}missing";

/// `stage` with the variables `vars` put in where its expressions read them: everywhere but
/// in `$match`, where only under `$expr`.
pub(crate) fn bind_stage(stage: &Document, vars: &[(&str, Option<&Bson>)]) -> Document {
    stage
        .iter()
        .map(|(name, spec)| {
            let spec = if name == "$match" {
                bind_filter(spec, vars)
            } else {
                bind(spec, vars)
            };
            (name.clone(), spec)
        })
        .collect()
}

/// A filter with the variables put in under its `$expr`s.
pub(crate) fn bind_filter(v: &Bson, vars: &[(&str, Option<&Bson>)]) -> Bson {
    match v {
        Bson::Document(d) => Bson::Document(
            d.iter()
                .map(|(k, v)| {
                    let v = if k == "$expr" {
                        bind(v, vars)
                    } else {
                        bind_filter(v, vars)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Bson::Array(a) => Bson::Array(a.iter().map(|v| bind_filter(v, vars)).collect()),
        other => other.clone(),
    }
}

/// An expression with `$$name` and `$$name.path` of `vars` replaced by `{$literal: value}`
/// (a path to a missing field when the value is missing); `{$literal: ...}` left as is.
fn bind(v: &Bson, vars: &[(&str, Option<&Bson>)]) -> Bson {
    match v {
        Bson::String(s) if s.starts_with("$$") => {
            let mut parts = s[2..].split('.');
            let name = parts.next().unwrap_or_default();
            let Some((_, value)) = vars.iter().find(|(n, _)| *n == name) else {
                return v.clone();
            };
            let path: Vec<String> = parts.map(str::to_owned).collect();
            match lookup(*value, &path) {
                Some(x) => Bson::Document(doc! { "$literal": x.clone() }),
                None => Bson::String(MISSING.to_owned()),
            }
        }
        Bson::Document(d) if d.len() == 1 && d.contains_key("$literal") => v.clone(),
        Bson::Document(d) => {
            Bson::Document(d.iter().map(|(k, v)| (k.clone(), bind(v, vars))).collect())
        }
        Bson::Array(a) => Bson::Array(a.iter().map(|v| bind(v, vars)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_put_in_expressions_and_under_expr_only() {
        let item = Bson::String("almonds".into());
        let meta = Bson::Document(doc! { "site": "p1" });
        let vars = [("item", Some(&item)), ("m", Some(&meta)), ("gone", None)];
        let stage = doc! { "$match": {
            "stock": "$$item",
            "$expr": { "$eq": ["$stock", "$$item"] },
            "$and": [ { "$expr": { "$eq": ["$site", "$$m.site"] } } ],
        } };
        assert_eq!(
            bind_stage(&stage, &vars),
            doc! { "$match": {
                "stock": "$$item",
                "$expr": { "$eq": ["$stock", { "$literal": "almonds" }] },
                "$and": [ { "$expr": { "$eq": ["$site", { "$literal": "p1" }] } } ],
            } }
        );
        let stage = doc! { "$project": {
            "a": "$$gone", "b": "$$NOW", "c": { "$literal": "$$item" }, "d": "$$m",
        } };
        assert_eq!(
            bind_stage(&stage, &vars),
            doc! { "$project": {
                "a": MISSING, "b": "$$NOW", "c": { "$literal": "$$item" }, "d": { "$literal": { "site": "p1" } },
            } }
        );
    }
}
