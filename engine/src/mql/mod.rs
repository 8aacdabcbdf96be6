//! The query language, without I/O: filters (SPEC §14.2–§14.4), aggregation expressions and
//! MongoDB's date arithmetic.

pub(crate) mod dates;
pub(crate) mod document_filter;
pub(crate) mod expr;
pub(crate) mod filter;
