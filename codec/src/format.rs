//! On-disk constants of the blob format: magic, version, limits and the `#[repr(u8)]`
//! encoding tags of every column section (see `docs/format.md`).

use crate::{Error, Result};

/// The first four bytes of every blob: ASCII `TSCB` ("tscoll bucket").
pub const MAGIC: [u8; 4] = *b"TSCB";

/// Most rows one blob may hold (2^20). Encoding more is an [`Error::InvalidArgument`];
/// a blob declaring more is [`Error::Corruption`].
pub const MAX_ROWS: usize = 1 << 20;

/// Most columns one blob may hold (2^20): a measurement of 100 000 fields is a bucket of as
/// many columns. What a decoder allocates for them is bounded by the blob's size (every
/// column takes bytes in it) and by [`MAX_CELLS`].
pub const MAX_COLUMNS: usize = 1 << 20;

/// Most cells (rows × columns) one blob may hold (2^24). Bounds what a decoder allocates.
pub const MAX_CELLS: usize = 1 << 24;

/// Longest column name, in bytes (UTF-8).
pub const MAX_NAME_LEN: usize = 1 << 16;

/// Most payload bytes in one column's bytes lane (256 MiB).
pub const MAX_LANE_BYTES: usize = 1 << 28;

/// Longest raw (before the optional zstd pass) column body, in bytes (1 GiB).
pub const MAX_RAW_BODY: usize = 1 << 30;

/// Number of values per bit-packed block of an int section.
pub const BLOCK_LEN: usize = 128;

/// Defines a `#[repr(u8)]` tag enum with `to_code` / `try_from_code`.
macro_rules! tag_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $code, )+
        }

        impl $name {
            /// Every tag of this kind, in code order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The byte written to the blob for this tag.
            #[must_use]
            pub const fn to_code(self) -> u8 {
                self as u8
            }

            /// The tag of a byte read from a blob.
            ///
            /// # Errors
            /// [`Error::Corruption`] for a reserved (unknown) code.
            pub fn try_from_code(code: u8) -> Result<Self> {
                match code {
                    $( $code => Ok($name::$variant), )+
                    _ => Err(Error::Corruption(format!(
                        concat!("unknown ", $what, " code {:#04x}"),
                        code
                    ))),
                }
            }
        }
    };
}

tag_enum! {
    /// How a column body is wrapped (first byte of every column body). Codes 2..=255 are
    /// reserved.
    ColumnWrap, "column wrap" {
        /// The raw column follows.
        Raw = 0,
        /// A varint raw length, then one zstd frame that decompresses to the raw column.
        Zstd = 1,
    }
}

tag_enum! {
    /// Encoding of a column's type stream. Codes 3..=255 are reserved.
    TypeEncoding, "type-stream encoding" {
        /// Every row has the same type code: one byte.
        Const = 0,
        /// A dictionary of the distinct type codes, then one int section of indices.
        Dict = 1,
        /// Runs of `(type code, length)`.
        Runs = 2,
    }
}

tag_enum! {
    /// Encoding of an int section. Codes 4..=255 are reserved.
    IntEncoding, "int encoding" {
        /// Every value is equal: one zigzag varint.
        Const = 0,
        /// Delta of order 0, 1 or 2, then frame of reference, common divisor and bit-packing
        /// in blocks of [`BLOCK_LEN`] values.
        Packed = 1,
        /// Delta of order 0, 1 or 2, then the residuals entropy-coded: tokens of a hybrid
        /// integer code through static-frequency rANS, plus raw low bits (format version 3
        /// and later).
        Coded = 2,
        /// Delta of order 0, 1 or 2, then residuals that all equal one value but at a few
        /// listed positions (format version 5 and later).
        Sparse = 3,
    }
}

tag_enum! {
    /// Encoding of a float lane. Codes 5..=255 are reserved.
    FloatEncoding, "float encoding" {
        /// Raw IEEE 754 bits, 8 bytes little-endian per value.
        Plain = 0,
        /// Decimal: `value = digits / 10^e` with an int section of digits, plus exceptions.
        Alp = 1,
        /// Bits XOR the previous value's bits, as an int section.
        Xor = 2,
        /// Raw bits as an int section (its delta machinery applies).
        Bits = 3,
        /// Segments of values `m × base` plus an adjustment in ulps: integer multipliers and
        /// adjustments as int sections (format version 4 and later).
        Mult = 4,
    }
}

tag_enum! {
    /// Encoding of a bytes lane. Codes 3..=255 are reserved.
    BytesEncoding, "bytes encoding" {
        /// Lengths as an int section, then the concatenated payloads.
        Plain = 0,
        /// Distinct payloads (lengths + data), then the per-row indices as an int section.
        Dict = 1,
        /// Every payload is 12 bytes (ObjectId): three int sections (timestamp, middle,
        /// counter).
        ObjectId = 2,
        /// Distinct payloads as in `Dict`, then the per-row indices range-coded with an
        /// adaptive context model (format version 2 and later).
        DictCoded = 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_reserved_codes_fail() {
        fn check<T: Copy + PartialEq + std::fmt::Debug>(
            all: &[T],
            to: fn(T) -> u8,
            from: fn(u8) -> Result<T>,
        ) {
            for code in 0..=255u8 {
                match from(code) {
                    Ok(t) => assert_eq!(to(t), code),
                    Err(e) => assert!(matches!(e, Error::Corruption(_))),
                }
            }
            for &t in all {
                assert_eq!(from(to(t)), Ok(t));
            }
        }
        check(
            ColumnWrap::ALL,
            ColumnWrap::to_code,
            ColumnWrap::try_from_code,
        );
        check(
            TypeEncoding::ALL,
            TypeEncoding::to_code,
            TypeEncoding::try_from_code,
        );
        check(
            IntEncoding::ALL,
            IntEncoding::to_code,
            IntEncoding::try_from_code,
        );
        check(
            FloatEncoding::ALL,
            FloatEncoding::to_code,
            FloatEncoding::try_from_code,
        );
        check(
            BytesEncoding::ALL,
            BytesEncoding::to_code,
            BytesEncoding::try_from_code,
        );
    }
}
