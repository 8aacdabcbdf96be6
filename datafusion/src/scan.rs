//! The execution plan of a collection scan: partition `i` of `n` is an Arrow cursor over
//! the `i`-th range of the bucket ids the filter selects (`ArrowOptions::partition`), all
//! with the table's schema, so the partitions run in parallel and agree.

use std::fmt;
use std::sync::Arc;

use bson::Document;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
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
    coll: Collection,
    /// What each cursor returns: the time column, then the projected columns in table order.
    read_schema: SchemaRef,
    /// The scan's columns: positions in `read_schema`.
    output: Vec<usize>,
    filter: Document,
    find: FindOptions,
    partitions: usize,
    batch_rows: usize,
    /// The exact row count, when the scan reads no column and has no filter or limit (a
    /// `count(*)`).
    rows: Option<usize>,
    props: Arc<PlanProperties>,
}

impl CollectionScan {
    /// The scan of `coll` (table schema `schema`) for the columns `projection` (positions in
    /// `schema`; `None`: all), rows matching `filter`, at most `limit` rows per partition.
    ///
    /// # Errors
    /// A count that fails (storage or corruption), for a scan that reads no column.
    pub(crate) fn new(
        coll: Collection,
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
            let n = coll.count(&Document::new()).map_err(external)?;
            Some(usize::try_from(n).unwrap_or(usize::MAX))
        } else {
            None
        };
        let props = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&out_schema)),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(CollectionScan {
            coll,
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
            self.partitions
        )
    }
}

impl ExecutionPlan for CollectionScan {
    fn name(&self) -> &'static str {
        "CollectionScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let options = ArrowOptions {
            batch_rows: self.batch_rows,
            schema: Some(Arc::clone(&self.read_schema)),
            partition: Some((partition, self.partitions)),
        };
        let cursor = self
            .coll
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
