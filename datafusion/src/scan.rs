//! The execution plan of a collection scan: partition `i` of `n` is an Arrow cursor over
//! the `i`-th range of the bucket ids the filter selects (`ArrowOptions::partition`), all
//! with the table's schema, so the partitions run in parallel and agree. A table of
//! several shards gives each shard the same number of partitions, shard after shard.
//!
//! A scan of remote shards (`Shards::Remote`) is sent to the workers that hold them as BSON
//! ([`CollectionScan::encode`], [`CollectionScan::decode`]): one scan per worker, of its
//! shard alone ([`CollectionScan::with_shards`]).

use std::fmt;
use std::sync::Arc;

use bson::{Bson, Document, doc};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use tscoll_engine::{ArrowOptions, FindOptions};

use crate::shards::{ShardHostExtension, Shards, nowhere_to_run};
use crate::table::external;

/// A scan of one collection: its filter, the columns it reads, its limit and partitions
/// ([`crate::CollectionTable`] makes it).
pub struct CollectionScan {
    /// The table's collections (one, or the shards of a sharded table), local or remote.
    shards: Shards,
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
        shards: Shards,
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
        let rows = match &shards {
            Shards::Local(colls) if wanted.is_empty() && filter.is_empty() && limit.is_none() => {
                let mut n = 0u64;
                for coll in colls {
                    n = n.saturating_add(coll.count(&Document::new()).map_err(external)?);
                }
                Some(usize::try_from(n).unwrap_or(usize::MAX))
            }
            _ => None,
        };
        let partitions = (partitions / shards.len().max(1)).max(1);
        Ok(CollectionScan::assemble(
            shards,
            read_schema,
            output,
            filter,
            find,
            partitions,
            batch_rows,
            rows,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        shards: Shards,
        read_schema: SchemaRef,
        output: Vec<usize>,
        filter: Document,
        find: FindOptions,
        partitions: usize,
        batch_rows: usize,
        rows: Option<usize>,
    ) -> CollectionScan {
        let out_schema = Arc::new(Schema::new_with_metadata(
            output
                .iter()
                .map(|&i| read_schema.field(i).clone())
                .collect::<Vec<_>>(),
            read_schema.metadata().clone(),
        ));
        // A remote scan's task that was given no shard still has the partitions of one, empty.
        let props = PlanProperties::new(
            EquivalenceProperties::new(out_schema),
            Partitioning::UnknownPartitioning(partitions * shards.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        CollectionScan {
            shards,
            read_schema,
            output,
            filter,
            find,
            partitions,
            batch_rows,
            rows,
            props: Arc::new(props),
        }
    }

    /// The collections the scan reads.
    #[must_use]
    pub fn shards(&self) -> &Shards {
        &self.shards
    }

    /// The same scan of remote shards, reading only the shards `shards` (none: a scan that
    /// returns nothing, with the same schema and partition count as a scan of one shard).
    ///
    /// # Errors
    /// `Internal` for a scan of local collections.
    pub fn with_shards(&self, shards: Vec<usize>) -> Result<CollectionScan> {
        let subset = self
            .shards
            .remote_subset(shards)
            .ok_or_else(|| DataFusionError::Internal("a scan of local collections".into()))?;
        Ok(CollectionScan::assemble(
            subset,
            Arc::clone(&self.read_schema),
            self.output.clone(),
            self.filter.clone(),
            self.find.clone(),
            self.partitions,
            self.batch_rows,
            None,
        ))
    }

    /// The scan of remote shards as BSON, to be sent to a worker ([`CollectionScan::decode`]).
    ///
    /// # Errors
    /// `Internal` for a scan of local collections (only its process can read them); an
    /// Arrow error when the schema cannot be written.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let Shards::Remote { collection, shards } = &self.shards else {
            return Err(DataFusionError::Internal(
                "a scan of local collections cannot be sent to another process".into(),
            ));
        };
        let d = doc! {
            "collection": collection,
            "shards": shards.iter().map(|&s| to_i64(s)).collect::<Vec<_>>(),
            "schema": crate::wire::schema_bytes(&self.read_schema)?,
            "output": self.output.iter().map(|&s| to_i64(s)).collect::<Vec<_>>(),
            "filter": &self.filter,
            "projection": self.find.projection.clone().map_or(Bson::Null, Bson::Document),
            "limit": self.find.limit.map_or(Bson::Null, |l| Bson::Int64(to_i64(l))),
            "partitions": to_i64(self.partitions),
            "batch_rows": to_i64(self.batch_rows),
        };
        crate::wire::document_bytes(&d)
    }

    /// The scan [`CollectionScan::encode`] wrote.
    ///
    /// # Errors
    /// `Internal` when `bytes` are not such a scan.
    pub fn decode(bytes: &[u8]) -> Result<CollectionScan> {
        use crate::wire::{bad, get_usize, get_usizes};
        let d = Document::from_reader(bytes).map_err(|e| bad("scan", &e.to_string()))?;
        let collection = d
            .get_str("collection")
            .map_err(|e| bad("scan", &e.to_string()))?
            .to_owned();
        let shards = get_usizes(&d, "shards")?;
        let schema = crate::wire::schema_from_bytes(
            d.get_binary_generic("schema")
                .map_err(|e| bad("scan", &e.to_string()))?,
        )?;
        let output = get_usizes(&d, "output")?;
        if output.iter().any(|&o| o >= schema.fields().len()) {
            return Err(bad("scan", "an output column past the schema"));
        }
        let filter = d
            .get_document("filter")
            .map_err(|e| bad("scan", &e.to_string()))?
            .clone();
        let projection = d.get_document("projection").ok().cloned();
        let limit = match d.get("limit") {
            Some(Bson::Int64(l)) => {
                Some(usize::try_from(*l).map_err(|e| bad("scan", &e.to_string()))?)
            }
            _ => None,
        };
        let partitions = get_usize(&d, "partitions")?.max(1);
        let batch_rows = get_usize(&d, "batch_rows")?.max(1);
        let find = FindOptions {
            projection,
            limit,
            ..FindOptions::default()
        };
        Ok(CollectionScan::assemble(
            Shards::Remote { collection, shards },
            schema,
            output,
            filter,
            find,
            partitions,
            batch_rows,
            None,
        ))
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
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
            self.props.partitioning.partition_count()
        )?;
        match &self.shards {
            Shards::Local(c) if c.len() > 1 => write!(f, ", shards={}", c.len())?,
            Shards::Local(_) => {}
            Shards::Remote { collection, shards } => {
                write!(f, ", collection={collection}, remote_shards={shards:?}")?;
            }
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
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let shard = partition / self.partitions;
        let part = partition % self.partitions;
        if shard >= self.shards.len() {
            // A remote scan's task that was given no shard.
            if self.shards.is_empty() && shard == 0 {
                return Ok(Box::pin(RecordBatchStreamAdapter::new(
                    self.schema(),
                    futures::stream::empty(),
                )));
            }
            return Err(DataFusionError::Internal(format!(
                "partition {partition} of a scan with {} partitions",
                self.props.partitioning.partition_count()
            )));
        }
        let Some(coll) = self.shards.resolve(shard, &context)? else {
            // A coordinator: the worker that holds the shard runs the scan of that shard.
            let host = context
                .session_config()
                .get_extension::<ShardHostExtension>()
                .ok_or_else(|| nowhere_to_run("CollectionScan"))?;
            let number = self.shards.remote_shard(shard).unwrap_or(shard);
            let one = Arc::new(self.with_shards(vec![number])?);
            return host.0.execute(number, one, part, context);
        };
        let options = ArrowOptions {
            batch_rows: self.batch_rows,
            schema: Some(Arc::clone(&self.read_schema)),
            partition: Some((part, self.partitions)),
        };
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
