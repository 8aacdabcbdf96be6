//! The Rust side of the Python package's benchmark (python/bench/arrow_pair.py): TSBS
//! cpu-only rows as Arrow record batches, inserted with `Collection::insert_record_batch`
//! and read back whole with `Collection::find_arrow` into a `Vec` of batches, each timed
//! several times; the batches are also written to a Parquet file (a row group per batch)
//! for the Python side to insert the same batches.
//!
//! ```text
//! cargo run --release -p tscoll-benches --example arrow_pair -- \
//!     --hosts 1000 --steps 1000 --batch 10000 --reps 5 --parquet /tmp/tsbs.parquet
//! ```
//!
//! Prints one JSON line: rows, batches, and the median and every run of each side.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{
    ArrayRef, Int32Array, RecordBatch, StringArray, StructArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Fields};
use bson::{Bson, doc};
use tscoll_benches::tsbs::{FIELDS, META_FIELD, TIME_FIELD, Workload};
use tscoll_engine::{
    ArrowOptions, Database, DatabaseOptions, FindOptions, InsertOptions, TimeseriesOptions,
};

type Failure = Box<dyn std::error::Error>;

/// The command line: `--name value` pairs.
struct Args {
    hosts: usize,
    steps: u64,
    batch: usize,
    reps: usize,
    parquet: Option<String>,
}

fn args() -> Result<Args, Failure> {
    let mut args = Args {
        hosts: 1000,
        steps: 1000,
        batch: 10_000,
        reps: 5,
        parquet: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(name) = it.next() {
        let value = it.next().ok_or_else(|| format!("{name} needs a value"))?;
        match name.as_str() {
            "--hosts" => args.hosts = value.parse()?,
            "--steps" => args.steps = value.parse()?,
            "--batch" => args.batch = value.parse()?,
            "--reps" => args.reps = value.parse()?,
            "--parquet" => args.parquet = Some(value),
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    if args.batch == 0 || args.reps == 0 {
        return Err("--batch and --reps must be at least 1".into());
    }
    Ok(args)
}

/// The workload's rows, `batch` at a time, as record batches: `time`, `tags` (a struct of
/// the host's 10 string tags) and the 10 int32 fields.
fn batches(workload: &Workload, batch: usize) -> Result<Vec<RecordBatch>, Failure> {
    let mut tags: HashMap<usize, Vec<String>> = HashMap::new();
    let mut tag_keys: Vec<String> = Vec::new();
    for host in 0..workload.hosts {
        let doc = workload.host_tags(host);
        if tag_keys.is_empty() {
            tag_keys = doc.keys().cloned().collect();
        }
        let values = doc
            .values()
            .map(|v| match v {
                Bson::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        tags.insert(host, values);
    }
    let mut generator = workload.generator();
    let mut out = Vec::new();
    loop {
        let mut rows = Vec::with_capacity(batch);
        while rows.len() < batch {
            match generator.next_row() {
                Some(row) => rows.push(row),
                None => break,
            }
        }
        if rows.is_empty() {
            return Ok(out);
        }
        let time = TimestampMillisecondArray::from_iter_values(rows.iter().map(|r| r.time_ms()));
        let tag_columns: Vec<(Arc<Field>, ArrayRef)> = tag_keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                let values = rows.iter().map(|r| tags[&r.host][i].as_str());
                let array: ArrayRef = Arc::new(StringArray::from_iter_values(values));
                (Arc::new(Field::new(key, DataType::Utf8, false)), array)
            })
            .collect();
        let (fields, arrays): (Vec<_>, Vec<_>) = tag_columns.into_iter().unzip();
        let tags_array = StructArray::try_new(Fields::from(fields), arrays, None)?;
        let mut columns: Vec<(&str, ArrayRef)> = vec![
            (TIME_FIELD, Arc::new(time)),
            (META_FIELD, Arc::new(tags_array)),
        ];
        for (i, name) in FIELDS.iter().enumerate() {
            let values = Int32Array::from_iter_values(rows.iter().map(|r| r.values[i]));
            columns.push((name, Arc::new(values)));
        }
        out.push(RecordBatch::try_from_iter(columns)?);
    }
}

fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2.0
    }
}

fn main() -> Result<(), Failure> {
    let args = args()?;
    let workload = Workload::new(args.hosts, args.steps as f64 / 8640.0, 1);
    let batches = batches(&workload, args.batch)?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if let (Some(path), Some(first)) = (&args.parquet, batches.first()) {
        let file = std::fs::File::create(path)?;
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(args.batch))
            .build();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, first.schema(), Some(props))?;
        for b in &batches {
            writer.write(b)?;
        }
        writer.close()?;
    }
    let mut insert_s = Vec::new();
    let mut find_s = Vec::new();
    for _ in 0..args.reps {
        let dir = tempfile::tempdir()?;
        let db = Database::open(dir.path(), DatabaseOptions::default())?;
        let coll = db.create_collection(
            "cpu",
            &TimeseriesOptions::new(TIME_FIELD).meta_field(META_FIELD),
        )?;
        let start = Instant::now();
        for b in &batches {
            let result = coll.insert_record_batch(b, &InsertOptions::default())?;
            if !result.errors.is_empty() {
                return Err(format!("rejected rows: {:?}", result.errors.first()).into());
            }
        }
        insert_s.push(start.elapsed().as_secs_f64());
        // The batches are kept, as a table built from them is (Python's side hands them to a
        // pyarrow Table): dropped only after the clock stops.
        let start = Instant::now();
        let found: Vec<RecordBatch> = coll
            .find_arrow(&doc! {}, &FindOptions::default(), &ArrowOptions::default())?
            .collect::<Result<_, _>>()?;
        find_s.push(start.elapsed().as_secs_f64());
        let found_rows: usize = found.iter().map(RecordBatch::num_rows).sum();
        if found_rows != rows {
            return Err(format!("found {found_rows} rows of {rows}").into());
        }
        drop(found);
        db.close()?;
    }
    let insert_runs = insert_s.clone();
    let find_runs = find_s.clone();
    println!(
        "{}",
        serde_json::json!({
            "rows": rows,
            "batches": batches.len(),
            "insert_s_median": median(&mut insert_s),
            "find_s_median": median(&mut find_s),
            "insert_s": insert_runs,
            "find_s": find_runs,
        })
    );
    Ok(())
}
