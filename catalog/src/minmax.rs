//! control.min / control.max of one field, kept element-wise (SPEC §4.3), which also serves as
//! the field's schema (SPEC §5): a scalar node records the canonical type rank, object and array
//! nodes record their sub-paths.

use std::cmp::Ordering;

use bson::{Bson, Document};

use crate::value::{canonical_rank, compare};

/// Per-path minimum and maximum of one field.
#[derive(Clone, Debug, PartialEq)]
pub enum MinMax {
    /// A scalar path: its smallest and largest value so far (first writer wins on ties).
    Scalar {
        /// Minimum in BSON order.
        min: Bson,
        /// Maximum in BSON order.
        max: Bson,
    },
    /// An object path: one entry per sub-field, in first-appearance order.
    Object(Vec<(String, MinMax)>),
    /// An array path: one entry per position.
    Array(Vec<MinMax>),
}

/// Position of sub-field `name` in `fields`; the one after the previous match (`hint`) is
/// tried first, so a document listing its fields in the path's order is matched in one
/// comparison per field. A match moves `hint` past it.
fn sub_field(fields: &[(String, MinMax)], name: &str, hint: &mut usize) -> Option<usize> {
    let i = match fields.get(*hint) {
        Some((n, _)) if n == name => *hint,
        _ => fields.iter().position(|(n, _)| n == name)?,
    };
    *hint = i + 1;
    Some(i)
}

impl MinMax {
    /// The min/max of a single value.
    #[must_use]
    pub fn new(v: &Bson) -> Self {
        match v {
            Bson::Document(d) => {
                MinMax::Object(d.iter().map(|(k, v)| (k.clone(), MinMax::new(v))).collect())
            }
            Bson::Array(a) => MinMax::Array(a.iter().map(MinMax::new).collect()),
            other => MinMax::Scalar {
                min: other.clone(),
                max: other.clone(),
            },
        }
    }

    /// Rebuilds from stored `control.min.f` and `control.max.f` (SPEC ).
    #[must_use]
    pub fn from_stored(min: &Bson, max: &Bson) -> Self {
        match (min, max) {
            (Bson::Document(a), Bson::Document(b)) => MinMax::Object(
                a.iter()
                    .map(|(k, va)| (k.clone(), MinMax::from_stored(va, b.get(k).unwrap_or(va))))
                    .collect(),
            ),
            (Bson::Array(a), Bson::Array(b)) => MinMax::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, va)| MinMax::from_stored(va, b.get(i).unwrap_or(va)))
                    .collect(),
            ),
            _ => MinMax::Scalar {
                min: min.clone(),
                max: max.clone(),
            },
        }
    }

    /// Whether `v` is schema-compatible with this path (SPEC ): same kind
    /// (object, array, or scalar of the same canonical rank) at every path present in both.
    #[must_use]
    pub fn compatible(&self, v: &Bson) -> bool {
        match (self, v) {
            (MinMax::Object(fields), Bson::Document(d)) => {
                let mut hint = 0;
                d.iter().all(|(k, sub)| {
                    sub_field(fields, k, &mut hint).is_none_or(|i| fields[i].1.compatible(sub))
                })
            }
            (MinMax::Array(items), Bson::Array(a)) => {
                items.iter().zip(a).all(|(node, sub)| node.compatible(sub))
            }
            (MinMax::Scalar { min, .. }, v) => {
                !matches!(v, Bson::Document(_) | Bson::Array(_))
                    && (std::mem::discriminant(min) == std::mem::discriminant(v)
                        || canonical_rank(min) == canonical_rank(v))
            }
            _ => false,
        }
    }

    /// Folds `v` in (SPEC ). A value of another kind than the path (only
    /// reachable for buckets the schema check did not guard) follows for scalars and is
    /// otherwise ignored.
    pub fn update(&mut self, v: &Bson) {
        match (self, v) {
            (MinMax::Object(fields), Bson::Document(d)) => {
                let mut hint = 0;
                for (k, sub) in d {
                    match sub_field(fields, k, &mut hint) {
                        Some(i) => fields[i].1.update(sub),
                        None => fields.push((k.clone(), MinMax::new(sub))),
                    }
                }
            }
            (MinMax::Array(items), Bson::Array(a)) => {
                for (i, sub) in a.iter().enumerate() {
                    match items.get_mut(i) {
                        Some(node) => node.update(sub),
                        None => items.push(MinMax::new(sub)),
                    }
                }
            }
            (MinMax::Scalar { min, max }, v)
                if !matches!(v, Bson::Document(_) | Bson::Array(_)) =>
            {
                // Same-type integers and dates, the common case, compare directly.
                match (&mut *min, &mut *max, v) {
                    (Bson::Int32(lo), Bson::Int32(hi), Bson::Int32(x)) => {
                        *lo = (*lo).min(*x);
                        *hi = (*hi).max(*x);
                        return;
                    }
                    (Bson::Int64(lo), Bson::Int64(hi), Bson::Int64(x)) => {
                        *lo = (*lo).min(*x);
                        *hi = (*hi).max(*x);
                        return;
                    }
                    (Bson::DateTime(lo), Bson::DateTime(hi), Bson::DateTime(x)) => {
                        *lo = (*lo).min(*x);
                        *hi = (*hi).max(*x);
                        return;
                    }
                    _ => {}
                }
                if compare(v, min) == Ordering::Less {
                    *min = v.clone();
                }
                if compare(v, max) == Ordering::Greater {
                    *max = v.clone();
                }
            }
            _ => {}
        }
    }

    /// The `control.min` value of this path.
    #[must_use]
    pub fn min(&self) -> Bson {
        self.render(true)
    }

    /// The `control.max` value of this path.
    #[must_use]
    pub fn max(&self) -> Bson {
        self.render(false)
    }

    fn render(&self, min_side: bool) -> Bson {
        match self {
            MinMax::Scalar { min, max } => {
                if min_side {
                    min.clone()
                } else {
                    max.clone()
                }
            }
            MinMax::Object(fields) => {
                let mut d = Document::new();
                for (k, node) in fields {
                    d.insert(k.clone(), node.render(min_side));
                }
                Bson::Document(d)
            }
            MinMax::Array(items) => Bson::Array(items.iter().map(|n| n.render(min_side)).collect()),
        }
    }

    /// Approximate heap bytes held (SPEC ).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        match self {
            MinMax::Scalar { min, max } => 2 * 32 + scalar_heap(min) + scalar_heap(max),
            MinMax::Object(fields) => fields
                .iter()
                .map(|(k, n)| k.len() + 24 + n.heap_bytes())
                .sum(),
            MinMax::Array(items) => items.iter().map(MinMax::heap_bytes).sum(),
        }
    }
}

fn scalar_heap(v: &Bson) -> usize {
    match v {
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => s.len(),
        Bson::Binary(b) => b.bytes.len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn fold(values: &[Bson]) -> MinMax {
        let mut m = MinMax::new(&values[0]);
        for v in &values[1..] {
            m.update(v);
        }
        m
    }

    #[test]
    fn r_4_3_3_objects_and_arrays_elementwise() {
        let m = fold(&[
            Bson::Document(doc! {"x": 1, "y": 2}),
            Bson::Document(doc! {"x": 2, "y": 1}),
        ]);
        assert_eq!(m.min(), Bson::Document(doc! {"x": 1, "y": 1}));
        assert_eq!(m.max(), Bson::Document(doc! {"x": 2, "y": 2}));
        let b = fold(&[
            bson::bson!([{"x": 3, "y": 4}]),
            bson::bson!([{"x": 4, "y": 3}, 3, 1]),
        ]);
        assert_eq!(b.min(), bson::bson!([{"x": 3, "y": 3}, 3, 1]));
        assert_eq!(b.max(), bson::bson!([{"x": 4, "y": 4}, 3, 1]));
        let e = fold(&[
            Bson::Document(doc! {}),
            Bson::Document(doc! {"x": {"y": 1}}),
        ]);
        assert_eq!(e.min(), Bson::Document(doc! {"x": {"y": 1}}));
    }

    #[test]
    fn r_4_3_4_first_writer_wins_on_ties() {
        let m = fold(&[
            Bson::Double(1.5),
            Bson::Int64(2),
            Bson::Int32(1),
            Bson::Decimal128("2.5".parse().unwrap()),
            Bson::Double(0.5),
        ]);
        assert_eq!(m.min(), Bson::Double(0.5));
        assert_eq!(m.max(), Bson::Decimal128("2.5".parse().unwrap()));
        let t = fold(&[Bson::Int32(1), Bson::Double(1.0)]);
        assert_eq!(t.min(), Bson::Int32(1));
    }

    #[test]
    fn r_5_2_schema_changes() {
        let m = MinMax::new(&Bson::String("a".into()));
        assert!(!m.compatible(&Bson::Int32(1)));
        assert!(m.compatible(&Bson::Symbol("b".into())));
        let n = MinMax::new(&Bson::Int32(1));
        assert!(n.compatible(&Bson::Double(2.0)));
        assert!(!n.compatible(&Bson::Null));
        assert!(!n.compatible(&Bson::Document(doc! {})));
        let o = MinMax::new(&Bson::Document(doc! {"a": 1, "b": 1}));
        assert!(o.compatible(&Bson::Document(doc! {"b": 1, "a": 1, "c": "new"})));
        assert!(!o.compatible(&Bson::Document(doc! {"a": "x"})));
        let a = MinMax::new(&bson::bson!([1, 2]));
        assert!(a.compatible(&bson::bson!([3])));
        assert!(a.compatible(&bson::bson!([3, 4, "longer"])));
        assert!(!a.compatible(&bson::bson!(["s"])));
    }
}
