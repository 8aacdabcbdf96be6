//! Running the independent parts of one query (runs of candidate buckets in id order) on a
//! few threads: the caller's thread and helpers spawned for the query, each taking the next
//! part until none is left. Results come back in part order, so merging them gives the same
//! answer as reading the parts one after the other.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::Result;

/// At most this many threads read one query.
const MAX_THREADS: usize = 8;

/// Threads a query may use: the machine's cores (at most [`MAX_THREADS`]).
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(MAX_THREADS)
}

/// Calls `work(i)` for every part `i < parts` on up to `threads` threads (the caller's
/// included) and returns the results in part order. After a part fails, no new part starts;
/// the error of the first failed part (in part order) is returned. A panic in a part is
/// resumed on the caller's thread.
///
/// # Errors
/// What `work` returns.
pub(crate) fn run_parts<T: Send>(
    parts: usize,
    threads: usize,
    work: &(dyn Fn(usize) -> Result<T> + Sync),
) -> Result<Vec<T>> {
    if threads <= 1 || parts <= 1 {
        return (0..parts).map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let run = || {
        let mut done = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= parts {
                break;
            }
            let r = work(i);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            done.push((i, r));
        }
        done
    };
    let mut all = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(parts)).map(|_| s.spawn(run)).collect();
        let mut all = run();
        for h in helpers {
            match h.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorCode};

    #[test]
    fn results_come_in_part_order_whatever_the_threads() {
        for threads in [1, 2, 3, 8] {
            let out = run_parts(100, threads, &|i| Ok(i * 2)).expect("parts");
            assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        }
        assert!(run_parts(0, 2, &|i| Ok(i)).expect("none").is_empty());
    }

    #[test]
    fn the_first_failed_part_is_returned() {
        for threads in [1, 2] {
            let r = run_parts(50, threads, &|i| {
                if i % 7 == 3 {
                    Err(Error::rejected(ErrorCode::BadValue, format!("part {i}")))
                } else {
                    Ok(i)
                }
            });
            let e = r.expect_err("fails");
            assert!(e.to_string().contains("part 3"), "{e}");
        }
    }
}
