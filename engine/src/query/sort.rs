//! Sorting on any fields (`FindOptions::sort_by`, MongoDB's sort document, and the `$sort`
//! and `$setWindowFields` stages of a pipeline): rows are read whole, ordered by their sort
//! keys, and only then cut by the skip and the limit. Rows wait in memory as BSON, back to
//! back, with their sort keys beside them, up to a budget of bytes
//! ([`SORT_MEMORY_LIMIT`] by default, `DatabaseOptions::sort_memory_bytes`); past it, the
//! held rows are sorted and written to an anonymous temporary file (BSON documents back to
//! back), and the runs are merged as the result is read, one row of each in memory: an
//! external merge sort in bounded memory. With a limit, at most about twice `skip + limit`
//! rows are held (fewer when they pass the budget). A find sorted on the time field alone
//! goes the streaming way instead (buckets visited in time order, SPEC ).

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};

use bson::{Bson, Document};
use tscoll_catalog::value::{compare, value_size};

use super::{FindOptions, SortOrder};
use crate::error::{Error, ErrorCode, Result};
use crate::filter::lookup;

/// Bytes of rows (as BSON, with their sort keys) a sort holds in memory before it writes
/// them, sorted, to a temporary file: MongoDB's limit for an in-memory sort (100 MiB). The
/// default of `DatabaseOptions::sort_memory_bytes`.
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
    /// Whether an array sorts as a whole value (pipeline stages) rather than by its least
    /// element ascending and its greatest descending (`find`).
    whole_arrays: bool,
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
            let Some(order) = sort_order(v) else {
                return Err(bad(format!(
                    "sort direction of '{k}' must be 1 or -1, not {v}"
                )));
            };
            keys.push((k.split('.').map(str::to_owned).collect::<Vec<_>>(), order));
        }
        Ok(match keys.as_slice() {
            [] => SortPlan::Time(None),
            [(path, order)] if path.len() == 1 && path[0] == time_field => {
                SortPlan::Time(Some(*order))
            }
            _ => SortPlan::Fields(SortSpec::new(keys, false)),
        })
    }
}

impl SortSpec {
    /// A sort on `keys` (paths, each split at its dots, with their order); arrays compare
    /// as whole values when `whole_arrays`, else by their least (ascending) or greatest
    /// (descending) element.
    pub(crate) fn new(keys: Vec<(Vec<String>, SortOrder)>, whole_arrays: bool) -> SortSpec {
        SortSpec { keys, whole_arrays }
    }

    /// Appends the sort keys of a row to `out`: per key, the value at its path (missing =
    /// null); of an array, its least element ascending and its greatest descending (an empty
    /// array sorts as null), unless arrays compare whole.
    fn push_keys(&self, doc: &Document, out: &mut Vec<Bson>) {
        for (path, order) in &self.keys {
            let v = path
                .split_first()
                .and_then(|(first, rest)| lookup(doc.get(first), rest));
            out.push(match v {
                Some(Bson::Array(items)) if !self.whole_arrays => {
                    let pick = match order {
                        SortOrder::Ascending => items.iter().min_by(|a, b| compare(a, b)),
                        SortOrder::Descending => items.iter().max_by(|a, b| compare(a, b)),
                    };
                    pick.cloned().unwrap_or(Bson::Null)
                }
                Some(v) => v.clone(),
                None => Bson::Null,
            });
        }
    }

    /// The sort keys of a row ([`SortSpec::push_keys`]).
    fn keys_of(&self, doc: &Document) -> Vec<Bson> {
        let mut keys = Vec::with_capacity(self.keys.len());
        self.push_keys(doc, &mut keys);
        keys
    }

    /// The order of two rows by their keys, in BSON order (SPEC ).
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

    /// Sorts `rows` (read in any order; equal ones keep their input order) and keeps
    /// `skip..skip + limit` of them, holding at most `budget` bytes of rows (the rest goes
    /// to temporary files, merged as the result is read) and, with a limit, at most about
    /// twice `skip + limit` rows.
    ///
    /// # Errors
    /// [`Error::Io`] when a temporary file cannot be written or read back; `BadValue` for a
    /// row that does not encode as BSON; what `rows` yields.
    pub(crate) fn sort(
        &self,
        rows: impl Iterator<Item = Result<Document>>,
        skip: usize,
        limit: Option<usize>,
        budget: u64,
    ) -> Result<Sorted> {
        let keep = limit.map(|n| n.saturating_add(skip));
        let mut held = Held::new(self.keys.len());
        let mut runs: Vec<File> = Vec::new();
        for doc in rows {
            held.push(self, &doc?)?;
            if let Some(k) = keep
                && held.len() >= 2 * k.max(16)
            {
                let order = held.sorted(self);
                held = held.kept(&order[..k]);
            }
            if held.bytes() > budget {
                runs.push(held.spill(self)?);
                if runs.len() >= MAX_RUNS {
                    // One run of them all, so that the files open stay few.
                    let merged = self.merge(std::mem::take(&mut runs))?;
                    runs.push(merged.into_run()?);
                }
            }
        }
        if runs.is_empty() {
            let order = held.sorted(self);
            let end = keep.map_or(order.len(), |k| k.min(order.len()));
            let order = order[skip.min(end)..end].to_vec();
            return Ok(Sorted::Memory(held, order.into_iter()));
        }
        if held.len() > 0 {
            runs.push(held.spill(self)?);
        }
        drop(held);
        let mut sorted = Sorted::External(self.merge(runs)?);
        for _ in 0..skip {
            if sorted.next_row().transpose()?.is_none() {
                break;
            }
        }
        if let Sorted::External(m) = &mut sorted {
            m.remaining = limit;
        }
        Ok(sorted)
    }
}

impl SortSpec {
    /// The merge of sorted `runs` (equal rows in run order).
    ///
    /// # Errors
    /// [`Error::Io`] or `BadValue` when a run's first row cannot be read.
    fn merge(&self, runs: Vec<File>) -> Result<Merge> {
        let mut merge = Merge {
            spec: self.clone(),
            runs: Vec::with_capacity(runs.len()),
            remaining: None,
        };
        for file in runs {
            let mut run = Run {
                reader: BufReader::new(file),
                head: None,
            };
            run.advance(self)?;
            merge.runs.push(run);
        }
        Ok(merge)
    }
}

/// Runs a sort merges into one as they reach this many (each holds a file open).
const MAX_RUNS: usize = 64;

/// Rows held in memory: their BSON back to back, their sort keys side by side (no
/// allocation per row but for the keys' own strings, documents and arrays).
pub(crate) struct Held {
    /// Keys per row.
    width: usize,
    /// Row `i`'s keys: `keys[i * width..(i + 1) * width]`.
    keys: Vec<Bson>,
    /// Bytes the keys' values take besides their slots (their BSON size, a bound).
    key_bytes: u64,
    /// Every row's BSON.
    data: Vec<u8>,
    /// Row `i`: `data[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
}

impl Held {
    fn new(width: usize) -> Held {
        Held {
            width,
            keys: Vec::new(),
            key_bytes: 0,
            data: Vec::new(),
            ends: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// What the held rows take in memory.
    fn bytes(&self) -> u64 {
        let slots = self.keys.len() * size_of::<Bson>() + self.ends.len() * 8;
        (self.data.len() + slots) as u64 + self.key_bytes
    }

    fn row(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    fn row_keys(&self, i: usize) -> &[Bson] {
        &self.keys[i * self.width..(i + 1) * self.width]
    }

    /// Holds `doc`.
    fn push(&mut self, spec: &SortSpec, doc: &Document) -> Result<()> {
        let first = self.keys.len();
        spec.push_keys(doc, &mut self.keys);
        self.key_bytes += self.keys[first..].iter().map(value_size).sum::<u64>();
        doc.to_writer(&mut self.data)
            .map_err(|e| bad(format!("a row to sort does not encode: {e}")))?;
        self.ends.push(self.data.len());
        Ok(())
    }

    /// The held rows' positions in sorted order (stable: equal ones in the order held).
    fn sorted(&self, spec: &SortSpec) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| spec.cmp(self.row_keys(a), self.row_keys(b)));
        order
    }

    /// Only the rows at `order`, in that order.
    fn kept(&self, order: &[usize]) -> Held {
        let mut kept = Held::new(self.width);
        for &i in order {
            kept.keys.extend_from_slice(self.row_keys(i));
            kept.data.extend_from_slice(self.row(i));
            kept.ends.push(kept.data.len());
        }
        kept.key_bytes = kept.keys.iter().map(value_size).sum();
        kept
    }

    /// Row `i` as a document.
    fn document(&self, i: usize) -> Result<Document> {
        Document::from_reader(self.row(i)).map_err(|e| bad(format!("reading a sorted row: {e}")))
    }

    /// Sorts the held rows and writes them to a new temporary file, rewound for reading;
    /// holds none after (keeping the buffers for the next rows).
    fn spill(&mut self, spec: &SortSpec) -> Result<File> {
        let file = tempfile::tempfile().map_err(|e| io("creating a sort run file", e))?;
        let mut w = BufWriter::new(file);
        for i in self.sorted(spec) {
            w.write_all(self.row(i))
                .map_err(|e| io("writing a sort run", e))?;
        }
        let file = rewound(w)?;
        self.keys.clear();
        self.key_bytes = 0;
        self.data.clear();
        self.ends.clear();
        Ok(file)
    }
}

/// Sorted rows: held in memory, or merged from sorted runs on disk.
pub(crate) enum Sorted {
    /// The held rows and the positions to yield, skipped and limited.
    Memory(Held, std::vec::IntoIter<usize>),
    /// Runs on disk, merged as read.
    External(Merge),
}

impl Sorted {
    fn next_row(&mut self) -> Option<Result<Document>> {
        match self {
            Sorted::Memory(held, order) => order.next().map(|i| held.document(i)),
            Sorted::External(m) => m.next(),
        }
    }
}

impl Iterator for Sorted {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        self.next_row()
    }
}

/// The merge of sorted runs: the least head of all runs, then that run's next row.
pub(crate) struct Merge {
    spec: SortSpec,
    runs: Vec<Run>,
    /// Rows still to yield (the limit), `None` = all.
    remaining: Option<usize>,
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
    /// Writes the merged rows to a new temporary file, rewound for reading.
    fn into_run(mut self) -> Result<File> {
        let file = tempfile::tempfile().map_err(|e| io("creating a sort run file", e))?;
        let mut w = BufWriter::new(file);
        while let Some(doc) = self.next() {
            doc?.to_writer(&mut w)
                .map_err(|e| bad(format!("writing a sort run: {e}")))?;
        }
        rewound(w)
    }

    fn next(&mut self) -> Option<Result<Document>> {
        if self.remaining == Some(0) {
            return None;
        }
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
        if let Some(n) = &mut self.remaining {
            *n -= 1;
        }
        Some(Ok(doc))
    }
}

/// The file `w` wrote, flushed and rewound for reading.
fn rewound(w: BufWriter<File>) -> Result<File> {
    let mut file = w
        .into_inner()
        .map_err(|e| io("writing a sort run", e.into_error()))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io("rewinding a sort run", e))?;
    Ok(file)
}

fn io(context: &str, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{context}: {e}")))
}

fn bad(message: String) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}

/// The direction a sort document gives a field: `1` (or `1.0`) ascending, `-1` descending;
/// `None` for anything else.
pub(crate) fn sort_order(v: &Bson) -> Option<SortOrder> {
    match v {
        Bson::Int32(1) | Bson::Int64(1) => Some(SortOrder::Ascending),
        Bson::Int32(-1) | Bson::Int64(-1) => Some(SortOrder::Descending),
        Bson::Double(d) if *d == 1.0 => Some(SortOrder::Ascending),
        Bson::Double(d) if *d == -1.0 => Some(SortOrder::Descending),
        _ => None,
    }
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
        // 500 rows of about 40 bytes and 3 keys; a budget of 1 000 bytes makes some 100
        // runs, one of 1 byte a run per row: merged 64 at a time as they are written.
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
        // With a limit past the budget: runs too, cut to the same rows.
        let limited: Vec<i32> = by
            .sort(docs.clone().into_iter().map(Ok), 5, Some(50), 1000)
            .expect("sort")
            .map(|d| d.expect("row").get_i32("i").expect("i"))
            .collect();
        assert_eq!(limited, in_memory[5..55]);
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
