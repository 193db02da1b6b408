//! Process identity on Linux, from `/proc`: a pid alone can be reused once its process ends,
//! so a process is named by its pid and its start time, which together never repeat while
//! the machine stays up (docs/design.md section 10).

/// The start time of process `pid`: field 22 of `/proc/PID/stat`, in clock ticks since boot.
/// `None` when there is no such process (or `/proc` cannot be read).
#[must_use]
pub fn start_time(pid: i32) -> Option<u64> {
    stat_field(pid, 21)?.parse().ok()
}

/// The ids of the processes alive now (the numeric entries of `/proc`); empty where `/proc`
/// cannot be read.
#[must_use]
pub fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc").map_or_else(
        |_| Vec::new(),
        |dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        },
    )
}

/// The process group of `pid` (field 5 of `/proc/PID/stat`); `None` when there is no such
/// process.
#[must_use]
pub fn group_of(pid: i32) -> Option<i32> {
    stat_field(pid, 4)?.parse().ok()
}

/// Field `index` (0-based, `0` being the pid) of `/proc/PID/stat`. The second field, the
/// command name, is in parentheses and may hold spaces, so fields are counted after it.
fn stat_field(pid: i32, index: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts at field 3 (index 2).
    rest.split_whitespace()
        .nth(index.checked_sub(2)?)
        .map(str::to_string)
}

/// This boot of the machine: the kernel's random boot id
/// (`/proc/sys/kernel/random/boot_id`, a UUID drawn at each boot), so that a pid and start
/// time recorded before a reboot are never taken for a process of this boot. `None` where it
/// cannot be read.
#[must_use]
pub fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty() && !id.contains(char::is_whitespace)).then(|| id.to_string())
}

/// This process: its pid and start time (0 where `/proc` cannot be read).
#[must_use]
pub fn me() -> (i32, u64) {
    let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    (pid, start_time(pid).unwrap_or(0))
}

/// Whether the process `pid` is alive and started at `started` (so it is the same process,
/// not a later one that reused the pid).
#[must_use]
pub fn is_alive(pid: i32, started: u64) -> bool {
    pid > 0 && start_time(pid) == Some(started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let (pid, started) = me();
        assert!(started > 0);
        assert!(is_alive(pid, started));
        assert!(!is_alive(pid, started + 1));
        assert!(!is_alive(0, started));
        let child = std::process::Command::new("true").spawn().unwrap();
        let id = i32::try_from(child.id()).unwrap();
        let mut child = child;
        child.wait().unwrap();
        assert_eq!(start_time(id), None, "a reaped child is gone");
        assert!(group_of(pid).is_some());
    }
}
