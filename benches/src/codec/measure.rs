//! Sizes and speeds of tscoll, pcodec and zstd on the same chunks.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use pco::standalone::{simple_compress, simple_decompress};
use pco::{ChunkConfig, ModeSpec};
use tscoll_codec::{Column, Lane, decode_column, encode_column};

use super::corpus::{Chunk, Corpus};
use super::kind::ColumnKind;

/// zstd level of the reference (issue text: "zstd level 3 on raw bytes").
pub const ZSTD_LEVEL: i32 = 3;

/// How long speeds are measured.
#[derive(Clone, Copy, Debug)]
pub struct MeasureOptions {
    /// Least time spent on each timed pass set (encode, decode) of one kind.
    pub min_time: Duration,
    /// Least number of timed passes (the median pass is reported).
    pub min_passes: usize,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            min_time: Duration::from_millis(300),
            min_passes: 5,
        }
    }
}

/// Sizes of one group of chunks (a kind, or a field of a data set), in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sizes {
    /// Chunks.
    pub chunks: u64,
    /// Values (skips and nulls not counted).
    pub values: u64,
    /// Raw bytes of the values: 8 a number, the UTF-8 bytes of a string.
    pub raw_bytes: u64,
    /// tscoll column bodies ([`encode_column`]), skips and types included.
    pub tscoll_bytes: u64,
    /// pcodec standalone, the smaller of its default (Auto) and Classic modes, per chunk;
    /// `None` for strings.
    pub pco_bytes: Option<u64>,
    /// zstd level [`ZSTD_LEVEL`] on the raw values (strings: their bytes, NUL-separated).
    pub zstd_bytes: u64,
}

impl Sizes {
    fn add(&mut self, o: &Sizes) {
        self.chunks += o.chunks;
        self.values += o.values;
        self.raw_bytes += o.raw_bytes;
        self.tscoll_bytes += o.tscoll_bytes;
        self.pco_bytes = match (self.pco_bytes, o.pco_bytes) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.zstd_bytes += o.zstd_bytes;
    }

    fn bits(&self, bytes: u64) -> f64 {
        if self.values == 0 {
            0.0
        } else {
            bytes as f64 * 8.0 / self.values as f64
        }
    }

    /// tscoll bits per value.
    #[must_use]
    pub fn tscoll_bits(&self) -> f64 {
        self.bits(self.tscoll_bytes)
    }

    /// pcodec bits per value.
    #[must_use]
    pub fn pco_bits(&self) -> Option<f64> {
        self.pco_bytes.map(|b| self.bits(b))
    }

    /// zstd bits per value.
    #[must_use]
    pub fn zstd_bits(&self) -> f64 {
        self.bits(self.zstd_bytes)
    }

    /// tscoll size over pcodec size.
    #[must_use]
    pub fn ratio_to_pco(&self) -> Option<f64> {
        self.pco_bytes
            .filter(|&p| p > 0)
            .map(|p| self.tscoll_bytes as f64 / p as f64)
    }
}

/// Figures of one column kind.
#[derive(Clone, Debug)]
pub struct KindFigures {
    /// The kind.
    pub kind: ColumnKind,
    /// Sizes.
    pub sizes: Sizes,
    /// tscoll encode speed, MB/s (10^6 bytes) of raw bytes, median pass.
    pub encode_mb_s: f64,
    /// tscoll decode speed, MB/s of raw bytes, median pass.
    pub decode_mb_s: f64,
    /// pcodec decode speed, MB/s of raw bytes, median pass (numeric kinds).
    pub pco_decode_mb_s: Option<f64>,
}

/// Sizes of one field of one data set.
#[derive(Clone, Debug)]
pub struct FieldFigures {
    /// Data set.
    pub source: String,
    /// Field.
    pub field: String,
    /// Kind (a field whose chunks fall in several kinds has one entry per kind).
    pub kind: ColumnKind,
    /// Sizes.
    pub sizes: Sizes,
}

/// The whole comparison.
#[derive(Clone, Debug)]
pub struct Report {
    /// One entry per kind present, in [`ColumnKind::ALL`] order.
    pub kinds: Vec<KindFigures>,
    /// Per data set and field.
    pub fields: Vec<FieldFigures>,
    /// Numeric kinds pooled.
    pub pooled: Sizes,
    /// Pooled encode speed of the numeric kinds, MB/s (total raw bytes / total median time).
    pub pooled_encode_mb_s: f64,
    /// Pooled decode speed of the numeric kinds, MB/s.
    pub pooled_decode_mb_s: f64,
}

/// What one chunk's present values are, for the reference codecs.
enum Values {
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Strings(Vec<u8>, u64),
}

fn values_of(chunk: &Chunk) -> Values {
    let c = &chunk.column;
    if !chunk.kind.is_numeric() {
        let mut joined = Vec::with_capacity(c.bytes().len() + c.ends().len());
        let mut start = 0usize;
        for &end in c.ends() {
            joined.extend_from_slice(c.bytes().get(start..end as usize).unwrap_or_default());
            joined.push(0);
            start = end as usize;
        }
        return Values::Strings(joined, c.ends().len() as u64);
    }
    if c.floats().is_empty() {
        return Values::Ints(c.ints().to_vec());
    }
    // Mixed int/double columns (SPEC §5): the reference codecs see every value as a double.
    let (mut i, mut f) = (c.ints().iter(), c.floats().iter());
    let mut out = Vec::with_capacity(c.len());
    for &t in c.types() {
        match Lane::of(t) {
            Some(Lane::Int) => out.extend(i.next().map(|&v| v as f64)),
            Some(Lane::Float) => out.extend(f.next().copied()),
            _ => {}
        }
    }
    Values::Floats(out)
}

fn pco_best<T: pco::data_types::Number>(v: &[T]) -> Vec<u8> {
    let auto = simple_compress(v, &ChunkConfig::default()).unwrap_or_default();
    let classic = simple_compress(v, &ChunkConfig::default().with_mode_spec(ModeSpec::Classic))
        .unwrap_or_default();
    if classic.len() < auto.len() {
        classic
    } else {
        auto
    }
}

fn le_bytes<T: Copy>(v: &[T], f: impl Fn(T) -> [u8; 8]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// One chunk prepared for timing: its encoded body and the pcodec blob.
struct Prepared<'a> {
    column: &'a Column,
    body: Vec<u8>,
    pco: Option<(Vec<u8>, bool)>,
    sizes: Sizes,
}

fn prepare(chunk: &Chunk) -> Prepared<'_> {
    let body = encode_column(&chunk.column)
        .map(|(b, _)| b)
        .unwrap_or_default();
    let mut sizes = Sizes {
        chunks: 1,
        tscoll_bytes: body.len() as u64,
        ..Sizes::default()
    };
    let pco = match values_of(chunk) {
        Values::Ints(v) => {
            sizes.values = v.len() as u64;
            sizes.raw_bytes = 8 * v.len() as u64;
            sizes.zstd_bytes = zstd_len(&le_bytes(&v, i64::to_le_bytes));
            Some((pco_best(&v), false))
        }
        Values::Floats(v) => {
            sizes.values = v.len() as u64;
            sizes.raw_bytes = 8 * v.len() as u64;
            sizes.zstd_bytes = zstd_len(&le_bytes(&v, f64::to_le_bytes));
            Some((pco_best(&v), true))
        }
        Values::Strings(joined, n) => {
            sizes.values = n;
            sizes.raw_bytes = joined.len() as u64 - n;
            sizes.zstd_bytes = zstd_len(&joined);
            None
        }
    };
    sizes.pco_bytes = pco.as_ref().map(|(b, _)| b.len() as u64);
    Prepared {
        column: &chunk.column,
        body,
        pco,
        sizes,
    }
}

fn zstd_len(raw: &[u8]) -> u64 {
    zstd::bulk::compress(raw, ZSTD_LEVEL).map_or(raw.len(), |z| z.len()) as u64
}

/// Median seconds of passes of `f` over all items, at least `opts.min_passes` passes and
/// `opts.min_time` in all.
fn median_pass(opts: MeasureOptions, mut pass: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < opts.min_passes || started.elapsed() < opts.min_time {
        let t = Instant::now();
        pass();
        times.push(t.elapsed().as_secs_f64());
        if times.len() >= 1000 {
            break;
        }
    }
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(0.0)
}

fn mb_s(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs / 1e6
    } else {
        0.0
    }
}

/// Measures every chunk of the corpus: sizes with tscoll, pcodec and zstd, and tscoll's
/// encode and decode speeds by kind.
///
/// # Panics
/// If a chunk does not decode back to its column (a codec bug).
#[must_use]
pub fn measure(corpus: &Corpus, opts: MeasureOptions) -> Report {
    let mut by_kind: BTreeMap<ColumnKind, Vec<Prepared<'_>>> = BTreeMap::new();
    let mut fields: BTreeMap<(String, String, ColumnKind), Sizes> = BTreeMap::new();
    for chunk in &corpus.chunks {
        let p = prepare(chunk);
        let back = decode_column(&p.body, chunk.column.len()).expect("tscoll decodes its chunk");
        assert!(
            back.bitwise_eq(&chunk.column),
            "{}.{}: round trip differs",
            chunk.source,
            chunk.field
        );
        fields
            .entry((chunk.source.clone(), chunk.field.clone(), chunk.kind))
            .or_default()
            .add(&p.sizes);
        by_kind.entry(chunk.kind).or_default().push(p);
    }

    let mut kinds = Vec::new();
    let mut pooled = Sizes::default();
    let (mut enc_secs, mut dec_secs) = (0.0, 0.0);
    for (kind, items) in &by_kind {
        let mut sizes = Sizes::default();
        items.iter().for_each(|p| sizes.add(&p.sizes));
        let enc = median_pass(opts, || {
            for p in items {
                black_box(encode_column(black_box(p.column)).ok());
            }
        });
        let dec = median_pass(opts, || {
            for p in items {
                black_box(decode_column(black_box(&p.body), p.column.len()).ok());
            }
        });
        let pco_dec = kind.is_numeric().then(|| {
            median_pass(opts, || {
                for (blob, floats) in items.iter().filter_map(|p| p.pco.as_ref()) {
                    if *floats {
                        black_box(simple_decompress::<f64>(black_box(blob)).ok());
                    } else {
                        black_box(simple_decompress::<i64>(black_box(blob)).ok());
                    }
                }
            })
        });
        if kind.is_numeric() {
            pooled.add(&sizes);
            enc_secs += enc;
            dec_secs += dec;
        }
        kinds.push(KindFigures {
            kind: *kind,
            sizes,
            encode_mb_s: mb_s(sizes.raw_bytes, enc),
            decode_mb_s: mb_s(sizes.raw_bytes, dec),
            pco_decode_mb_s: pco_dec.map(|s| mb_s(sizes.raw_bytes, s)),
        });
    }
    Report {
        kinds,
        fields: fields
            .into_iter()
            .map(|((source, field, kind), sizes)| FieldFigures {
                source,
                field,
                kind,
                sizes,
            })
            .collect(),
        pooled,
        pooled_encode_mb_s: mb_s(pooled.raw_bytes, enc_secs),
        pooled_decode_mb_s: mb_s(pooled.raw_bytes, dec_secs),
    }
}
