//! Index specifications: the user form (keys on the measurement's fields) and the bucket form
//! (keys on `meta` and `control.min`/`control.max`), their conversion (SPEC ), names,
//! and the rejections of SPEC.

use bson::{Bson, Document, doc};

use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::{Filter, Pred};
use crate::options::CollectionSpec;

use super::IndexOptions;

/// Most fields in a key pattern (MongoDB's limit).
const MAX_KEY_FIELDS: usize = 32;

/// One field of a user key pattern, as the bucket form indexes it (SPEC ).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    /// `<metaField>` (empty path) or `<metaField>.<path>` → `meta` / `meta.<path>`.
    Meta {
        /// Path below the meta value.
        path: Vec<String>,
        /// Descending (`-1`).
        descending: bool,
    },
    /// The time field: ascending → `control.min.<t>, control.max.<t>`; descending →
    /// `control.max.<t>, control.min.<t>` (both descending).
    Time {
        /// Descending (`-1`).
        descending: bool,
    },
    /// A measurement field `f` (dotted path): ascending → `control.min.f, control.max.f`;
    /// descending → `control.max.f, control.min.f` (both descending).
    Measurement {
        /// The field's path.
        path: Vec<String>,
        /// Descending (`-1`).
        descending: bool,
    },
}

impl Component {
    /// Whether the component is read from the bucket's control record (not from its meta).
    pub(crate) fn uses_control(&self) -> bool {
        !matches!(self, Component::Meta { .. })
    }

    /// Whether the component is descending.
    pub(crate) fn descending(&self) -> bool {
        match self {
            Component::Meta { descending, .. }
            | Component::Time { descending }
            | Component::Measurement { descending, .. } => *descending,
        }
    }
}

/// A validated index definition (what the collection record keeps, SPEC §13).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Definition {
    /// Index name.
    pub(crate) name: String,
    /// Key pattern in user form, as given.
    pub(crate) key: Document,
    /// The key pattern's fields in bucket form.
    pub(crate) components: Vec<Component>,
    /// `sparse` (meta and time fields only).
    pub(crate) sparse: bool,
    /// `partialFilterExpression` in user form, and parsed.
    pub(crate) partial: Option<(Document, Filter)>,
    /// `hidden`: maintained but not used by queries.
    pub(crate) hidden: bool,
}

impl Definition {
    /// Whether two definitions describe the same index apart from the name: same key (in
    /// bucket form) and options.
    pub(crate) fn same_options(&self, other: &Definition) -> bool {
        self.components == other.components
            && self.sparse == other.sparse
            && self.partial.as_ref().map(|p| &p.0) == other.partial.as_ref().map(|p| &p.0)
            && self.hidden == other.hidden
    }

    /// The user form, as `listIndexes` on a time-series collection shows it.
    pub(crate) fn user_doc(&self) -> Document {
        let mut d = doc! { "v": 2, "key": self.key.clone(), "name": &self.name };
        if self.sparse {
            d.insert("sparse", true);
        }
        if let Some((p, _)) = &self.partial {
            d.insert("partialFilterExpression", p.clone());
        }
        if self.hidden {
            d.insert("hidden", true);
        }
        d
    }

    /// The bucket form (the index as it is kept over buckets), with the user form as
    /// `originalSpec` for indexes on measurement fields or with a partial filter (as MongoDB
    /// keeps it).
    pub(crate) fn bucket_doc(&self, spec: &CollectionSpec) -> Document {
        let mut d = doc! { "v": 2, "key": bucket_key(&self.key, spec), "name": &self.name };
        if self.sparse {
            d.insert("sparse", true);
        }
        if self.hidden {
            d.insert("hidden", true);
        }
        let measurement = self
            .components
            .iter()
            .any(|c| matches!(c, Component::Measurement { .. }));
        if measurement || self.partial.is_some() {
            d.insert("originalSpec", self.user_doc());
        }
        d
    }
}

/// The key pattern of the default index, `{<metaField>: 1, <timeField>: 1}` (SPEC ).
pub(crate) fn default_key(spec: &CollectionSpec) -> Option<Document> {
    let meta = spec.meta_field.as_ref()?;
    Some(doc! { meta.as_str(): 1, spec.time_field.as_str(): 1 })
}

/// Bucket-form components of the default index.
pub(crate) fn default_components() -> Vec<Component> {
    vec![
        Component::Meta {
            path: Vec::new(),
            descending: false,
        },
        Component::Time { descending: false },
    ]
}

/// MongoDB's generated index name: `<field>_<value>` joined by `_` (`m_1_t_1`, `x_-1`).
pub(crate) fn generated_name(key: &Document) -> String {
    key.iter()
        .map(|(k, v)| {
            let v = match v {
                Bson::String(s) => s.clone(),
                Bson::Int32(i) => i.to_string(),
                Bson::Int64(i) => i.to_string(),
                Bson::Double(d) => d.to_string(),
                Bson::Decimal128(d) => d.to_string(),
                other => other.to_string(),
            };
            format!("{k}_{v}")
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// The bucket form of a user key pattern that converts (SPEC ); fields that do not
/// convert are left out.
pub(crate) fn bucket_key(key: &Document, spec: &CollectionSpec) -> Document {
    let mut out = Document::new();
    let t = spec.time_field.as_str();
    for (field, value) in key {
        let descending = direction(value).is_some_and(|d| d < 0.0);
        if field == t {
            let (first, second) = if descending {
                ("max", "min")
            } else {
                ("min", "max")
            };
            out.insert(format!("control.{first}.{t}"), value.clone());
            out.insert(format!("control.{second}.{t}"), value.clone());
        } else if let Some(rest) = meta_path(field, spec) {
            let name = if rest.is_empty() {
                "meta".to_owned()
            } else {
                format!("meta.{rest}")
            };
            out.insert(name, value.clone());
        } else {
            let (first, second) = if descending {
                ("max", "min")
            } else {
                ("min", "max")
            };
            out.insert(format!("control.{first}.{field}"), value.clone());
            out.insert(format!("control.{second}.{field}"), value.clone());
        }
    }
    out
}

/// `Some(rest)` when `field` is the meta field (`rest` empty) or a sub-field of it.
fn meta_path<'a>(field: &'a str, spec: &CollectionSpec) -> Option<&'a str> {
    let meta = spec.meta_field.as_deref()?;
    if field == meta {
        return Some("");
    }
    field.strip_prefix(meta)?.strip_prefix('.')
}

/// The sign of a numeric key value; `None` for non-numbers, zero and NaN.
fn direction(v: &Bson) -> Option<f64> {
    #[expect(clippy::cast_precision_loss, reason = "only the sign matters")]
    let d = match v {
        Bson::Int32(i) => f64::from(*i),
        Bson::Int64(i) => *i as f64,
        Bson::Double(d) => *d,
        Bson::Decimal128(d) => d.to_string().parse::<f64>().ok()?,
        _ => return None,
    };
    (d != 0.0 && !d.is_nan()).then_some(d)
}

fn reject(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::rejected(code, message)
}

/// An index type tscoll does not implement (SPEC allows it).
fn unsupported(kind: &str) -> Error {
    reject(
        ErrorCode::CannotCreateIndex,
        format!(
            "tscoll does not support '{kind}' indexes on time-series collections (SPEC R-13.5): \
             only ascending and descending indexes"
        ),
    )
}

/// Converts a user key pattern to bucket-form components, with MongoDB's rejections
/// (SPEC) and tscoll's.
///
/// # Errors
/// `CannotCreateIndex` for an empty or malformed pattern and for hashed, 2d, 2dsphere,
/// geoHaystack and wildcard indexes; `InvalidOptions` for text indexes; `BadValue` for a
/// non-numeric direction on the time field or a special type on a measurement field.
pub(crate) fn components(key: &Document, spec: &CollectionSpec) -> Result<Vec<Component>> {
    if key.is_empty() {
        return Err(reject(
            ErrorCode::CannotCreateIndex,
            "Empty object is not a valid index spec",
        ));
    }
    if key.len() > MAX_KEY_FIELDS {
        return Err(reject(
            ErrorCode::CannotCreateIndex,
            format!("an index key pattern has at most {MAX_KEY_FIELDS} fields"),
        ));
    }
    if key
        .values()
        .any(|v| matches!(v, Bson::String(s) if s == "text"))
    {
        return Err(reject(
            ErrorCode::InvalidOptions,
            "Text indexes are not supported on time-series collections",
        ));
    }
    let mut out = Vec::with_capacity(key.len());
    for (field, value) in key {
        if field.is_empty() || field.split('.').any(str::is_empty) {
            return Err(reject(
                ErrorCode::CannotCreateIndex,
                format!("index key field '{field}' is not a valid field path"),
            ));
        }
        if field == "$**" || field.ends_with(".$**") {
            return Err(unsupported("wildcard"));
        }
        if field.split('.').any(|p| p.starts_with('$')) {
            return Err(reject(
                ErrorCode::CannotCreateIndex,
                format!("index key field '{field}' cannot start with '$'"),
            ));
        }
        let dir = direction(value);
        if *field == spec.time_field {
            let Some(d) = dir else {
                if is_number(value) {
                    return Err(bad_key_value(value));
                }
                return Err(reject(
                    ErrorCode::BadValue,
                    format!(
                        "Invalid index spec for time-series collection: {key}. Indexes on the \
                         time field must be ascending or descending (numbers only): {field}: \
                         {value}"
                    ),
                ));
            };
            out.push(Component::Time {
                descending: d < 0.0,
            });
            continue;
        }
        if let Some(rest) = meta_path(field, spec) {
            let Some(d) = dir else {
                return Err(match value {
                    Bson::String(s)
                        if matches!(s.as_str(), "hashed" | "2d" | "2dsphere" | "geoHaystack") =>
                    {
                        unsupported(s)
                    }
                    Bson::String(s) => reject(
                        ErrorCode::CannotCreateIndex,
                        format!("Unknown index plugin '{s}'"),
                    ),
                    other => bad_key_value(other),
                });
            };
            out.push(Component::Meta {
                path: if rest.is_empty() {
                    Vec::new()
                } else {
                    rest.split('.').map(str::to_owned).collect()
                },
                descending: d < 0.0,
            });
            continue;
        }
        let Some(d) = dir else {
            if matches!(value, Bson::String(s) if s == "2dsphere") {
                return Err(unsupported("2dsphere"));
            }
            if is_number(value) {
                return Err(bad_key_value(value));
            }
            return Err(reject(
                ErrorCode::BadValue,
                format!(
                    "Invalid index spec for time-series collection: {key}. Indexes on \
                     measurement fields must be ascending or descending (numbers only), or \
                     '2dsphere': {field}: {value}"
                ),
            ));
        };
        out.push(Component::Measurement {
            path: field.split('.').map(str::to_owned).collect(),
            descending: d < 0.0,
        });
    }
    Ok(out)
}

fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

fn bad_key_value(v: &Bson) -> Error {
    reject(
        ErrorCode::CannotCreateIndex,
        format!(
            "Values in the index key pattern must be numbers other than 0 (ascending > 0, \
             descending < 0) or index type names, not {v}"
        ),
    )
}

/// Validates a `createIndex` request: key conversion and options (SPEC,
/// ), in MongoDB's order.
///
/// # Errors
/// Those of [`components`]; `InvalidOptions` for `unique`, `sparse` on a measurement field,
/// and TTL indexes without a partial filter on the meta field or on a non-time field;
/// `CannotCreateIndex` for `sparse` with `partialFilterExpression`, compound TTL indexes,
/// partial TTL indexes (tscoll does not implement them, SPEC) and bad names;
/// `BadValue` for a partial filter tscoll cannot evaluate and for the reserved name `_id_`.
pub(crate) fn validate(
    key: &Document,
    options: &IndexOptions,
    spec: &CollectionSpec,
) -> Result<Definition> {
    crate::document::require_storable("index key", key)?;
    if let Some(name) = &options.name {
        crate::document::require_nul_free("index name", name)?;
    }
    if let Some(filter) = &options.partial_filter_expression {
        crate::document::require_storable("partialFilterExpression", filter)?;
    }
    let components = components(key, spec)?;
    if options.unique {
        return Err(reject(
            ErrorCode::InvalidOptions,
            "Unique indexes are not supported on time-series collections",
        ));
    }
    if options.sparse
        && components
            .iter()
            .any(|c| matches!(c, Component::Measurement { .. }))
    {
        return Err(reject(
            ErrorCode::InvalidOptions,
            "Sparse indexes are not supported on time-series measurements",
        ));
    }
    if options.sparse && options.partial_filter_expression.is_some() {
        return Err(reject(
            ErrorCode::CannotCreateIndex,
            "cannot mix partialFilterExpression and sparse",
        ));
    }
    let partial = match &options.partial_filter_expression {
        Some(p) => Some((p.clone(), partial_filter(p, spec)?)),
        None => None,
    };
    if options.expire_after_seconds.is_some() {
        let on_meta = partial.as_ref().is_some_and(|(_, f)| {
            !f.preds.is_empty()
                && f.preds
                    .iter()
                    .all(|p| matches!(p, Pred::Meta { .. } | Pred::MetaIn { .. }))
        });
        if !on_meta {
            return Err(reject(
                ErrorCode::InvalidOptions,
                "TTL indexes on time-series collections require a partialFilterExpression on \
                 the metaField",
            ));
        }
        if key.len() != 1 {
            return Err(reject(
                ErrorCode::CannotCreateIndex,
                format!(
                    "TTL indexes are single-field indexes, compound indexes do not support TTL. \
                     Index spec: {key}"
                ),
            ));
        }
        if !matches!(components[0], Component::Time { .. }) {
            return Err(reject(
                ErrorCode::InvalidOptions,
                "TTL indexes on non-time fields are not supported on time-series collections",
            ));
        }
        return Err(reject(
            ErrorCode::CannotCreateIndex,
            "tscoll does not support partial TTL indexes on time-series collections (SPEC \
             R-10.5): set the collection's expireAfterSeconds instead",
        ));
    }
    let name = match &options.name {
        Some(n) => n.clone(),
        None => generated_name(key),
    };
    if name.is_empty() || name.contains('\0') {
        return Err(reject(
            ErrorCode::CannotCreateIndex,
            "an index name must be non-empty and without NUL bytes",
        ));
    }
    if name == "_id_" {
        return Err(reject(
            ErrorCode::BadValue,
            "The index name '_id_' is reserved for the _id index; a time-series collection is \
             clustered by bucket _id and has none (SPEC R-13.1)",
        ));
    }
    Ok(Definition {
        name,
        key: key.clone(),
        components,
        sparse: options.sparse,
        partial,
        hidden: options.hidden,
    })
}

/// A `partialFilterExpression` parsed: comparisons, `$in` and `$and` (what the index's
/// entries can be judged by, from a bucket's meta value and control record); `$or`, `$nor`,
/// `$not`, `$ne`, `$nin` and `$exists` are refused.
fn partial_filter(p: &Document, spec: &CollectionSpec) -> Result<Filter> {
    let bad = |e: String| {
        reject(
            ErrorCode::BadValue,
            format!("partialFilterExpression {p}: {e}"),
        )
    };
    let filter = Filter::parse(p, &spec.time_field, spec.meta_field.as_deref())
        .map_err(|e| bad(e.to_string()))?;
    if !filter.clauses.is_empty() {
        return Err(bad(
            "only comparisons, $in and $and are supported in a partial filter".to_owned(),
        ));
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::collection::TimeseriesOptions;

    fn spec() -> CollectionSpec {
        TimeseriesOptions::new("t")
            .meta_field("m")
            .validate()
            .expect("spec")
    }

    #[test]
    fn user_to_bucket_form() {
        let s = spec();
        let k = doc! { "m.a": 1, "t": -1, "x": 1, "y.z": -1, "m": 1 };
        assert_eq!(
            bucket_key(&k, &s),
            doc! {
                "meta.a": 1, "control.max.t": -1, "control.min.t": -1,
                "control.min.x": 1, "control.max.x": 1,
                "control.max.y.z": -1, "control.min.y.z": -1, "meta": 1,
            }
        );
        assert_eq!(
            components(&k, &s).expect("components"),
            vec![
                Component::Meta {
                    path: vec!["a".into()],
                    descending: false
                },
                Component::Time { descending: true },
                Component::Measurement {
                    path: vec!["x".into()],
                    descending: false
                },
                Component::Measurement {
                    path: vec!["y".into(), "z".into()],
                    descending: true
                },
                Component::Meta {
                    path: vec![],
                    descending: false
                },
            ]
        );
        // "mx" is not a sub-field of "m".
        assert!(matches!(
            components(&doc! { "mx": 1 }, &s).expect("c")[0],
            Component::Measurement { .. }
        ));
    }

    #[test]
    fn names() {
        assert_eq!(generated_name(&doc! { "m": 1, "t": 1 }), "m_1_t_1");
        assert_eq!(generated_name(&doc! { "x": -1, "m.a": 1.0 }), "x_-1_m.a_1");
        assert_eq!(generated_name(&doc! { "m": "hashed" }), "m_hashed");
    }
}
