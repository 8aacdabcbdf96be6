//! Sorting on any fields (`FindOptions::sort_by`, MongoDB's sort document): the matching
//! measurements are read whole, ordered by their sort keys, and only then cut by the skip, the
//! limit and the projection. With a limit, at most about twice `skip + limit` rows are held; without
//! one, the rows are held in memory up to [`SORT_MEMORY_LIMIT`] bytes, past which the query
//! fails as MongoDB's does without `allowDiskUse`. A sort on the time field alone goes the
//! streaming way instead (buckets visited in time order, SPEC ).

use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_catalog::value::{compare, document_size};

use super::{FindOptions, SortOrder};
use crate::error::{Error, ErrorCode, Result};
use crate::filter::lookup;

/// Bytes of measurements (as BSON) a sort without a limit may hold: MongoDB's limit for a
/// blocking sort without `allowDiskUse` (100 MiB).
pub const SORT_MEMORY_LIMIT: u64 = 100 * 1024 * 1024;

/// How a query is sorted.
pub(crate) enum SortPlan {
    /// By time (or not at all): the streaming cursor.
    Time(Option<SortOrder>),
    /// By these fields, in this order of precedence.
    Fields(SortSpec),
}

/// A parsed sort document.
pub(crate) struct SortSpec {
    keys: Vec<(Vec<String>, SortOrder)>,
}

impl SortPlan {
    /// The sort `options` asks for: `sort_by` (a sort document) or `sort` (on time).
    ///
    /// # Errors
    /// `BadValue` for both at once, a direction other than 1 or -1, an empty or `$` field
    /// name.
    pub(crate) fn of(options: &FindOptions, time_field: &str) -> Result<SortPlan> {
        let Some(by) = &options.sort_by else {
            return Ok(SortPlan::Time(options.sort));
        };
        if options.sort.is_some() {
            return Err(bad(
                "give either sort (on time) or sort_by, not both".to_owned()
            ));
        }
        let mut keys = Vec::new();
        for (k, v) in by {
            if k.is_empty() || k.starts_with('$') || k.split('.').any(str::is_empty) {
                return Err(bad(format!("sort on '{k}': not a field path")));
            }
            let order = match v {
                Bson::Int32(1) | Bson::Int64(1) => SortOrder::Ascending,
                Bson::Int32(-1) | Bson::Int64(-1) => SortOrder::Descending,
                Bson::Double(d) if *d == 1.0 => SortOrder::Ascending,
                Bson::Double(d) if *d == -1.0 => SortOrder::Descending,
                _ => {
                    return Err(bad(format!(
                        "sort direction of '{k}' must be 1 or -1, not {v}"
                    )));
                }
            };
            keys.push((k.split('.').map(str::to_owned).collect::<Vec<_>>(), order));
        }
        Ok(match keys.as_slice() {
            [] => SortPlan::Time(None),
            [(path, order)] if path.len() == 1 && path[0] == time_field => {
                SortPlan::Time(Some(*order))
            }
            _ => SortPlan::Fields(SortSpec { keys }),
        })
    }
}

impl SortSpec {
    /// The sort keys of a measurement: per key, the value at its path (missing = null); of an
    /// array, its least element ascending and its greatest descending (an empty array sorts
    /// as null).
    pub(crate) fn keys_of(&self, doc: &Document) -> Vec<Bson> {
        self.keys
            .iter()
            .map(|(path, order)| {
                let v = lookup(doc.get(&path[0]), &path[1..]);
                match v {
                    Some(Bson::Array(items)) => {
                        let pick = match order {
                            SortOrder::Ascending => items.iter().min_by(|a, b| compare(a, b)),
                            SortOrder::Descending => items.iter().max_by(|a, b| compare(a, b)),
                        };
                        pick.cloned().unwrap_or(Bson::Null)
                    }
                    Some(v) => v.clone(),
                    None => Bson::Null,
                }
            })
            .collect()
    }

    /// The order of two measurements by their keys ([`SortSpec::keys_of`]), in BSON order
    /// (SPEC ).
    pub(crate) fn cmp(&self, a: &[Bson], b: &[Bson]) -> Ordering {
        for ((x, y), (_, order)) in a.iter().zip(b).zip(&self.keys) {
            let o = compare(x, y);
            let o = match order {
                SortOrder::Ascending => o,
                SortOrder::Descending => o.reverse(),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Sorts `rows` (read in any order) and keeps `skip..skip + limit` of them, holding at
    /// most about twice `skip + limit` rows when there is a limit.
    ///
    /// # Errors
    /// `BadValue` when, without a limit, the rows exceed [`SORT_MEMORY_LIMIT`]; what `rows`
    /// yields.
    pub(crate) fn sort(
        &self,
        rows: impl Iterator<Item = Result<Document>>,
        skip: usize,
        limit: Option<usize>,
    ) -> Result<Vec<Document>> {
        let keep = limit.map(|n| n.saturating_add(skip));
        let mut held: Vec<(Vec<Bson>, Document)> = Vec::new();
        let mut bytes = 0u64;
        for doc in rows {
            let doc = doc?;
            if keep.is_none() {
                bytes += document_size(&doc);
                if bytes > SORT_MEMORY_LIMIT {
                    return Err(bad(format!(
                        "sort exceeded the memory limit of {SORT_MEMORY_LIMIT} bytes: add a \
                         limit, a narrower filter, or sort on the time field (which streams)"
                    )));
                }
            }
            held.push((self.keys_of(&doc), doc));
            if let Some(k) = keep
                && held.len() >= 2 * k.max(16)
            {
                held.sort_by(|a, b| self.cmp(&a.0, &b.0));
                held.truncate(k);
            }
        }
        held.sort_by(|a, b| self.cmp(&a.0, &b.0));
        Ok(held
            .into_iter()
            .skip(skip)
            .take(limit.unwrap_or(usize::MAX))
            .map(|(_, d)| d)
            .collect())
    }
}

fn bad(message: String) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    fn spec(by: Document) -> SortSpec {
        let options = FindOptions {
            sort_by: Some(by),
            ..FindOptions::default()
        };
        match SortPlan::of(&options, "t").expect("sort") {
            SortPlan::Fields(s) => s,
            SortPlan::Time(_) => panic!("a field sort"),
        }
    }

    #[test]
    fn fields_sort_in_bson_order_with_missing_as_null_and_arrays_by_their_ends() {
        let docs = vec![
            doc! { "i": 0, "v": 3 },
            doc! { "i": 1, "v": "a" },
            doc! { "i": 2 },
            doc! { "i": 3, "v": [5, 1] },
            doc! { "i": 4, "v": 2.5, "w": 1 },
            doc! { "i": 5, "v": 2.5, "w": 0 },
            doc! { "i": 6, "v": null },
        ];
        let order = |by: Document, skip: usize, limit: Option<usize>| -> Vec<i32> {
            spec(by)
                .sort(docs.clone().into_iter().map(Ok), skip, limit)
                .expect("sort")
                .iter()
                .map(|d| d.get_i32("i").expect("i"))
                .collect()
        };
        // null and missing first (stable among themselves), numbers, then strings.
        assert_eq!(order(doc! { "v": 1 }, 0, None), [2, 6, 3, 4, 5, 0, 1]);
        assert_eq!(
            order(doc! { "v": -1, "w": 1 }, 0, None),
            [1, 3, 0, 5, 4, 2, 6]
        );
        assert_eq!(order(doc! { "v": 1, "w": -1 }, 2, Some(3)), [3, 4, 5]);
        for limit in 1..7 {
            let all = order(doc! { "v": -1, "i": 1 }, 0, None);
            assert_eq!(
                order(doc! { "v": -1, "i": 1 }, 1, Some(limit)),
                all[1..=limit]
            );
        }
    }

    #[test]
    fn sort_documents_are_checked_and_a_time_sort_streams() {
        let plan = |by: Document| {
            let options = FindOptions {
                sort_by: Some(by),
                ..FindOptions::default()
            };
            SortPlan::of(&options, "t")
        };
        assert!(matches!(
            plan(doc! { "t": -1 }),
            Ok(SortPlan::Time(Some(SortOrder::Descending)))
        ));
        assert!(matches!(plan(doc! {}), Ok(SortPlan::Time(None))));
        for by in [
            doc! { "v": 2 },
            doc! { "v": "asc" },
            doc! { "$v": 1 },
            doc! { "a..b": 1 },
        ] {
            assert!(plan(by.clone()).is_err(), "{by}");
        }
        let both = FindOptions {
            sort: Some(SortOrder::Ascending),
            sort_by: Some(doc! { "v": 1 }),
            ..FindOptions::default()
        };
        assert!(SortPlan::of(&both, "t").is_err());
    }
}
