//! The memory this process may use, as the machine tells it: the memory limit of its control
//! group when it has one (a container's), else the physical memory. MongoDB sizes its bucket
//! catalog's memory threshold from it (SPEC R-0.1); an embedder that knows its own budget
//! declares that instead ([`tscoll_catalog::CatalogOptions::for_memory`]).

use std::path::Path;

/// Bytes of memory this process may use: the least of the physical memory
/// (`/proc/meminfo` `MemTotal`) and the memory limit of its control group (cgroup v2
/// `memory.max`, cgroup v1 `memory.limit_in_bytes`). `None` where neither can be read
/// (not Linux, or `/proc` not mounted).
///
/// ```
/// if let Some(bytes) = tscoll_engine::machine_memory_bytes() {
///     let options = tscoll_engine::CatalogOptions::for_memory(bytes);
///     assert!(options.idle_bucket_expiry_memory_usage_threshold_bytes <= bytes);
/// }
/// ```
#[must_use]
pub fn machine_memory_bytes() -> Option<u64> {
    let physical = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo_total(&t));
    let own_group = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| cgroup_v2_path(&t));
    let root = Path::new("/sys/fs/cgroup");
    let mut limits = vec![
        root.join("memory.max"),
        root.join("memory/memory.limit_in_bytes"),
    ];
    if let Some(group) = own_group {
        limits.push(root.join(group.trim_start_matches('/')).join("memory.max"));
    }
    let limit = limits
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| cgroup_limit(&t))
        .min();
    match (physical, limit) {
        (Some(p), Some(l)) => Some(p.min(l)),
        (p, l) => p.or(l),
    }
}

/// `MemTotal` of `/proc/meminfo` text, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line
        .trim_start_matches("MemTotal:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// The cgroup v2 path of `/proc/self/cgroup` text (its `0::PATH` line).
fn cgroup_v2_path(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_owned)
}

/// A cgroup memory limit file's value in bytes; `None` for `max` (no limit), an unreadable
/// value, or cgroup v1's "no limit" (a value near `i64::MAX`, page-rounded).
fn cgroup_limit(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes < 1 << 60).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_meminfo_and_cgroup_files() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:        20000000 kB\n";
        assert_eq!(meminfo_total(meminfo), Some(24_576_000 * 1024));
        assert_eq!(meminfo_total("MemFree: 1 kB\n"), None);
        assert_eq!(cgroup_limit("max\n"), None);
        assert_eq!(cgroup_limit("536870912\n"), Some(512 << 20));
        assert_eq!(cgroup_limit("9223372036854771712\n"), None, "v1: no limit");
        assert_eq!(
            cgroup_v2_path("0::/user.slice/session-1.scope\n"),
            Some("/user.slice/session-1.scope".to_owned())
        );
        assert_eq!(cgroup_v2_path("12:memory:/docker/abc\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_has_memory() {
        let bytes = machine_memory_bytes().expect("Linux tells its memory");
        let physical = meminfo_total(&std::fs::read_to_string("/proc/meminfo").expect("meminfo"))
            .expect("MemTotal");
        assert!(
            bytes <= physical && bytes >= 16 << 20,
            "{bytes} of {physical}"
        );
    }
}
