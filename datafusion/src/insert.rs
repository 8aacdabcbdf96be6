//! SQL `INSERT INTO` a collection table: a DataFusion `DataSink` that inserts each batch of
//! the rows to insert with `Collection::insert_record_batch`, ordered, and counts them.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;
use tscoll_engine::{Collection, InsertOptions};

use crate::table::external;

/// The rows of an `INSERT INTO` a collection table, inserted batch by batch as measurements
/// (`Collection::insert_record_batch`, ordered: the first rejected row stops the insert).
pub(crate) struct CollectionSink {
    coll: Collection,
    /// The table's schema: the rows come in its column order and types; its field marks
    /// (`tscoll.encoding`, `tscoll.bson_type`, `tscoll.nulls`) say what the values are.
    schema: SchemaRef,
}

impl CollectionSink {
    /// The sink of rows of `schema` (the table's) into `coll`.
    pub(crate) fn new(coll: Collection, schema: SchemaRef) -> Self {
        CollectionSink { coll, schema }
    }

    /// `batch` with the table's field marks: DataFusion casts the rows to the table's types
    /// but keeps no field metadata, so a JSON text column would otherwise be taken as
    /// strings, an ObjectId column as binary data and a BSON timestamp column as longs.
    fn marked(&self, batch: RecordBatch) -> RecordBatch {
        let fields: Vec<Field> = batch
            .schema()
            .fields()
            .iter()
            .zip(self.schema.fields())
            .map(|(got, table)| {
                if got.data_type() != table.data_type() {
                    return got.as_ref().clone();
                }
                let metadata = table.metadata().clone();
                got.as_ref().clone().with_metadata(metadata)
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            batch.schema().metadata().clone(),
        ));
        RecordBatch::try_new(schema, batch.columns().to_vec()).unwrap_or(batch)
    }
}

impl fmt::Debug for CollectionSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CollectionSink")
            .field("collection", &self.coll.name())
            .finish_non_exhaustive()
    }
}

impl DisplayAs for CollectionSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CollectionSink: collection={}", self.coll.name())
    }
}

#[async_trait]
impl DataSink for CollectionSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Inserts every batch of `data` in order; returns the rows inserted.
    ///
    /// # Errors
    /// The first rejected row, by its position among the rows to insert (from 0) and the
    /// engine's reason, with the count of rows inserted before it (kept); what
    /// `insert_record_batch` refuses as a whole (a column type it does not take, no time
    /// column) or fails with (storage).
    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let options = InsertOptions {
            ordered: true,
            ..InsertOptions::default()
        };
        let mut inserted: u64 = 0;
        let mut position: usize = 0;
        while let Some(batch) = data.next().await {
            let batch = self.marked(batch?);
            // An ordered insert that stops at a rejected row is `Error::BulkWrite`, holding
            // the rows stored before it and the rejection.
            let result = self
                .coll
                .insert_record_batch(&batch, &options)
                .or_else(tscoll_engine::Error::into_insert_result)
                .map_err(external)?;
            inserted += result.inserted as u64;
            if let Some(e) = result.errors.first() {
                return Err(rejected(
                    self.coll.name(),
                    position + e.index,
                    &e.message,
                    inserted,
                ));
            }
            position += batch.num_rows();
        }
        Ok(inserted)
    }
}

/// The error of a rejected row: its position among the rows to insert, why, and how many
/// rows before it were inserted.
fn rejected(table: &str, position: usize, reason: &str, inserted: u64) -> DataFusionError {
    DataFusionError::Execution(format!(
        "INSERT INTO {table}: row {position} (from 0) was rejected: {reason}; the {inserted} \
         row(s) before it were inserted, none after it"
    ))
}
