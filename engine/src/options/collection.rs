//! Collection options and their validation (SPEC §1).

use bson::{Bson, Document, doc};

use crate::error::{Error, ErrorCode, Result};

/// Largest allowed `bucketMaxSpanSeconds` / `bucketRoundingSeconds`: 365 days (SPEC §0).
pub const MAX_BUCKET_SPAN_SECONDS: i64 = 31_536_000;

/// Largest allowed `expireAfterSeconds`: 2^62 − 1 (SPEC §1.4: 2^62 itself is rejected, as
/// MongoDB rejects `NumberLong("4611686018427387904")`).
pub const MAX_EXPIRE_AFTER_SECONDS: i64 = (1 << 62) - 1;

/// Preset bucketing of a collection (SPEC R-1.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Granularity {
    /// Rounding 60 s, span 3 600 s.
    Seconds,
    /// Rounding 3 600 s, span 86 400 s.
    Minutes,
    /// Rounding 86 400 s, span 2 592 000 s.
    Hours,
}

impl Granularity {
    /// The preset `bucketRoundingSeconds` (SPEC R-1.2.1).
    #[must_use]
    pub fn bucket_rounding_seconds(self) -> i64 {
        match self {
            Granularity::Seconds => 60,
            Granularity::Minutes => 3_600,
            Granularity::Hours => 86_400,
        }
    }

    /// The preset `bucketMaxSpanSeconds` (SPEC R-1.2.1).
    #[must_use]
    pub fn bucket_max_span_seconds(self) -> i64 {
        match self {
            Granularity::Seconds => 3_600,
            Granularity::Minutes => 86_400,
            Granularity::Hours => 2_592_000,
        }
    }

    /// The option's string form: `"seconds"`, `"minutes"` or `"hours"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Seconds => "seconds",
            Granularity::Minutes => "minutes",
            Granularity::Hours => "hours",
        }
    }

    /// Parses the string form.
    ///
    /// # Errors
    /// `BadValue` for any other string (SPEC §1.1).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "seconds" => Ok(Granularity::Seconds),
            "minutes" => Ok(Granularity::Minutes),
            "hours" => Ok(Granularity::Hours),
            other => Err(Error::rejected(
                ErrorCode::BadValue,
                format!(
                    "Enumeration value '{other}' for field 'timeseries.granularity' is not a valid value"
                ),
            )),
        }
    }
}

/// The options of a time-series collection as a user gives them (SPEC §1.1, §1.5).
///
/// Build with [`TimeseriesOptions::new`] and the setters, or parse a MongoDB `create` command
/// with [`TimeseriesOptions::from_create_command`]. [`TimeseriesOptions::validate`] checks
/// every rule of SPEC §1.4 and gives the effective [`CollectionSpec`].
///
/// ```
/// use tscoll_engine::{Granularity, TimeseriesOptions};
/// let opts = TimeseriesOptions::new("ts").meta_field("meta").granularity(Granularity::Minutes);
/// let spec = opts.validate()?;
/// assert_eq!(spec.bucket_max_span_seconds, 86_400);
/// # Ok::<(), tscoll_engine::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeseriesOptions {
    /// `timeField`: top-level field holding each measurement's UTC datetime. Required.
    pub time_field: String,
    /// `metaField`: top-level field naming the series. Optional.
    pub meta_field: Option<String>,
    /// `granularity`. Default = seconds when no bucketing option is given (R-1.2.2).
    pub granularity: Option<Granularity>,
    /// `bucketMaxSpanSeconds` (s). Goes with `bucket_rounding_seconds` (R-1.2.3).
    pub bucket_max_span_seconds: Option<i64>,
    /// `bucketRoundingSeconds` (s). Goes with `bucket_max_span_seconds` (R-1.2.3).
    pub bucket_rounding_seconds: Option<i64>,
    /// `expireAfterSeconds` (s): TTL of whole buckets (SPEC §1.5, §10). Default = none.
    pub expire_after_seconds: Option<i64>,
    /// Rollup resolutions (ms, each a whole number of seconds from 1 s to 366 days, at most
    /// [`MAX_ROLLUPS`]): per bucket and window of each, the count, sums, min, max, first and
    /// last of every numeric field, kept on ingest and used by aggregates whose windows are
    /// multiples of one (docs/semantics.md, "Rollups"). Not a MongoDB option. Default = none.
    pub rollups: Vec<i64>,
}

/// Most rollup resolutions a collection may declare.
pub const MAX_ROLLUPS: usize = 4;

/// Largest rollup resolution (ms): 366 days.
const MAX_ROLLUP_MS: i64 = 366 * 86_400_000;

impl TimeseriesOptions {
    /// Options with the given time field and nothing else.
    #[must_use]
    pub fn new(time_field: impl Into<String>) -> Self {
        TimeseriesOptions {
            time_field: time_field.into(),
            ..Self::default()
        }
    }

    /// Sets `metaField`.
    #[must_use]
    pub fn meta_field(mut self, meta_field: impl Into<String>) -> Self {
        self.meta_field = Some(meta_field.into());
        self
    }

    /// Sets `granularity`.
    #[must_use]
    pub fn granularity(mut self, granularity: Granularity) -> Self {
        self.granularity = Some(granularity);
        self
    }

    /// Sets `bucketMaxSpanSeconds` and `bucketRoundingSeconds` (custom bucketing, R-1.2.3).
    #[must_use]
    pub fn bucket_seconds(mut self, max_span_seconds: i64, rounding_seconds: i64) -> Self {
        self.bucket_max_span_seconds = Some(max_span_seconds);
        self.bucket_rounding_seconds = Some(rounding_seconds);
        self
    }

    /// Sets `expireAfterSeconds`.
    #[must_use]
    pub fn expire_after_seconds(mut self, seconds: i64) -> Self {
        self.expire_after_seconds = Some(seconds);
        self
    }

    /// Sets the rollup resolutions (ms), e.g. `[60_000, 3_600_000]` for minutes and hours.
    #[must_use]
    pub fn rollups(mut self, resolutions_ms: &[i64]) -> Self {
        self.rollups = resolutions_ms.to_vec();
        self
    }

    /// Parses a MongoDB `create` command document such as
    /// `{timeseries: {timeField: "ts", metaField: "m"}, expireAfterSeconds: 3600}`.
    /// The collection name (`create: <name>`) may be present and is ignored.
    ///
    /// # Errors
    /// SPEC §1.1/§1.4: `TypeMismatch` when `timeseries` is not a document or an option has the
    /// wrong type, `IDLUnknownField` for an unknown field inside `timeseries`,
    /// `IDLFailedToParse` when `timeField` is missing, `InvalidOptions` for `capped`, `size`,
    /// `validator`, ... alongside `timeseries`, `BadValue` for an unknown granularity.
    pub fn from_create_command(cmd: &Document) -> Result<Self> {
        const NOT_ALLOWED: [&str; 11] = [
            "capped",
            "size",
            "max",
            "autoIndexId",
            "idIndex",
            "validator",
            "validationLevel",
            "validationAction",
            "viewOn",
            "pipeline",
            "clusteredIndex",
        ];
        const ALLOWED: [&str; 7] = [
            "create",
            "timeseries",
            "expireAfterSeconds",
            "storageEngine",
            "indexOptionDefaults",
            "collation",
            "writeConcern",
        ];
        let ts = match cmd.get("timeseries") {
            Some(Bson::Document(d)) => d,
            Some(_) => {
                return Err(Error::rejected(
                    ErrorCode::TypeMismatch,
                    "BSON field 'timeseries' is the wrong type, expected an object",
                ));
            }
            None => {
                return Err(Error::rejected(
                    ErrorCode::IdlFailedToParse,
                    "'timeseries' is required to create a time-series collection",
                ));
            }
        };
        for (key, value) in cmd {
            if key == "capped" && value == &Bson::Boolean(false) || key == "comment" {
                continue;
            }
            if NOT_ALLOWED.contains(&key.as_str()) {
                return Err(Error::rejected(
                    ErrorCode::InvalidOptions,
                    format!("'timeseries' is not allowed with '{key}'"),
                ));
            }
            if !ALLOWED.contains(&key.as_str()) {
                return Err(Error::rejected(
                    ErrorCode::InvalidOptions,
                    format!("unknown create option '{key}'"),
                ));
            }
        }
        let mut opts = TimeseriesOptions::default();
        let mut time_field = None;
        for (key, value) in ts {
            match key.as_str() {
                "timeField" => time_field = Some(string_option("timeField", value)?),
                "metaField" => opts.meta_field = Some(string_option("metaField", value)?),
                "granularity" => {
                    opts.granularity =
                        Some(Granularity::parse(&string_option("granularity", value)?)?);
                }
                "bucketMaxSpanSeconds" => {
                    opts.bucket_max_span_seconds = Some(int_option("bucketMaxSpanSeconds", value)?);
                }
                "bucketRoundingSeconds" => {
                    opts.bucket_rounding_seconds =
                        Some(int_option("bucketRoundingSeconds", value)?);
                }
                other => {
                    return Err(Error::rejected(
                        ErrorCode::IdlUnknownField,
                        format!("BSON field 'timeseries.{other}' is an unknown field"),
                    ));
                }
            }
        }
        opts.time_field = time_field.ok_or_else(|| {
            Error::rejected(
                ErrorCode::IdlFailedToParse,
                "BSON field 'timeseries.timeField' is missing but a required field",
            )
        })?;
        if let Some(v) = cmd.get("expireAfterSeconds") {
            opts.expire_after_seconds = Some(expire_after_seconds_option(v)?);
        }
        Ok(opts)
    }

    /// Checks every rule of SPEC §1.4 and returns the effective options.
    ///
    /// # Errors
    /// `InvalidOptions`, `BadValue` as listed in SPEC §1.4; the message names the option.
    /// `BadValue` for rollups (not in SPEC; docs/semantics.md R-14.4.8): a resolution given
    /// twice, more than [`MAX_ROLLUPS`], or one that is not a whole number of seconds from
    /// 1 s to 366 days.
    pub fn validate(&self) -> Result<CollectionSpec> {
        check_field_name("timeField", &self.time_field)?;
        if self.time_field.starts_with('$') {
            return Err(Error::rejected(
                ErrorCode::BadValue,
                "'timeField' cannot start with a '$'",
            ));
        }
        if let Some(meta) = &self.meta_field {
            check_field_name("metaField", meta)?;
            if meta == "_id" {
                return Err(Error::rejected(
                    ErrorCode::InvalidOptions,
                    "'metaField' cannot be \"_id\"",
                ));
            }
            if *meta == self.time_field {
                return Err(Error::rejected(
                    ErrorCode::InvalidOptions,
                    "'metaField' cannot be the same as 'timeField'",
                ));
            }
        }
        for (name, value) in [
            ("bucketMaxSpanSeconds", self.bucket_max_span_seconds),
            ("bucketRoundingSeconds", self.bucket_rounding_seconds),
        ] {
            if let Some(v) = value
                && !(1..=MAX_BUCKET_SPAN_SECONDS).contains(&v)
            {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    format!("'{name}' must be between 1 and {MAX_BUCKET_SPAN_SECONDS}, got {v}"),
                ));
            }
        }
        if let Some(e) = self.expire_after_seconds {
            check_expire_after_seconds(e)?;
        }
        let rollups = check_rollups(&self.rollups)?;
        let (granularity, span, rounding) = match self.granularity {
            Some(g) => {
                if self.bucket_rounding_seconds.is_some() {
                    return Err(Error::rejected(
                        ErrorCode::InvalidOptions,
                        "'bucketRoundingSeconds' cannot be set alongside the granularity parameter",
                    ));
                }
                if let Some(span) = self.bucket_max_span_seconds
                    && span != g.bucket_max_span_seconds()
                {
                    return Err(Error::rejected(
                        ErrorCode::InvalidOptions,
                        format!(
                            "'bucketMaxSpanSeconds' cannot be set to a value other than the default of {} for the provided granularity",
                            g.bucket_max_span_seconds()
                        ),
                    ));
                }
                (
                    Some(g),
                    g.bucket_max_span_seconds(),
                    g.bucket_rounding_seconds(),
                )
            }
            None => match (self.bucket_max_span_seconds, self.bucket_rounding_seconds) {
                (None, None) => {
                    let g = Granularity::Seconds;
                    (
                        Some(g),
                        g.bucket_max_span_seconds(),
                        g.bucket_rounding_seconds(),
                    )
                }
                (Some(span), Some(rounding)) if span == rounding => (None, span, rounding),
                _ => {
                    return Err(Error::rejected(
                        ErrorCode::InvalidOptions,
                        "'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'",
                    ));
                }
            },
        };
        Ok(CollectionSpec {
            time_field: self.time_field.clone(),
            meta_field: self.meta_field.clone(),
            granularity,
            bucket_max_span_seconds: span,
            bucket_rounding_seconds: rounding,
            expire_after_seconds: self.expire_after_seconds,
            fixed_bucketing: granularity.is_none(),
            rollups,
        })
    }
}

/// The effective, validated options of a collection, as stored (SPEC R-1.2.4, R-1.2.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionSpec {
    /// `timeField`.
    pub time_field: String,
    /// `metaField`, if any.
    pub meta_field: Option<String>,
    /// The granularity, or `None` for custom (fixed) bucketing.
    pub granularity: Option<Granularity>,
    /// Effective `bucketMaxSpanSeconds` (s).
    pub bucket_max_span_seconds: i64,
    /// Effective `bucketRoundingSeconds` (s).
    pub bucket_rounding_seconds: i64,
    /// `expireAfterSeconds` (s), if set.
    pub expire_after_seconds: Option<i64>,
    /// Span = rounding and never changed since creation (SPEC R-14.4.6, R-12.6).
    pub fixed_bucketing: bool,
    /// Rollup resolutions (ms), ascending ([`TimeseriesOptions::rollups`]).
    pub rollups: Vec<i64>,
}

impl CollectionSpec {
    /// Whether two creations describe the same collection (SPEC R-1.4.1): time field, meta
    /// field, effective granularity, span and rounding equal.
    #[must_use]
    pub fn same_bucketing(&self, other: &CollectionSpec) -> bool {
        self.time_field == other.time_field
            && self.meta_field == other.meta_field
            && self.granularity == other.granularity
            && self.bucket_max_span_seconds == other.bucket_max_span_seconds
            && self.bucket_rounding_seconds == other.bucket_rounding_seconds
    }

    /// The options as `listCollections` reports them (SPEC R-1.2.4): with a granularity,
    /// `granularity` and `bucketMaxSpanSeconds`; with fixed bucketing both seconds values.
    /// `expireAfterSeconds` is added beside `timeseries` when set.
    #[must_use]
    pub fn to_document(&self) -> Document {
        let mut ts = doc! { "timeField": &self.time_field };
        if let Some(m) = &self.meta_field {
            ts.insert("metaField", m);
        }
        match self.granularity {
            Some(g) => {
                ts.insert("granularity", g.as_str());
                ts.insert("bucketMaxSpanSeconds", self.bucket_max_span_seconds);
            }
            None => {
                ts.insert("bucketRoundingSeconds", self.bucket_rounding_seconds);
                ts.insert("bucketMaxSpanSeconds", self.bucket_max_span_seconds);
            }
        }
        let mut out = doc! { "timeseries": ts };
        if let Some(e) = self.expire_after_seconds {
            out.insert("expireAfterSeconds", e);
        }
        out
    }

    /// The persisted form (all effective values): `timeField`, `bucketMaxSpanSeconds`,
    /// `bucketRoundingSeconds`, `fixedBucketing`, and when set `metaField`, `granularity`,
    /// `expireAfterSeconds`, `rollups`. [`CollectionSpec::from_stored`] reads it back; a
    /// cluster's workers send it to their coordinator.
    #[must_use]
    pub fn to_stored(&self) -> Document {
        let mut d = doc! {
            "timeField": &self.time_field,
            "bucketMaxSpanSeconds": self.bucket_max_span_seconds,
            "bucketRoundingSeconds": self.bucket_rounding_seconds,
            "fixedBucketing": self.fixed_bucketing,
        };
        if let Some(m) = &self.meta_field {
            d.insert("metaField", m);
        }
        if let Some(g) = self.granularity {
            d.insert("granularity", g.as_str());
        }
        if let Some(e) = self.expire_after_seconds {
            d.insert("expireAfterSeconds", e);
        }
        if !self.rollups.is_empty() {
            d.insert("rollups", self.rollups.clone());
        }
        d
    }

    /// Reads the persisted form ([`CollectionSpec::to_stored`]) back; `None` when `d` is not
    /// one.
    #[must_use]
    pub fn from_stored(d: &Document) -> Option<CollectionSpec> {
        Some(CollectionSpec {
            time_field: d.get_str("timeField").ok()?.to_owned(),
            meta_field: d.get_str("metaField").ok().map(str::to_owned),
            granularity: match d.get_str("granularity") {
                Ok(g) => Some(Granularity::parse(g).ok()?),
                Err(_) => None,
            },
            bucket_max_span_seconds: d.get_i64("bucketMaxSpanSeconds").ok()?,
            bucket_rounding_seconds: d.get_i64("bucketRoundingSeconds").ok()?,
            expire_after_seconds: d.get_i64("expireAfterSeconds").ok(),
            fixed_bucketing: d.get_bool("fixedBucketing").ok()?,
            rollups: match d.get("rollups") {
                None => Vec::new(),
                // Checked as at creation: a resolution out of range is a damaged record.
                Some(Bson::Array(a)) => {
                    check_rollups(&a.iter().map(|v| v.as_i64()).collect::<Option<Vec<i64>>>()?)
                        .ok()?
                }
                Some(_) => return None,
            },
        })
    }
}

/// The rollup resolutions, checked and sorted.
fn check_rollups(rollups: &[i64]) -> Result<Vec<i64>> {
    let mut out = rollups.to_vec();
    out.sort_unstable();
    out.dedup();
    if out.len() != rollups.len() {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            "a rollup resolution is given twice",
        ));
    }
    if out.len() > MAX_ROLLUPS {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!(
                "at most {MAX_ROLLUPS} rollup resolutions, got {}",
                out.len()
            ),
        ));
    }
    if let Some(bad) = out
        .iter()
        .find(|&&r| !(1000..=MAX_ROLLUP_MS).contains(&r) || r % 1000 != 0)
    {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!(
                "a rollup resolution must be a whole number of seconds from 1 s to 366 days, got {bad} ms"
            ),
        ));
    }
    Ok(out)
}

fn check_field_name(option: &str, name: &str) -> Result<()> {
    if name.contains('\0') {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!("'{option}' cannot contain a NUL byte"),
        ));
    }
    if name.contains('.') {
        return Err(Error::rejected(
            ErrorCode::InvalidOptions,
            format!("'{option}' must be a top-level field and not contain a '.'"),
        ));
    }
    Ok(())
}

fn check_expire_after_seconds(e: i64) -> Result<()> {
    if e < 0 {
        return Err(Error::rejected(
            ErrorCode::InvalidOptions,
            "'expireAfterSeconds' must be a non-negative number",
        ));
    }
    if e > MAX_EXPIRE_AFTER_SECONDS {
        return Err(Error::rejected(
            ErrorCode::InvalidOptions,
            format!(
                "'expireAfterSeconds' must be less than 2^62 ({}), got {e}",
                MAX_EXPIRE_AFTER_SECONDS + 1
            ),
        ));
    }
    Ok(())
}

pub(crate) fn string_option(name: &str, value: &Bson) -> Result<String> {
    match value {
        Bson::String(s) => Ok(s.clone()),
        _ => Err(Error::rejected(
            ErrorCode::TypeMismatch,
            format!("BSON field 'timeseries.{name}' is the wrong type, expected a string"),
        )),
    }
}

pub(crate) fn int_option(name: &str, value: &Bson) -> Result<i64> {
    let v = match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        #[expect(
            clippy::cast_possible_truncation,
            reason = "checked to be integral and in range"
        )]
        Bson::Double(d) if d.fract() == 0.0 && d.abs() < 9.0e15 => *d as i64,
        _ => {
            return Err(Error::rejected(
                ErrorCode::TypeMismatch,
                format!("BSON field 'timeseries.{name}' is the wrong type, expected an integer"),
            ));
        }
    };
    Ok(v)
}

/// Parses an `expireAfterSeconds` value of a create command (SPEC §1.5).
pub(crate) fn expire_after_seconds_option(value: &Bson) -> Result<i64> {
    let v = match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        #[expect(
            clippy::cast_possible_truncation,
            reason = "saturating conversion is intended"
        )]
        Bson::Double(d) if d.is_finite() => d.trunc() as i64,
        _ => {
            return Err(Error::rejected(
                ErrorCode::TypeMismatch,
                "'expireAfterSeconds' must be a number",
            ));
        }
    };
    check_expire_after_seconds(v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_spec_reads_back_and_damaged_rollups_do_not() {
        let spec = TimeseriesOptions::new("t")
            .rollups(&[3_600_000, 60_000])
            .validate()
            .expect("valid");
        let stored = spec.to_stored();
        assert_eq!(CollectionSpec::from_stored(&stored), Some(spec));
        for bad in [
            vec![Bson::Int64(0)],
            vec![Bson::Int64(1500)],
            vec![Bson::Int64(-1000)],
        ] {
            let mut d = stored.clone();
            d.insert("rollups", bad);
            assert_eq!(CollectionSpec::from_stored(&d), None);
        }
    }
}
