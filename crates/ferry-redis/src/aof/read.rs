//! Reading AOF files: the command decoder ([`read_commands`], untrusted bytes, no I/O) and the
//! loader that replays a directory's files into the keyspace ([`load_dir`]), as Redis's
//! `loadAppendOnlyFiles` does: the manifest, then the base (an RDB when it starts with
//! `REDIS`, else commands), then each incremental file, every command run by a client of its
//! own. `#` lines (Redis's annotations) are skipped.
//!
//! A file that ends inside a command (a crash mid-write) is cut at the end of its last whole
//! command when `aof-load-truncated` is on and it is the last file, with a warning, as Redis
//! does; a `MULTI` left open at the end counts as torn at the `MULTI`. Anything else that is
//! not a command is an error that names the file and the byte.

use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::manifest::{Manifest, ManifestError};
use crate::cmd::{Args, Client, ServerInfo, Session, execute, table};
use crate::db::Db;
use crate::rdb::{self, RdbError};
use crate::resp::{ParseLimits, Parsed, ReplyBuf, parse_command};

/// Most arguments one command in an AOF may have (Redis's request limit).
pub const MAX_ARGS: usize = 1 << 20;

/// Why bytes are not AOF commands: what, at which byte of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset}: {what}")]
pub struct ReadError {
    /// Where it was found.
    pub offset: usize,
    /// What is wrong.
    pub what: String,
}

/// How a file of commands ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// After a whole command (or empty).
    Whole,
    /// Inside a command, which starts at `valid_up_to`.
    Torn {
        /// The end of the last whole command.
        valid_up_to: usize,
    },
}

/// Calls `each` with every command of `bytes` and its byte range, in order, until the end or
/// an error (a byte that starts neither a command nor an annotation, a malformed command, or
/// what `each` returns).
pub fn read_commands<E: From<ReadError>>(
    bytes: &[u8],
    max_bulk_len: usize,
    mut each: impl FnMut(&Args<'_>, Range<usize>) -> Result<(), E>,
) -> Result<Ending, E> {
    let limits = ParseLimits {
        max_bulk_len,
        max_args: MAX_ARGS,
        max_inline_len: 64 << 10,
    };
    let (mut ranges, mut scratch) = (Vec::new(), Vec::new());
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        match rest[0] {
            b'#' => match rest.iter().position(|&b| b == b'\n') {
                Some(end) => at += end + 1,
                None => return Ok(Ending::Torn { valid_up_to: at }),
            },
            b'*' => match parse_command(rest, &limits, &mut ranges, &mut scratch) {
                Ok(Parsed::Command { consumed, .. }) => {
                    each(&Args::new(rest, &ranges, None), at..at + consumed)?;
                    at += consumed;
                }
                Ok(Parsed::Skip { consumed }) => at += consumed,
                Ok(Parsed::Incomplete { .. }) => return Ok(Ending::Torn { valid_up_to: at }),
                Err(e) => {
                    return Err(E::from(ReadError {
                        offset: at + e.offset,
                        what: e.to_string(),
                    }));
                }
            },
            other => {
                return Err(E::from(ReadError {
                    offset: at,
                    what: format!("a command starts with '*', not byte {other:#04x}"),
                }));
            }
        }
    }
    Ok(Ending::Whole)
}

/// Why an AOF directory did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AofError {
    /// Reading, writing or renaming a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The manifest is not one Redis 7.0 would load.
    #[error("the AOF manifest {path}, {source}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong, and where.
        source: ManifestError,
    },
    /// The RDB base file does not decode.
    #[error("the AOF base file {path}: {source}")]
    Rdb {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        source: RdbError,
    },
    /// A file holds something that is not a command.
    #[error("bad file format reading the append only file {path} at {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What, and where.
        source: ReadError,
    },
    /// A command the server does not know.
    #[error("unknown command '{name}' reading the append only file {path} at byte {offset}")]
    UnknownCommand {
        /// The file.
        path: PathBuf,
        /// Where the command starts.
        offset: usize,
        /// Its name.
        name: String,
    },
    /// A file ends inside a command, and is not the last file or `aof-load-truncated` is off.
    #[error(
        "unexpected end of file reading the append only file {path} (the last whole command ends at byte \
         {valid_up_to}): set aof-load-truncated yes to load it cut there"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where its last whole command ends.
        valid_up_to: usize,
    },
}

/// What [`load_dir`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loaded {
    /// Whether there was a manifest.
    pub found: bool,
    /// Whether the last file was cut at a torn command.
    pub truncated: bool,
}

/// Loads the AOF directory `dir` (manifest `<filename>.manifest`) into `dbs` (empty): the
/// manifest it read, if any. The last file, if torn, is cut on disk when `load_truncated`.
pub fn load_dir(
    dir: &Path,
    filename: &str,
    dbs: &mut [Db],
    server: &ServerInfo,
    load_truncated: bool,
    now_ms: u64,
) -> Result<(Option<Manifest>, Loaded), AofError> {
    let path = dir.join(format!("{filename}.manifest"));
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((None, Loaded::default())),
        Err(source) => return Err(AofError::Io { path, source }),
    };
    let manifest = Manifest::parse(&text).map_err(|source| AofError::Manifest {
        path: path.clone(),
        source,
    })?;
    let mut loaded = Loaded {
        found: true,
        truncated: false,
    };
    let files: Vec<_> = manifest.files().collect();
    for (i, entry) in files.iter().enumerate() {
        let path = dir.join(&entry.name);
        let bytes = std::fs::read(&path).map_err(|source| AofError::Io {
            path: path.clone(),
            source,
        })?;
        let last = i + 1 == files.len();
        if bytes.starts_with(b"REDIS") {
            let pool = dbs[0].pool().clone();
            let limits = rdb::Limits {
                databases: dbs.len(),
                max_string_len: pool.max_class(),
                max_elements: crate::cmd::persist::MAX_ELEMENTS,
            };
            let snap =
                rdb::decode(&bytes, &pool, &limits).map_err(|source| AofError::Rdb { path, source })?;
            snap.restore(dbs.iter_mut(), now_ms);
            continue;
        }
        if let Some(valid_up_to) = replay(&bytes, &path, dbs, server, now_ms)? {
            if !last || !load_truncated {
                return Err(AofError::Truncated { path, valid_up_to });
            }
            eprintln!(
                "ferry-redis: !!! Warning: short read while loading the AOF file {}: truncating it at byte \
                 {valid_up_to} (aof-load-truncated is on)",
                path.display()
            );
            let cut = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_len(valid_up_to as u64));
            cut.map_err(|source| AofError::Io { path, source })?;
            loaded.truncated = true;
        }
    }
    Ok((Some(manifest), loaded))
}

/// Runs the commands of `bytes` on `dbs` as a client of their own; `Some(valid_up_to)` when
/// the file is torn (or ends inside a `MULTI`, which then is not run).
fn replay(
    bytes: &[u8],
    path: &Path,
    dbs: &mut [Db],
    server: &ServerInfo,
    now_ms: u64,
) -> Result<Option<usize>, AofError> {
    let nowhere = SocketAddr::from(([0, 0, 0, 0], 0));
    // Redis's AOF client id.
    let mut client = Client::new(u64::MAX, nowhere, nowhere, now_ms, true);
    let mut out = ReplyBuf::new(usize::MAX);
    let mut before_multi = 0;
    let max_bulk = dbs[0].pool().max_class();
    let ending = read_commands(bytes, max_bulk, |args, at| {
        if table::lookup(args.get(0)).is_none() {
            return Err(AofError::UnknownCommand {
                path: path.to_owned(),
                offset: at.start,
                name: String::from_utf8_lossy(args.get(0)).into_owned(),
            });
        }
        if client.multi.is_none() {
            before_multi = at.start;
        }
        let mut session = Session {
            dbs: &mut *dbs,
            client: &mut client,
            server,
            now_ms,
        };
        execute(&mut session, args, &mut out);
        out.clear();
        Ok(())
    })
    .map_err(|e| match e {
        AofError::Format { source, .. } => AofError::Format {
            path: path.to_owned(),
            source,
        },
        e => e,
    })?;
    Ok(match ending {
        Ending::Torn { valid_up_to } if client.multi.is_some() => Some(before_multi.min(valid_up_to)),
        Ending::Torn { valid_up_to } => Some(valid_up_to),
        Ending::Whole if client.multi.is_some() => Some(before_multi),
        Ending::Whole => None,
    })
}

impl From<ReadError> for AofError {
    fn from(source: ReadError) -> AofError {
        // The path is filled in by `replay`, which knows it.
        AofError::Format {
            path: PathBuf::new(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands of `bytes` as text, and how they ended.
    fn read(bytes: &[u8]) -> Result<(Vec<String>, Ending), ReadError> {
        let mut seen = Vec::new();
        let ending = read_commands::<ReadError>(bytes, 1024, |args, at| {
            let words: Vec<String> = args
                .iter_from(0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            seen.push(format!("{}@{}", words.join(" "), at.start));
            Ok(())
        })?;
        Ok((seen, ending))
    }

    #[test]
    fn commands_annotations_and_a_torn_end() {
        let file = b"*1\r\n$5\r\nMULTI\r\n#TS:1700000000\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n*2\r\n$3\r\nDEL";
        let (seen, ending) = read(file).unwrap();
        assert_eq!(seen, ["MULTI@0", "DEL k@31"]);
        assert_eq!(ending, Ending::Torn { valid_up_to: 51 });
        assert_eq!(read(&file[..51]).unwrap().1, Ending::Whole);
        assert_eq!(read(b"#no newline").unwrap().1, Ending::Torn { valid_up_to: 0 });
    }

    #[test]
    fn what_is_not_a_command_is_named_with_its_byte() {
        let e = read(b"*1\r\n$4\r\nPING\r\nSET k v\r\n").unwrap_err();
        assert_eq!(e.offset, 14);
        assert_eq!(e.what, "a command starts with '*', not byte 0x53");
        let e = read(b"*1\r\n$9999\r\n").unwrap_err();
        assert_eq!(
            (e.offset, e.what.as_str()),
            (5, "Protocol error: invalid bulk length")
        );
    }
}
