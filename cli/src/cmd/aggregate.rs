//! `tscoll aggregate`: a MongoDB aggregation pipeline (`--pipeline`, `Collection::aggregate`),
//! or measurements grouped by time window (and series) with count, min, max, sum, avg, first
//! and last outputs (`--window`, `Collection::aggregate_windows`, SPEC ); prints one
//! relaxed Extended JSON document per result.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use bson::{Bson, Document, doc};
use tscoll_engine::{Accumulator, AggregateSpec};

use super::find::{ExplainMode, print_explain, print_stats};
use super::{
    CmdResult, DbArgs, open_readable_collection, parse_json_arg, stdout_result, write_extjson_line,
};

/// Arguments of `tscoll aggregate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// An aggregation pipeline: a JSON array of stages (Extended JSON), e.g.
    /// `[{"$match": {...}}, {"$group": {...}}]`. Instead of `--window` and its options.
    #[arg(long, value_name = "JSON", conflicts_with_all = ["window", "by_series", "outputs", "filter"])]
    pub(crate) pipeline: Option<String>,
    /// MongoDB-style filter in Extended JSON, applied before grouping (as for `find`).
    #[arg(long, value_name = "JSON")]
    pub(crate) filter: Option<String>,
    /// Window length: a number with a unit, `ms`, `s`, `m`, `h` or `d` (`15m`, `1h`, `1d`),
    /// windows starting at multiples of it from the Unix epoch; or calendar weeks (from
    /// Sunday), months or years, `w`, `mo`, `y` (`1w`, `3mo`, `1y`), in UTC or `--timezone`.
    #[arg(long, value_name = "DURATION", value_parser = parse_window, required_unless_present = "pipeline")]
    pub(crate) window: Option<Window>,
    /// The time zone of the windows: an IANA name (`Europe/Paris`, `America/New_York`) or a
    /// UTC offset (`+05:30`, `-08`), as MongoDB's `timezone`. Days, weeks, months and years
    /// then start at local midnight (23 or 25 hours long across a daylight-saving change), and
    /// windows of a fixed length are counted from 2000-01-01T00:00 local time, as `$dateTrunc`
    /// counts them. Default UTC.
    #[arg(long, value_name = "ZONE", conflicts_with = "pipeline")]
    pub(crate) timezone: Option<String>,
    /// One group per series and window (default: per window over all series).
    #[arg(long)]
    pub(crate) by_series: bool,
    /// An output: `NAME=count`, or `NAME=OP:FIELD` with OP one of min, max, sum, avg, first,
    /// last, stddev (population), stddev_samp (e.g. `--out peak=max:usage_user`).
    /// Repeatable; default `count=count`.
    #[arg(long = "out", value_name = "NAME=OP[:FIELD]", value_parser = parse_output)]
    pub(crate) outputs: Vec<(String, Accumulator)>,
    /// Also print the query's work counters on stderr as one JSON object.
    #[arg(long)]
    pub(crate) stats: bool,
    /// With `--pipeline`: print what the pipeline does instead of its results, as one JSON
    /// document (MongoDB's `explain`): which stages the read answers (leading `$match`, a
    /// `$group` by window from bucket sums), which run over the stream and what they hold;
    /// with `executionStats`, the pipeline is run and the read's counters added.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        default_missing_value = "queryPlanner"
    )]
    pub(crate) explain: Option<ExplainMode>,
}

/// A `--window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Window {
    /// A fixed length in ms, windows at multiples of it from the epoch.
    Fixed(i64),
    /// `n` calendar units (`"week"`, `"month"`, `"year"`), as `$dateTrunc` bins them.
    Calendar(&'static str, i64),
}

/// Parses `--window`: a positive number of ms, s, m, h, d, or calendar w, mo, y.
///
/// # Errors
/// No unit, an unknown unit, or a value that is not a positive integer (or overflows).
pub(crate) fn parse_window(text: &str) -> Result<Window, String> {
    let units = "ms, s, m, h, d, w, mo, y";
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("'{text}': give a unit ({units})"))?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number
        .parse()
        .map_err(|_| format!("'{text}': not a whole number of {unit}"))?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" | "mo" | "y" if n > 0 && n <= 1_000_000 => {
            let unit = match unit {
                "w" => "week",
                "mo" => "month",
                _ => "year",
            };
            return Ok(Window::Calendar(unit, n));
        }
        "w" | "mo" | "y" => return Err(format!("'{text}': must be from 1 to 1000000")),
        other => return Err(format!("'{text}': unknown unit '{other}' ({units})")),
    };
    match n.checked_mul(scale) {
        Some(ms) if ms > 0 => Ok(Window::Fixed(ms)),
        _ => Err(format!("'{text}': must be positive and at most 2^63 ms")),
    }
}

/// A window of fixed length as `$dateTrunc`'s unit and bin size: the longest of day, hour,
/// minute, second and millisecond that divides it.
fn fixed_as_unit(ms: i64) -> (&'static str, i64) {
    let units = [
        ("day", 86_400_000),
        ("hour", 3_600_000),
        ("minute", 60_000),
        ("second", 1_000),
    ];
    units
        .into_iter()
        .find(|(_, len)| ms % len == 0)
        .map_or(("millisecond", ms), |(unit, len)| (unit, ms / len))
}

/// The pipeline that answers a `--window` of calendar units or in a time zone: the filter,
/// the measurements in time order (for `first` and `last`), then a `$group` by `$dateTrunc`
/// (in `timezone`, and series) shaped as the windowed aggregate's results, sorted by series
/// then window.
fn calendar_pipeline(
    filter: Document,
    (unit, n): (&str, i64),
    timezone: Option<&str>,
    by_series: bool,
    outputs: &[(String, Accumulator)],
    time_field: &str,
    meta_field: Option<&str>,
) -> Result<Vec<Document>, String> {
    let mut id = Document::new();
    if let (true, Some(m)) = (by_series, meta_field) {
        id.insert(m, format!("${m}"));
    }
    let mut trunc = doc! { "date": format!("${time_field}"), "unit": unit, "binSize": n };
    if let Some(tz) = timezone {
        trunc.insert("timezone", tz);
    }
    id.insert(time_field, doc! { "$dateTrunc": trunc });
    let mut group = doc! { "_id": id };
    for (name, acc) in outputs {
        let op = match acc {
            Accumulator::Count => "$count",
            Accumulator::CountNumbers(f) => {
                return Err(format!(
                    "a count of the numbers of '{f}' has no pipeline form"
                ));
            }
            Accumulator::Min(_) => "$min",
            Accumulator::Max(_) => "$max",
            Accumulator::Sum(_) | Accumulator::SumTyped(_) => "$sum",
            Accumulator::Avg(_) => "$avg",
            Accumulator::First(_) => "$first",
            Accumulator::Last(_) => "$last",
            Accumulator::StdDevPop(_) => "$stdDevPop",
            Accumulator::StdDevSamp(_) => "$stdDevSamp",
        };
        let field = acc.field();
        let arg = field.map_or(Bson::Document(Document::new()), |f| {
            Bson::String(format!("${f}"))
        });
        group.insert(name.clone(), doc! { op: arg });
    }
    let mut sort = Document::new();
    if let (true, Some(m)) = (by_series, meta_field) {
        sort.insert(format!("_id.{m}"), 1);
    }
    sort.insert(format!("_id.{time_field}"), 1);
    Ok(vec![
        doc! { "$match": filter },
        doc! { "$sort": { time_field: 1 } },
        doc! { "$group": group },
        doc! { "$sort": sort },
    ])
}

/// Parses `--out NAME=OP[:FIELD]`.
///
/// # Errors
/// No `=`, an unknown operator, or a field missing (or given to `count`).
pub(crate) fn parse_output(text: &str) -> Result<(String, Accumulator), String> {
    let (name, op) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}': expected NAME=OP[:FIELD]"))?;
    let (op, field) = match op.split_once(':') {
        Some((op, field)) => (op, Some(field.to_owned())),
        None => (op, None),
    };
    let acc = match (op, field) {
        ("count", None) => Accumulator::Count,
        ("count", Some(_)) => return Err(format!("'{text}': count takes no field")),
        (_, None) => return Err(format!("'{text}': {op} needs a field (NAME={op}:FIELD)")),
        ("min", Some(f)) => Accumulator::Min(f),
        ("max", Some(f)) => Accumulator::Max(f),
        ("sum", Some(f)) => Accumulator::Sum(f),
        ("avg", Some(f)) => Accumulator::Avg(f),
        ("first", Some(f)) => Accumulator::First(f),
        ("last", Some(f)) => Accumulator::Last(f),
        ("stddev", Some(f)) => Accumulator::StdDevPop(f),
        ("stddev_samp", Some(f)) => Accumulator::StdDevSamp(f),
        (other, Some(_)) => {
            return Err(format!(
                "'{text}': unknown operator '{other}' (count, min, max, sum, avg, first, last, \
                 stddev, stddev_samp)"
            ));
        }
    };
    Ok((name.to_owned(), acc))
}

/// Parses `--pipeline`: a JSON array of stage documents.
///
/// # Errors
/// Text that is not an array of documents in Extended JSON.
fn parse_pipeline(text: &str) -> CmdResult<Vec<Document>> {
    let wrapped = parse_json_arg("--pipeline", &format!("{{\"pipeline\": {text}}}"))?;
    let Some(Bson::Array(stages)) = wrapped.get("pipeline") else {
        return Err("--pipeline: expected a JSON array of stages".into());
    };
    stages
        .iter()
        .map(|s| match s {
            Bson::Document(d) => Ok(d.clone()),
            other => Err(format!("--pipeline: a stage is a document, not {other}").into()),
        })
        .collect()
}

/// Prints one relaxed Extended JSON line per document, each as soon as `docs` yields it.
///
/// # Errors
/// The first error of `docs` (after the lines before it), or writing to stdout fails (other
/// than a closed pipe).
fn print_documents(
    docs: impl IntoIterator<Item = tscoll_engine::Result<Document>>,
) -> CmdResult<()> {
    let mut out = BufWriter::with_capacity(256 * 1024, io::stdout().lock());
    let mut failed = None;
    let written = docs
        .into_iter()
        .map_while(|doc| doc.map_err(|e| failed = Some(e)).ok())
        .try_for_each(|doc| write_extjson_line(&mut out, doc))
        .and_then(|()| out.flush());
    stdout_result(written)?;
    match failed {
        Some(e) => Err(format!("aggregate failed: {e}").into()),
        None => Ok(()),
    }
}

/// Runs `tscoll aggregate`.
///
/// # Errors
/// Bad arguments, no such collection, a filter or spec the engine rejects, storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    if let Some(text) = &args.pipeline {
        let pipeline = parse_pipeline(text)?;
        let (_db, coll) = open_readable_collection(&args.db.db, &args.coll)?;
        if let Some(mode) = args.explain {
            let plan = coll
                .explain_aggregate(&pipeline, mode.verbosity())
                .map_err(|e| format!("explain failed: {e}"))?;
            print_explain(plan)?;
            return Ok(ExitCode::SUCCESS);
        }
        let docs = coll
            .aggregate_cursor(&pipeline)
            .map_err(|e| format!("aggregate failed: {e}"))?;
        print_documents(docs)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.explain.is_some() {
        return Err("--explain explains a --pipeline: give the pipeline".into());
    }
    let filter = parse_json_arg("--filter", args.filter.as_deref().unwrap_or("{}"))?;
    let window = args.window.ok_or("give --window or --pipeline")?;
    let (_db, coll) = open_readable_collection(&args.db.db, &args.coll)?;
    let outputs = if args.outputs.is_empty() {
        vec![("count".to_owned(), Accumulator::Count)]
    } else {
        args.outputs.clone()
    };
    let calendar = match (window, &args.timezone) {
        (Window::Fixed(ms), None) => Err(ms),
        (Window::Fixed(ms), Some(_)) => Ok(fixed_as_unit(ms)),
        (Window::Calendar(unit, n), _) => Ok((unit, n)),
    };
    let window = match calendar {
        Err(ms) => ms,
        Ok((unit, n)) => {
            let spec = coll.spec();
            let pipeline = calendar_pipeline(
                filter,
                (unit, n),
                args.timezone.as_deref(),
                args.by_series,
                &outputs,
                &spec.time_field,
                spec.meta_field.as_deref(),
            )?;
            let docs = coll
                .aggregate_cursor(&pipeline)
                .map_err(|e| format!("aggregate failed: {e}"))?;
            print_documents(docs)?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let spec = AggregateSpec {
        window_ms: window,
        by_series: args.by_series,
        outputs,
    };
    let (groups, stats) = coll
        .aggregate_windows_with_stats(&filter, &spec)
        .map_err(|e| format!("aggregate failed: {e}"))?;
    print_documents(groups.into_iter().map(Ok))?;
    if args.stats {
        print_stats(&stats);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_windows_in_a_zone_are_date_trunc_units() {
        assert_eq!(fixed_as_unit(86_400_000), ("day", 1));
        assert_eq!(fixed_as_unit(7_200_000), ("hour", 2));
        assert_eq!(fixed_as_unit(900_000), ("minute", 15));
        assert_eq!(fixed_as_unit(1_500), ("millisecond", 1_500));
        let p = calendar_pipeline(
            doc! {},
            ("day", 1),
            Some("Europe/Paris"),
            false,
            &[("n".to_owned(), Accumulator::Count)],
            "ts",
            None,
        )
        .expect("pipeline");
        assert_eq!(
            p[2],
            doc! { "$group": {
                "_id": { "ts": { "$dateTrunc": { "date": "$ts", "unit": "day", "binSize": 1_i64, "timezone": "Europe/Paris" } } },
                "n": { "$count": {} },
            } }
        );
    }

    #[test]
    fn windows() {
        assert_eq!(parse_window("500ms"), Ok(Window::Fixed(500)));
        assert_eq!(parse_window("15m"), Ok(Window::Fixed(900_000)));
        assert_eq!(parse_window("1h"), Ok(Window::Fixed(3_600_000)));
        assert_eq!(parse_window("2d"), Ok(Window::Fixed(172_800_000)));
        assert_eq!(parse_window("1w"), Ok(Window::Calendar("week", 1)));
        assert_eq!(parse_window("3mo"), Ok(Window::Calendar("month", 3)));
        assert_eq!(parse_window("1y"), Ok(Window::Calendar("year", 1)));
        assert!(parse_window("0s").is_err());
        assert!(parse_window("0mo").is_err());
        assert!(parse_window("10").is_err());
        assert!(parse_window("1q").is_err());
        assert!(parse_window("99999999999999999d").is_err());
    }

    #[test]
    fn outputs() {
        assert_eq!(
            parse_output("n=count"),
            Ok(("n".into(), Accumulator::Count))
        );
        assert_eq!(
            parse_output("peak=max:usage_user"),
            Ok(("peak".into(), Accumulator::Max("usage_user".into())))
        );
        assert_eq!(
            parse_output("a=avg:x.y"),
            Ok(("a".into(), Accumulator::Avg("x.y".into())))
        );
        assert!(parse_output("n").is_err());
        assert!(parse_output("n=count:x").is_err());
        assert!(parse_output("n=max").is_err());
        assert!(parse_output("n=median:x").is_err());
    }
}
