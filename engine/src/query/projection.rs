//! Projections (SPEC §14.3): simple inclusion or exclusion of top-level fields, applied while
//! unpacking so that excluded columns are not decoded.

use std::collections::HashSet;

use bson::{Bson, Document};

use crate::error::{Error, ErrorCode, Result};

/// A parsed projection.
pub(crate) enum Projection {
    /// Every field.
    All,
    /// Only these fields (`_id` included unless excluded).
    Include(HashSet<String>),
    /// Every field but these.
    Exclude(HashSet<String>),
}

impl Projection {
    /// Parses a MongoDB projection on top-level fields.
    ///
    /// # Errors
    /// `BadValue` for a dotted or `$` field, a value other than 0/1/bool, or inclusion mixed
    /// with exclusion (other than `_id: 0`).
    pub(crate) fn parse(p: Option<&Document>) -> Result<Projection> {
        let Some(p) = p else {
            return Ok(Projection::All);
        };
        crate::storable::require_storable("projection", p)?;
        let mut include = HashSet::new();
        let mut exclude = HashSet::new();
        for (k, v) in p {
            if k.contains('.') || k.starts_with('$') {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    format!("projection on '{k}': only top-level fields are supported"),
                ));
            }
            let on = match v {
                Bson::Boolean(b) => *b,
                Bson::Int32(i) => *i != 0,
                Bson::Int64(i) => *i != 0,
                Bson::Double(d) => *d != 0.0,
                _ => {
                    return Err(Error::rejected(
                        ErrorCode::BadValue,
                        format!("projection value of '{k}' must be 0 or 1"),
                    ));
                }
            };
            if on {
                include.insert(k.clone())
            } else {
                exclude.insert(k.clone())
            };
        }
        if !include.is_empty() {
            let id_excluded = exclude.remove("_id");
            if !exclude.is_empty() {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    "cannot mix inclusion and exclusion in a projection",
                ));
            }
            if !id_excluded {
                include.insert("_id".to_owned());
            }
            Ok(Projection::Include(include))
        } else {
            Ok(Projection::Exclude(exclude))
        }
    }

    /// Whether `field` is part of the result.
    pub(crate) fn keeps(&self, field: &str) -> bool {
        match self {
            Projection::All => true,
            Projection::Include(s) => s.contains(field),
            Projection::Exclude(s) => !s.contains(field),
        }
    }
}
