//! Random documents (nested, every BSON type) through the engine's documents → Arrow mapping
//! and back through the Arrow → BSON mapping the Parquet input reads with
//! (`tscoll_engine::arrow::documents_from_batch`), in memory and through a Parquet file as
//! `find --format parquet` writes it: every list converts, the row count is kept, and every
//! value reads back equal — widened numbers as their widened type, a null of a field missing
//! elsewhere as missing, a JSON text column's value as the value it came from.

use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tscoll_engine::arrow::array::RecordBatch;
use tscoll_engine::arrow::schema::{DataType, Field};
use tscoll_engine::arrow::{ENCODING_KEY, NULLS_KEY, documents_from_batch, documents_to_batches};

use super::parquet::ParquetOut;

/// A value of a type with no nesting.
fn leaf() -> impl Strategy<Value = Bson> {
    prop_oneof![
        any::<f64>().prop_map(Bson::Double),
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        (-3i64..3).prop_map(Bson::Int64),
        any::<bool>().prop_map(Bson::Boolean),
        "[a-z\"é]{0,4}".prop_map(Bson::String),
        any::<i64>().prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
        (0i64..253_402_300_800_000).prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
        any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(ObjectId::from_bytes(b))),
        (
            prop_oneof![Just(0u8), Just(4u8), Just(0x80u8)],
            proptest::collection::vec(any::<u8>(), 0..5)
        )
            .prop_map(|(subtype, bytes)| Bson::Binary(Binary {
                subtype: BinarySubtype::from(subtype),
                bytes
            })),
        (any::<i32>(), -20i32..20).prop_map(|(m, e)| Bson::Decimal128(
            format!("{m}E{e}").parse::<Decimal128>().expect("decimal")
        )),
        (any::<u32>(), any::<u32>()).prop_map(|(time, increment)| Bson::Timestamp(Timestamp {
            time,
            increment
        })),
        Just(Bson::Null),
        ("[a-z.]{0,3}", prop_oneof![Just(""), Just("i"), Just("ims")]).prop_map(|(p, o)| {
            Bson::RegularExpression(bson::Regex {
                pattern: p.as_str().try_into().expect("pattern"),
                options: o.try_into().expect("options"),
            })
        }),
        "[a-z()]{0,4}".prop_map(Bson::JavaScriptCode),
        ("[a-z]{0,3}", any::<i64>()).prop_map(|(code, n)| Bson::JavaScriptCodeWithScope(
            JavaScriptCodeWithScope {
                code,
                scope: bson::doc! { "n": n, "d": DateTime::from_millis(n) },
            }
        )),
        "[a-z]{0,3}".prop_map(Bson::Symbol),
        Just(Bson::Undefined),
        Just(Bson::MinKey),
        Just(Bson::MaxKey),
        any::<[u8; 12]>().prop_map(|b| {
            let json = serde_json::json!({
                "$dbPointer": { "$ref": "db.c", "$id": { "$oid": ObjectId::from_bytes(b).to_hex() } }
            });
            Bson::try_from(json).expect("a DBPointer")
        }),
    ]
}

/// A value of any type, documents and arrays nested up to three deep.
fn value() -> impl Strategy<Value = Bson> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            proptest::collection::vec(("[a-c]", inner), 0..4)
                .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
        ]
    })
}

/// A document of a few fields named so that documents share them.
fn document() -> impl Strategy<Value = Document> {
    proptest::collection::vec(("[a-d]", value()), 0..5).prop_map(|f| f.into_iter().collect())
}

/// Whether two values are equal, doubles bit for bit (any NaN equal to any NaN: a JSON text
/// keeps no payload).
fn same(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => {
            x.code == y.code
                && same(
                    &Bson::Document(x.scope.clone()),
                    &Bson::Document(y.scope.clone()),
                )
        }
        _ => a == b,
    }
}

/// Checks that `got` (read back) is what `want` (written) becomes in column `field`;
/// `element`: an array element, whose null is always a BSON null.
fn check(
    field: &Field,
    want: Option<&Bson>,
    got: Option<&Bson>,
    element: bool,
    path: &str,
) -> Result<(), String> {
    let fail = || Err(format!("{path}: wrote {want:?}, read {got:?} ({field:?})"));
    let Some(want) = want else {
        return if got.is_none() { Ok(()) } else { fail() };
    };
    if matches!(want, Bson::Null) {
        let null_is_bson = element || field.metadata().contains_key(NULLS_KEY);
        return match got {
            Some(Bson::Null) if null_is_bson => Ok(()),
            None if !null_is_bson => Ok(()),
            _ => fail(),
        };
    }
    let Some(got) = got else { return fail() };
    if field.metadata().get(ENCODING_KEY).map(String::as_str) == Some("json") {
        return if same(want, got) { Ok(()) } else { fail() };
    }
    #[expect(clippy::cast_precision_loss, reason = "the documented widening")]
    let widened = match (field.data_type(), want) {
        (DataType::Float64, Bson::Int32(i)) => Bson::Double(f64::from(*i)),
        (DataType::Float64, Bson::Int64(i)) => Bson::Double(*i as f64),
        (DataType::Int64, Bson::Int32(i)) => Bson::Int64(i64::from(*i)),
        _ => want.clone(),
    };
    match (field.data_type(), &widened, got) {
        (DataType::Struct(fields), Bson::Document(w), Bson::Document(g)) => {
            if g.keys().any(|k| fields.find(k).is_none())
                || w.keys().any(|k| fields.find(k).is_none())
            {
                return fail();
            }
            for f in fields {
                check(
                    f,
                    w.get(f.name()),
                    g.get(f.name()),
                    false,
                    &format!("{path}.{}", f.name()),
                )?;
            }
            Ok(())
        }
        (DataType::List(item), Bson::Array(w), Bson::Array(g)) => {
            if w.len() != g.len() {
                return fail();
            }
            for (v, u) in w.iter().zip(g) {
                check(item, Some(v), Some(u), true, &format!("{path}[]"))?;
            }
            Ok(())
        }
        _ if same(&widened, got) => Ok(()),
        _ => fail(),
    }
}

/// Checks that every row of `batches` reads back as its document of `docs`.
fn check_rows(docs: &[Document], batches: &[RecordBatch]) -> Result<(), String> {
    let mut row = 0;
    for batch in batches {
        let read = documents_from_batch(batch).map_err(|e| e.to_string())?;
        for got in &read {
            let want = docs.get(row).ok_or("more rows than documents")?;
            for field in batch.schema().fields() {
                check(
                    field,
                    want.get(field.name()),
                    got.get(field.name()),
                    false,
                    field.name(),
                )?;
            }
            if want
                .keys()
                .any(|k| batch.schema().field_with_name(k).is_err())
            {
                return Err(format!("row {row}: a field without a column: {want:?}"));
            }
            row += 1;
        }
    }
    if row == docs.len() {
        Ok(())
    } else {
        Err(format!("{row} rows read back of {}", docs.len()))
    }
}

#[test]
fn random_documents_convert_and_read_back_through_parquet() {
    let mut runner = TestRunner::new(Config {
        cases: 128,
        ..Config::default()
    });
    let docs = proptest::collection::vec(document(), 0..12);
    runner
        .run(&docs, |docs| {
            let out =
                documents_to_batches(&docs, 3).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(out.num_rows(), docs.len());
            check_rows(&docs, &out.batches).map_err(TestCaseError::fail)?;
            // The same through a Parquet file, as `find --format parquet` writes it (a
            // Parquet file of no column holds no row: a measurement always has its time).
            if out.schema.fields().is_empty() {
                return Ok(());
            }
            let mut file =
                ParquetOut::new(Vec::new(), out.schema.clone()).map_err(TestCaseError::fail)?;
            for d in &docs {
                file.push(d).map_err(TestCaseError::fail)?;
            }
            let bytes = file.finish().map_err(TestCaseError::fail)?;
            let reader = crate::input::parquet::open_stream("generated", &mut bytes.as_slice(), 5)
                .map_err(TestCaseError::fail)?;
            let read: Vec<RecordBatch> = reader
                .collect::<Result<_, _>>()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            check_rows(&docs, &read).map_err(TestCaseError::fail)?;
            Ok(())
        })
        .expect("every document reads back");
}
