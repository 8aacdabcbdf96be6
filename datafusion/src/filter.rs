//! SQL predicates as a MongoDB filter: the comparisons of a column (the time field, a
//! measurement field, or a field of the meta struct) with a constant, `IN` lists and
//! `BETWEEN`, joined by `AND`. The collection chooses and prunes buckets with the filter
//! (SPEC §14.4) and filters rows by it. For integers, strings, dates and booleans a SQL
//! comparison and MongoDB's keep the same rows (both drop nulls): those filters are exact
//! ([`is_exact`]) and DataFusion does not apply them again. On doubles they only have to
//! keep every row SQL keeps, as DataFusion filters again: `>` and `>=` are not pushed down
//! (SQL orders NaN above every number, MongoDB's ranges never match it), and `=`, `<`,
//! `<=` keep -0 with 0 where SQL orders -0 below 0. Columns holding JSON texts
//! (docs/arrow.md) are not pushed down.

use bson::{Bson, DateTime, Document};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::expr::{InList, ScalarFunction};
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
use tscoll_engine::ENCODING_KEY;

/// The MongoDB filter of one SQL predicate, or `None` when it has none.
pub(crate) fn to_filter(expr: &Expr, schema: &Schema) -> Option<Document> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => {
                let (a, b) = (to_filter(left, schema)?, to_filter(right, schema)?);
                Some(bson::doc! { "$and": [a, b] })
            }
            Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => {
                let (path, value, op) = match (field_path(left, schema), field_path(right, schema))
                {
                    (Some(p), None) => (p, constant(right)?, *op),
                    (None, Some(p)) => (p, constant(left)?, op.swap()?),
                    _ => return None,
                };
                // SQL orders NaN above every number (`x > 1` keeps it), MongoDB's ranges
                // never match it: a lower bound on doubles is left to DataFusion.
                if matches!(op, Operator::Gt | Operator::GtEq) && holds_doubles(left, right, schema)
                {
                    return None;
                }
                let mongo = match op {
                    Operator::Eq => "$eq",
                    Operator::Lt => "$lt",
                    Operator::LtEq => "$lte",
                    Operator::Gt => "$gt",
                    _ => "$gte",
                };
                Some(bson::doc! { path: { mongo: value } })
            }
            _ => None,
        },
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => {
            let path = field_path(expr, schema)?;
            let values: Option<Vec<Bson>> = list.iter().map(constant).collect();
            Some(bson::doc! { path: { "$in": values? } })
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let path = field_path(expr, schema)?;
            Some(bson::doc! { path: { "$gte": constant(low)?, "$lte": constant(high)? } })
        }
        _ => None,
    }
}

/// Whether `expr` has a MongoDB filter that keeps exactly the rows SQL keeps: one
/// [`to_filter`] translates, on no column of doubles (SQL orders NaN above every number and
/// -0 below 0; MongoDB's comparisons do neither). Integers, strings, booleans and dates
/// compare alike, and both drop nulls.
pub(crate) fn is_exact(expr: &Expr, schema: &Schema) -> bool {
    let mut doubles = false;
    // The closure never fails.
    let _ = expr.apply(|e| {
        if typed_path(e, schema).is_some_and(|(_, f)| f.data_type() == &DataType::Float64) {
            doubles = true;
        }
        Ok(TreeNodeRecursion::Continue)
    });
    !doubles && to_filter(expr, schema).is_some()
}

/// The dotted path of a column (or a field of a struct column) whose values compare in SQL
/// as in MongoDB: not a JSON column.
fn field_path(expr: &Expr, schema: &Schema) -> Option<String> {
    let (path, field) = typed_path(expr, schema)?;
    comparable(field.data_type(), field.metadata().get(ENCODING_KEY)).then_some(path)
}

/// The dotted path of a column or a field of a struct column, and its Arrow field; a cast of
/// a string column (dictionary-encoded or not) to a string type is the column itself.
fn typed_path(expr: &Expr, schema: &Schema) -> Option<(String, Field)> {
    match expr {
        Expr::Column(Column { name, .. }) => {
            Some((name.clone(), schema.field_with_name(name).ok()?.clone()))
        }
        // `tags.hostname`: get_field(tags, 'hostname'), nested for deeper fields.
        Expr::ScalarFunction(ScalarFunction { func, args }) if func.name() == "get_field" => {
            let [base, Expr::Literal(ScalarValue::Utf8(Some(key)), _)] = args.as_slice() else {
                return None;
            };
            let (parent, field) = typed_path(base, schema)?;
            let DataType::Struct(children) = field.data_type() else {
                return None;
            };
            let child = children.iter().find(|c| c.name() == key)?;
            Some((format!("{parent}.{key}"), child.as_ref().clone()))
        }
        Expr::Cast(c) if is_string(c.field.data_type()) => {
            let (path, field) = typed_path(&c.expr, schema)?;
            let string = match field.data_type() {
                DataType::Dictionary(_, v) => is_string(v),
                t => is_string(t),
            };
            string.then_some((path, field))
        }
        _ => None,
    }
}

/// Whether either side is a column of doubles.
fn holds_doubles(left: &Expr, right: &Expr, schema: &Schema) -> bool {
    [left, right]
        .iter()
        .any(|e| typed_path(e, schema).is_some_and(|(_, f)| f.data_type() == &DataType::Float64))
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Whether values of this type compare in SQL as in MongoDB.
fn comparable(t: &DataType, encoding: Option<&String>) -> bool {
    match t {
        DataType::Utf8 => encoding.is_none(),
        DataType::Dictionary(_, v) => comparable(v, encoding),
        DataType::Int32
        | DataType::Int64
        | DataType::Float64
        | DataType::Boolean
        | DataType::Timestamp(TimeUnit::Millisecond, _) => true,
        _ => false,
    }
}

/// A constant as a BSON value (dates as dates, to the millisecond).
fn constant(expr: &Expr) -> Option<Bson> {
    let Expr::Literal(v, _) = expr else {
        return None;
    };
    scalar(v)
}

fn scalar(v: &ScalarValue) -> Option<Bson> {
    Some(match v {
        ScalarValue::Boolean(Some(b)) => Bson::Boolean(*b),
        ScalarValue::Int8(Some(i)) => Bson::Int32(i32::from(*i)),
        ScalarValue::Int16(Some(i)) => Bson::Int32(i32::from(*i)),
        ScalarValue::Int32(Some(i)) => Bson::Int32(*i),
        ScalarValue::Int64(Some(i)) => Bson::Int64(*i),
        ScalarValue::UInt8(Some(i)) => Bson::Int32(i32::from(*i)),
        ScalarValue::UInt16(Some(i)) => Bson::Int32(i32::from(*i)),
        ScalarValue::UInt32(Some(i)) => Bson::Int64(i64::from(*i)),
        ScalarValue::UInt64(Some(i)) => Bson::Int64(i64::try_from(*i).ok()?),
        ScalarValue::Float32(Some(f)) => Bson::Double(f64::from(*f)),
        ScalarValue::Float64(Some(f)) if !f.is_nan() => Bson::Double(*f),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Bson::String(s.clone()),
        ScalarValue::Dictionary(_, v) => return scalar(v),
        // Only whole milliseconds: a finer instant would round the bound.
        ScalarValue::TimestampMillisecond(Some(ms), _) => {
            Bson::DateTime(DateTime::from_millis(*ms))
        }
        ScalarValue::TimestampSecond(Some(s), _) => {
            Bson::DateTime(DateTime::from_millis(s.checked_mul(1000)?))
        }
        ScalarValue::TimestampMicrosecond(Some(us), _) if us % 1000 == 0 => {
            Bson::DateTime(DateTime::from_millis(us / 1000))
        }
        ScalarValue::TimestampNanosecond(Some(ns), _) if ns % 1_000_000 == 0 => {
            Bson::DateTime(DateTime::from_millis(ns / 1_000_000))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{col, lit};

    use super::*;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                false,
            ),
            Field::new("v", DataType::Int64, true),
            Field::new("j", DataType::Utf8, true)
                .with_metadata([(ENCODING_KEY.to_owned(), "json".to_owned())].into()),
        ])
    }

    #[test]
    fn comparisons_in_lists_and_conjunctions_translate() {
        let s = schema();
        assert_eq!(
            to_filter(&col("v").gt(lit(5_i64)), &s),
            Some(bson::doc! { "v": { "$gt": 5_i64 } })
        );
        assert_eq!(
            to_filter(&lit(5_i64).gt(col("v")), &s),
            Some(bson::doc! { "v": { "$lt": 5_i64 } })
        );
        assert_eq!(
            to_filter(&col("v").in_list(vec![lit(1_i64), lit(2_i64)], false), &s),
            Some(bson::doc! { "v": { "$in": [1_i64, 2_i64] } })
        );
        let t = lit(ScalarValue::TimestampMillisecond(
            Some(7),
            Some("UTC".into()),
        ));
        assert_eq!(
            to_filter(&col("t").gt_eq(t).and(col("v").eq(lit(1_i64))), &s),
            Some(
                bson::doc! { "$and": [{ "t": { "$gte": DateTime::from_millis(7) } }, { "v": { "$eq": 1_i64 } }] }
            )
        );
        // A lower bound on doubles would drop NaN, which SQL keeps.
        let d = Schema::new(vec![Field::new("d", DataType::Float64, true)]);
        assert_eq!(to_filter(&col("d").gt(lit(1.0)), &d), None);
        assert_eq!(to_filter(&lit(1.0).lt_eq(col("d")), &d), None);
        assert_eq!(
            to_filter(&col("d").lt(lit(1.0)), &d),
            Some(bson::doc! { "d": { "$lt": 1.0 } })
        );
        // Exact for integers and times, not for doubles.
        assert!(is_exact(&col("v").gt(lit(5_i64)), &s));
        assert!(!is_exact(&col("d").lt(lit(1.0)), &d));
        assert!(!is_exact(&col("j").eq(lit("x")), &s));
        // JSON texts, negations and OR are left to DataFusion.
        assert_eq!(to_filter(&col("j").eq(lit("x")), &s), None);
        assert_eq!(to_filter(&col("v").not_eq(lit(1_i64)), &s), None);
        assert_eq!(
            to_filter(&col("v").eq(lit(1_i64)).or(col("v").eq(lit(2_i64))), &s),
            None
        );
        assert_eq!(
            to_filter(&col("v").in_list(vec![lit(1_i64)], true), &s),
            None
        );
    }
}
