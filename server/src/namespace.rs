//! MongoDB namespaces (`database.collection`) and tscoll collection names.
//!
//! The server serves one tscoll [`Database`](tscoll_engine::Database): MongoDB's database
//! `D`'s collection `C` is the tscoll collection named `D.C`. A MongoDB database exists while
//! it has a collection, as in MongoDB; `listDatabases` lists the prefixes before the first
//! dot. A tscoll collection whose name has no dot (made by `tscoll create` without one) is in
//! no MongoDB database, and the server does not show it.

use crate::command::CommandError;

/// Characters MongoDB refuses in a database name (on every platform).
const DB_NAME_FORBIDDEN: [char; 8] = ['/', '\\', '.', ' ', '"', '$', '*', '\0'];

/// MongoDB's limit on a database name's length, in bytes.
const DB_NAME_MAX_BYTES: usize = 63;

/// Checks a database name as MongoDB does.
///
/// # Errors
/// `InvalidNamespace` for an empty name, one over 63 bytes, or one holding `/\. "$*` or NUL.
pub(crate) fn check_db(db: &str) -> Result<(), CommandError> {
    if db.is_empty() || db.len() > DB_NAME_MAX_BYTES || db.contains(DB_NAME_FORBIDDEN) {
        return Err(CommandError::invalid_namespace(format!(
            "Invalid database name: '{db}'"
        )));
    }
    Ok(())
}

/// The tscoll collection name of `db.coll`.
///
/// # Errors
/// `InvalidNamespace` for a bad database name or an empty collection name.
pub(crate) fn collection_name(db: &str, coll: &str) -> Result<String, CommandError> {
    check_db(db)?;
    if coll.is_empty() {
        return Err(CommandError::invalid_namespace(format!(
            "Invalid namespace specified '{db}.'"
        )));
    }
    Ok(format!("{db}.{coll}"))
}

/// The database and collection of a tscoll collection name, if it has a dot.
pub(crate) fn split(name: &str) -> Option<(&str, &str)> {
    name.split_once('.')
        .filter(|(db, coll)| check_db(db).is_ok() && !coll.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_follow_mongodb() {
        for ok in ["test", "admin", "a-b_c", "x1"] {
            assert!(check_db(ok).is_ok(), "{ok}");
        }
        let long = "d".repeat(64);
        for bad in [
            "",
            "a.b",
            "a b",
            "a$",
            "a/b",
            "a\\b",
            "a\"b",
            "a*",
            "a\0",
            long.as_str(),
        ] {
            let e = check_db(bad).unwrap_err();
            assert_eq!(e.code, 73, "{bad:?}");
        }
    }

    #[test]
    fn names_split_at_the_first_dot() {
        assert_eq!(
            collection_name("test", "weather.hourly").unwrap(),
            "test.weather.hourly"
        );
        assert_eq!(
            split("test.weather.hourly"),
            Some(("test", "weather.hourly"))
        );
        assert_eq!(split("weather"), None);
        assert_eq!(split("test."), None);
        assert_eq!(split("bad name.c"), None);
        assert!(collection_name("test", "").is_err());
    }
}
