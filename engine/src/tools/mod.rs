//! What a database's operator runs beside reads and writes: collection statistics, `verify`,
//! `salvage`, and the words both use for damage.

pub(crate) mod damage;
pub(crate) mod salvage;
pub(crate) mod stats;
pub(crate) mod verify;
