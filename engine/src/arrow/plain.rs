//! Dictionary-encoded columns unpacked into plain ones (arrow-select's `take` of the values
//! by the keys), at the top level and inside structs, so that the columnar insert reads
//! them as it reads plain columns: `find_arrow`'s meta strings (`Dictionary(Int32, Utf8)`),
//! pandas' categoricals, polars' `Categorical`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field, FieldRef, Fields};
use arrow_select::take::take;

/// `array` (the column of `field`) with its dictionaries unpacked, and its field with the
/// unpacked types (same name, nullability and metadata); the same `Arc`s when there is
/// nothing to unpack.
///
/// # Errors
/// Arrow refuses the unpacked column (a key out of its dictionary's range), naming the field.
pub(crate) fn plain(field: &FieldRef, array: &ArrayRef) -> Result<(FieldRef, ArrayRef), String> {
    let bad = |e: arrow_schema::ArrowError| format!("field '{}': {e}", field.name());
    match array.data_type() {
        DataType::Dictionary(_, value_type) => {
            let d = array.as_any_dictionary();
            let values = take(d.values().as_ref(), d.keys(), None).map_err(bad)?;
            let unpacked =
                Arc::new(Field::clone(field).with_data_type(value_type.as_ref().clone()));
            plain(&unpacked, &values)
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut changed = false;
            let mut children = Vec::with_capacity(fields.len());
            let mut columns = Vec::with_capacity(fields.len());
            for (f, c) in fields.iter().zip(s.columns()) {
                let (f2, c2) = plain(f, c)?;
                changed |= !Arc::ptr_eq(c, &c2);
                children.push(f2);
                columns.push(c2);
            }
            if !changed {
                return Ok((Arc::clone(field), Arc::clone(array)));
            }
            let children = Fields::from(children);
            let unpacked =
                StructArray::try_new(children.clone(), columns, s.nulls().cloned()).map_err(bad)?;
            let field = Field::clone(field).with_data_type(DataType::Struct(children));
            Ok((Arc::new(field), Arc::new(unpacked)))
        }
        _ => Ok((Arc::clone(field), Arc::clone(array))),
    }
}
