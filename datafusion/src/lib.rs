//! tscoll's time-series collections as Apache DataFusion tables: plan and run SQL over
//! measurements, with the collection doing what it does best — choosing buckets by meta
//! and time through its index, pruning them with control records, decoding only the columns
//! a query reads — and DataFusion the rest (joins, windows, sorts, expressions).
//!
//! ```
//! # use bson::{DateTime, doc};
//! # use tscoll_engine::*;
//! use datafusion::prelude::SessionContext;
//! # let dir = tempfile::tempdir()?;
//! # let db = Database::open(dir.path(), DatabaseOptions::default())?;
//! let coll = db.create_collection("cpu", &TimeseriesOptions::new("time").meta_field("tags"))?;
//! let docs: Vec<_> = (0..6)
//!     .map(|i| doc! { "time": DateTime::from_millis(i * 60_000), "tags": { "host": "a" }, "usage": i })
//!     .collect();
//! coll.insert_many(&docs, &InsertOptions::default())?;
//! let ctx = SessionContext::new();
//! tscoll_datafusion::register_database(&ctx, &db)?;
//! let rt = tokio::runtime::Runtime::new()?;
//! let batches = rt.block_on(async {
//!     ctx.sql("SELECT sum(usage) AS s FROM cpu WHERE tags.host = 'a'").await?.collect().await
//! })?;
//! let s = batches[0].column(0).as_any().downcast_ref::<datafusion::arrow::array::Int64Array>();
//! assert_eq!(s.unwrap().value(0), 15);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! | file | concept |
//! |---|---|
//! | `table.rs` | [`CollectionTable`]: a collection as a `TableProvider` (schema, pushdown, scan, insert) |
//! | `insert.rs` | `INSERT INTO` a table: the sink that inserts the rows as measurements |
//! | `scan.rs` | the execution plan of a scan: one Arrow cursor per partition |
//! | `shards.rs` | where a table's collections are: in this process, or shards on workers |
//! | `wire.rs` | plans over remote shards as bytes for another process |
//! | `filter.rs` | SQL predicates as a MongoDB filter the collection prunes buckets with |
//! | `rule.rs` | the optimizer rule that hands aggregates by time window and meta to the collection |
//! | `aggregate.rs` | the collection's partial aggregates per series and window as a table |
//! | `memory.rs` | [`bounded_context`]: a session whose operators hold a bounded memory and spill |
//!
//! The table's schema is the collection's Arrow schema (docs/arrow.md) when the table is
//! made: the time field as `Timestamp(Millisecond, "UTC")`, the meta field (a document as a
//! struct: `tags.hostname` in SQL), then the measurement fields.

#![deny(missing_docs)]

/// The `ExecutionPlan` methods of a plan without children or expressions, whose
/// properties are in its field `props`.
macro_rules! leaf_plan {
    () => {
        fn properties(&self) -> &std::sync::Arc<datafusion::physical_plan::PlanProperties> {
            &self.props
        }

        fn children(&self) -> Vec<&std::sync::Arc<dyn ExecutionPlan>> {
            Vec::new()
        }

        fn apply_expressions(
            &self,
            _f: &mut dyn FnMut(
                &std::sync::Arc<dyn datafusion::physical_expr::PhysicalExpr>,
            ) -> datafusion::common::Result<
                datafusion::common::tree_node::TreeNodeRecursion,
            >,
        ) -> datafusion::common::Result<datafusion::common::tree_node::TreeNodeRecursion> {
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        }

        fn with_new_children(
            self: std::sync::Arc<Self>,
            _children: Vec<std::sync::Arc<dyn ExecutionPlan>>,
        ) -> datafusion::common::Result<std::sync::Arc<dyn ExecutionPlan>> {
            Ok(self)
        }
    };
}
pub(crate) use leaf_plan;

mod aggregate;
mod filter;
mod insert;
mod memory;
mod rule;
mod scan;
mod shards;
mod table;
mod wire;

use std::sync::Arc;

use datafusion::prelude::SessionContext;
use tscoll_engine::Database;

pub use aggregate::WindowAggregateExec;
pub use memory::{bounded_context, bounded_parts};
pub use rule::{RULE_NAME, WindowAggregateRule};
pub use scan::CollectionScan;
pub use shards::{ShardDatabase, ShardHost, ShardHostExtension, Shards};
pub use table::CollectionTable;
pub use wire::{schema_bytes, schema_from_bytes};

/// Registers every collection of `db` in `ctx` as a table of the same name, and the
/// optimizer rule that lets collections answer aggregates ([`add_rules`]).
///
/// # Errors
/// A collection whose schema cannot be read (a storage or corruption error), or a table
/// DataFusion refuses to register (a name taken).
pub fn register_database(ctx: &SessionContext, db: &Database) -> datafusion::error::Result<()> {
    add_rules(ctx);
    for (name, _) in db.list_collections().map_err(table::external)? {
        let coll = db.collection(&name).map_err(table::external)?;
        ctx.register_table(name.as_str(), Arc::new(CollectionTable::new(coll)?))?;
    }
    Ok(())
}

/// Adds [`WindowAggregateRule`] to `ctx`'s optimizer, once: aggregates over collection
/// tables grouped by time windows and meta fields are then answered by the collections
/// from their bucket sums and control records (docs/sql.md). [`register_database`] calls
/// it; call it when registering [`CollectionTable`]s by hand.
pub fn add_rules(ctx: &SessionContext) {
    let present = ctx
        .state()
        .optimizers()
        .iter()
        .any(|r| r.name() == RULE_NAME);
    if !present {
        ctx.add_optimizer_rule(Arc::new(WindowAggregateRule));
    }
}
