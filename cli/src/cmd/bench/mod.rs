//! `tscoll bench`: measurements of tscoll's speed and size, each a subcommand.

pub(crate) mod codec;

use std::process::ExitCode;

use super::CmdResult;

/// Arguments of `tscoll bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What to measure.
    #[command(subcommand)]
    pub(crate) what: What,
}

/// The benchmarks.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum What {
    /// The codec on real columns cut into 1000-value buckets, side by side with pcodec and
    /// zstd: bits per value and encode/decode MB/s by column kind.
    Codec(codec::Args),
}

/// Runs `tscoll bench`.
///
/// # Errors
/// As the chosen benchmark.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    match &args.what {
        What::Codec(a) => codec::run(a),
    }
}
