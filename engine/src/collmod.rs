//! collMod (SPEC §12): coarser granularity, larger seconds parameters, `expireAfterSeconds`.
//! Stored buckets are untouched; open buckets stay open and take the new span (R-12.5).

use bson::{Bson, Document};

use crate::collection::{Collection, CollectionInner, bucketing};
use crate::error::{Error, ErrorCode, Result};
use crate::options::{
    CollectionSpec, Granularity, MAX_BUCKET_SPAN_SECONDS, expire_after_seconds_option, int_option,
    string_option,
};

/// collMod options that cannot be used on a time-series collection (SPEC R-12.4).
const FORBIDDEN: [&str; 7] = [
    "validator",
    "validationLevel",
    "validationAction",
    "viewOn",
    "pipeline",
    "prepareUnique",
    "changeStreamPreAndPostImages",
];

/// Fields of a collMod command that are not options.
const IGNORED: [&str; 3] = ["collMod", "writeConcern", "comment"];

fn invalid(msg: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::InvalidOptions, msg)
}

impl Collection {
    /// Changes the collection's options with a MongoDB `collMod` command document (SPEC §12),
    /// e.g. `{timeseries: {granularity: "minutes"}}`, `{timeseries: {bucketMaxSpanSeconds:
    /// 7200, bucketRoundingSeconds: 7200}}`, `{expireAfterSeconds: 3600}` or
    /// `{expireAfterSeconds: "off"}`. A `collMod` field naming the collection is ignored.
    /// Returns the new effective options, saved durably.
    ///
    /// - Granularity only gets coarser (R-12.1); the same granularity is a no-op.
    /// - `bucketMaxSpanSeconds` and `bucketRoundingSeconds` go together, equal, each at least
    ///   the current effective value, at most 31 536 000 (R-12.2); they remove the granularity.
    /// - `timeseries: {}` is a no-op (R-12.3); `timeseries` cannot be combined with another
    ///   option (R-12.4).
    /// - Stored buckets are untouched; open buckets stay open and take the new span; queries
    ///   use the new span from now on (R-12.5, R-14.4.5); a changed collection is no longer
    ///   fixed bucketing (R-12.6).
    /// - `expireAfterSeconds` applies at the next TTL pass (R-10.3).
    /// - `index: {name, hidden}` or `index: {keyPattern, hidden}` hides or unhides an index
    ///   given by name or by key pattern in user form (allowed alone, R-12.4).
    ///
    /// ```
    /// # use bson::doc;
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t"))?;
    /// let spec = coll.coll_mod(&doc! { "timeseries": { "granularity": "minutes" } })?;
    /// assert_eq!(spec.bucket_max_span_seconds, 86_400);
    /// let err = coll.coll_mod(&doc! { "timeseries": { "granularity": "seconds" } }).unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::InvalidOptions);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidOptions` for a forbidden transition, option or combination (messages as
    /// MongoDB's); `BadValue` for out-of-range seconds or an unknown granularity;
    /// `TypeMismatch` for values of the wrong type; `IDLUnknownField` for an unknown option
    /// inside `timeseries` or at the top level; `IndexNotFound` for an `index` option naming
    /// no index (by name or key pattern); [`Error::Storage`] when saving fails.
    pub fn coll_mod(&self, command: &Document) -> Result<CollectionSpec> {
        crate::storable::require_storable("collMod", command)?;
        self.inner.writable()?;
        let (spec, hide) = self.inner.coll_mod(command)?;
        match hide {
            Some((IndexTarget::Name(name), hidden)) => self.hide_index(&name, hidden)?,
            Some((IndexTarget::Key(keys), hidden)) => self.hide_index_by_key(&keys, hidden)?,
            None => {}
        }
        Ok(spec)
    }
}

/// The index a collMod's `index` option names.
pub(crate) enum IndexTarget {
    /// By name (`index: {name}`).
    Name(String),
    /// By key pattern in user form (`index: {keyPattern}`).
    Key(Document),
}

/// `index: {name | keyPattern, hidden}` of a collMod (SPEC R-12.4: allowed alone): the index
/// and whether to hide it.
fn index_hiding(ix: &Document) -> Result<(IndexTarget, bool)> {
    for (k, _) in ix {
        if !["name", "keyPattern", "hidden"].contains(&k.as_str()) {
            return Err(invalid(format!(
                "collMod 'index.{k}' cannot be changed on a time-series collection"
            )));
        }
    }
    let target = match (ix.get("name"), ix.get("keyPattern")) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "collMod 'index' takes either 'name' or 'keyPattern', not both",
            ));
        }
        (Some(Bson::String(n)), None) => IndexTarget::Name(n.clone()),
        (None, Some(Bson::Document(k))) => IndexTarget::Key(k.clone()),
        (Some(_), None) => return Err(invalid("collMod 'index.name' must be a string")),
        (None, Some(_)) => return Err(invalid("collMod 'index.keyPattern' must be an object")),
        (None, None) => {
            return Err(invalid(
                "collMod 'index' needs the index's 'name' or its 'keyPattern'",
            ));
        }
    };
    match ix.get("hidden") {
        Some(Bson::Boolean(h)) => Ok((target, *h)),
        _ => Err(invalid("collMod 'index' needs 'hidden': true or false")),
    }
}

impl CollectionInner {
    /// Validates and applies the collection options of a collMod; returns the new spec and
    /// the index hiding to apply, if any.
    fn coll_mod(
        &self,
        command: &Document,
    ) -> Result<(CollectionSpec, Option<(IndexTarget, bool)>)> {
        // Reads and direct writes see the store: rows held in memory are stored first.
        self.flush_open()?;
        let options: Vec<(&String, &Bson)> = command
            .iter()
            .filter(|(k, _)| !IGNORED.contains(&k.as_str()))
            .collect();
        for (k, _) in &options {
            if FORBIDDEN.contains(&k.as_str()) {
                return Err(invalid(format!(
                    "option '{k}' is not supported on a time-series collection"
                )));
            }
            if !matches!(
                k.as_str(),
                "timeseries"
                    | "expireAfterSeconds"
                    | "index"
                    | "timeseriesBucketsMayHaveMixedSchemaData"
            ) {
                return Err(Error::rejected(
                    ErrorCode::IdlUnknownField,
                    format!("BSON field 'collMod.{k}' is an unknown field"),
                ));
            }
        }
        let has = |name: &str| options.iter().any(|(k, _)| k.as_str() == name);
        if (has("timeseries") || has("timeseriesBucketsMayHaveMixedSchemaData"))
            && options.len() > 1
        {
            return Err(invalid(
                "'timeseries' cannot be modified with other options in the same collMod",
            ));
        }
        let hide = match command.get("index") {
            None => None,
            Some(Bson::Document(ix)) => Some(index_hiding(ix)?),
            Some(_) => {
                return Err(Error::rejected(
                    ErrorCode::TypeMismatch,
                    "BSON field 'collMod.index' is the wrong type, expected an object",
                ));
            }
        };
        let mut spec = self
            .spec
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = spec.clone();
        for (k, v) in &options {
            match k.as_str() {
                "timeseries" => {
                    let Bson::Document(ts) = v else {
                        return Err(Error::rejected(
                            ErrorCode::TypeMismatch,
                            "BSON field 'collMod.timeseries' is the wrong type, expected an object",
                        ));
                    };
                    next = modified_bucketing(&spec, ts)?;
                }
                "expireAfterSeconds" => {
                    next.expire_after_seconds = match v {
                        Bson::String(s) if s == "off" => None,
                        Bson::String(_) => {
                            return Err(invalid(
                                "'expireAfterSeconds' must be a number or the string \"off\"",
                            ));
                        }
                        other => Some(expire_after_seconds_option(other)?),
                    };
                }
                // The flag only matters to mixed-schema buckets, which tscoll never writes.
                _ => {}
            }
        }
        if next != *spec {
            let previous = std::mem::replace(&mut *spec, next.clone());
            drop(spec);
            if let Err(e) = self.save_record() {
                *self
                    .spec
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = previous;
                return Err(e);
            }
            if !previous.same_bucketing(&next) {
                // R-12.5: open buckets stay open and are checked against the new span.
                self.catalog.set_spec(bucketing(&next));
            }
        }
        Ok((next, hide))
    }
}

/// The spec after `timeseries: {...}` of a collMod (SPEC R-12.1, R-12.2, R-12.3, R-12.6).
fn modified_bucketing(current: &CollectionSpec, ts: &Document) -> Result<CollectionSpec> {
    let mut granularity = None;
    let mut span = None;
    let mut rounding = None;
    for (k, v) in ts {
        match k.as_str() {
            "granularity" => granularity = Some(Granularity::parse(&string_option(k, v)?)?),
            "bucketMaxSpanSeconds" => span = Some(int_option(k, v)?),
            "bucketRoundingSeconds" => rounding = Some(int_option(k, v)?),
            "timeField" | "metaField" => {
                return Err(invalid(format!(
                    "'timeseries.{k}' cannot be changed by collMod"
                )));
            }
            other => {
                return Err(Error::rejected(
                    ErrorCode::IdlUnknownField,
                    format!("BSON field 'collMod.timeseries.{other}' is an unknown field"),
                ));
            }
        }
    }
    for (name, v) in [
        ("bucketMaxSpanSeconds", span),
        ("bucketRoundingSeconds", rounding),
    ] {
        if let Some(v) = v
            && !(1..=MAX_BUCKET_SPAN_SECONDS).contains(&v)
        {
            return Err(Error::rejected(
                ErrorCode::BadValue,
                format!("'timeseries.{name}' must be between 1 and {MAX_BUCKET_SPAN_SECONDS}"),
            ));
        }
    }
    let mut next = current.clone();
    if let Some(g) = granularity {
        if rounding.is_some() {
            return Err(invalid(
                "Timeseries 'bucketRoundingSeconds' cannot be set alongside the granularity parameter",
            ));
        }
        if let Some(s) = span
            && s != g.bucket_max_span_seconds()
        {
            return Err(invalid(format!(
                "Timeseries 'bucketMaxSpanSeconds' cannot be set to a value other than the default of {} for the provided granularity",
                g.bucket_max_span_seconds()
            )));
        }
        match current.granularity {
            Some(c) if c == g => return Ok(next), // no-op
            Some(c) if c < g => {}
            Some(_) => {
                return Err(invalid(
                    "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.",
                ));
            }
            None => {
                // From fixed bucketing: both presets must be at least the current values.
                if g.bucket_max_span_seconds() < current.bucket_max_span_seconds
                    || g.bucket_rounding_seconds() < current.bucket_rounding_seconds
                {
                    return Err(invalid(format!(
                        "Invalid transition for timeseries.granularity: '{}' has a smaller bucketMaxSpanSeconds or bucketRoundingSeconds than the current values",
                        g.as_str()
                    )));
                }
            }
        }
        next.granularity = Some(g);
        next.bucket_max_span_seconds = g.bucket_max_span_seconds();
        next.bucket_rounding_seconds = g.bucket_rounding_seconds();
        next.fixed_bucketing = false;
        return Ok(next);
    }
    match (span, rounding) {
        (None, None) => Ok(next), // R-12.3
        (Some(_), None) | (None, Some(_)) => Err(invalid(
            "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
        )),
        (Some(s), Some(r)) if s != r => Err(invalid(
            "Timeseries 'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'",
        )),
        (Some(s), Some(_)) => {
            if s < current.bucket_max_span_seconds {
                return Err(invalid(
                    "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition",
                ));
            }
            if s < current.bucket_rounding_seconds {
                return Err(invalid(
                    "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition",
                ));
            }
            if s == current.bucket_max_span_seconds && s == current.bucket_rounding_seconds {
                return Ok(next); // equal to the current values: no-op
            }
            next.granularity = None;
            next.bucket_max_span_seconds = s;
            next.bucket_rounding_seconds = s;
            next.fixed_bucketing = false;
            Ok(next)
        }
    }
}
