//! The groups of a windowed aggregate as an Arrow record batch — from an `AggregateBatch`,
//! or straight from the accumulators (`Collection::aggregate_record_batch`): the window
//! starts, each group's meta value (built per series, as a result's meta column), then one
//! column per output, each in a given Arrow type.

use std::sync::Arc;

use arrow_array::{Int32Array, RecordBatch, TimestampMillisecondArray};
use arrow_schema::{DataType, SchemaRef, TimeUnit};
use bson::{Bson, Document};

use super::column::{AppendError, ColumnBuilder};
use super::kind::Kind;
use super::meta::MetaShape;
use crate::collection::Collection;
use crate::error::{Error, ErrorCode, Result};
use crate::query::{AggregateBatch, AggregateSpec};

impl AggregateBatch {
    /// The groups as an Arrow record batch of `schema`, one row per group in the batch's
    /// order: column 0 the window starts, `Timestamp(Millisecond, _)`; column 1, when
    /// `with_meta`, each group's meta value, in a type docs/arrow.md maps meta values to (a
    /// struct of the document's fields, strings as `Dictionary(Int32, Utf8)`, a scalar);
    /// then one column per output, in [`crate::AggregateSpec::outputs`] order, in a type
    /// docs/arrow.md maps the output's values to (a count `Int64`, a `Sum` or `Avg`
    /// `Float64`, a `SumTyped` `Int64` or `Float64`, a `Min` or `Max` the type of the
    /// field's values). A `null` output is a null. The groups are those of SPEC R-14.4.7's
    /// windowed aggregates ([`Collection::aggregate_columns`]).
    ///
    /// # Errors
    /// `BadValue` when the schema has another number of columns, or a column of a type no
    /// BSON type maps to; `TypeMismatch` when a value does not fit its column (a double sum
    /// in an `Int64` column, e.g. an integer sum beyond the int64 range).
    pub fn to_record_batch(&self, schema: &SchemaRef, with_meta: bool) -> Result<RecordBatch> {
        let groups = GroupKeys {
            windows: &self.windows,
            series: &self.series,
            metas: &self.metas,
            outputs: self.outputs.len(),
        };
        groups.record_batch(schema, with_meta, |builders| {
            for ((name, values), b) in self.outputs.iter().zip(builders) {
                for i in 0..values.len() {
                    let v = values.get(i).unwrap_or(Bson::Null);
                    b.append_bson(value(&v)).map_err(|e| (name.as_str(), e))?;
                }
            }
            Ok(())
        })
    }
}

pub(crate) fn aggregate_record_batch(
    coll: &Collection,
    filter: &Document,
    spec: &AggregateSpec,
    schema: &SchemaRef,
    with_meta: bool,
) -> Result<RecordBatch> {
    let (mut grouped, _) = crate::query::aggregate::grouped(coll, filter, spec)?;
    grouped.unordered();
    let (windows, series, metas) = (
        std::mem::take(&mut grouped.windows),
        std::mem::take(&mut grouped.series),
        std::mem::take(&mut grouped.metas),
    );
    let groups = GroupKeys {
        windows: &windows,
        series: &series,
        metas: &metas,
        outputs: spec.outputs.len(),
    };
    groups.record_batch(schema, with_meta, |builders| {
        grouped.take_rows(|k, v| {
            builders[k]
                .append_bson(value(&v))
                .map_err(|e| (spec.outputs[k].0.as_str(), e))
        })
    })
}

/// A group's output as a value to append (`null`: none).
fn value(v: &Bson) -> Option<&Bson> {
    (!matches!(v, Bson::Null)).then_some(v)
}

/// The keys of an aggregate's groups (window, series, the series' meta values) and how many
/// outputs each has.
struct GroupKeys<'a> {
    windows: &'a [i64],
    series: &'a [u32],
    metas: &'a [Option<Bson>],
    /// How many outputs.
    outputs: usize,
}

impl GroupKeys<'_> {
    /// The record batch of `schema` whose output columns `fill(builders)` fills (an error
    /// names the output).
    fn record_batch<'n>(
        &self,
        schema: &SchemaRef,
        with_meta: bool,
        fill: impl FnOnce(&mut [ColumnBuilder]) -> std::result::Result<(), (&'n str, AppendError)>,
    ) -> Result<RecordBatch> {
        let bad = |why: String| Error::rejected(ErrorCode::BadValue, why);
        let fields = schema.fields();
        let want = 1 + usize::from(with_meta) + self.outputs;
        if fields.len() != want {
            return Err(bad(format!(
                "the groups of an aggregate with {} outputs fill {want} columns, not {}",
                self.outputs,
                fields.len()
            )));
        }
        let DataType::Timestamp(TimeUnit::Millisecond, tz) = fields[0].data_type() else {
            return Err(bad(format!(
                "the window column '{}' is a Timestamp(Millisecond, _), not {}",
                fields[0].name(),
                fields[0].data_type()
            )));
        };
        let mut columns: Vec<arrow_array::ArrayRef> = Vec::with_capacity(want);
        columns.push(Arc::new(
            TimestampMillisecondArray::from(self.windows.to_vec()).with_timezone_opt(tz.clone()),
        ));
        if with_meta {
            let field = &fields[1];
            let shape = MetaShape::of_field(field).ok_or_else(|| {
                bad(format!(
                    "meta column '{}' has type {}, which no meta value maps to",
                    field.name(),
                    field.data_type()
                ))
            })?;
            let metas: Vec<Option<&Bson>> = self.metas.iter().map(Option::as_ref).collect();
            let values = shape
                .series_values(&metas)
                .map_err(|e| mismatch(field.name(), e))?;
            let keys = self
                .series
                .iter()
                .map(|&s| i32::try_from(s))
                .collect::<std::result::Result<Vec<i32>, _>>()
                .map_err(|_| bad("more series than an Arrow dictionary holds".into()))?;
            columns.push(
                values
                    .column(&Int32Array::from(keys))
                    .map_err(|e| internal(&e))?,
            );
        }
        let mut builders = fields[1 + usize::from(with_meta)..]
            .iter()
            .map(|field| {
                let kind = Kind::of_field(field).ok_or_else(|| {
                    bad(format!(
                        "column '{}' has type {}, which no BSON type maps to",
                        field.name(),
                        field.data_type()
                    ))
                })?;
                Ok(ColumnBuilder::new(kind, self.windows.len()))
            })
            .collect::<Result<Vec<_>>>()?;
        fill(&mut builders).map_err(|(name, e)| mismatch(name, e))?;
        for b in builders {
            columns.push(b.finish().map_err(|e| internal(&e))?);
        }
        RecordBatch::try_new(SchemaRef::clone(schema), columns)
            .map_err(|e| internal(&e.to_string()))
    }
}

/// The error of a value that does not fit its column.
fn mismatch(column: &str, e: AppendError) -> Error {
    match e {
        AppendError::Mismatch(code) => Error::rejected(
            ErrorCode::TypeMismatch,
            format!(
                "'{column}' has a value of BSON type {code:#04x}, which its column does not take"
            ),
        ),
        AppendError::Corrupt(why) => internal(&format!("'{column}': {why}")),
    }
}

/// `InternalError`: arrays Arrow refuses.
fn internal(why: &str) -> Error {
    Error::rejected(ErrorCode::InternalError, format!("Arrow: {why}"))
}
