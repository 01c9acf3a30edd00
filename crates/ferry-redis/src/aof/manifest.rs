//! The AOF manifest, in Redis 7.0's format: one line per file,
//! `file <name> seq <n> type <b|h|i>`, the base first, then history files, then the
//! incremental files in sequence order. A name that needs it is written in double quotes with
//! C escapes (Redis's `sdscatrepr`), and read back as Redis's `sdssplitargs` reads it.
//!
//! The manifest is untrusted input: [`Manifest::parse`] bounds the file and each line, refuses
//! a name that is a path, and says which line is wrong and why, with Redis's words.

/// The longest line Redis reads (`MANIFEST_MAX_LINE`).
pub const MAX_LINE: usize = 1024;
/// The largest manifest [`Manifest::parse`] reads (Redis has no limit; 4 MiB holds over
/// 40,000 lines).
pub const MAX_LEN: usize = 4 << 20;

/// A file the manifest lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the AOF directory.
    pub name: String,
    /// Its sequence number (base and incremental files count apart).
    pub seq: u64,
}

/// The manifest: which files make the dataset, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The base file (an RDB, or commands), if any.
    pub base: Option<Entry>,
    /// Files a rewrite replaced, waiting to be deleted (Redis's type `h`).
    pub history: Vec<Entry>,
    /// The incremental files, in increasing sequence.
    pub incr: Vec<Entry>,
}

/// Why a manifest was refused: the line (1-based, 0: the whole file) and Redis's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ManifestError {
    /// The line it was found on.
    pub line: usize,
    /// Redis's words for it.
    pub what: &'static str,
}

impl Manifest {
    /// Reads a manifest.
    pub fn parse(text: &[u8]) -> Result<Manifest, ManifestError> {
        let err = |line, what| Err(ManifestError { line, what });
        if text.len() > MAX_LEN {
            return err(0, "The AOF manifest file is too large");
        }
        let mut m = Manifest::default();
        let mut lines = 0;
        let mut rest = text;
        while !rest.is_empty() {
            lines += 1;
            // Redis needs the newline too: a torn last line is refused as a long one.
            let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                return err(lines, "The AOF manifest file contains too long line");
            };
            let line = &rest[..end];
            rest = &rest[end + 1..];
            if line.len() > MAX_LINE {
                return err(lines, "The AOF manifest file contains too long line");
            }
            if line.first() == Some(&b'#') {
                continue;
            }
            let words = split_args(line.trim_ascii()).ok_or(ManifestError {
                line: lines,
                what: "Invalid AOF manifest file format",
            })?;
            if words.len() < 6 || words.len() % 2 != 0 {
                return err(lines, "Invalid AOF manifest file format");
            }
            let (mut name, mut seq, mut kind) = (None, 0u64, None);
            for pair in words.chunks(2) {
                let value = &pair[1];
                if pair[0].eq_ignore_ascii_case(b"file") {
                    let n = String::from_utf8(value.clone()).map_err(|_| ManifestError {
                        line: lines,
                        what: "The file name is not UTF-8",
                    })?;
                    if n.is_empty() || n.contains('/') {
                        return err(lines, "File can't be a path, just a filename");
                    }
                    name = Some(n);
                } else if pair[0].eq_ignore_ascii_case(b"seq") {
                    // Redis's `atoll`: a number, else 0 (refused below).
                    seq = std::str::from_utf8(value)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                } else if pair[0].eq_ignore_ascii_case(b"type") {
                    kind = value.first().copied();
                }
            }
            let (Some(name), Some(kind)) = (name, kind) else {
                return err(lines, "Invalid AOF manifest file format");
            };
            if seq == 0 {
                return err(lines, "Invalid AOF manifest file format");
            }
            let entry = Entry { name, seq };
            match kind {
                b'b' if m.base.is_some() => return err(lines, "Found duplicate base file information"),
                b'b' => m.base = Some(entry),
                b'h' => m.history.push(entry),
                b'i' if m.incr.last().is_some_and(|l| l.seq >= seq) => {
                    return err(lines, "Found a non-monotonic sequence number");
                }
                b'i' => m.incr.push(entry),
                _ => return err(lines, "Unknown AOF file type"),
            }
        }
        if lines == 0 {
            return err(0, "Found an empty AOF manifest");
        }
        Ok(m)
    }

    /// The manifest as Redis writes it.
    pub fn format(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let lines = self.base.iter().map(|e| (e, 'b'));
        let lines = lines
            .chain(self.history.iter().map(|e| (e, 'h')))
            .chain(self.incr.iter().map(|e| (e, 'i')));
        for (e, kind) in lines {
            out.extend_from_slice(b"file ");
            write_name(&mut out, e.name.as_bytes());
            out.extend_from_slice(format!(" seq {} type {kind}\n", e.seq).as_bytes());
        }
        out
    }

    /// Every file it lists: the base, then the incremental files (history files are not part
    /// of the dataset).
    pub fn files(&self) -> impl Iterator<Item = &Entry> {
        self.base.iter().chain(&self.incr)
    }
}

/// A name as `sdscatrepr` writes it when it needs quoting (a byte that is not printable, a
/// space, or a quote), else as it is.
fn write_name(out: &mut Vec<u8>, name: &[u8]) {
    let plain = |b: u8| b.is_ascii_graphic() && b != b'"' && b != b'\'' && b != b'\\';
    if name.iter().all(|&b| plain(b)) {
        return out.extend_from_slice(name);
    }
    out.push(b'"');
    for &b in name {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            b' '..=b'~' => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// A line split as `sdssplitargs` does: words apart by whitespace, `"..."` with C escapes and
/// `\xHH`, `'...'` with `\'`; `None` for an unbalanced quote or a closing quote followed by
/// something other than a space.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut words = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut word = Vec::new();
        match line[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                loop {
                    let &b = line.get(i)?;
                    i += 1;
                    if b == q {
                        break;
                    }
                    if b != b'\\' || i >= line.len() {
                        word.push(b);
                        continue;
                    }
                    let e = line[i];
                    i += 1;
                    let hex = |b: u8| (b as char).to_digit(16);
                    word.push(match (q, e) {
                        (b'\'', b'\'') => b'\'',
                        (b'\'', _) => {
                            i -= 1;
                            b'\\'
                        }
                        (_, b'n') => b'\n',
                        (_, b'r') => b'\r',
                        (_, b't') => b'\t',
                        (_, b'b') => 8,
                        (_, b'a') => 7,
                        (_, b'x') => match (
                            line.get(i).and_then(|&h| hex(h)),
                            line.get(i + 1).and_then(|&l| hex(l)),
                        ) {
                            (Some(h), Some(l)) => {
                                i += 2;
                                (h * 16 + l) as u8
                            }
                            _ => b'x',
                        },
                        (_, other) => other,
                    });
                }
                if line.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return None;
                }
            }
            _ => {
                while i < line.len() && !line[i].is_ascii_whitespace() {
                    word.push(line[i]);
                    i += 1;
                }
            }
        }
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_in_redis_format() {
        let m = Manifest {
            base: Some(Entry {
                name: "appendonly.aof.2.base.rdb".into(),
                seq: 2,
            }),
            history: vec![Entry {
                name: "appendonly.aof.1.base.rdb".into(),
                seq: 1,
            }],
            incr: vec![Entry {
                name: "my file \"x\".1.incr.aof".into(),
                seq: 3,
            }],
        };
        let text = m.format();
        assert_eq!(
            String::from_utf8(text.clone()).unwrap(),
            "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.base.rdb seq 1 type h\n\
             file \"my file \\\"x\\\".1.incr.aof\" seq 3 type i\n"
        );
        assert_eq!(Manifest::parse(&text).unwrap(), m);
    }

    #[test]
    fn refuses_what_redis_refuses() {
        let bad = |text: &str, line, what| {
            assert_eq!(
                Manifest::parse(text.as_bytes()),
                Err(ManifestError { line, what }),
                "{text:?}"
            );
        };
        bad("", 0, "Found an empty AOF manifest");
        // Comments only: not empty to Redis (it counts the lines), and no file (found by the
        // `aof` fuzz target, whose round trip assumed a file).
        let comments = Manifest::parse(b"# a\n#\0 \0file x.aof seq 1 type b\r\n").expect("parses");
        assert_eq!(
            (comments.base, comments.history.len(), comments.incr.len()),
            (None, 0, 0)
        );
        bad(
            "file a seq 1 type b",
            1,
            "The AOF manifest file contains too long line",
        );
        bad("file a seq 1\n", 1, "Invalid AOF manifest file format");
        bad(
            "file a/b seq 1 type b\n",
            1,
            "File can't be a path, just a filename",
        );
        bad(
            "file a seq 1 type b\nfile b seq 2 type b\n",
            2,
            "Found duplicate base file information",
        );
        bad(
            "file a seq 2 type i\nfile b seq 2 type i\n",
            2,
            "Found a non-monotonic sequence number",
        );
        bad("file a seq 1 type x\n", 1, "Unknown AOF file type");
        bad("file \"a seq 1 type b\n", 1, "Invalid AOF manifest file format");
        bad(
            &format!("file {} seq 1 type b\n", "a".repeat(MAX_LINE)),
            1,
            "The AOF manifest file contains too long line",
        );
        let m = Manifest::parse(b"# comment\nfile a seq 1 type b extra x\n").unwrap();
        assert_eq!(m.base.unwrap().name, "a");
    }
}
