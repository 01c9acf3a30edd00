//! The zero-copy threshold of each transport: the field size at and above which a value in
//! registered memory is sent by reference rather than copied (Cornflakes section 5).
//!
//! `ferry calibrate` measures it per transport (copy-only against zero-copy-only, server CPU
//! per request, over values of N buffers of S bytes) and writes the crossover to a file that
//! every driver reads at start ([`Thresholds::load`]): `$FERRY_THRESHOLDS` if set, else
//! `$XDG_CONFIG_HOME/ferry/thresholds` (or `~/.config/ferry/thresholds`). The file has one
//! `transport bytes` pair per line (`tcp 1024`, `shm 256`); `#` starts a comment. Without a
//! file, the values measured on this project's machines ([`Thresholds::MEASURED`]) apply.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The threshold of each transport, in bytes: `0` references every pool-resident value,
/// `usize::MAX` copies everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// TCP (`ferry-net`).
    pub tcp: usize,
    /// Shared memory (`ferry-shm`).
    pub shm: usize,
}

/// A thresholds file that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum ThresholdsError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not `tcp|shm BYTES`.
    #[error("{path}:{line}: {what} (expected `tcp BYTES` or `shm BYTES`)")]
    Line {
        /// The file.
        path: PathBuf,
        /// Its 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
}

impl Thresholds {
    /// The crossovers `ferry calibrate` measured on this project's machines, used when no
    /// thresholds file exists: `docs/benchmarks/kv.md` (section "Calibration") and
    /// `docs/benchmarks/calibrate.json` (`ferry calibrate --from` that file derives them). Over
    /// TCP loopback the kernel copies every byte anyway: a reference is no dearer than a copy
    /// from 512 B fields up (an earlier run said 256 B: below 1 KiB the difference is within
    /// the noise either way), and no cheaper by more than the noise; over shared memory a
    /// reference costs the server no more than a copy from 64 B up, and much less from 512 B.
    pub const MEASURED: Thresholds = Thresholds { tcp: 512, shm: 64 };

    /// The file [`load`](Self::load) reads: `$FERRY_THRESHOLDS`, else
    /// `$XDG_CONFIG_HOME/ferry/thresholds`, else `$HOME/.config/ferry/thresholds`.
    pub fn path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("FERRY_THRESHOLDS") {
            return Some(PathBuf::from(p));
        }
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))?;
        Some(config.join("ferry").join("thresholds"))
    }

    /// The thresholds of this process, read once from [`path`](Self::path): a missing file
    /// gives [`MEASURED`](Self::MEASURED); a file that does not parse is reported once on
    /// stderr and ignored (the measured values apply).
    pub fn load() -> Thresholds {
        static LOADED: OnceLock<Thresholds> = OnceLock::new();
        *LOADED.get_or_init(|| match Thresholds::path() {
            None => Thresholds::MEASURED,
            Some(path) => match Thresholds::read(&path) {
                Ok(t) => t.unwrap_or(Thresholds::MEASURED),
                Err(e) => {
                    eprintln!("ferry: ignoring the zero-copy thresholds file: {e}");
                    Thresholds::MEASURED
                }
            },
        })
    }

    /// Reads a thresholds file: `Ok(None)` if it does not exist; transports it does not name
    /// keep their [`MEASURED`](Self::MEASURED) value.
    pub fn read(path: &Path) -> Result<Option<Thresholds>, ThresholdsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(ThresholdsError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        Thresholds::parse(&text)
            .map(Some)
            .map_err(|(line, what)| ThresholdsError::Line {
                path: path.to_owned(),
                line,
                what,
            })
    }

    /// Parses a thresholds file's text; an error is the 1-based line and what is wrong.
    pub fn parse(text: &str) -> Result<Thresholds, (usize, String)> {
        let mut t = Thresholds::MEASURED;
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
                return Err((i + 1, format!("`{line}` is not two words")));
            };
            let bytes: usize = value
                .parse()
                .map_err(|e| (i + 1, format!("`{value}` is not a byte count: {e}")))?;
            match name {
                "tcp" => t.tcp = bytes,
                "shm" => t.shm = bytes,
                other => return Err((i + 1, format!("unknown transport `{other}`"))),
            }
        }
        Ok(t)
    }

    /// The file's text for these thresholds, with a comment line on top.
    pub fn to_file(&self, comment: &str) -> String {
        format!("# {comment}\ntcp {}\nshm {}\n", self.tcp, self.shm)
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::load()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_round_trips_and_unnamed_transports_keep_the_measured_value() {
        let t = Thresholds { tcp: 1024, shm: 0 };
        assert_eq!(Thresholds::parse(&t.to_file("calibrated")), Ok(t));
        let only_tcp = Thresholds::parse("tcp 2048 # loopback\n\n").unwrap();
        assert_eq!(only_tcp.tcp, 2048);
        assert_eq!(only_tcp.shm, Thresholds::MEASURED.shm);
    }

    #[test]
    fn bad_lines_name_their_number() {
        assert_eq!(Thresholds::parse("tcp 1\nudp 5").unwrap_err().0, 2);
        assert_eq!(Thresholds::parse("tcp x").unwrap_err().0, 1);
        assert_eq!(Thresholds::parse("\n\nshm 1 2").unwrap_err().0, 3);
    }

    #[test]
    fn a_missing_file_is_not_an_error() {
        let path = std::env::temp_dir().join(format!("ferry-no-thresholds-{}", std::process::id()));
        assert!(Thresholds::read(&path).unwrap().is_none());
    }
}
