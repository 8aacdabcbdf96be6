//! tscoll for Python: the native module `tscoll._tscoll`, which the pure-Python package
//! `tscoll` (python/python/tscoll/) re-exports. Arrow goes in and out through the Arrow
//! PyCapsule interface (pyo3-arrow), without a copy; every engine call runs with the GIL
//! released.
//!
//! | file | what it holds |
//! |---|---|
//! | `database.rs` | `open` and `Database` |
//! | `collection.rs` | `Collection`: insert, find, aggregate, count, delete, update, stats |
//! | `insert.rs` | inserts of dicts and of Arrow streams, batch by batch |
//! | `aggregate.rs` | a pipeline's result as Arrow batches |
//! | `documents.rs` | documents laid out as one record batch |
//! | `sql.rs` | `Database.sql` (feature `sql`) |
//! | `to_bson.rs`, `to_py.rs` | Python values ↔ BSON |
//! | `results.rs` | the result objects of writes |
//! | `errors.rs` | engine errors → `tscoll.errors` exceptions |

use pyo3::prelude::*;

mod aggregate;
mod collection;
mod database;
mod errors;
mod insert;
mod results;
#[cfg(feature = "sql")]
mod sql;
mod to_bson;
mod to_py;

/// The native module: `open`, the classes, and whether SQL is compiled in.
#[pymodule]
fn _tscoll(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(database::open, m)?)?;
    m.add_class::<database::PyDatabase>()?;
    m.add_class::<collection::PyCollection>()?;
    m.add_class::<results::InsertResult>()?;
    m.add_class::<results::DeleteResult>()?;
    m.add_class::<results::UpdateResult>()?;
    m.add("HAS_SQL", cfg!(feature = "sql"))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
