//! The codec measured side by side with pcodec and zstd (`tscoll bench codec`).
//!
//! Real data sets are cut into bucket-sized chunks per series and field ([`Corpus`]), each
//! chunk is classified into a [`ColumnKind`], and [`measure`] encodes every chunk with tscoll
//! ([`tscoll_codec::encode_column`]), pcodec (the smaller of its Auto and Classic modes) and
//! zstd level 3, and times tscoll's encode and decode per kind. Sizes are in bits per value
//! (skips and nulls are not values, though tscoll pays for them), speeds in MB/s of raw value
//! bytes (8 a number).

mod classify;
mod corpus;
mod kind;
mod measure;
mod report;

pub use classify::classify;
pub use corpus::{CHUNK_ROWS, Chunk, Corpus, CorpusBuilder};
pub use kind::ColumnKind;
pub use measure::{FieldFigures, KindFigures, MeasureOptions, Report, Sizes, ZSTD_LEVEL, measure};
