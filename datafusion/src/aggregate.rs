//! A windowed aggregate answered by the collections (`Collection::aggregate_record_batch`): the
//! table the optimizer rule (`rule.rs`) puts in place of a scan under an `Aggregate`. Its
//! rows are partial aggregates, one per series (or per query) and time window — the window
//! start in the time column, the series' meta value in the meta column, then the partial
//! values — which the plan above merges per SQL group. Whole buckets inside a window are
//! answered from their control records and bucket sums without being decoded.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bson::Document;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use tscoll_engine::{AggregateSpec, Collection};

use crate::table::external;

/// The partial aggregates of one query over a table's collections: the filter, the windows
/// and outputs (`AggregateSpec`), and the schema of the rows: the window start
/// (`Timestamp(Millisecond, "UTC")`, named as the time field), the meta value when grouped by
/// series (named as the meta field), then one column per output.
#[derive(Debug)]
pub(crate) struct WindowAggregate {
    pub(crate) shards: Vec<Collection>,
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
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let out = Arc::new(self.schema.project(&projection)?);
        let props = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&out)),
            Partitioning::UnknownPartitioning(self.shards.len()),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(Arc::new(WindowAggregateExec {
            shards: self.shards.clone(),
            filter: self.filter.clone(),
            spec: self.spec.clone(),
            schema: Arc::clone(&self.schema),
            projection,
            props: Arc::new(props),
        }))
    }
}

/// The execution of the partial aggregates a `WindowAggregateRule` plan reads: one partition per shard, each one batch of the
/// shard's partial aggregates.
pub struct WindowAggregateExec {
    shards: Vec<Collection>,
    filter: Document,
    spec: AggregateSpec,
    /// The rows the collections give, before `projection`.
    schema: SchemaRef,
    projection: Vec<usize>,
    props: Arc<PlanProperties>,
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
        )
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
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let coll = self.shards.get(partition).cloned().ok_or_else(|| {
            datafusion::error::DataFusionError::Internal(format!(
                "partition {partition} of an aggregate over {} collections",
                self.shards.len()
            ))
        })?;
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
