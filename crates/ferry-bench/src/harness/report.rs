//! What the header of a results file says about the run: the command, the date and the machine
//! (written by `lifecycle::write`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The command line as typed (arguments joined with spaces).
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// The current UTC time as RFC 3339 (`2025-01-31T12:00:00Z`).
pub fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// What the machine is: kernel, CPU model, CPU count, and the sysctls that shape socket
/// benchmarks. Missing files give `null`.
pub fn machine() -> Value {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
    });
    json!({
        "kernel": read_trimmed("/proc/sys/kernel/osrelease"),
        "cpu_model": cpu_model,
        "cpus": super::cpus(),
        "tcp_congestion_default": read_trimmed("/proc/sys/net/ipv4/tcp_congestion_control"),
        "optmem_max": read_trimmed("/proc/sys/net/core/optmem_max").and_then(|s| s.parse::<u64>().ok()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_089), (2025, 1, 1));
    }
}
