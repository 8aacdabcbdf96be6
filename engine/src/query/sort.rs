//! Sorting on any fields (`FindOptions::sort_by`, MongoDB's sort document): the matching
//! measurements are read whole, ordered by their sort keys, and only then cut by the skip, the
//! limit and the projection. With a limit, at most about twice `skip + limit` rows are held.
//! Without one, rows are held up to [`SORT_MEMORY_LIMIT`] bytes; past it, each such run is
//! sorted and written to an anonymous temporary file (BSON documents back to back), and the
//! runs are merged as the result is read, one row of each in memory: an external merge sort
//! in bounded memory. A sort on the time field alone goes the streaming way instead (buckets
//! visited in time order, SPEC ).

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom};

use bson::{Bson, Document};
use tscoll_catalog::value::{compare, document_size};

use super::{FindOptions, SortOrder};
use crate::error::{Error, ErrorCode, Result};
use crate::filter::lookup;

/// Bytes of measurements (as BSON) a sort without a limit holds in memory before it writes
/// them, sorted, to a temporary file: MongoDB's limit for an in-memory sort (100 MiB).
pub const SORT_MEMORY_LIMIT: u64 = 100 * 1024 * 1024;

/// How a query is sorted.
pub(crate) enum SortPlan {
    /// By time (or not at all): the streaming cursor.
    Time(Option<SortOrder>),
    /// By these fields, in this order of precedence.
    Fields(SortSpec),
}

/// A parsed sort document.
#[derive(Clone)]
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
    /// most about twice `skip + limit` rows when there is a limit, and at most `budget` bytes
    /// of rows otherwise (the rest goes to temporary files, merged as the result is read).
    ///
    /// # Errors
    /// [`Error::Io`] when a temporary file cannot be written or read back; what `rows`
    /// yields.
    pub(crate) fn sort(
        &self,
        rows: impl Iterator<Item = Result<Document>>,
        skip: usize,
        limit: Option<usize>,
        budget: u64,
    ) -> Result<Sorted> {
        let keep = limit.map(|n| n.saturating_add(skip));
        let mut held: Vec<(Vec<Bson>, Document)> = Vec::new();
        let mut bytes = 0u64;
        let mut runs: Vec<File> = Vec::new();
        for doc in rows {
            let doc = doc?;
            if keep.is_none() {
                bytes += document_size(&doc);
            }
            held.push((self.keys_of(&doc), doc));
            if let Some(k) = keep
                && held.len() >= 2 * k.max(16)
            {
                held.sort_by(|a, b| self.cmp(&a.0, &b.0));
                held.truncate(k);
            }
            if keep.is_none() && bytes > budget {
                runs.push(self.spill(&mut held)?);
                bytes = 0;
            }
        }
        if runs.is_empty() {
            held.sort_by(|a, b| self.cmp(&a.0, &b.0));
            let rows: Vec<Document> = held
                .into_iter()
                .skip(skip)
                .take(limit.unwrap_or(usize::MAX))
                .map(|(_, d)| d)
                .collect();
            return Ok(Sorted::Memory(rows.into_iter()));
        }
        if !held.is_empty() {
            runs.push(self.spill(&mut held)?);
        }
        let mut merge = Merge {
            spec: self.clone(),
            runs: Vec::with_capacity(runs.len()),
        };
        for file in runs {
            let mut run = Run {
                reader: BufReader::new(file),
                head: None,
            };
            run.advance(self)?;
            merge.runs.push(run);
        }
        let mut sorted = Sorted::External(merge);
        for _ in 0..skip {
            if sorted.next().transpose()?.is_none() {
                break;
            }
        }
        Ok(sorted)
    }

    /// Sorts the held rows and writes them to a new temporary file, rewound for reading.
    fn spill(&self, held: &mut Vec<(Vec<Bson>, Document)>) -> Result<File> {
        held.sort_by(|a, b| self.cmp(&a.0, &b.0));
        let file = tempfile::tempfile().map_err(|e| io("creating a sort run file", e))?;
        let mut w = BufWriter::new(file);
        for (_, doc) in held.drain(..) {
            doc.to_writer(&mut w)
                .map_err(|e| bad(format!("writing a sort run: {e}")))?;
        }
        let mut file = w
            .into_inner()
            .map_err(|e| io("writing a sort run", e.into_error()))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| io("rewinding a sort run", e))?;
        Ok(file)
    }
}

/// The sorted rows of a query: in memory, or merged from sorted runs on disk.
pub(crate) enum Sorted {
    /// Every row, sorted, skipped and limited.
    Memory(std::vec::IntoIter<Document>),
    /// Runs on disk, merged as read (skip applied; no limit: a limit keeps rows in memory).
    External(Merge),
}

impl Iterator for Sorted {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        match self {
            Sorted::Memory(rows) => rows.next().map(Ok),
            Sorted::External(m) => m.next(),
        }
    }
}

/// The merge of sorted runs: the least head of all runs, then that run's next row.
pub(crate) struct Merge {
    spec: SortSpec,
    runs: Vec<Run>,
}

/// One sorted run on disk and its next row.
struct Run {
    reader: BufReader<File>,
    head: Option<(Vec<Bson>, Document)>,
}

impl Run {
    /// Reads the next row into `head` (`None` at the end of the run).
    fn advance(&mut self, spec: &SortSpec) -> Result<()> {
        let at_end = self
            .reader
            .fill_buf()
            .map_err(|e| io("reading a sort run", e))?
            .is_empty();
        self.head = if at_end {
            None
        } else {
            let doc = Document::from_reader(&mut self.reader)
                .map_err(|e| bad(format!("reading a sort run: {e}")))?;
            Some((spec.keys_of(&doc), doc))
        };
        Ok(())
    }
}

impl Merge {
    fn next(&mut self) -> Option<Result<Document>> {
        // The first run with the least head: equal keys come in run order.
        let mut best: Option<usize> = None;
        for (i, run) in self.runs.iter().enumerate() {
            let Some((keys, _)) = &run.head else {
                continue;
            };
            let better = best.is_none_or(|b| {
                self.runs[b]
                    .head
                    .as_ref()
                    .is_some_and(|(bk, _)| self.spec.cmp(keys, bk) == Ordering::Less)
            });
            if better {
                best = Some(i);
            }
        }
        let run = &mut self.runs[best?];
        let (_, doc) = run.head.take()?;
        if let Err(e) = run.advance(&self.spec) {
            return Some(Err(e));
        }
        Some(Ok(doc))
    }
}

fn io(context: &str, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{context}: {e}")))
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
                .sort(
                    docs.clone().into_iter().map(Ok),
                    skip,
                    limit,
                    SORT_MEMORY_LIMIT,
                )
                .expect("sort")
                .map(|d| d.expect("row").get_i32("i").expect("i"))
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
    fn past_the_memory_budget_sorted_runs_on_disk_are_merged_to_the_same_order() {
        // 500 rows of about 40 bytes; a budget of 1 000 bytes makes some 20 runs.
        let docs: Vec<Document> = (0..500_i32)
            .map(|i| doc! { "i": i, "v": (i * 37) % 101, "s": format!("{}", i % 7) })
            .collect();
        let by = spec(doc! { "s": -1, "v": 1, "i": 1 });
        let sorted = |budget: u64, skip: usize| -> Vec<i32> {
            let rows = by
                .sort(docs.clone().into_iter().map(Ok), skip, None, budget)
                .expect("sort");
            assert_eq!(
                matches!(rows, Sorted::External(_)),
                budget < 1_000_000,
                "{budget}"
            );
            rows.map(|d| d.expect("row").get_i32("i").expect("i"))
                .collect()
        };
        let in_memory = sorted(SORT_MEMORY_LIMIT, 0);
        assert_eq!(in_memory.len(), 500);
        assert_eq!(sorted(1000, 0), in_memory);
        assert_eq!(sorted(1000, 123), in_memory[123..]);
        assert_eq!(sorted(1, 499), in_memory[499..]);
        assert!(sorted(1000, 600).is_empty());
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
