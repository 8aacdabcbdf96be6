//! The meta field as an Arrow column. A meta value is one per series, so the column is
//! built from the series of a result, not from its rows: a document becomes a `Struct` of
//! its fields (nested documents nested structs), a string (or a JSON text) leaf is
//! dictionary-encoded with the series as keys (`Dictionary(Int32, Utf8)`), and any other
//! leaf is its series' values taken row by row.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, DictionaryArray, Int32Array, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields};
use bson::Bson;

use super::column::{AppendError, ColumnBuilder};
use super::kind::Kind;

/// The Arrow shape of a meta value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MetaShape {
    /// A scalar (or a JSON text): one column.
    Leaf(Kind),
    /// A document: one child per field, in order of first appearance.
    Struct(Vec<(String, MetaShape)>),
}

impl MetaShape {
    /// The shape of one series' meta value (`None`: no meta value).
    pub(crate) fn of(v: Option<&Bson>) -> MetaShape {
        match v {
            Some(Bson::Document(d)) if !d.is_empty() => MetaShape::Struct(
                d.iter()
                    .map(|(k, v)| (k.clone(), MetaShape::of(Some(v))))
                    .collect(),
            ),
            Some(v) => MetaShape::Leaf(Kind::of_type(tscoll_catalog::value::type_code(v))),
            None => MetaShape::Leaf(Kind::Null),
        }
    }

    /// The shape holding values of both shapes.
    #[must_use]
    pub(crate) fn join(self, other: MetaShape) -> MetaShape {
        match (self, other) {
            (MetaShape::Leaf(Kind::Null), s) | (s, MetaShape::Leaf(Kind::Null)) => s,
            (MetaShape::Leaf(a), MetaShape::Leaf(b)) => MetaShape::Leaf(a.join(b)),
            (MetaShape::Struct(mut a), MetaShape::Struct(b)) => {
                for (name, shape) in b {
                    match a.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, s)) => {
                            *s = std::mem::replace(s, MetaShape::Leaf(Kind::Null)).join(shape)
                        }
                        None => a.push((name, shape)),
                    }
                }
                MetaShape::Struct(a)
            }
            _ => MetaShape::Leaf(Kind::Json),
        }
    }

    /// The Arrow field named `name` of this shape.
    pub(crate) fn field(&self, name: &str) -> Field {
        match self {
            MetaShape::Leaf(k @ (Kind::String | Kind::Json)) => {
                let f = k.field(name);
                let metadata = f.metadata().clone();
                Field::new(
                    name,
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                    true,
                )
                .with_metadata(metadata)
            }
            MetaShape::Leaf(k) => k.field(name),
            MetaShape::Struct(children) => Field::new(
                name,
                DataType::Struct(children.iter().map(|(n, s)| s.field(n)).collect::<Fields>()),
                true,
            ),
        }
    }

    /// The shape of an Arrow field ([`MetaShape::field`]'s inverse); `None` for a type no
    /// shape maps to.
    pub(crate) fn of_field(field: &Field) -> Option<MetaShape> {
        match field.data_type() {
            DataType::Struct(children) => Some(MetaShape::Struct(
                children
                    .iter()
                    .map(|c| Some((c.name().clone(), MetaShape::of_field(c)?)))
                    .collect::<Option<_>>()?,
            )),
            DataType::Dictionary(key, value)
                if **key == DataType::Int32 && **value == DataType::Utf8 =>
            {
                let plain = Field::new(field.name(), DataType::Utf8, true)
                    .with_metadata(field.metadata().clone());
                Kind::of_field(&plain).map(MetaShape::Leaf)
            }
            _ => Kind::of_field(field).map(MetaShape::Leaf),
        }
    }

    /// The values of this shape, one per series (`values[s]` the meta value of series `s`).
    ///
    /// # Errors
    /// [`AppendError::Mismatch`] when a value does not fit the shape.
    pub(crate) fn series_values(
        &self,
        values: &[Option<&Bson>],
    ) -> Result<SeriesValues, AppendError> {
        match self {
            MetaShape::Leaf(kind) => {
                let mut b = ColumnBuilder::new(*kind, values.len());
                for v in values {
                    b.append_bson(*v)?;
                }
                let array = b.finish().map_err(AppendError::Corrupt)?;
                Ok(SeriesValues::Leaf {
                    array,
                    dictionary: matches!(kind, Kind::String | Kind::Json),
                })
            }
            MetaShape::Struct(children) => {
                // A series whose meta value is not a document (none, or null) is a null.
                let valid: Vec<bool> = values
                    .iter()
                    .map(|v| matches!(v, Some(Bson::Document(_))))
                    .collect();
                if let Some(v) = values
                    .iter()
                    .flatten()
                    .find(|v| !matches!(v, Bson::Null | Bson::Undefined | Bson::Document(_)))
                {
                    return Err(AppendError::Mismatch(tscoll_catalog::value::type_code(v)));
                }
                let kids = children
                    .iter()
                    .map(|(name, shape)| {
                        let sub: Vec<Option<&Bson>> = values
                            .iter()
                            .map(|v| match v {
                                Some(Bson::Document(d)) => d.get(name),
                                _ => None,
                            })
                            .collect();
                        Ok((shape.field(name), shape.series_values(&sub)?))
                    })
                    .collect::<Result<Vec<_>, AppendError>>()?;
                Ok(SeriesValues::Struct { kids, valid })
            }
        }
    }
}

/// A shape's values per series, from which the column of any batch is made by its rows'
/// series.
pub(crate) enum SeriesValues {
    Leaf {
        array: ArrayRef,
        /// Whether the column is dictionary-encoded (strings, JSON texts).
        dictionary: bool,
    },
    Struct {
        kids: Vec<(Field, SeriesValues)>,
        /// Whether each series has a document.
        valid: Vec<bool>,
    },
}

impl SeriesValues {
    /// The column of rows whose series are `keys`.
    ///
    /// # Errors
    /// A message when Arrow refuses the arrays (a key out of range).
    pub(crate) fn column(&self, keys: &Int32Array) -> Result<ArrayRef, String> {
        let err = |e: arrow_schema::ArrowError| e.to_string();
        Ok(match self {
            SeriesValues::Leaf {
                array,
                dictionary: true,
            } => Arc::new(DictionaryArray::try_new(keys.clone(), Arc::clone(array)).map_err(err)?),
            SeriesValues::Leaf { array, .. } => {
                arrow_select::take::take(array.as_ref(), keys, None).map_err(err)?
            }
            SeriesValues::Struct { kids, valid } => {
                let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = kids
                    .iter()
                    .map(|(f, v)| Ok((f.clone(), v.column(keys)?)))
                    .collect::<Result<Vec<_>, String>>()?
                    .into_iter()
                    .unzip();
                let nulls = (!valid.iter().all(|&v| v)).then(|| {
                    NullBuffer::from(
                        keys.values()
                            .iter()
                            .map(|&k| {
                                usize::try_from(k)
                                    .ok()
                                    .and_then(|k| valid.get(k))
                                    .copied()
                                    .unwrap_or(false)
                            })
                            .collect::<Vec<bool>>(),
                    )
                });
                let array =
                    StructArray::try_new(Fields::from(fields), arrays, nulls).map_err(err)?;
                debug_assert_eq!(array.len(), keys.len());
                Arc::new(array)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn documents_join_field_by_field_and_scalars_with_documents_are_json() {
        let a = MetaShape::of(Some(&Bson::Document(doc! { "host": "a", "rack": 1 })));
        let b = MetaShape::of(Some(&Bson::Document(doc! { "host": "b", "dc": "x" })));
        let joined = a.clone().join(b);
        assert_eq!(
            joined,
            MetaShape::Struct(vec![
                ("host".into(), MetaShape::Leaf(Kind::String)),
                ("rack".into(), MetaShape::Leaf(Kind::Int32)),
                ("dc".into(), MetaShape::Leaf(Kind::String)),
            ])
        );
        assert_eq!(
            MetaShape::of_field(&joined.field("m")),
            Some(joined.clone())
        );
        assert_eq!(a.clone().join(MetaShape::of(None)), a);
        assert_eq!(
            a.join(MetaShape::of(Some(&Bson::String("s".into())))),
            MetaShape::Leaf(Kind::Json)
        );
    }

    #[test]
    fn a_struct_column_takes_each_rows_series() {
        let d1 = Bson::Document(doc! { "host": "a", "rack": 1 });
        let d2 = Bson::Document(doc! { "host": "b" });
        let values = [Some(&d1), Some(&d2), None];
        let shape = values
            .iter()
            .map(|v| MetaShape::of(*v))
            .reduce(MetaShape::join)
            .unwrap();
        let per_series = shape.series_values(&values).unwrap();
        let col = per_series
            .column(&Int32Array::from(vec![1, 0, 2, 1]))
            .unwrap();
        let s = col.as_any().downcast_ref::<StructArray>().unwrap();
        assert_eq!(s.len(), 4);
        assert!(s.is_null(2) && s.is_valid(0));
        let rack = s.column_by_name("rack").unwrap();
        assert!(rack.is_null(0) && rack.is_valid(1) && rack.is_null(3));
        let host = s.column_by_name("host").unwrap();
        assert!(matches!(host.data_type(), DataType::Dictionary(_, _)));
    }
}
