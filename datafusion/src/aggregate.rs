//! A windowed aggregate answered by the collections (`Collection::aggregate_record_batch`): the
//! table the optimizer rule (`rule.rs`) puts in place of a scan under an `Aggregate`. Its
//! rows are partial aggregates, one per series (or per query) and time window — the window
//! start in the time column, the series' meta value in the meta column, then the partial
//! values — which the plan above merges per SQL group. Whole buckets inside a window are
//! answered from their control records and bucket sums without being decoded.
//!
//! Over remote shards, the plan is sent to the workers that hold them as BSON
//! ([`WindowAggregateExec::encode`], [`WindowAggregateExec::decode`]), one shard per worker.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bson::{Bson, Document, doc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use tscoll_engine::{Accumulator, AggregateSpec};

use crate::shards::{ShardHostExtension, Shards, nowhere_to_run};
use crate::table::external;
use crate::wire::{bad, get_usizes};

/// The partial aggregates of one query over a table's collections: the filter, the windows
/// and outputs (`AggregateSpec`), and the schema of the rows: the window start
/// (`Timestamp(Millisecond, "UTC")`, named as the time field), the meta value when grouped by
/// series (named as the meta field), then one column per output.
#[derive(Debug)]
pub(crate) struct WindowAggregate {
    pub(crate) shards: Shards,
    pub(crate) filter: Document,
    pub(crate) spec: AggregateSpec,
    pub(crate) schema: SchemaRef,
}

#[async_trait]
impl TableProvider for WindowAggregate {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let shards = crate::table::pruned(&self.shards, &self.filter, state);
        Ok(Arc::new(WindowAggregateExec::assemble(
            shards,
            self.filter.clone(),
            self.spec.clone(),
            Arc::clone(&self.schema),
            projection,
        )?))
    }
}

/// The execution of the partial aggregates a `WindowAggregateRule` plan reads: one partition per shard, each one batch of the
/// shard's partial aggregates.
pub struct WindowAggregateExec {
    shards: Shards,
    filter: Document,
    spec: AggregateSpec,
    /// The rows the collections give, before `projection`.
    schema: SchemaRef,
    projection: Vec<usize>,
    props: Arc<PlanProperties>,
}

impl WindowAggregateExec {
    fn assemble(
        shards: Shards,
        filter: Document,
        spec: AggregateSpec,
        schema: SchemaRef,
        projection: Vec<usize>,
    ) -> Result<WindowAggregateExec> {
        let out = Arc::new(schema.project(&projection)?);
        // A remote plan's task that was given no shard still has one partition, empty.
        let props = PlanProperties::new(
            EquivalenceProperties::new(out),
            Partitioning::UnknownPartitioning(shards.len().max(1)),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(WindowAggregateExec {
            shards,
            filter,
            spec,
            schema,
            projection,
            props: Arc::new(props),
        })
    }

    /// The collections the plan reads.
    #[must_use]
    pub fn shards(&self) -> &Shards {
        &self.shards
    }

    /// The same plan over remote shards, reading only the shards `shards` (none: a plan that
    /// returns nothing, with one partition like a plan of one shard).
    ///
    /// # Errors
    /// `Internal` for a plan over local collections.
    pub fn with_shards(&self, shards: Vec<usize>) -> Result<WindowAggregateExec> {
        let subset = self
            .shards
            .remote_subset(shards)
            .ok_or_else(|| DataFusionError::Internal("an aggregate of local collections".into()))?;
        WindowAggregateExec::assemble(
            subset,
            self.filter.clone(),
            self.spec.clone(),
            Arc::clone(&self.schema),
            self.projection.clone(),
        )
    }

    /// The plan over remote shards as BSON, to be sent to a worker
    /// ([`WindowAggregateExec::decode`]).
    ///
    /// # Errors
    /// `Internal` for a plan over local collections; an Arrow error when the schema cannot
    /// be written.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let Shards::Remote { collection, shards } = &self.shards else {
            return Err(DataFusionError::Internal(
                "an aggregate of local collections cannot be sent to another process".into(),
            ));
        };
        let int = |n: usize| Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX));
        let outputs: Vec<Bson> = self
            .spec
            .outputs
            .iter()
            .map(|(name, acc)| {
                let (kind, field) = accumulator_parts(acc);
                Bson::Document(doc! { "name": name, "kind": kind, "field": field.map_or(Bson::Null, |f| Bson::String(f.to_owned())) })
            })
            .collect();
        let d = doc! {
            "collection": collection,
            "shards": shards.iter().map(|&s| int(s)).collect::<Vec<_>>(),
            "filter": &self.filter,
            "window_ms": self.spec.window_ms,
            "by_series": self.spec.by_series,
            "outputs": outputs,
            "schema": crate::wire::schema_bytes(&self.schema)?,
            "projection": self.projection.iter().map(|&p| int(p)).collect::<Vec<_>>(),
        };
        crate::wire::document_bytes(&d)
    }

    /// The plan [`WindowAggregateExec::encode`] wrote.
    ///
    /// # Errors
    /// `Internal` when `bytes` are not such a plan.
    pub fn decode(bytes: &[u8]) -> Result<WindowAggregateExec> {
        let what = "windowed aggregate";
        let e = |x: &dyn fmt::Display| bad(what, &x.to_string());
        let d = Document::from_reader(bytes).map_err(|x| e(&x))?;
        let collection = d.get_str("collection").map_err(|x| e(&x))?.to_owned();
        let shards = get_usizes(&d, "shards")?;
        let filter = d.get_document("filter").map_err(|x| e(&x))?.clone();
        let window_ms = d.get_i64("window_ms").map_err(|x| e(&x))?;
        if window_ms <= 0 {
            return Err(bad(what, "a window of no length"));
        }
        let by_series = d.get_bool("by_series").map_err(|x| e(&x))?;
        let mut outputs = Vec::new();
        for o in d.get_array("outputs").map_err(|x| e(&x))? {
            let Bson::Document(o) = o else {
                return Err(bad(what, "an output that is not a document"));
            };
            let name = o.get_str("name").map_err(|x| e(&x))?.to_owned();
            let kind = o.get_str("kind").map_err(|x| e(&x))?;
            let field = o.get_str("field").ok().map(str::to_owned);
            outputs.push((name, accumulator_of(kind, field)?));
        }
        let schema =
            crate::wire::schema_from_bytes(d.get_binary_generic("schema").map_err(|x| e(&x))?)?;
        let projection = get_usizes(&d, "projection")?;
        if projection.iter().any(|&p| p >= schema.fields().len()) {
            return Err(bad(what, "a projected column past the schema"));
        }
        WindowAggregateExec::assemble(
            Shards::Remote { collection, shards },
            filter,
            AggregateSpec {
                window_ms,
                by_series,
                outputs,
            },
            schema,
            projection,
        )
    }
}

/// An accumulator's kind and field, as [`WindowAggregateExec::encode`] writes them.
fn accumulator_parts(acc: &Accumulator) -> (&'static str, Option<&str>) {
    let kind = match acc {
        Accumulator::Count => "count",
        Accumulator::CountNumbers(_) => "countNumbers",
        Accumulator::Min(_) => "min",
        Accumulator::Max(_) => "max",
        Accumulator::Sum(_) => "sum",
        Accumulator::SumTyped(_) => "sumTyped",
        Accumulator::Avg(_) => "avg",
        Accumulator::First(_) => "first",
        Accumulator::Last(_) => "last",
        Accumulator::StdDevPop(_) => "stdDevPop",
        Accumulator::StdDevSamp(_) => "stdDevSamp",
    };
    (kind, acc.field())
}

/// The accumulator [`accumulator_parts`] describes.
fn accumulator_of(kind: &str, field: Option<String>) -> Result<Accumulator> {
    let need = |f: Option<String>| {
        f.ok_or_else(|| bad("windowed aggregate", &format!("{kind} without a field")))
    };
    Ok(match kind {
        "count" => Accumulator::Count,
        "countNumbers" => Accumulator::CountNumbers(need(field)?),
        "min" => Accumulator::Min(need(field)?),
        "max" => Accumulator::Max(need(field)?),
        "sum" => Accumulator::Sum(need(field)?),
        "sumTyped" => Accumulator::SumTyped(need(field)?),
        "avg" => Accumulator::Avg(need(field)?),
        "first" => Accumulator::First(need(field)?),
        "last" => Accumulator::Last(need(field)?),
        "stdDevPop" => Accumulator::StdDevPop(need(field)?),
        "stdDevSamp" => Accumulator::StdDevSamp(need(field)?),
        other => {
            return Err(bad(
                "windowed aggregate",
                &format!("the accumulator {other}"),
            ));
        }
    })
}

impl fmt::Debug for WindowAggregateExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowAggregateExec")
            .field("filter", &self.filter)
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl DisplayAs for WindowAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outputs: Vec<String> = self
            .spec
            .outputs
            .iter()
            .map(|(name, acc)| format!("{name}={acc:?}"))
            .collect();
        write!(
            f,
            "WindowAggregateExec: filter={}, window_ms={}, by_series={}, outputs=[{}]",
            self.filter,
            self.spec.window_ms,
            self.spec.by_series,
            outputs.join(", ")
        )?;
        if let Shards::Remote { collection, shards } = &self.shards {
            write!(f, ", collection={collection}, remote_shards={shards:?}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for WindowAggregateExec {
    fn name(&self) -> &'static str {
        "WindowAggregateExec"
    }

    crate::leaf_plan!();

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition >= self.shards.len() {
            if self.shards.is_empty() && partition == 0 {
                // A remote plan's task that was given no shard.
                return Ok(Box::pin(RecordBatchStreamAdapter::new(
                    self.schema(),
                    futures::stream::empty(),
                )));
            }
            return Err(DataFusionError::Internal(format!(
                "partition {partition} of an aggregate over {} collections",
                self.shards.len()
            )));
        }
        let Some(coll) = self.shards.resolve(partition, &context)? else {
            let host = context
                .session_config()
                .get_extension::<ShardHostExtension>()
                .ok_or_else(|| nowhere_to_run("WindowAggregateExec"))?;
            let number = self.shards.remote_shard(partition).unwrap_or(partition);
            let one = Arc::new(self.with_shards(vec![number])?);
            return host.0.execute(number, one, 0, context);
        };
        let (filter, spec) = (self.filter.clone(), self.spec.clone());
        let (schema, projection) = (Arc::clone(&self.schema), self.projection.clone());
        let batch = futures::stream::once(async move {
            let batch = coll
                .aggregate_record_batch(&filter, &spec, &schema, spec.by_series)
                .map_err(external)?;
            Ok(batch.project(&projection)?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batch,
        )))
    }
}
