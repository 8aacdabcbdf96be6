//! Column kinds: the classes of columns the codec goals are stated for.
//!
//! A 1000-value chunk of a real column is classified by its values (see
//! [`crate::codec::classify`]); synthetic columns ([`crate::columns`]) are generated per kind.

use std::fmt;

/// The class of a column chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ColumnKind {
    /// Time field, (almost) every interval the same (≥ 95 % equal to the most common one).
    TimestampsRegular,
    /// Time field with irregular intervals.
    TimestampsIrregular,
    /// Integers (int32, int64, dates other than the time field, booleans).
    Integers,
    /// Doubles that are decimals with at most 4 fraction digits (ints mixed in count as 0).
    FloatsDec4,
    /// Doubles that are decimals with 5 to 10 fraction digits.
    FloatsDec5To10,
    /// Doubles that are short decimals plus floating-point noise (`1.7320000000000002`).
    FloatsNoisy,
    /// Doubles at full precision (no short decimal within a few ulps).
    FloatsFull,
    /// Strings with few distinct values (tags, enums).
    StringsTags,
    /// Strings with many distinct values (free text, identifiers).
    StringsText,
}

impl ColumnKind {
    /// Every kind, in report order.
    pub const ALL: [ColumnKind; 9] = [
        ColumnKind::TimestampsRegular,
        ColumnKind::TimestampsIrregular,
        ColumnKind::Integers,
        ColumnKind::FloatsDec4,
        ColumnKind::FloatsDec5To10,
        ColumnKind::FloatsNoisy,
        ColumnKind::FloatsFull,
        ColumnKind::StringsTags,
        ColumnKind::StringsText,
    ];

    /// The kind's name in reports and JSON (`"timestamps_regular"`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ColumnKind::TimestampsRegular => "timestamps_regular",
            ColumnKind::TimestampsIrregular => "timestamps_irregular",
            ColumnKind::Integers => "integers",
            ColumnKind::FloatsDec4 => "floats_dec_le4",
            ColumnKind::FloatsDec5To10 => "floats_dec_5_10",
            ColumnKind::FloatsNoisy => "floats_dec_noisy",
            ColumnKind::FloatsFull => "floats_full",
            ColumnKind::StringsTags => "strings_tags",
            ColumnKind::StringsText => "strings_text",
        }
    }

    /// Whether the kind is numeric (pooled and compared with pcodec).
    #[must_use]
    pub fn is_numeric(self) -> bool {
        !matches!(self, ColumnKind::StringsTags | ColumnKind::StringsText)
    }
}

impl fmt::Display for ColumnKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
