//! `tscoll expire`: one TTL pass (SPEC §10) over one collection or the whole database.

use std::process::ExitCode;

use tscoll_engine::ExpireResult;

use super::{CmdResult, DbArgs, open_collection, open_existing_db};

/// Arguments of `tscoll expire`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name; all collections when omitted.
    pub(crate) coll: Option<String>,
    /// Wall time of the pass, as an RFC 3339 date (`2024-05-01T00:00:00Z`) or ms since the
    /// epoch. Default = now.
    #[arg(long, value_name = "TIME")]
    pub(crate) now: Option<String>,
}

/// Parses `--now`: ms since the epoch or an RFC 3339 date.
fn parse_now(text: &str) -> CmdResult<i64> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    bson::DateTime::parse_rfc3339_str(text)
        .map(|d| d.timestamp_millis())
        .map_err(|e| {
            format!("--now: '{text}' is neither ms since the epoch nor an RFC 3339 date: {e}")
                .into()
        })
}

/// Runs `tscoll expire`: deletes the expired whole buckets of collections with
/// `expireAfterSeconds` and prints how many buckets and measurements went.
///
/// # Errors
/// A bad `--now`, a missing database or collection, storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let now = match &args.now {
        Some(t) => parse_now(t)?,
        None => bson::DateTime::now().timestamp_millis(),
    };
    let r: ExpireResult = match &args.coll {
        Some(name) => {
            let (_db, coll) = open_collection(&args.db.db, name)?;
            coll.expire(now)?
        }
        None => open_existing_db(&args.db.db)?.expire(now)?,
    };
    outln!(
        "expired {} buckets ({} measurements) at {}",
        r.buckets,
        r.measurements,
        bson::DateTime::from_millis(now)
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_ms_or_rfc3339() {
        assert_eq!(parse_now("1000").unwrap(), 1000);
        assert_eq!(parse_now("1970-01-01T00:00:01Z").unwrap(), 1000);
        assert!(parse_now("yesterday").is_err());
    }
}
