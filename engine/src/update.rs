//! Meta-only updates (SPEC §11.2): a filter on the meta field only and update operators that
//! change only the meta field; translated to the buckets' meta, renormalized (R-3.1) and
//! written as a move of each matching bucket to its new series.

use bson::{Bson, Document};
use tscoll_catalog::BucketKey;

use crate::collection::{Collection, CollectionInner};
use crate::delete::meta_only;
use crate::error::{Error, ErrorCode, Result};
use crate::filter::Filter;

/// Outcome of [`Collection::update_many`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateResult {
    /// Measurements in the buckets the filter matched.
    pub matched: u64,
    /// Measurements whose meta value changed.
    pub modified: u64,
    /// Buckets whose meta value changed.
    pub buckets_modified: u64,
}

/// Update operators a meta-only update may use.
const OPERATORS: [&str; 7] = ["$set", "$unset", "$rename", "$inc", "$mul", "$min", "$max"];

impl Collection {
    /// Updates the meta field of every measurement matching `filter` (SPEC §11.2, the
    /// `multi: true` meta-only form). `filter` may test only the meta field and its
    /// sub-fields; `update` is a document of operators (`$set`, `$unset`, `$rename`, `$inc`,
    /// `$mul`, `$min`, `$max`) whose every path is the meta field or below it, e.g.
    /// `{"$set": {"tags.region": "eu"}}` with meta field `tags`. The new meta value is
    /// renormalized (R-3.1) and each matching bucket moves to its new series as a whole, in
    /// one atomic write per bucket, after being cleared from the catalog (R-7.4.1).
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// coll.insert_many(&[doc! { "t": DateTime::from_millis(0), "m": { "host": "a" }, "v": 1 }], &InsertOptions::default())?;
    /// let r = coll.update_many(&doc! { "m.host": "a" }, &doc! { "$set": { "m.host": "b" } })?;
    /// assert_eq!(r.modified, 1);
    /// assert_eq!(coll.find(&doc! { "m.host": "b" }, &FindOptions::default())?.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidOptions` for a collection without a meta field, a filter on anything but the
    /// meta field, a replacement document or pipeline, or an operator touching another field
    /// or renaming the meta field away (SPEC §11.2); `BadValue` for an unsupported operator
    /// or a value an operator cannot apply to (e.g. `$inc` on a string); storage errors as
    /// [`Collection::delete_many`].
    pub fn update_many(&self, filter: &Document, update: &Document) -> Result<UpdateResult> {
        self.inner.update_meta(filter, update)
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::InvalidOptions, msg)
}

fn bad(msg: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::BadValue, msg)
}

/// Checks that `update` is a document of meta-only operators (SPEC §11.2).
fn check_update(update: &Document, meta_field: &str) -> Result<()> {
    if update.is_empty() {
        return Err(bad("the update document is empty"));
    }
    crate::storable::require_storable("update", update)?;
    let on_meta = |path: &str| path == meta_field || path.starts_with(&format!("{meta_field}."));
    for (op, args) in update {
        if !op.starts_with('$') {
            return Err(invalid(
                "a time-series update must use update operators on the meta field; replacement documents are not supported",
            ));
        }
        if !OPERATORS.contains(&op.as_str()) {
            return Err(bad(format!("unsupported update operator {op}")));
        }
        let Bson::Document(args) = args else {
            return Err(bad(format!("{op} needs a document of field paths")));
        };
        for (path, value) in args {
            if !on_meta(path) {
                return Err(invalid(format!(
                    "cannot perform an update on a time-series collection that modifies '{path}': only the meta field '{meta_field}' may be updated"
                )));
            }
            if op == "$rename" {
                match value {
                    Bson::String(to) if on_meta(to) && to != meta_field && path != meta_field => {}
                    Bson::String(_) => {
                        return Err(invalid(format!(
                            "$rename of '{path}' must stay inside the meta field '{meta_field}'"
                        )));
                    }
                    _ => return Err(bad("$rename needs a string target")),
                }
            }
        }
    }
    Ok(())
}

/// Applies meta-only `update` to `doc` = `{<metaField>: meta}` (meta absent when the bucket
/// has none). Operators run in document order, fields in order, as MongoDB applies them.
fn apply_update(doc: &mut Document, update: &Document) -> Result<()> {
    for (op, args) in update {
        let Bson::Document(args) = args else { continue };
        for (path, value) in args {
            let parts: Vec<&str> = path.split('.').collect();
            match op.as_str() {
                "$set" => set_path(doc, &parts, value.clone())?,
                "$unset" => {
                    remove_path(doc, &parts);
                }
                "$rename" => {
                    if let Some(v) = remove_path(doc, &parts)
                        && let Bson::String(to) = value
                    {
                        let to: Vec<&str> = to.split('.').collect();
                        set_path(doc, &to, v)?;
                    }
                }
                "$inc" | "$mul" => {
                    let current = get_path(doc, &parts).cloned();
                    // A missing field counts as 0 (`$mul` then sets 0).
                    let base = current.unwrap_or(Bson::Int32(0));
                    let result = arith(&base, value, op == "$inc")
                        .ok_or_else(|| bad(format!("cannot apply {op} to '{path}'")))?;
                    set_path(doc, &parts, result)?;
                }
                "$min" | "$max" => {
                    let current = get_path(doc, &parts).cloned();
                    let replace = current.as_ref().is_none_or(|c| {
                        let o = tscoll_catalog::value::compare(value, c);
                        if op == "$min" { o.is_lt() } else { o.is_gt() }
                    });
                    if replace {
                        set_path(doc, &parts, value.clone())?;
                    }
                }
                _ => return Err(bad(format!("unsupported update operator {op}"))),
            }
        }
    }
    Ok(())
}

/// `$inc` (`add`) or `$mul` of two numbers, MongoDB's type promotion (int32 → int64 →
/// double on overflow or with a double).
fn arith(a: &Bson, b: &Bson, add: bool) -> Option<Bson> {
    let int = |v: &Bson| match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        _ => None,
    };
    let float = |v: &Bson| match v {
        Bson::Double(d) => Some(*d),
        #[expect(clippy::cast_precision_loss, reason = "MongoDB promotes to double")]
        other => int(other).map(|i| i as f64),
    };
    if let (Some(x), Some(y)) = (int(a), int(b)) {
        let r = if add {
            x.checked_add(y)
        } else {
            x.checked_mul(y)
        };
        let both32 = matches!(a, Bson::Int32(_)) && matches!(b, Bson::Int32(_));
        return match r {
            Some(r) if both32 => Some(i32::try_from(r).map_or(Bson::Int64(r), Bson::Int32)),
            Some(r) => Some(Bson::Int64(r)),
            None => {
                let (x, y) = (float(a)?, float(b)?);
                Some(Bson::Double(if add { x + y } else { x * y }))
            }
        };
    }
    let (x, y) = (float(a)?, float(b)?);
    Some(Bson::Double(if add { x + y } else { x * y }))
}

fn get_path<'a>(doc: &'a Document, parts: &[&str]) -> Option<&'a Bson> {
    let (first, rest) = parts.split_first()?;
    let v = doc.get(*first)?;
    if rest.is_empty() {
        return Some(v);
    }
    match v {
        Bson::Document(d) => get_path(d, rest),
        _ => None,
    }
}

fn set_path(doc: &mut Document, parts: &[&str], value: Bson) -> Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    if rest.is_empty() {
        doc.insert(*first, value);
        return Ok(());
    }
    if !doc.contains_key(*first) {
        doc.insert(*first, Document::new());
    }
    match doc.get_mut(*first) {
        Some(Bson::Document(d)) => set_path(d, rest, value),
        _ => Err(bad(format!(
            "cannot create field '{}' in a non-document value",
            rest[0]
        ))),
    }
}

fn remove_path(doc: &mut Document, parts: &[&str]) -> Option<Bson> {
    let (first, rest) = parts.split_first()?;
    if rest.is_empty() {
        return doc.remove(*first);
    }
    match doc.get_mut(*first) {
        Some(Bson::Document(d)) => remove_path(d, rest),
        _ => None,
    }
}

impl CollectionInner {
    fn update_meta(&self, filter_doc: &Document, update: &Document) -> Result<UpdateResult> {
        // Reads and direct writes see the store: rows held in memory are stored first.
        self.flush_open()?;
        let spec = self.spec();
        let Some(meta_field) = spec.meta_field.clone() else {
            return Err(invalid(
                "a time-series collection without a meta field cannot be updated",
            ));
        };
        let filter = Filter::parse(filter_doc, &spec.time_field, Some(&meta_field))?;
        if !meta_only(&filter) {
            return Err(invalid(
                "the filter of a time-series update may only use the meta field",
            ));
        }
        check_update(update, &meta_field)?;
        let mut out = UpdateResult::default();
        for (entry, meta) in self.buckets_matching_meta(&filter, (i64::MIN, i64::MAX))? {
            let mut wrapper = Document::new();
            if let Some(m) = &meta {
                wrapper.insert(meta_field.clone(), m.clone());
            }
            apply_update(&mut wrapper, update)?;
            // R-3.1: the new meta value is normalized like an inserted one.
            let new_key = BucketKey::from_meta(wrapper.get(&meta_field));
            let changed = new_key.bytes != entry.key.bytes;
            let counted = self.direct_write(&entry, || {
                let Some(control) = self.control(&entry.id)? else {
                    return Ok(0);
                };
                if changed {
                    self.write_move(&entry, &control, &new_key)?;
                }
                Ok(u64::from(control.count))
            })?;
            out.matched += counted;
            if changed && counted > 0 {
                out.modified += counted;
                out.buckets_modified += 1;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn operators_apply_inside_the_meta_field() {
        let mut d = doc! { "m": { "a": 1, "b": "x", "c": { "d": 2 } } };
        let u = doc! {
            "$set": { "m.e": true },
            "$unset": { "m.b": "" },
            "$inc": { "m.a": 2_i32 },
            "$rename": { "m.c.d": "m.f" },
            "$max": { "m.g": 5 },
        };
        check_update(&u, "m").unwrap();
        apply_update(&mut d, &u).unwrap();
        assert_eq!(
            d,
            doc! { "m": { "a": 3, "c": {}, "e": true, "f": 2, "g": 5 } }
        );
    }

    #[test]
    fn updates_outside_the_meta_field_are_invalid_options() {
        for u in [
            doc! { "$set": { "v": 1 } },
            doc! { "m": 1 },
            doc! { "$rename": { "m.a": "x" } },
            doc! { "$rename": { "m": "m.x" } },
        ] {
            let e = check_update(&u, "m").unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOptions, "{u}");
        }
        let e = check_update(&doc! { "$push": { "m.a": 1 } }, "m").unwrap_err();
        assert_eq!(e.code(), ErrorCode::BadValue);
    }

    #[test]
    fn inc_promotes_on_overflow_and_rejects_strings() {
        assert_eq!(
            arith(&Bson::Int32(i32::MAX), &Bson::Int32(1), true),
            Some(Bson::Int64(i64::from(i32::MAX) + 1))
        );
        assert_eq!(
            arith(&Bson::Int64(i64::MAX), &Bson::Int64(2), false),
            Some(Bson::Double(i64::MAX as f64 * 2.0))
        );
        assert_eq!(
            arith(&Bson::String("a".into()), &Bson::Int32(1), true),
            None
        );
    }
}
