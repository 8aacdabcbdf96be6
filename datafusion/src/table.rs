//! A collection as a DataFusion `TableProvider`.

use std::sync::Arc;

use async_trait::async_trait;
use bson::Document;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use tscoll_engine::Collection;

use crate::filter::{is_exact, to_filter};
use crate::insert::CollectionSink;
use crate::scan::CollectionScan;
use crate::shards::{ShardHostExtension, Shards};

/// Values (rows × columns) a scan's batch holds at most, when DataFusion's batch size would
/// make more: 128 columns of 8192 rows.
const BATCH_VALUES: usize = 1 << 20;

/// A time-series collection as a table: its schema is the collection's Arrow schema when
/// the table was made (`Collection::arrow_schema`, docs/arrow.md), and a scan reads it with
/// `Collection::find_arrow` in one partition per DataFusion target partition (ranges of
/// bucket ids).
///
/// Pushed down to the collection: the projection (only the columns read are decoded), the
/// comparisons, `IN` lists and `BETWEEN`s of the time field, measurement fields and meta
/// fields with constants (the index chooses buckets by meta and time, control records prune
/// them: SPEC §14.4) — exactly for integers, strings, booleans and dates, so DataFusion
/// drops those predicates; inexactly for doubles, which DataFusion filters again — and the
/// limit of a query whose filters are all exact. A scan without filters reports its exact
/// row count (from control records), which answers `SELECT count(*)` without a scan.
///
/// A value of a type the schema does not take (a string inserted, after the table was made,
/// into a field the schema has as `Int64`) fails the scan with the engine's `TypeMismatch`:
/// make the table again.
///
/// One table may also be several collections, the shards of one data set in several
/// databases ([`CollectionTable::sharded`], docs/scale-out.md): a scan reads each shard in
/// its own partitions. Or the shards are held by other processes, the workers of a cluster
/// ([`CollectionTable::remote`]): its plans are sent to them.
pub struct CollectionTable {
    pub(crate) shards: Shards,
    pub(crate) schema: SchemaRef,
    /// The collections' meta field, if they have one.
    pub(crate) meta_field: Option<String>,
}

impl std::fmt::Debug for CollectionTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectionTable")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl CollectionTable {
    /// The table of `coll` as it is now.
    ///
    /// # Errors
    /// What `Collection::arrow_schema` fails with (storage or corruption), as a DataFusion
    /// external error.
    pub fn new(coll: Collection) -> Result<CollectionTable> {
        CollectionTable::sharded(vec![coll])
    }

    /// One table of the collections `shards`: the parts of one data set kept in several
    /// databases, each series (meta value) in one of them, e.g. by a hash of the meta
    /// field (docs/scale-out.md). Its schema holds every shard's columns
    /// (`Collection::join_arrow_schemas`); a scan reads the shards side by side, each in
    /// its share of the target partitions (at least one), and pushes the same projection,
    /// filter and limit to each.
    ///
    /// # Errors
    /// `Plan` when `shards` is empty or the shards differ in their time or meta field;
    /// what `Collection::arrow_schema` fails with, as an external error.
    pub fn sharded(shards: Vec<Collection>) -> Result<CollectionTable> {
        let Some(first) = shards.first() else {
            return Err(DataFusionError::Plan(
                "a table needs at least one collection".into(),
            ));
        };
        let spec = first.spec();
        let mut schema: Option<SchemaRef> = None;
        for coll in &shards {
            let s = coll.spec();
            if s.time_field != spec.time_field || s.meta_field != spec.meta_field {
                return Err(DataFusionError::Plan(format!(
                    "the shards of one table have one time field and meta field: '{}' has \
                     {}/{:?}, '{}' {}/{:?}",
                    first.name(),
                    spec.time_field,
                    spec.meta_field,
                    coll.name(),
                    s.time_field,
                    s.meta_field
                )));
            }
            let own = coll
                .arrow_schema(&Document::new(), None)
                .map_err(external)?;
            schema = Some(match schema {
                None => own,
                Some(joined) => first.join_arrow_schemas(&joined, &own).map_err(external)?,
            });
        }
        let schema = schema.ok_or_else(|| DataFusionError::Plan("no shard".into()))?;
        Ok(CollectionTable {
            shards: Shards::Local(shards),
            schema,
            meta_field: spec.meta_field,
        })
    }

    /// The table of collection `collection` held in `shard_count` shards by other processes
    /// (the workers of a cluster, docs/scale-out.md), with the schema `schema` (the shards'
    /// schemas joined, `Collection::join_arrow_schemas`) and meta field `meta_field`. Its
    /// plans run where a `ShardDatabase` is in the session, or are sent there by the
    /// session's `ShardHostExtension`, which also prunes the shards a filter cannot match.
    #[must_use]
    pub fn remote(
        collection: &str,
        schema: SchemaRef,
        meta_field: Option<String>,
        shard_count: usize,
    ) -> CollectionTable {
        CollectionTable {
            shards: Shards::Remote {
                collection: collection.to_owned(),
                shards: (0..shard_count).collect(),
            },
            schema,
            meta_field,
        }
    }
}

/// The shards of `shards` that a query with the filter `filter` reads: all of local ones,
/// those the session's `ShardHostExtension` says may match of remote ones.
pub(crate) fn pruned(shards: &Shards, filter: &Document, state: &dyn Session) -> Shards {
    let Shards::Remote {
        collection,
        shards: all,
    } = shards
    else {
        return shards.clone();
    };
    let Some(host) = state.config().get_extension::<ShardHostExtension>() else {
        return shards.clone();
    };
    let keep: Vec<usize> = host
        .0
        .shards_for(collection, filter)
        .into_iter()
        .filter(|s| all.contains(s))
        .collect();
    Shards::Remote {
        collection: collection.clone(),
        shards: keep,
    }
}

#[async_trait]
impl TableProvider for CollectionTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match to_filter(f, &self.schema) {
                Some(_) if is_exact(f, &self.schema) => TableProviderFilterPushDown::Exact,
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let clauses: Vec<Document> = filters
            .iter()
            .filter_map(|f| to_filter(f, &self.schema))
            .collect();
        let filter = match clauses.len() {
            0 => Document::new(),
            1 => clauses.into_iter().next().unwrap_or_default(),
            _ => bson::doc! { "$and": clauses },
        };
        // A limit reaches the scan only when no filter is left above it: every filter is
        // one the collection applies exactly.
        let limit = limit.filter(|_| filters.iter().all(|f| is_exact(f, &self.schema)));
        let partitions = state.config().target_partitions().max(1);
        // A batch of a wide projection (thousands of fields) holds fewer rows, so that it
        // holds about as many values as one of a few columns.
        let columns = projection.map_or(self.schema.fields().len(), Vec::len);
        let batch_rows = state
            .config()
            .batch_size()
            .min((BATCH_VALUES / columns.max(1)).max(1));
        let shards = pruned(&self.shards, &filter, state);
        Ok(Arc::new(CollectionScan::new(
            shards,
            &self.schema,
            projection,
            filter,
            limit,
            partitions,
            batch_rows,
        )?))
    }

    /// `INSERT INTO` the table (docs/sql.md): the rows, cast by DataFusion to the table's
    /// column types, are inserted batch by batch with `Collection::insert_record_batch`,
    /// ordered; the plan returns the count of rows inserted.
    ///
    /// # Errors
    /// `NotImplemented` for `INSERT OVERWRITE` and `REPLACE INTO`, `Plan` for a table of
    /// several shards (insert into a shard's own table); when the plan runs, the first
    /// rejected row by its position (from 0) and reason (the rows before it are kept), or
    /// what the engine refuses or fails with.
    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "{insert_op} into a collection: measurements are only appended (INSERT INTO)"
            )));
        }
        let Shards::Local(shards) = &self.shards else {
            return Err(DataFusionError::Plan(
                "INSERT into a table of remote shards: ingest through the cluster (tscoll \
                 ingest --workers), which sends each series to its shard"
                    .into(),
            ));
        };
        let [coll] = shards.as_slice() else {
            return Err(DataFusionError::Plan(
                "INSERT into a table of several shards: insert into the table of the shard \
                 each series belongs to"
                    .into(),
            ));
        };
        let sink = CollectionSink::new(coll.clone(), Arc::clone(&self.schema));
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

/// An engine error as a DataFusion error.
pub(crate) fn external(e: tscoll_engine::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
