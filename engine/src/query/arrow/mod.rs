//! Query results as Apache Arrow record batches, filled straight from the codec's lanes
//! (docs/arrow.md: the schema of a result and the Arrow type of every BSON type).
//!
//! | file | concept |
//! |---|---|
//! | `kind.rs` | the Arrow type of a column: BSON types joined into one kind |
//! | `schema.rs` | a result's schema, from control records or given |
//! | `meta.rs` | the meta field as a struct / dictionary column, built per series |
//! | `column.rs` | one column filled from decoded bucket columns |
//! | `cursor.rs` | the walk over candidate buckets that yields the batches |
//! | `groups.rs` | the groups of a windowed aggregate as a record batch |

mod column;
mod cursor;
pub(crate) mod groups;
mod kind;
mod meta;
mod schema;

use arrow_schema::SchemaRef;
use bson::Document;

pub use cursor::ArrowCursor;
pub use kind::ENCODING_KEY;

use super::FindOptions;
use crate::collection::Collection;
use crate::error::Result;
use crate::options::CollectionSpec;

/// Rows per batch of [`ArrowOptions::default`].
pub const DEFAULT_BATCH_ROWS: usize = 8192;

/// How [`Collection::find_arrow`] lays out its batches.
#[derive(Clone, Debug)]
pub struct ArrowOptions {
    /// Rows per batch: buckets are added whole to a batch until it holds at least this many
    /// rows (so a batch holds up to this plus one bucket's rows; the last one fewer).
    /// Default [`DEFAULT_BATCH_ROWS`]; 0 counts as 1. A sorted result is cut into batches of
    /// exactly this many.
    pub batch_rows: usize,
    /// The schema every batch has, e.g. one [`Collection::arrow_schema`] made for a table
    /// scanned in parts, so that the parts agree: its first column the time field, then
    /// the meta field (optional), then measurement fields, in the types docs/arrow.md maps
    /// BSON types to. Columns it lacks are not returned, columns the data lacks are nulls;
    /// a value of a type its column does not take fails the cursor (`TypeMismatch`).
    /// `None` (default): the schema of the buckets the query reads, from their control
    /// records.
    pub schema: Option<SchemaRef>,
    /// `Some((i, n))`: read only part `i` (from 0) of `n` of the buckets the query selects:
    /// the parts are disjoint and together read them all, so that `n` cursors read one
    /// query in parallel. A sort or limit applies within the part. Default `None`: all.
    pub partition: Option<(usize, usize)>,
}

impl Default for ArrowOptions {
    fn default() -> Self {
        ArrowOptions {
            batch_rows: DEFAULT_BATCH_ROWS,
            schema: None,
            partition: None,
        }
    }
}

pub(crate) fn find_arrow(
    coll: &Collection,
    filter: &Document,
    options: &FindOptions,
    arrow: &ArrowOptions,
) -> Result<ArrowCursor> {
    ArrowCursor::new(&coll.inner, filter, options, arrow)
}

pub(crate) fn arrow_schema(
    coll: &Collection,
    filter: &Document,
    projection: Option<&Document>,
) -> Result<SchemaRef> {
    let options = FindOptions {
        projection: projection.cloned(),
        limit: Some(1),
        ..FindOptions::default()
    };
    Ok(ArrowCursor::new(&coll.inner, filter, &options, &ArrowOptions::default())?.schema())
}

pub(crate) fn join_arrow_schemas(
    spec: &CollectionSpec,
    a: &SchemaRef,
    b: &SchemaRef,
) -> Result<SchemaRef> {
    let a = schema::Layout::given(spec, SchemaRef::clone(a))?;
    let b = schema::Layout::given(spec, SchemaRef::clone(b))?;
    Ok(a.join(b, spec).schema)
}
