//! The variables an expression reads (`$$name`): a chain of bindings, innermost first, as
//! `$let`, `$map`, `$filter` and `$reduce` bind them around their sub-expressions.

use bson::Bson;

use crate::error::{Error, ErrorCode, Result};

/// Checks a user variable's name (`$let`'s, `$filter`'s and `$map`'s `as`): a lowercase ASCII
/// letter or a non-ASCII character first, then letters, digits and `_`, as MongoDB requires.
///
/// # Errors
/// MongoDB's 16867 naming `op`.
pub(crate) fn check_name(op: &str, name: &str) -> Result<()> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii())
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(Error::rejected(
            ErrorCode::Location(16867),
            format!("{op}: '{name}' starts with an invalid character for a user variable name"),
        ))
    }
}

/// Variables bound around an expression: each binding shadows those of its parent.
#[derive(Debug, Default)]
pub(crate) struct Vars<'a> {
    /// The innermost binding and the chain it extends.
    bound: Option<(&'a str, Bson, &'a Vars<'a>)>,
}

impl<'a> Vars<'a> {
    /// The variables of `self` with `name` bound to `value` (shadowing an outer `name`).
    pub(crate) fn with(&'a self, name: &'a str, value: Bson) -> Vars<'a> {
        Vars {
            bound: Some((name, value, self)),
        }
    }

    /// The value of `name`, innermost binding first.
    pub(crate) fn get(&self, name: &str) -> Option<&Bson> {
        let mut at = self;
        while let Some((n, v, parent)) = &at.bound {
            if *n == name {
                return Some(v);
            }
            at = parent;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_bindings_shadow_outer_ones_and_unbound_names_are_none() {
        let root = Vars::default();
        let a = root.with("x", Bson::Int32(1));
        let b = a.with("y", Bson::Int32(2));
        let c = b.with("x", Bson::Int32(3));
        assert_eq!(c.get("x"), Some(&Bson::Int32(3)));
        assert_eq!(c.get("y"), Some(&Bson::Int32(2)));
        assert_eq!(a.get("x"), Some(&Bson::Int32(1)));
        assert_eq!(c.get("z"), None);
        assert_eq!(root.get("x"), None);
    }
}
