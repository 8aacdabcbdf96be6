//! The execution plan of a collection scan: partition `i` of `n` is an Arrow cursor over
//! the `i`-th range of the bucket ids the filter selects (`ArrowOptions::partition`), all
//! with the table's schema, so the partitions run in parallel and agree. A table of
//! several shards gives each shard the same number of partitions, shard after shard.

use std::fmt;
use std::sync::Arc;

use bson::Document;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::stats::Precision;
use datafusion::common::{Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use tscoll_engine::{ArrowOptions, Collection, FindOptions};

use crate::table::external;

/// A scan of one collection: its filter, the columns it reads, its limit and partitions
/// ([`crate::CollectionTable`] makes it).
pub struct CollectionScan {
    /// The table's collections (one, or the shards of a sharded table).
    shards: Vec<Collection>,
    /// What each cursor returns: the time column, then the projected columns in table order.
    read_schema: SchemaRef,
    /// The scan's columns: positions in `read_schema`.
    output: Vec<usize>,
    filter: Document,
    find: FindOptions,
    /// Partitions per shard.
    partitions: usize,
    batch_rows: usize,
    /// The exact row count, when the scan reads no column and has no filter or limit (a
    /// `count(*)`).
    rows: Option<usize>,
    props: Arc<PlanProperties>,
}

impl CollectionScan {
    /// The scan of `shards` (table schema `schema`) for the columns `projection` (positions
    /// in `schema`; `None`: all), rows matching `filter`, at most `limit` rows per
    /// partition, in about `partitions` partitions (each shard at least one).
    ///
    /// # Errors
    /// A count that fails (storage or corruption), for a scan that reads no column.
    pub(crate) fn new(
        shards: Vec<Collection>,
        schema: &SchemaRef,
        projection: Option<&Vec<usize>>,
        filter: Document,
        limit: Option<usize>,
        partitions: usize,
        batch_rows: usize,
    ) -> Result<CollectionScan> {
        let wanted: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..schema.fields().len()).collect(),
        };
        // The time column (the first) is always read.
        let mut read: Vec<usize> = wanted.iter().copied().chain([0]).collect();
        read.sort_unstable();
        read.dedup();
        let read_schema = Arc::new(schema.project(&read)?);
        let output: Vec<usize> = wanted
            .iter()
            .map(|w| read.iter().position(|r| r == w).unwrap_or(0))
            .collect();
        let out_schema = Arc::new(read_schema.project(&output)?);
        // An inclusion projection of the columns read (`_id` excluded unless read), when
        // each is a plain field name; otherwise every column is decoded (a projection reads
        // `a.b` as a path) and the given schema keeps the ones read.
        let plain = read_schema
            .fields()
            .iter()
            .all(|f| !f.name().contains('.') && !f.name().starts_with('$'));
        let projection_doc = plain.then(|| {
            let mut d = Document::new();
            for f in read_schema.fields() {
                d.insert(f.name().clone(), 1);
            }
            if !d.contains_key("_id") {
                d.insert("_id", 0);
            }
            d
        });
        let find = FindOptions {
            projection: projection_doc,
            limit,
            ..FindOptions::default()
        };
        let rows = if wanted.is_empty() && filter.is_empty() && limit.is_none() {
            let mut n = 0u64;
            for coll in &shards {
                n = n.saturating_add(coll.count(&Document::new()).map_err(external)?);
            }
            Some(usize::try_from(n).unwrap_or(usize::MAX))
        } else {
            None
        };
        let partitions = (partitions / shards.len().max(1)).max(1);
        let props = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&out_schema)),
            Partitioning::UnknownPartitioning(partitions * shards.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(CollectionScan {
            shards,
            read_schema,
            output,
            filter,
            find,
            partitions,
            batch_rows,
            rows,
            props: Arc::new(props),
        })
    }
}

impl fmt::Debug for CollectionScan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CollectionScan")
            .field("filter", &self.filter)
            .field("shards", &self.shards.len())
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

impl DisplayAs for CollectionScan {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CollectionScan: filter={}, columns={}, limit={:?}, partitions={}",
            self.filter,
            self.props.eq_properties.schema().fields().len(),
            self.find.limit,
            self.partitions * self.shards.len()
        )?;
        if self.shards.len() > 1 {
            write!(f, ", shards={}", self.shards.len())?;
        }
        Ok(())
    }
}

impl ExecutionPlan for CollectionScan {
    fn name(&self) -> &'static str {
        "CollectionScan"
    }

    crate::leaf_plan!();

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let options = ArrowOptions {
            batch_rows: self.batch_rows,
            schema: Some(Arc::clone(&self.read_schema)),
            partition: Some((partition % self.partitions, self.partitions)),
        };
        let coll = self
            .shards
            .get(partition / self.partitions)
            .ok_or_else(|| {
                datafusion::error::DataFusionError::Internal(format!(
                    "partition {partition} of a scan with {} partitions",
                    self.partitions * self.shards.len()
                ))
            })?;
        let cursor = coll
            .find_arrow(&self.filter, &self.find, &options)
            .map_err(external)?;
        let output = self.output.clone();
        let batches = cursor.map(move |b| {
            let b = b.map_err(external)?;
            Ok(b.project(&output)?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            futures::stream::iter(batches),
        )))
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let schema: &Schema = self.props.eq_properties.schema();
        let mut s = Statistics::new_unknown(schema);
        if let (None, Some(n)) = (partition, self.rows) {
            s.num_rows = Precision::Exact(n);
        }
        Ok(Arc::new(s))
    }
}
