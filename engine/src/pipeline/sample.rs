//! `$sample`: `size` documents chosen uniformly at random from the input (all of them, in
//! random order, when it has fewer). Each document is given a random key and the input is
//! sorted on it keeping the first `size` (the bounded top-n of `$sort`, which spills sorted
//! runs to temporary files past the pipeline's memory budget), so the memory held is
//! bounded whatever `size` is.

use bson::{Bson, Document};

use super::stage::{Docs, sort_spec};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::exact_int;

/// The field a document's random key is kept in while the input is sorted (a name no
/// measurement field has: it starts with a control character).
const KEY: &str = "\u{1}sample";

/// A parsed `$sample`.
pub(super) struct Sample {
    size: usize,
}

fn err(code: u32, message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

impl Sample {
    /// Parses `{size: <n>}`.
    ///
    /// # Errors
    /// MongoDB's codes: `Location28745` when the specification is not a document,
    /// `Location28746` for a size that is not a number, `Location28747` for a negative size,
    /// `Location28748` for an unknown option, `Location28749` without a size.
    pub(super) fn parse(spec: &Bson) -> Result<Sample> {
        let Bson::Document(d) = spec else {
            return Err(err(
                28745,
                "the $sample stage specification must be an object",
            ));
        };
        let mut size = None;
        for (k, v) in d {
            if k != "size" {
                return Err(err(28748, format!("unrecognized option to $sample: {k}")));
            }
            let n = match v {
                Bson::Double(x) if x.is_finite() => {
                    #[expect(clippy::cast_possible_truncation, reason = "a whole count")]
                    let n = x.trunc() as i64;
                    n
                }
                other => exact_int(other)
                    .ok_or_else(|| err(28746, "size argument to $sample must be a number"))?,
            };
            if n < 0 {
                return Err(err(28747, "size argument to $sample must not be negative"));
            }
            size = Some(usize::try_from(n).unwrap_or(usize::MAX));
        }
        let size = size.ok_or_else(|| err(28749, "$sample stage must specify a size"))?;
        Ok(Sample { size })
    }

    /// Samples `docs`: reads the whole input here.
    ///
    /// # Errors
    /// The input's errors; the sort's errors (writing a spilled run).
    pub(super) fn run(self, docs: Docs, budget: u64) -> Result<Docs> {
        if self.size == 0 {
            // Reads the input for its errors, as MongoDB would.
            for d in docs {
                d?;
            }
            return Ok(Box::new(std::iter::empty()));
        }
        let mut rng = Random::seeded();
        let tagged = docs.map(move |d| {
            let mut d = d?;
            #[expect(clippy::cast_possible_wrap, reason = "random bits")]
            d.insert(KEY, Bson::Int64(rng.next() as i64));
            Ok(d)
        });
        let keys = vec![(vec![KEY.to_owned()], false)];
        let sorted = sort_spec(keys).sort(tagged, 0, Some(self.size), budget)?;
        Ok(Box::new(sorted.map(|d: Result<Document>| {
            let mut d = d?;
            d.remove(KEY);
            Ok(d)
        })))
    }
}

/// A small pseudo-random generator (SplitMix64), seeded from the clock and a counter.
pub(super) struct Random(u64);

impl Random {
    pub(super) fn seeded() -> Random {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        #[expect(clippy::cast_possible_truncation, reason = "seed bits")]
        let seed = (now as u64)
            ^ COUNTER
                .fetch_add(0x9E37_79B9_7F4A_7C15, std::sync::atomic::Ordering::Relaxed)
                .rotate_left(17);
        Random(seed)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
