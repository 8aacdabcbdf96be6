//! SPEC §1 conformance: collection options, bucketing presets, validation errors at create time
//! (§1.4), idempotent create, reporting and persistence across reopening.

use bson::{Bson, Document, doc};
use tscoll_engine::{
    Database, DatabaseOptions, ErrorCode, Granularity, MAX_BUCKET_SPAN_SECONDS,
    MAX_EXPIRE_AFTER_SECONDS, TimeseriesOptions,
};

/// The error category of validating `opts`, panicking when it validates.
fn validate_err(opts: &TimeseriesOptions) -> (ErrorCode, String) {
    match opts.validate() {
        Ok(spec) => panic!("{opts:?} validated to {spec:?}, expected an error"),
        Err(e) => (e.code(), e.to_string()),
    }
}

/// The error category of parsing and validating a create command.
fn create_cmd_err(cmd: &Document) -> ErrorCode {
    match TimeseriesOptions::from_create_command(cmd).and_then(|o| o.validate()) {
        Ok(spec) => panic!("{cmd} was accepted as {spec:?}, expected an error"),
        Err(e) => e.code(),
    }
}

fn create_cmd_ok(cmd: &Document) -> tscoll_engine::CollectionSpec {
    let opts = TimeseriesOptions::from_create_command(cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
    opts.validate().unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

fn ts(time_field: &str) -> TimeseriesOptions {
    TimeseriesOptions::new(time_field)
}

/// Options with the two bucketing seconds set independently (either may be absent).
fn with_seconds(span: Option<i64>, rounding: Option<i64>) -> TimeseriesOptions {
    let mut o = ts("t");
    o.bucket_max_span_seconds = span;
    o.bucket_rounding_seconds = rounding;
    o
}

// ---- §1.4 table --------------------------------------------------------------------------

#[test]
fn r_1_4_time_field_with_dot_is_invalid_options() {
    let (code, msg) = validate_err(&ts("a.b"));
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(
        msg.contains("'timeField' must be a top-level field and not contain a '.'"),
        "{msg}"
    );
}

#[test]
fn r_1_4_meta_field_with_dot_is_invalid_options() {
    let (code, msg) = validate_err(&ts("t").meta_field("m.x"));
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(
        msg.contains("'metaField' must be a top-level field and not contain a '.'"),
        "{msg}"
    );
}

#[test]
fn r_1_4_meta_field_id_is_invalid_options() {
    let (code, msg) = validate_err(&ts("t").meta_field("_id"));
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(msg.contains("'metaField' cannot be \"_id\""), "{msg}");
}

#[test]
fn r_1_4_meta_field_equal_to_time_field_is_invalid_options() {
    let (code, msg) = validate_err(&ts("t").meta_field("t"));
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(
        msg.contains("'metaField' cannot be the same as 'timeField'"),
        "{msg}"
    );
}

#[test]
fn r_1_4_nul_byte_in_field_names_is_bad_value() {
    assert_eq!(validate_err(&ts("t\0x")).0, ErrorCode::BadValue);
    assert_eq!(
        validate_err(&ts("t").meta_field("m\0")).0,
        ErrorCode::BadValue
    );
}

#[test]
fn r_1_4_time_field_starting_with_dollar_is_bad_value() {
    assert_eq!(validate_err(&ts("$t")).0, ErrorCode::BadValue);
}

#[test]
fn r_1_4_empty_meta_field_is_allowed() {
    let spec = ts("t")
        .meta_field("")
        .validate()
        .expect("metaField \"\" is allowed");
    assert_eq!(spec.meta_field.as_deref(), Some(""));
}

#[test]
fn r_1_4_only_span_or_only_rounding_is_invalid_options() {
    assert_eq!(
        validate_err(&with_seconds(Some(3600), None)).0,
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        validate_err(&with_seconds(None, Some(3600))).0,
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": { "timeField": "t", "bucketMaxSpanSeconds": 100 } }),
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": { "timeField": "t", "bucketRoundingSeconds": 100 } }),
        ErrorCode::InvalidOptions
    );
}

#[test]
fn r_1_4_span_different_from_rounding_is_invalid_options() {
    let (code, msg) = validate_err(&ts("t").bucket_seconds(3600, 60));
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(
        msg.contains("'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'"),
        "{msg}"
    );
}

#[test]
fn r_1_4_granularity_with_other_span_is_invalid_options() {
    for (g, preset) in [
        (Granularity::Seconds, 3_600),
        (Granularity::Minutes, 86_400),
        (Granularity::Hours, 2_592_000),
    ] {
        let mut o = ts("t").granularity(g);
        o.bucket_max_span_seconds = Some(preset + 1);
        let (code, msg) = validate_err(&o);
        assert_eq!(code, ErrorCode::InvalidOptions, "{g:?}");
        assert!(
            msg.contains(&format!(
                "'bucketMaxSpanSeconds' cannot be set to a value other than the default of {preset} for the provided granularity"
            )),
            "{msg}"
        );
    }
}

#[test]
fn r_1_4_granularity_with_preset_span_is_allowed() {
    let mut o = ts("t").granularity(Granularity::Minutes);
    o.bucket_max_span_seconds = Some(86_400);
    let spec = o
        .validate()
        .expect("the preset span may be given alongside the granularity");
    assert_eq!(spec.granularity, Some(Granularity::Minutes));
    assert_eq!(spec.bucket_max_span_seconds, 86_400);
    assert_eq!(spec.bucket_rounding_seconds, 3_600);
}

#[test]
fn r_1_4_granularity_with_any_rounding_is_invalid_options() {
    for rounding in [60, 61, 3_600] {
        let mut o = ts("t").granularity(Granularity::Seconds);
        o.bucket_rounding_seconds = Some(rounding);
        let (code, msg) = validate_err(&o);
        assert_eq!(code, ErrorCode::InvalidOptions, "rounding {rounding}");
        assert!(
            msg.contains(
                "'bucketRoundingSeconds' cannot be set alongside the granularity parameter"
            ),
            "{msg}"
        );
    }
    // Even the preset rounding together with the preset span.
    let mut o = ts("t").granularity(Granularity::Seconds);
    o.bucket_max_span_seconds = Some(3_600);
    o.bucket_rounding_seconds = Some(60);
    assert_eq!(validate_err(&o).0, ErrorCode::InvalidOptions);
}

#[test]
fn r_1_4_bucketing_seconds_out_of_range_is_bad_value() {
    for v in [0, -1, MAX_BUCKET_SPAN_SECONDS + 1, i64::from(i32::MAX)] {
        assert_eq!(
            validate_err(&ts("t").bucket_seconds(v, v)).0,
            ErrorCode::BadValue,
            "{v}"
        );
        let cmd = doc! { "timeseries": { "timeField": "t", "bucketMaxSpanSeconds": v, "bucketRoundingSeconds": v } };
        assert_eq!(create_cmd_err(&cmd), ErrorCode::BadValue, "{v}");
    }
    assert_eq!(MAX_BUCKET_SPAN_SECONDS, 31_536_000);
    for v in [1, 31_536_000] {
        let spec = ts("t")
            .bucket_seconds(v, v)
            .validate()
            .expect("bounds are inclusive");
        assert_eq!(
            (spec.bucket_max_span_seconds, spec.bucket_rounding_seconds),
            (v, v)
        );
    }
}

#[test]
fn r_1_4_expire_after_seconds_negative_is_invalid_options() {
    assert_eq!(
        validate_err(&ts("t").expire_after_seconds(-1)).0,
        ErrorCode::InvalidOptions
    );
    let cmd = doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": -1 };
    assert_eq!(create_cmd_err(&cmd), ErrorCode::InvalidOptions);
    let cmd = doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": -1.5 };
    assert_eq!(create_cmd_err(&cmd), ErrorCode::InvalidOptions);
}

#[test]
fn r_1_4_expire_after_seconds_of_2_pow_62_and_above_is_invalid_options() {
    assert_eq!(MAX_EXPIRE_AFTER_SECONDS, (1_i64 << 62) - 1);
    for e in [1_i64 << 62, (1 << 62) + 1, i64::MAX] {
        let (code, message) = validate_err(&ts("t").expire_after_seconds(e));
        assert_eq!(code, ErrorCode::InvalidOptions, "{e}");
        assert!(message.contains("4611686018427387904"), "{message}");
        let cmd = doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": e };
        assert_eq!(create_cmd_err(&cmd), ErrorCode::InvalidOptions, "{e}");
    }
    // 2^62 − 1 and 0 are allowed (§1.5).
    for e in [0, (1_i64 << 62) - 1] {
        let spec = ts("t")
            .expire_after_seconds(e)
            .validate()
            .expect("in range");
        assert_eq!(spec.expire_after_seconds, Some(e));
        let spec =
            create_cmd_ok(&doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": e });
        assert_eq!(spec.expire_after_seconds, Some(e));
    }
}

#[test]
fn r_1_4_expire_after_seconds_string_is_type_mismatch() {
    let cmd = doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": "3600" };
    assert_eq!(create_cmd_err(&cmd), ErrorCode::TypeMismatch);
    let cmd = doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": "off" };
    assert_eq!(create_cmd_err(&cmd), ErrorCode::TypeMismatch);
}

#[test]
fn r_1_4_expire_after_seconds_object_is_type_mismatch() {
    let cmd = doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": { "s": 1 } };
    assert_eq!(create_cmd_err(&cmd), ErrorCode::TypeMismatch);
    let cmd = doc! { "timeseries": { "timeField": "t" }, "expireAfterSeconds": [1] };
    assert_eq!(create_cmd_err(&cmd), ErrorCode::TypeMismatch);
}

#[test]
fn r_1_4_options_not_allowed_with_timeseries_are_invalid_options() {
    let values: [(&str, Bson); 11] = [
        ("capped", Bson::Boolean(true)),
        ("size", Bson::Int32(4096)),
        ("max", Bson::Int32(10)),
        ("autoIndexId", Bson::Boolean(true)),
        (
            "idIndex",
            Bson::Document(doc! { "key": { "_id": 1 }, "name": "_id_" }),
        ),
        ("validator", Bson::Document(doc! { "x": 1 })),
        ("validationLevel", Bson::String("strict".into())),
        ("validationAction", Bson::String("warn".into())),
        ("viewOn", Bson::String("other".into())),
        ("pipeline", Bson::Array(vec![])),
        (
            "clusteredIndex",
            Bson::Document(doc! { "key": { "_id": 1 }, "unique": true }),
        ),
    ];
    for (field, value) in values {
        let mut cmd = doc! { "create": "c", "timeseries": { "timeField": "t" } };
        cmd.insert(field, value);
        let err = TimeseriesOptions::from_create_command(&cmd).expect_err(field);
        assert_eq!(err.code(), ErrorCode::InvalidOptions, "{field}");
        assert!(
            err.to_string()
                .contains(&format!("'timeseries' is not allowed with '{field}'")),
            "{err}"
        );
    }
}

#[test]
fn r_1_4_capped_false_and_allowed_options_are_accepted() {
    let cmd = doc! {
        "create": "c",
        "timeseries": { "timeField": "t", "metaField": "m" },
        "capped": false,
        "expireAfterSeconds": 3600,
        "storageEngine": {},
        "indexOptionDefaults": {},
        "collation": { "locale": "simple" },
        "writeConcern": { "w": 1 },
        "comment": "hello",
    };
    let spec = create_cmd_ok(&cmd);
    assert_eq!(spec.time_field, "t");
    assert_eq!(spec.meta_field.as_deref(), Some("m"));
    assert_eq!(spec.expire_after_seconds, Some(3600));
}

#[test]
fn r_1_1_unknown_field_in_timeseries_is_idl_unknown_field() {
    let cmd = doc! { "timeseries": { "timeField": "t", "invalidOption": 1 } };
    assert_eq!(create_cmd_err(&cmd), ErrorCode::IdlUnknownField);
    assert_eq!(ErrorCode::IdlUnknownField.code(), 40415);
}

#[test]
fn r_1_1_timeseries_not_an_object_is_type_mismatch() {
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": "t" }),
        ErrorCode::TypeMismatch
    );
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": ["t"] }),
        ErrorCode::TypeMismatch
    );
}

#[test]
fn r_1_1_field_names_not_strings_are_type_mismatch() {
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": { "timeField": 1 } }),
        ErrorCode::TypeMismatch
    );
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": { "timeField": "t", "metaField": 1 } }),
        ErrorCode::TypeMismatch
    );
}

#[test]
fn r_1_1_missing_time_field_is_idl_failed_to_parse() {
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": { "metaField": "m" } }),
        ErrorCode::IdlFailedToParse
    );
}

#[test]
fn r_1_1_unknown_granularity_is_bad_value() {
    assert_eq!(
        create_cmd_err(&doc! { "timeseries": { "timeField": "t", "granularity": "days" } }),
        ErrorCode::BadValue
    );
}

#[test]
fn r_1_4_error_codes_have_mongodb_numbers() {
    assert_eq!(ErrorCode::BadValue.code(), 2);
    assert_eq!(ErrorCode::TypeMismatch.code(), 14);
    assert_eq!(ErrorCode::NamespaceExists.code(), 48);
    assert_eq!(ErrorCode::InvalidOptions.code(), 72);
    assert_eq!(ErrorCode::BsonObjectTooLarge.code(), 10334);
    assert_eq!(ErrorCode::IdlFailedToParse.code(), 40414);
    assert_eq!(ErrorCode::InvalidOptions.name(), "InvalidOptions");
}

// ---- §1.2 bucketing ----------------------------------------------------------------------

#[test]
fn r_1_2_1_granularity_presets() {
    for (g, name, rounding, span) in [
        (Granularity::Seconds, "seconds", 60, 3_600),
        (Granularity::Minutes, "minutes", 3_600, 86_400),
        (Granularity::Hours, "hours", 86_400, 2_592_000),
    ] {
        let spec = ts("t").granularity(g).validate().expect("preset");
        assert_eq!(spec.granularity, Some(g));
        assert_eq!(spec.bucket_rounding_seconds, rounding, "{name}");
        assert_eq!(spec.bucket_max_span_seconds, span, "{name}");
        let spec = create_cmd_ok(&doc! { "timeseries": { "timeField": "t", "granularity": name } });
        assert_eq!(
            (
                spec.granularity,
                spec.bucket_rounding_seconds,
                spec.bucket_max_span_seconds
            ),
            (Some(g), rounding, span)
        );
    }
}

#[test]
fn r_1_2_2_default_is_seconds() {
    let spec = ts("t").validate().expect("default");
    assert_eq!(spec.granularity, Some(Granularity::Seconds));
    assert_eq!(spec.bucket_max_span_seconds, 3_600);
    assert_eq!(spec.bucket_rounding_seconds, 60);
}

#[test]
fn r_1_2_3_custom_bucketing() {
    let spec = ts("t")
        .bucket_seconds(7_200, 7_200)
        .validate()
        .expect("custom");
    assert_eq!(spec.granularity, None);
    assert_eq!(spec.bucket_max_span_seconds, 7_200);
    assert_eq!(spec.bucket_rounding_seconds, 7_200);
    let spec = create_cmd_ok(
        &doc! { "timeseries": { "timeField": "t", "bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 100 } },
    );
    assert_eq!(
        (
            spec.granularity,
            spec.bucket_max_span_seconds,
            spec.bucket_rounding_seconds
        ),
        (None, 100, 100)
    );
}

#[test]
fn r_1_2_4_granularity_reports_granularity_and_span_only() {
    let spec = ts("t")
        .meta_field("m")
        .granularity(Granularity::Hours)
        .validate()
        .expect("valid");
    let d = spec.to_document();
    let t = d
        .get_document("timeseries")
        .expect("timeseries sub-document");
    assert_eq!(t.get_str("timeField").ok(), Some("t"));
    assert_eq!(t.get_str("metaField").ok(), Some("m"));
    assert_eq!(t.get_str("granularity").ok(), Some("hours"));
    assert_eq!(as_i64(t.get("bucketMaxSpanSeconds")), Some(2_592_000));
    assert!(!t.contains_key("bucketRoundingSeconds"), "{t}");
    assert!(!d.contains_key("expireAfterSeconds"), "{d}");
}

#[test]
fn r_1_2_4_default_reports_seconds_granularity() {
    let d = ts("t").validate().expect("valid").to_document();
    let t = d
        .get_document("timeseries")
        .expect("timeseries sub-document");
    assert_eq!(t.get_str("granularity").ok(), Some("seconds"));
    assert_eq!(as_i64(t.get("bucketMaxSpanSeconds")), Some(3_600));
    assert!(!t.contains_key("bucketRoundingSeconds"), "{t}");
    assert!(!t.contains_key("metaField"), "{t}");
}

#[test]
fn r_1_2_4_custom_reports_both_seconds_and_no_granularity() {
    let spec = ts("t")
        .bucket_seconds(500, 500)
        .expire_after_seconds(86_400)
        .validate()
        .expect("valid");
    let d = spec.to_document();
    let t = d
        .get_document("timeseries")
        .expect("timeseries sub-document");
    assert!(!t.contains_key("granularity"), "{t}");
    assert_eq!(as_i64(t.get("bucketMaxSpanSeconds")), Some(500));
    assert_eq!(as_i64(t.get("bucketRoundingSeconds")), Some(500));
    assert_eq!(as_i64(d.get("expireAfterSeconds")), Some(86_400));
}

fn as_i64(v: Option<&Bson>) -> Option<i64> {
    match v? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        _ => None,
    }
}

// ---- idempotent create, persistence -----------------------------------------------

#[test]
fn r_1_4_1_create_with_equal_options_is_idempotent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    db.create_collection("c", &ts("t").meta_field("m"))
        .expect("first create");
    db.create_collection("c", &ts("t").meta_field("m"))
        .expect("equal options");
    // Absent granularity ≡ seconds.
    db.create_collection(
        "c",
        &ts("t").meta_field("m").granularity(Granularity::Seconds),
    )
    .expect("absent ≡ seconds");
    let mut explicit_span = ts("t").meta_field("m").granularity(Granularity::Seconds);
    explicit_span.bucket_max_span_seconds = Some(3_600);
    db.create_collection("c", &explicit_span)
        .expect("preset span given explicitly");
    assert_eq!(db.list_collections().expect("list").len(), 1);
}

#[test]
fn r_1_4_1_create_with_different_options_is_namespace_exists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    db.create_collection("c", &ts("t").meta_field("m"))
        .expect("first create");
    for other in [
        ts("t"),
        ts("t").meta_field("n"),
        ts("time").meta_field("m"),
        ts("t").meta_field("m").granularity(Granularity::Minutes),
        ts("t").meta_field("m").bucket_seconds(60, 60),
        ts("t").meta_field("m").bucket_seconds(3_600, 3_600),
    ] {
        let err = db
            .create_collection("c", &other)
            .expect_err("different options");
        assert_eq!(err.code(), ErrorCode::NamespaceExists, "{other:?}");
    }
    // Invalid options are reported as such even when the name exists.
    let err = db
        .create_collection("c", &ts("t").meta_field("t"))
        .expect_err("invalid");
    assert_eq!(err.code(), ErrorCode::InvalidOptions);
}

#[test]
fn r_1_4_create_collection_rejects_invalid_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    let err = db.create_collection("c", &ts("a.b")).expect_err("invalid");
    assert_eq!(err.code(), ErrorCode::InvalidOptions);
    let err = db
        .create_collection("c", &ts("t").bucket_seconds(0, 0))
        .expect_err("invalid");
    assert_eq!(err.code(), ErrorCode::BadValue);
    assert!(db.list_collections().expect("list").is_empty());
}

#[test]
fn r_1_2_4_options_persist_across_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let created = [
        ("a_default", ts("t")),
        (
            "b_minutes",
            ts("time")
                .meta_field("sensor")
                .granularity(Granularity::Minutes),
        ),
        (
            "c_hours_ttl",
            ts("t")
                .meta_field("m")
                .granularity(Granularity::Hours)
                .expire_after_seconds(3_600),
        ),
        (
            "d_custom",
            ts("ts")
                .bucket_seconds(7_200, 7_200)
                .expire_after_seconds(0),
        ),
    ];
    let before = {
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        for (name, o) in &created {
            db.create_collection(name, o).expect("create");
        }
        let list = db.list_collections().expect("list");
        db.close().expect("close");
        list
    };
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("reopen");
    let after = db.list_collections().expect("list");
    assert_eq!(after, before);
    assert_eq!(after.len(), 4);
    for (name, o) in &created {
        let spec = db.collection(name).expect("collection").spec();
        assert_eq!(spec, o.validate().expect("valid"), "{name}");
        assert_eq!(
            spec.to_document(),
            o.validate().expect("valid").to_document(),
            "{name}"
        );
        // Idempotent create still works against the persisted options.
        db.create_collection(name, o)
            .expect("equal options after reopen");
    }
    let err = db
        .create_collection("b_minutes", &ts("time").meta_field("sensor"))
        .expect_err("different");
    assert_eq!(err.code(), ErrorCode::NamespaceExists);
}
