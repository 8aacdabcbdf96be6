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
mod groups;
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

impl Collection {
    /// As [`Collection::find`] (SPEC §14: same filter, projection, sort on time, skip and limit), with
    /// the result as Arrow record batches filled from the decoded bucket columns: no
    /// document is made per measurement, and only the columns the projection and filter
    /// need are decoded. The schema (docs/arrow.md): the time field as
    /// `Timestamp(Millisecond, "UTC")`, the meta field (a document as a `Struct`, strings
    /// dictionary-encoded), then each measurement field in order of first appearance, typed
    /// from the BSON types it holds (int32 → `Int32`, int32 and int64 → `Int64`, numbers
    /// with a double → `Float64`, strings → `Utf8`, dates → `Timestamp`, ...; documents,
    /// arrays and mixed types → `Utf8` of relaxed Extended JSON). Rows in the order of
    /// [`Collection::find`].
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// use arrow_array::{Array, Int32Array};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..4).map(|i| doc! { "t": DateTime::from_millis(i), "m": "a", "v": i as i32 }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let opts = FindOptions { projection: Some(doc! { "v": 1 }), ..Default::default() };
    /// let batches = coll
    ///     .find_arrow(&doc! { "v": { "$gte": 2 } }, &opts, &ArrowOptions::default())?
    ///     .collect::<std::result::Result<Vec<_>, _>>()?;
    /// let v = batches[0].column_by_name("v").unwrap();
    /// assert_eq!(v.as_any().downcast_ref::<Int32Array>().unwrap().values(), &[2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::find`]; `BadValue` for a sort on other fields than time
    /// (`sort_by`), or a given schema that does not start with the time field or has a
    /// column type no BSON type maps to. Each batch: as [`Collection::find_cursor`]'s
    /// items, and `TypeMismatch` for a value its column in a given schema does not take.
    pub fn find_arrow(
        &self,
        filter: &Document,
        options: &FindOptions,
        arrow: &ArrowOptions,
    ) -> Result<ArrowCursor> {
        ArrowCursor::new(&self.inner, filter, options, arrow)
    }

    /// The schema of [`Collection::find_arrow`]'s result for `filter` and `projection`,
    /// from the control records of the buckets the filter selects and the meta values of
    /// their series (no bucket is decoded); with an empty filter, the schema of the whole
    /// collection as it is now, for a table that scans it in parts
    /// ([`ArrowOptions::schema`]).
    ///
    /// # Errors
    /// As [`Collection::find_arrow`].
    pub fn arrow_schema(
        &self,
        filter: &Document,
        projection: Option<&Document>,
    ) -> Result<SchemaRef> {
        let options = FindOptions {
            projection: projection.cloned(),
            limit: Some(1),
            ..FindOptions::default()
        };
        Ok(ArrowCursor::new(&self.inner, filter, &options, &ArrowOptions::default())?.schema())
    }

    /// The schema that holds the results of two schemas of this collection's options: e.g.
    /// [`Collection::arrow_schema`] of two shards of one table (collections with the same
    /// time and meta fields in two databases: docs/scale-out.md), so that one given schema
    /// ([`ArrowOptions::schema`]) reads both. Column by column: the meta shapes joined
    /// (struct fields of either side), the fields of `a` then those only `b` has, each of
    /// the type that holds both sides' values (int32 and int64 → `Int64`, integers and
    /// doubles → `Float64`, any other mix → JSON text: docs/arrow.md).
    ///
    /// # Errors
    /// `BadValue` when either schema is not one of this collection's (its first column not
    /// the time field as `Timestamp(Millisecond, _)`, or a column type no BSON type maps
    /// to).
    pub fn join_arrow_schemas(&self, a: &SchemaRef, b: &SchemaRef) -> Result<SchemaRef> {
        let spec = self.inner.spec();
        let a = schema::Layout::given(&spec, SchemaRef::clone(a))?;
        let b = schema::Layout::given(&spec, SchemaRef::clone(b))?;
        Ok(a.join(b, &spec).schema)
    }
}
