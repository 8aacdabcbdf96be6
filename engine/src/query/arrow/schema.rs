//! The schema of an Arrow result: the time field, the meta field, then the measurement
//! fields in order of first appearance, each with its [`Kind`] — derived from the control
//! records and series of the buckets a query reads, or given (a schema derived before, which
//! a table keeps while it is scanned in parts).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use bson::Bson;

use super::kind::{Kind, UTC};
use super::meta::MetaShape;
use crate::error::{Error, ErrorCode, Result};
use crate::options::CollectionSpec;
use crate::query::control_view::ControlView;
use crate::query::projection::Projection;

/// What each column of a result holds.
pub(crate) struct Layout {
    /// The meta column's shape, when the result has one.
    pub(crate) meta: Option<MetaShape>,
    /// The measurement fields, in schema order.
    pub(crate) fields: Vec<(String, Kind)>,
    /// The Arrow schema: time, meta (if any), then `fields`.
    pub(crate) schema: SchemaRef,
}

/// The kinds of the fields met so far while reading control records.
#[derive(Default)]
pub(crate) struct Kinds {
    order: Vec<String>,
    kinds: HashMap<String, Kind>,
}

impl Kinds {
    /// Adds the fields of one bucket's control record that `projection` keeps.
    pub(crate) fn add_control(
        &mut self,
        control: &ControlView<'_>,
        time_field: &str,
        projection: &Projection,
    ) {
        let sums = control.sums();
        for (i, (name, min_type, max_type)) in control.field_types().into_iter().enumerate() {
            if name == time_field || !projection.keeps(name) {
                continue;
            }
            let field_sums = sums.as_ref().and_then(|s| s.field(i));
            let mut kind = Kind::of_control(min_type, max_type, field_sums.as_ref());
            // A value cut by a dotted path of the projection is whatever is left of it.
            if projection.cuts_field(name) {
                kind = Kind::Json;
            }
            match self.kinds.get_mut(name) {
                Some(k) => *k = k.join(kind),
                None => {
                    self.order.push(name.to_owned());
                    self.kinds.insert(name.to_owned(), kind);
                }
            }
        }
    }
}

impl Layout {
    /// The layout of a result with the fields `kinds` found and the meta values `metas` of
    /// its series (each as the projection leaves it), `None` when the projection drops the
    /// meta field or the collection has none.
    pub(crate) fn derive(
        spec: &CollectionSpec,
        kinds: Kinds,
        metas: Option<&[Option<&Bson>]>,
    ) -> Layout {
        let meta = metas.map(|metas| {
            metas
                .iter()
                .map(|m| MetaShape::of(*m))
                .reduce(MetaShape::join)
                .unwrap_or(MetaShape::Leaf(Kind::Null))
        });
        let Kinds { order, mut kinds } = kinds;
        let fields: Vec<(String, Kind)> = order
            .into_iter()
            .map(|n| {
                let k = kinds.remove(&n).unwrap_or(Kind::Null);
                (n, k)
            })
            .collect();
        let mut columns = vec![time_field(&spec.time_field)];
        if let (Some(shape), Some(name)) = (&meta, &spec.meta_field) {
            columns.push(shape.field(name));
        }
        columns.extend(fields.iter().map(|(n, k)| k.field(n)));
        Layout {
            meta: meta.filter(|_| spec.meta_field.is_some()),
            fields,
            schema: Arc::new(Schema::new(columns)),
        }
    }

    /// The layout of a given schema: its first column the time field, then the meta field
    /// (if the collection has one and the schema holds it), then measurement fields.
    ///
    /// # Errors
    /// `BadValue` when the schema does not start with the time field as
    /// `Timestamp(Millisecond, _)`, or a column has a type no BSON type maps to
    /// (docs/arrow.md).
    pub(crate) fn given(spec: &CollectionSpec, schema: SchemaRef) -> Result<Layout> {
        let bad = |why: String| Error::rejected(ErrorCode::BadValue, why);
        let mut columns = schema.fields().iter();
        match columns.next() {
            Some(f)
                if f.name() == &spec.time_field
                    && matches!(f.data_type(), DataType::Timestamp(TimeUnit::Millisecond, _)) => {}
            _ => {
                return Err(bad(format!(
                    "an Arrow schema of the collection starts with its time field '{}' as \
                     Timestamp(Millisecond, UTC)",
                    spec.time_field
                )));
            }
        }
        let mut meta = None;
        let mut fields = Vec::new();
        for f in columns {
            if Some(f.name()) == spec.meta_field.as_ref() && meta.is_none() && fields.is_empty() {
                meta = Some(MetaShape::of_field(f).ok_or_else(|| {
                    bad(format!(
                        "meta column '{}' has type {}, which no meta value maps to",
                        f.name(),
                        f.data_type()
                    ))
                })?);
                continue;
            }
            let kind = Kind::of_field(f).ok_or_else(|| {
                bad(format!(
                    "column '{}' has type {}, which no BSON type maps to",
                    f.name(),
                    f.data_type()
                ))
            })?;
            fields.push((f.name().clone(), kind));
        }
        Ok(Layout {
            meta,
            fields,
            schema,
        })
    }
}

impl Layout {
    /// The layout holding the rows of both layouts (of one collection's options): the meta
    /// shapes joined, then this layout's fields and those only `other` has, each of the
    /// kind that holds both sides' values ([`Kind::join`]).
    pub(crate) fn join(self, other: Layout, spec: &CollectionSpec) -> Layout {
        let meta = match (self.meta, other.meta) {
            (Some(a), Some(b)) => Some(a.join(b)),
            (a, b) => a.or(b),
        };
        let mut fields = self.fields;
        for (name, kind) in other.fields {
            match fields.iter_mut().find(|(n, _)| *n == name) {
                Some((_, k)) => *k = k.join(kind),
                None => fields.push((name, kind)),
            }
        }
        let mut columns = vec![time_field(&spec.time_field)];
        if let (Some(shape), Some(name)) = (&meta, &spec.meta_field) {
            columns.push(shape.field(name));
        }
        columns.extend(fields.iter().map(|(n, k)| k.field(n)));
        Layout {
            meta,
            fields,
            schema: Arc::new(Schema::new(columns)),
        }
    }
}

/// The time column: `Timestamp(Millisecond, "UTC")`, never null.
fn time_field(name: &str) -> Field {
    Field::new(
        name,
        DataType::Timestamp(TimeUnit::Millisecond, Some(UTC.into())),
        false,
    )
}
