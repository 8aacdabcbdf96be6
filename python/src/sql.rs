//! `Database.sql`: a SQL query over the collections (tscoll-datafusion), run on the
//! database's tokio runtime with the GIL released; its batches returned as one table.

use futures::StreamExt;
use pyo3::prelude::*;
use tscoll_engine::Database;

use crate::database::Shared;
use crate::errors::runtime;

/// Memory DataFusion's sorts, aggregates and joins may hold together (as `tscoll sql`'s
/// default); sorts and aggregates spill beyond it.
const MEMORY_BYTES: usize = 128 << 20;

/// Runs `query` over every collection of `db`.
///
/// # Errors
/// `OperationFailure` (`BadValue`) with DataFusion's message for a query it refuses or
/// that fails; `RuntimeError` when the runtime cannot start.
pub(crate) fn run<'py>(
    py: Python<'py>,
    shared: &Shared,
    db: &Database,
    query: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let runtime_handle = match shared.runtime.get() {
        Some(r) => r,
        None => {
            let made = tokio::runtime::Builder::new_multi_thread()
                .build()
                .map_err(|e| runtime(format!("starting the SQL runtime: {e}")))?;
            shared.runtime.get_or_init(|| made)
        }
    };
    let outcome = py.detach(|| {
        runtime_handle.block_on(async {
            let ctx = tscoll_datafusion::bounded_context(MEMORY_BYTES)?;
            tscoll_datafusion::register_database(&ctx, db)?;
            let mut stream = ctx.sql(query).await?.execute_stream().await?;
            let schema = stream.schema();
            let mut batches = Vec::new();
            while let Some(batch) = stream.next().await {
                batches.push(batch?);
            }
            Ok::<_, datafusion::error::DataFusionError>((schema, batches))
        })
    });
    match outcome {
        Ok((schema, batches)) => crate::collection::table(py, schema, batches),
        Err(e) => Err(crate::errors::sql_error(py, &e.to_string())),
    }
}
