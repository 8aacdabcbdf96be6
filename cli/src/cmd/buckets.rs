//! `tscoll buckets`: prints a collection's buckets in MongoDB's bucket shape
//! (`{_id, control: {version, min, max, count}, meta, data: {field: [values...]}}`).

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use bson::{Bson, Document};

use super::{CmdResult, DbArgs, open_readable_collection, stdout_result, write_extjson_line};

/// Arguments of `tscoll buckets`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// One relaxed Extended JSON document per bucket and line (default: a readable summary).
    #[arg(long)]
    pub(crate) json: bool,
    /// Print at most N buckets.
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
}

/// Runs `tscoll buckets`.
///
/// # Errors
/// No such collection, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let (_db, coll) = open_readable_collection(&args.db.db, &args.coll)?;
    let buckets = coll.buckets()?;
    let total = buckets.len();
    let shown = args.limit.unwrap_or(total).min(total);
    let mut out = BufWriter::new(io::stdout().lock());
    let written = (|| {
        for (i, bucket) in buckets.into_iter().take(shown).enumerate() {
            if args.json {
                write_extjson_line(&mut out, bucket)?;
            } else {
                out.write_all(describe(i, &bucket).as_bytes())?;
            }
        }
        if !args.json && shown < total {
            writeln!(
                out,
                "... {} more bucket(s) not shown (--limit {shown})",
                total - shown
            )?;
        }
        out.flush()
    })();
    stdout_result(written)?;
    Ok(ExitCode::SUCCESS)
}

/// A few readable lines about one bucket: id, meta, count, control min/max, columns.
pub(crate) fn describe(index: usize, bucket: &Document) -> String {
    let json = |v: Option<&Bson>| v.map_or("-".to_owned(), super::extjson_text);
    let control = bucket.get_document("control").ok();
    let mut text = format!(
        "bucket {index}: _id {}  meta {}  count {}  version {}\n",
        json(bucket.get("_id")),
        json(bucket.get("meta")),
        json(control.and_then(|c| c.get("count"))),
        json(control.and_then(|c| c.get("version"))),
    );
    text.push_str(&format!(
        "  control.min {}\n",
        json(control.and_then(|c| c.get("min")))
    ));
    text.push_str(&format!(
        "  control.max {}\n",
        json(control.and_then(|c| c.get("max")))
    ));
    if let Ok(data) = bucket.get_document("data") {
        let columns: Vec<String> = data
            .iter()
            .map(|(field, values)| match values {
                Bson::Array(a) => format!("{field}[{}]", a.len()),
                Bson::Document(d) => format!("{field}[{}]", d.len()),
                _ => field.clone(),
            })
            .collect();
        text.push_str(&format!("  data {}\n", columns.join(" ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn describes_a_bucket() {
        let bucket = doc! {
            "_id": 7,
            "control": { "version": 1, "min": { "v": 1 }, "max": { "v": 3 }, "count": 2 },
            "meta": { "series": "a" },
            "data": { "ts": [1, 2], "v": [1, 3] },
        };
        let text = describe(0, &bucket);
        assert!(
            text.starts_with("bucket 0: _id 7  meta {\"series\":\"a\"}  count 2"),
            "{text}"
        );
        assert!(text.contains("  data ts[2] v[2]\n"), "{text}");
    }
}
