//! A deterministic generator of the [TSBS](https://github.com/timescale/tsbs) "cpu-only"
//! devops workload: the ingest benchmark of `tscoll bench ingest` and `tscoll bench gen`.
//!
//! **Shape.** A [`Workload`] is `hosts` simulated servers observed for `days` days. Every
//! [`INTERVAL_MS`] (10 s) from [`START_MS`] (2016-01-01T00:00:00Z), each host reports one
//! measurement:
//!
//! ```text
//! { time: Date(2016-01-01T00:00:10Z),
//!   tags: { hostname: "host_3", region: "eu-west-1", datacenter: "eu-west-1b", rack: "41",
//!           os: "Ubuntu16.04LTS", arch: "x64", team: "LON", service: "7",
//!           service_version: "1", service_environment: "staging" },
//!   usage_user: 58, usage_system: 12, ..., usage_guest_nice: 93 }
//! ```
//!
//! * [`TIME_FIELD`] `time`: a BSON datetime (milliseconds).
//! * [`META_FIELD`] `tags`: the host's 10 static string tags ([`TAG_KEYS`]), drawn once per
//!   host from the value lists TSBS uses ([`REGIONS`] with their datacenters, racks `"0"` to
//!   `"99"`, [`OS`], [`ARCH`], [`TEAMS`], services `"0"` to `"19"`, service versions `"0"`,
//!   `"1"`, [`ENVIRONMENTS`]). One host = one series.
//! * The 10 [`FIELDS`] `usage_user` … `usage_guest_nice`: each a clamped random walk in
//!   `[0, 100]`, as TSBS's clamped random walk: it starts uniform in `[0, 100)`, moves by a
//!   standard normal step every 10 s and is clamped to `[0, 100]`. The walk is kept as an
//!   `f64`; the stored value is the walk **truncated to an integer**, as TSBS's cpu
//!   measurement does (`ToPointAllInt64`), stored as a **BSON int32**: the values fit, and an
//!   int32 is what `tscoll ingest` makes of the NDJSON form's plain integers, so both paths
//!   store identical documents.
//!
//! **Order.** Rows come in time-major order: every host at `t0` (hosts in ascending order),
//! then every host at `t1`, and so on, as TSBS writes them.
//!
//! **Determinism.** Each host has its own splitmix64 stream, derived from the seed and the
//! host number; its tags and its walks depend on nothing else. The same [`Workload`]
//! therefore gives the same documents, bit for bit, however the hosts are split among
//! threads ([`Workload::part`]), and the rows of one host can be re-computed alone
//! ([`Workload::host_rows`]) to check query results.
//!
//! **Scales.** `hosts × days × 8640` measurements: 100 hosts × 1 day = 864 000,
//! 1000 × 1 = 8.64 million. Nothing is materialized: a [`Generator`] holds one walk state and
//! the tag choices per host and builds documents as they are asked for.

use std::io::{self, Write};
use std::ops::Range;

use bson::{DateTime, Document};

use crate::rng::{SplitMix64, mix64};

/// 2016-01-01T00:00:00Z in milliseconds since the Unix epoch: the time of the first row.
pub const START_MS: i64 = 1_451_606_400_000;

/// Time between two measurements of one host, in milliseconds (10 s).
pub const INTERVAL_MS: i64 = 10_000;

/// Measurements per host per day (86 400 s / 10 s).
pub const STEPS_PER_DAY: u64 = 8_640;

/// The time field of the documents.
pub const TIME_FIELD: &str = "time";

/// The meta field of the documents: the host's tags.
pub const META_FIELD: &str = "tags";

/// The 10 measurement fields, in document order.
pub const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

/// The 10 tags of a host, in the order of the `tags` sub-document.
pub const TAG_KEYS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// TSBS's regions, each with its datacenters (region name + zone letter).
pub const REGIONS: [(&str, &[&str]); 9] = [
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
];

/// Racks per datacenter: the `rack` tag is `"0"` to `"99"`.
pub const RACKS: u64 = 100;

/// Values of the `os` tag.
pub const OS: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];

/// Values of the `arch` tag.
pub const ARCH: [&str; 2] = ["x64", "x86"];

/// Values of the `team` tag.
pub const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];

/// Services: the `service` tag is `"0"` to `"19"`.
pub const SERVICES: u64 = 20;

/// Service versions: the `service_version` tag is `"0"` or `"1"`.
pub const SERVICE_VERSIONS: u64 = 2;

/// Values of the `service_environment` tag.
pub const ENVIRONMENTS: [&str; 3] = ["production", "staging", "test"];

/// The seed of `tscoll bench ingest` and `tscoll bench gen` when none is given.
pub const DEFAULT_SEED: u64 = 1;

/// Lower bound of every measurement field.
pub const MIN_VALUE: i32 = 0;

/// Upper bound of every measurement field.
pub const MAX_VALUE: i32 = 100;

/// One scale of the workload: `hosts` hosts observed for `days` days, from `seed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// Number of hosts (series), named `host_0` to `host_{hosts-1}`.
    pub hosts: usize,
    /// Observed time in days; may be fractional (`0.01` = 14.4 minutes = 87 rows per host).
    pub days: f64,
    /// The seed of every host's random stream.
    pub seed: u64,
}

impl Workload {
    /// A workload of `hosts` hosts over `days` days.
    #[must_use]
    pub fn new(hosts: usize, days: f64, seed: u64) -> Workload {
        Workload { hosts, days, seed }
    }

    /// Rows per host: one for every 10 s instant in `[START, START + days)`, that is
    /// `ceil(days × 8640)` with `days` first rounded to whole milliseconds (0 for a
    /// non-positive or non-finite `days`).
    #[must_use]
    pub fn steps(&self) -> u64 {
        if !self.days.is_finite() || self.days <= 0.0 {
            return 0;
        }
        let span_ms = (self.days * 86_400_000.0).round() as u64;
        span_ms.div_ceil(INTERVAL_MS as u64)
    }

    /// Measurements the workload holds: `hosts × steps()` (`hosts × days × 8640` for whole
    /// days).
    #[must_use]
    pub fn measurements(&self) -> u64 {
        self.hosts as u64 * self.steps()
    }

    /// The time of row `step` of every host, in milliseconds since the epoch.
    #[must_use]
    pub fn time_ms(step: u64) -> i64 {
        START_MS + step as i64 * INTERVAL_MS
    }

    /// The `tags` sub-document of `host` (the meta value of its series).
    #[must_use]
    pub fn host_tags(&self, host: usize) -> Document {
        HostState::new(self.seed, host).tags()
    }

    /// A generator of every measurement, in time-major order.
    #[must_use]
    pub fn generator(&self) -> Generator {
        self.part(0, 1)
    }

    /// The share of part `index` of `parts` (e.g. thread `index` of `parts` threads): the
    /// hosts `h` with `h % parts == index`, still in time-major order over those hosts. The
    /// parts `0..parts` together hold every (host, time) exactly once, with the same values
    /// as [`generator`](Self::generator). A part may be empty (more parts than hosts).
    ///
    /// # Panics
    /// When `index >= parts`.
    #[must_use]
    pub fn part(&self, index: usize, parts: usize) -> Generator {
        assert!(index < parts, "part {index} of {parts}");
        Generator {
            hosts: (index..self.hosts)
                .step_by(parts)
                .map(|h| HostState::new(self.seed, h))
                .collect(),
            steps: self.steps(),
            step: 0,
            next: 0,
        }
    }

    /// The documents of one host for the rows `steps` (row `s` is at
    /// [`time_ms(s)`](Self::time_ms)), ascending in time: the expected result of a query for
    /// that host and time range. Re-runs that host's walk from the start (O(`steps.end`)).
    /// Rows past the end of the workload are left out.
    #[must_use]
    pub fn host_rows(&self, host: usize, steps: Range<u64>) -> Vec<Document> {
        let mut state = HostState::new(self.seed, host);
        let end = steps.end.min(self.steps());
        let mut out = Vec::with_capacity(end.saturating_sub(steps.start) as usize);
        for step in 0..end {
            if step > 0 {
                state.advance();
            }
            if step >= steps.start {
                out.push(state.document(step));
            }
        }
        out
    }
}

/// One row of the workload, without building its document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The host (`host_<host>`).
    pub host: usize,
    /// The row number of the host: the time is [`Workload::time_ms`]`(step)`.
    pub step: u64,
    /// The 10 [`FIELDS`], in order, each in `[0, 100]`.
    pub values: [i32; 10],
}

impl Row {
    /// The row's time, in milliseconds since the epoch.
    #[must_use]
    pub fn time_ms(&self) -> i64 {
        Workload::time_ms(self.step)
    }
}

/// A host's 10 tags as indices into the TSBS value lists (a few bytes, not a document: a
/// generator of 200 000 hosts holds 200 000 of these).
#[derive(Clone, Copy, Debug)]
struct HostTags {
    region: u8,
    datacenter: u8,
    rack: u8,
    os: u8,
    arch: u8,
    team: u8,
    service: u8,
    service_version: u8,
    environment: u8,
}

impl HostTags {
    /// Draws the tags from `rng`, in [`TAG_KEYS`] order.
    fn draw(rng: &mut SplitMix64) -> HostTags {
        let mut pick = |n: usize| rng.below(n as u64) as u8;
        let region = pick(REGIONS.len());
        let datacenter = pick(REGIONS[usize::from(region)].1.len());
        HostTags {
            region,
            datacenter,
            rack: pick(RACKS as usize),
            os: pick(OS.len()),
            arch: pick(ARCH.len()),
            team: pick(TEAMS.len()),
            service: pick(SERVICES as usize),
            service_version: pick(SERVICE_VERSIONS as usize),
            environment: pick(ENVIRONMENTS.len()),
        }
    }

    /// The tag values of `host`, in [`TAG_KEYS`] order.
    fn values(self, host: usize) -> [String; 10] {
        let (region, datacenters) = REGIONS[usize::from(self.region)];
        [
            format!("host_{host}"),
            region.to_owned(),
            datacenters[usize::from(self.datacenter)].to_owned(),
            self.rack.to_string(),
            OS[usize::from(self.os)].to_owned(),
            ARCH[usize::from(self.arch)].to_owned(),
            TEAMS[usize::from(self.team)].to_owned(),
            self.service.to_string(),
            self.service_version.to_string(),
            ENVIRONMENTS[usize::from(self.environment)].to_owned(),
        ]
    }
}

/// The per-host state: its random stream, its 10 walks and its tags, about 120 bytes (the
/// tag document is built per row, so a generator's memory grows by little per host).
#[derive(Clone, Debug)]
struct HostState {
    host: usize,
    rng: SplitMix64,
    walks: [f64; 10],
    tags: HostTags,
}

impl HostState {
    fn new(seed: u64, host: usize) -> HostState {
        let mut rng = SplitMix64::new(mix64(seed ^ mix64(host as u64)));
        let tags = HostTags::draw(&mut rng);
        // Uniform in [0, 100): `1 - unit()` is in [0, 1).
        let walks = std::array::from_fn(|_| f64::from(MAX_VALUE) * (1.0 - rng.unit()));
        HostState {
            host,
            rng,
            walks,
            tags,
        }
    }

    /// The `tags` sub-document.
    fn tags(&self) -> Document {
        let mut tags = Document::new();
        for (key, value) in TAG_KEYS.iter().zip(self.tags.values(self.host)) {
            tags.insert(*key, value);
        }
        tags
    }

    /// One 10 s step of every walk: a standard normal step, clamped to `[0, 100]`.
    fn advance(&mut self) {
        for pair in self.walks.chunks_exact_mut(2) {
            let (a, b) = self.rng.gauss_pair();
            pair[0] = (pair[0] + a).clamp(f64::from(MIN_VALUE), f64::from(MAX_VALUE));
            pair[1] = (pair[1] + b).clamp(f64::from(MIN_VALUE), f64::from(MAX_VALUE));
        }
    }

    /// The stored values: the walks truncated to integers.
    fn values(&self) -> [i32; 10] {
        self.walks.map(|w| w as i32)
    }

    /// The row's document: `{time, tags, usage_user, ...}`.
    fn document(&self, step: u64) -> Document {
        let mut doc = Document::new();
        doc.insert(TIME_FIELD, DateTime::from_millis(Workload::time_ms(step)));
        doc.insert(META_FIELD, self.tags());
        for (name, value) in FIELDS.iter().zip(self.values()) {
            doc.insert(*name, value);
        }
        doc
    }

    /// The tags as a JSON object (`{"hostname":"host_0",...}`).
    fn tags_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (key, value)) in TAG_KEYS.iter().zip(self.tags.values(self.host)).enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(key).unwrap_or_default());
            out.push(':');
            out.push_str(&serde_json::to_string(&value).unwrap_or_default());
        }
        out.push('}');
        out
    }

    /// The tag values as CSV cells, comma-separated, in [`TAG_KEYS`] order.
    fn tags_csv(&self) -> String {
        let cells: Vec<String> = self
            .tags
            .values(self.host)
            .iter()
            .map(|v| csv_cell(v))
            .collect();
        cells.join(",")
    }
}

/// Generates the measurements of a [`Workload`] (or of one part of it) in time-major order,
/// one document at a time or in batches. Memory: one walk state and the tag choices (a few
/// bytes) per host, whatever the number of rows.
#[derive(Clone, Debug)]
pub struct Generator {
    hosts: Vec<HostState>,
    steps: u64,
    /// The row number of the next row.
    step: u64,
    /// The index in `hosts` of the next row.
    next: usize,
}

impl Generator {
    /// Measurements still to come.
    #[must_use]
    pub fn remaining(&self) -> u64 {
        if self.hosts.is_empty() {
            return 0;
        }
        (self.steps - self.step) * self.hosts.len() as u64 - self.next as u64
    }

    /// The hosts this generator covers, ascending.
    #[must_use]
    pub fn hosts(&self) -> Vec<usize> {
        self.hosts.iter().map(|h| h.host).collect()
    }

    /// Moves to the next row; returns its index in `hosts` and its row number.
    fn advance(&mut self) -> Option<(usize, u64)> {
        if self.step >= self.steps || self.hosts.is_empty() {
            return None;
        }
        let (index, step) = (self.next, self.step);
        if step > 0 {
            self.hosts[index].advance();
        }
        self.next += 1;
        if self.next == self.hosts.len() {
            self.next = 0;
            self.step += 1;
        }
        Some((index, step))
    }

    /// The next row as numbers, without building a document.
    pub fn next_row(&mut self) -> Option<Row> {
        let (index, step) = self.advance()?;
        let host = &self.hosts[index];
        Some(Row {
            host: host.host,
            step,
            values: host.values(),
        })
    }

    /// Appends up to `n` documents to `out`; returns how many (0 once the workload is
    /// exhausted). Concatenated batches are the same documents as the iterator's.
    pub fn fill_batch(&mut self, out: &mut Vec<Document>, n: usize) -> usize {
        let n = n.min(usize::try_from(self.remaining()).unwrap_or(usize::MAX));
        out.reserve(n);
        for _ in 0..n {
            let Some((index, step)) = self.advance() else {
                break;
            };
            out.push(self.hosts[index].document(step));
        }
        n
    }
}

impl Iterator for Generator {
    type Item = Document;

    fn next(&mut self) -> Option<Document> {
        let (index, step) = self.advance()?;
        Some(self.hosts[index].document(step))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining()).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

/// Writes every measurement of `workload` as one line of MongoDB relaxed Extended JSON, in
/// the generator's time-major order: the same documents as [`Workload::generator`], in the
/// form `mongoimport` and `tscoll ingest` read:
///
/// ```text
/// {"time":{"$date":"2016-01-01T00:00:00Z"},"tags":{"hostname":"host_0",...},"usage_user":58,...}
/// ```
///
/// The writer is buffered here; pass it unbuffered.
///
/// # Errors
/// The writer fails.
pub fn write_ndjson(workload: &Workload, out: impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let mut generator = workload.generator();
    let tags: Vec<String> = generator.hosts.iter().map(HostState::tags_json).collect();
    let mut date = StepTime::default();
    while let Some((index, step)) = generator.advance() {
        let time = date.of(step)?;
        write!(
            out,
            "{{\"{TIME_FIELD}\":{{\"$date\":\"{}\"}},\"{META_FIELD}\":{}",
            time, tags[index]
        )?;
        for (name, value) in FIELDS.iter().zip(generator.hosts[index].values()) {
            write!(out, ",\"{name}\":{value}")?;
        }
        out.write_all(b"}\n")?;
    }
    out.flush()
}

/// The RFC 3339 text of a step's time, formatted once per step (every host shares it).
#[derive(Default)]
struct StepTime {
    step: Option<u64>,
    text: String,
}

impl StepTime {
    fn of(&mut self, step: u64) -> io::Result<&str> {
        if self.step != Some(step) {
            self.text = DateTime::from_millis(Workload::time_ms(step))
                .try_to_rfc3339_string()
                .map_err(io::Error::other)?;
            self.step = Some(step);
        }
        Ok(&self.text)
    }
}

/// Writes every measurement of `workload` as CSV, in the generator's time-major order: the
/// same rows as [`write_ndjson`], flattened for tools that read CSV (DuckDB's `read_csv`).
/// A header line names the columns: `time` (RFC 3339 in UTC, `2016-01-01T00:00:00Z`), the 10
/// [`TAG_KEYS`] and the 10 [`FIELDS`] (integers):
///
/// ```text
/// time,hostname,region,datacenter,rack,os,arch,team,service,service_version,...,usage_user,...
/// 2016-01-01T00:00:00Z,host_0,eu-west-1,eu-west-1b,41,Ubuntu16.04LTS,x64,LON,7,1,...,58,...
/// ```
///
/// A tag holding a comma, a quote or a line break is quoted (none of TSBS's values does).
/// The writer is buffered here; pass it unbuffered.
///
/// # Errors
/// The writer fails.
pub fn write_csv(workload: &Workload, out: impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let mut generator = workload.generator();
    let tags: Vec<String> = generator.hosts.iter().map(HostState::tags_csv).collect();
    let header: Vec<&str> = std::iter::once(TIME_FIELD)
        .chain(TAG_KEYS)
        .chain(FIELDS)
        .collect();
    writeln!(out, "{}", header.join(","))?;
    let mut date = StepTime::default();
    while let Some((index, step)) = generator.advance() {
        let time = date.of(step)?;
        write!(out, "{},{}", time, tags[index])?;
        for value in generator.hosts[index].values() {
            write!(out, ",{value}")?;
        }
        out.write_all(b"\n")?;
    }
    out.flush()
}

/// A CSV cell: `text` as it is, or quoted (quotes doubled) when it holds a comma, a quote or
/// a line break.
fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The TSBS cpu-only queries as SQL over the table `cpu` (`tscoll sql`, a cluster's
/// session), each with a total `ORDER BY` so that two answers compare as text: `(name,
/// statement)` for
///
/// * `q1` — the 10 fields of `host` in `q1_minutes` (minutes from [`START_MS`]), by time;
/// * `q2` — `max(usage_user)` per host per hour;
/// * `q3` — the average of each of the 10 fields per host per hour;
/// * `lastpoint` — each host's latest measurement (`DISTINCT ON` the host, latest first);
/// * `double-groupby-all` — the averages of `q3` over `range_minutes`;
/// * `high-cpu-all` — every measurement with `usage_user > 90` in `range_minutes`.
#[must_use]
pub fn sql_queries(
    host: &str,
    q1_minutes: Range<i64>,
    range_minutes: Range<i64>,
) -> Vec<(&'static str, String)> {
    let fields = FIELDS.join(", ");
    let avgs: Vec<String> = FIELDS
        .iter()
        .map(|f| format!("avg({f}) AS avg_{f}"))
        .collect();
    let avgs = avgs.join(", ");
    let at = |minutes: i64| {
        let t = DateTime::from_millis(START_MS + minutes * 60_000);
        format!(
            "TIMESTAMP '{}'",
            t.try_to_rfc3339_string().unwrap_or_default()
        )
    };
    let hour = "date_bin(INTERVAL '1 hour', time)";
    vec![
        (
            "q1",
            format!(
                "SELECT time, {fields} FROM cpu WHERE tags.hostname = '{host}' \
                 AND time >= {} AND time < {} ORDER BY time",
                at(q1_minutes.start),
                at(q1_minutes.end)
            ),
        ),
        (
            "q2",
            format!(
                "SELECT tags.hostname AS host, {hour} AS hour, max(usage_user) AS max_user \
                 FROM cpu GROUP BY 1, 2 ORDER BY 1, 2"
            ),
        ),
        (
            "q3",
            format!(
                "SELECT tags.hostname AS host, {hour} AS hour, {avgs} FROM cpu \
                 GROUP BY 1, 2 ORDER BY 1, 2"
            ),
        ),
        (
            "lastpoint",
            format!(
                "SELECT DISTINCT ON (tags.hostname) tags.hostname AS host, time, {fields} \
                 FROM cpu ORDER BY tags.hostname, time DESC"
            ),
        ),
        (
            "double-groupby-all",
            format!(
                "SELECT tags.hostname AS host, {hour} AS hour, {avgs} FROM cpu \
                 WHERE time >= {} AND time < {} GROUP BY 1, 2 ORDER BY 1, 2",
                at(range_minutes.start),
                at(range_minutes.end)
            ),
        ),
        (
            "high-cpu-all",
            format!(
                "SELECT tags.hostname AS host, time, {fields} FROM cpu WHERE usage_user > 90 \
                 AND time >= {} AND time < {} ORDER BY time, host",
                at(range_minutes.start),
                at(range_minutes.end)
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use bson::Bson;

    use super::*;

    fn small() -> Workload {
        Workload::new(7, 0.05, 42)
    }

    #[test]
    fn measurement_count_is_hosts_times_days_times_8640() {
        assert_eq!(Workload::new(100, 1.0, 1).measurements(), 864_000);
        assert_eq!(Workload::new(1000, 1.0, 1).measurements(), 8_640_000);
        assert_eq!(Workload::new(10, 3.0, 1).measurements(), 10 * 3 * 8_640);
        assert_eq!(Workload::new(1, 0.5, 1).steps(), 4_320);
        assert_eq!(Workload::new(1, 0.1, 1).steps(), 864);
        // 14.4 minutes: the instants 0, 10, ..., 860 s.
        assert_eq!(Workload::new(1, 0.01, 1).steps(), 87);
        assert_eq!(Workload::new(5, 0.0, 1).measurements(), 0);
        assert_eq!(Workload::new(5, -1.0, 1).measurements(), 0);
        assert_eq!(Workload::new(5, f64::NAN, 1).measurements(), 0);
        let w = small();
        assert_eq!(w.generator().count() as u64, w.measurements());
        assert_eq!(w.generator().remaining(), w.measurements());
    }

    #[test]
    fn same_seed_same_documents_other_seed_other_values() {
        let a: Vec<Document> = small().generator().collect();
        let b: Vec<Document> = small().generator().collect();
        assert_eq!(a, b);
        let other: Vec<Document> = Workload {
            seed: 43,
            ..small()
        }
        .generator()
        .collect();
        assert_eq!(a.len(), other.len());
        assert_ne!(a, other);
    }

    #[test]
    fn values_stay_within_0_and_100_and_walk() {
        let w = Workload::new(20, 0.5, 3);
        let mut generator = w.generator();
        let mut seen = HashSet::new();
        let mut moves = 0u64;
        let mut last = vec![[0i32; 10]; w.hosts];
        while let Some(row) = generator.next_row() {
            for &v in &row.values {
                assert!((MIN_VALUE..=MAX_VALUE).contains(&v), "{v}");
                seen.insert(v);
            }
            if row.step > 0 {
                for (a, b) in last[row.host].iter().zip(row.values) {
                    assert!((a - b).abs() <= 8, "{a} -> {b}");
                    moves += u64::from(*a != b);
                }
            }
            last[row.host] = row.values;
        }
        // Both bounds are reached (clamped walks) and the walks do move.
        assert!(seen.contains(&0) && seen.contains(&100), "{seen:?}");
        assert!(seen.len() == 101, "{}", seen.len());
        assert!(moves * 2 > w.measurements() * 10, "{moves}");
    }

    #[test]
    fn rows_are_time_major_every_10_seconds() {
        let w = small();
        let docs: Vec<Document> = w.generator().collect();
        assert_eq!(docs.len() as u64, w.steps() * w.hosts as u64);
        for (i, doc) in docs.iter().enumerate() {
            let (step, host) = (i / w.hosts, i % w.hosts);
            let time = doc.get_datetime(TIME_FIELD).expect("time");
            assert_eq!(time.timestamp_millis(), START_MS + step as i64 * 10_000);
            let tags = doc.get_document(META_FIELD).expect("tags");
            assert_eq!(
                tags.get_str("hostname").ok(),
                Some(format!("host_{host}").as_str())
            );
            let keys: Vec<&str> = doc.keys().map(String::as_str).collect();
            assert_eq!(keys[..2], [TIME_FIELD, META_FIELD]);
            assert_eq!(keys[2..], FIELDS);
            assert!(
                FIELDS
                    .iter()
                    .all(|f| matches!(doc.get(f), Some(Bson::Int32(_))))
            );
        }
        assert_eq!(
            docs[0]
                .get_datetime(TIME_FIELD)
                .expect("time")
                .try_to_rfc3339_string()
                .ok()
                .as_deref(),
            Some("2016-01-01T00:00:00Z")
        );
    }

    #[test]
    fn tags_come_from_the_tsbs_lists() {
        let w = Workload::new(300, 0.0, 9);
        let mut regions = HashSet::new();
        for host in 0..w.hosts {
            let tags = w.host_tags(host);
            let keys: Vec<&str> = tags.keys().map(String::as_str).collect();
            assert_eq!(keys, TAG_KEYS);
            let get = |k| tags.get_str(k).expect("string tag");
            let (region, datacenters) = REGIONS
                .iter()
                .find(|(r, _)| *r == get("region"))
                .expect("known region");
            regions.insert(*region);
            assert!(datacenters.contains(&get("datacenter")));
            assert!(get("datacenter").starts_with(region));
            assert!(get("rack").parse::<u64>().is_ok_and(|r| r < RACKS));
            assert!(OS.contains(&get("os")));
            assert!(ARCH.contains(&get("arch")));
            assert!(TEAMS.contains(&get("team")));
            assert!(get("service").parse::<u64>().is_ok_and(|s| s < SERVICES));
            assert!(["0", "1"].contains(&get("service_version")));
            assert!(ENVIRONMENTS.contains(&get("service_environment")));
        }
        assert_eq!(regions.len(), REGIONS.len());
    }

    #[test]
    fn parts_cover_every_host_and_time_once_with_the_same_values() {
        let w = small();
        let all: Vec<Row> = {
            let mut g = w.generator();
            std::iter::from_fn(|| g.next_row()).collect()
        };
        for parts in [1, 2, 3, 7, 10] {
            let mut seen = HashSet::new();
            for index in 0..parts {
                let mut g = w.part(index, parts);
                assert!(g.hosts().iter().all(|h| h % parts == index));
                let mut prev: Option<Row> = None;
                while let Some(row) = g.next_row() {
                    assert_eq!(row.host % parts, index);
                    // Time-major within the part.
                    if let Some(p) = prev {
                        assert!((p.step, p.host) < (row.step, row.host));
                    }
                    prev = Some(row);
                    let global = row.step as usize * w.hosts + row.host;
                    assert_eq!(all[global], row);
                    assert!(seen.insert((row.host, row.step)), "{row:?} twice");
                }
            }
            assert_eq!(seen.len() as u64, w.measurements(), "{parts} parts");
        }
    }

    #[test]
    fn batches_and_host_rows_match_the_iterator() {
        let w = small();
        let all: Vec<Document> = w.generator().collect();
        let mut g = w.generator();
        let mut batched = Vec::new();
        let mut sizes = Vec::new();
        loop {
            let mut batch = Vec::new();
            let n = g.fill_batch(&mut batch, 100);
            assert_eq!(n, batch.len());
            if n == 0 {
                break;
            }
            sizes.push(n);
            batched.extend(batch);
        }
        assert_eq!(batched, all);
        assert!(sizes[..sizes.len() - 1].iter().all(|&n| n == 100));

        let host = 3;
        let rows = w.host_rows(host, 5..20);
        let expected: Vec<Document> = all
            .iter()
            .skip(host)
            .step_by(w.hosts)
            .skip(5)
            .take(15)
            .cloned()
            .collect();
        assert_eq!(rows, expected);
        assert_eq!(w.host_rows(host, 0..u64::MAX).len() as u64, w.steps());
    }

    #[test]
    fn ndjson_lines_parse_back_to_the_same_values() {
        let w = small();
        let mut text = Vec::new();
        write_ndjson(&w, &mut text).expect("write");
        let text = String::from_utf8(text).expect("utf-8");
        let docs: Vec<Document> = w.generator().collect();
        assert_eq!(text.lines().count(), docs.len());
        assert!(
            text.starts_with(
                "{\"time\":{\"$date\":\"2016-01-01T00:00:00Z\"},\"tags\":{\"hostname\":\"host_0\","
            ),
            "{}",
            &text[..100]
        );
        for (line, doc) in text.lines().zip(&docs) {
            let json: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            let date = json["time"]["$date"].as_str().expect("$date");
            let ms = DateTime::parse_rfc3339_str(date).expect("rfc3339");
            assert_eq!(ms, doc.get_datetime(TIME_FIELD).copied().expect("time"));
            let tags = doc.get_document(META_FIELD).expect("tags");
            let object = json["tags"].as_object().expect("tags object");
            assert_eq!(object.len(), TAG_KEYS.len());
            for (k, v) in tags {
                assert_eq!(object[k].as_str(), v.as_str(), "{k}");
            }
            for f in FIELDS {
                let expected = doc.get_i32(f).expect("int32");
                assert_eq!(json[f].as_i64(), Some(i64::from(expected)), "{f}");
            }
            assert_eq!(json.as_object().expect("object").len(), 12);
        }
    }

    /// Splits one CSV line into cells (quoted cells unquoted).
    fn csv_cells(line: &str) -> Vec<String> {
        let mut cells = vec![String::new()];
        let (mut quoted, mut chars) = (false, line.chars().peekable());
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    cells.last_mut().expect("cell").push('"');
                }
                ('"', _) => quoted = !quoted,
                (',', false) => cells.push(String::new()),
                _ => cells.last_mut().expect("cell").push(c),
            }
        }
        cells
    }

    #[test]
    fn csv_rows_equal_the_ndjson_rows() {
        let w = small();
        let (mut csv, mut ndjson) = (Vec::new(), Vec::new());
        write_csv(&w, &mut csv).expect("csv");
        write_ndjson(&w, &mut ndjson).expect("ndjson");
        let (csv, ndjson) = (
            String::from_utf8(csv).expect("utf-8"),
            String::from_utf8(ndjson).expect("utf-8"),
        );
        let mut lines = csv.lines();
        let header = csv_cells(lines.next().expect("header"));
        let expected: Vec<&str> = std::iter::once(TIME_FIELD)
            .chain(TAG_KEYS)
            .chain(FIELDS)
            .collect();
        assert_eq!(header, expected);
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len() as u64, w.measurements());
        assert_eq!(rows.len(), ndjson.lines().count());
        for (row, line) in rows.iter().zip(ndjson.lines()) {
            let cells = csv_cells(row);
            assert_eq!(cells.len(), 21, "{row}");
            let json: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            assert_eq!(json[TIME_FIELD]["$date"].as_str(), Some(cells[0].as_str()));
            for (key, cell) in TAG_KEYS.iter().zip(&cells[1..11]) {
                assert_eq!(json[META_FIELD][key].as_str(), Some(cell.as_str()), "{key}");
            }
            for (field, cell) in FIELDS.iter().zip(&cells[11..]) {
                assert_eq!(json[field].as_i64(), cell.parse::<i64>().ok(), "{field}");
            }
        }
        assert!(
            rows[0].starts_with("2016-01-01T00:00:00Z,host_0,"),
            "{}",
            rows[0]
        );
    }

    #[test]
    fn csv_cells_are_quoted_when_needed() {
        assert_eq!(csv_cell("eu-west-1"), "eu-west-1");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(
            csv_cells("x,\"a,b\",\"say \"\"hi\"\"\""),
            ["x", "a,b", "say \"hi\""]
        );
    }
}
