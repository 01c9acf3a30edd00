//! The Twitter workload, replayed: a reader for the real Twitter cache-trace CSV files
//! (`timestamp,key,key_size,value_size,client_id,operation,ttl`), for users who have them.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read};
use std::path::Path;

use super::dist::{Stream, rng};
use super::{Object, Requests, Workload};

/// Default number of trace lines read: 5 million (about 10 minutes of cluster 4, a few hundred
/// megabytes of key space and request list). The trace files are far larger; the reader stops
/// there so memory stays bounded.
pub const DEFAULT_MAX_LINES: u64 = 5_000_000;
/// The longest line accepted, bytes (real lines are under 300).
pub const MAX_LINE_LEN: usize = 64 * 1024;
/// Keys are padded to their traced `key_size`, up to this (memcached's key limit).
pub const MAX_KEY_LEN: usize = 250;
/// The fields of one line, in order.
pub const FIELDS: [&str; 7] = [
    "timestamp",
    "key",
    "key_size",
    "value_size",
    "client_id",
    "operation",
    "ttl",
];

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CsvError {
    /// Reading the file failed.
    #[error("reading {what}: {source}")]
    Io {
        /// The file (or "input").
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is longer than [`MAX_LINE_LEN`].
    #[error("line {line}: longer than {MAX_LINE_LEN} bytes")]
    LineTooLong {
        /// 1-based line number.
        line: u64,
    },
    /// A line does not have the 7 fields.
    #[error(
        "line {line}: expected 7 comma-separated fields \
         (timestamp,key,key_size,value_size,client_id,operation,ttl), found {found}"
    )]
    FieldCount {
        /// 1-based line number.
        line: u64,
        /// How many fields it has.
        found: usize,
    },
    /// A field does not parse.
    #[error("line {line}, field `{field}`: expected {expected}, found {found:?}")]
    Field {
        /// 1-based line number.
        line: u64,
        /// The field's name, one of [`FIELDS`].
        field: &'static str,
        /// What the field should hold.
        expected: &'static str,
        /// The field's text (cut to 64 bytes, lossily decoded).
        found: String,
    },
    /// No get or set in the lines read.
    #[error("no get or set operation in the {lines} lines read ({skipped} other operations skipped)")]
    NoOperations {
        /// Lines read.
        lines: u64,
        /// Operations skipped.
        skipped: u64,
    },
}

/// Per-key facts gathered while reading.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    /// `value_size` of the last set/add/replace/cas.
    last_write: Option<u32>,
    /// The first nonzero `value_size` of any operation.
    first_nonzero: Option<u32>,
}

/// A replay of a real Twitter cache trace (the CSV format of the Twitter cache-trace release,
/// `workloads.md` lines 26-28; cluster 4 is the one Cornflakes used, §6.1.4).
///
/// - Reads at most `max_lines` lines (blank lines count; a first line starting with
///   `timestamp` is taken as a header and skipped).
/// - Operations `get`/`gets` become `Get`s; `set`/`add`/`replace`/`cas`/`append`/`prepend`
///   become `Put`s; anything else (`delete`, `incr`, `decr`, ...) is skipped and counted (in
///   the notes).
/// - The key space is the keys of the kept operations, in order of first appearance. A key's
///   value is one buffer of the `value_size` of its last set/add/replace/cas (an append or
///   prepend carries only the fragment's size), else its first nonzero `value_size`, else
///   1 byte; clamped to `[1, max_value]`. The anonymized key is padded with `_` to the traced
///   `key_size` (at most [`MAX_KEY_LEN`]) so key sizes match the trace, and `#` is appended in
///   the unlikely case the padded key collides with another.
/// - Requests replay the kept operations in trace order and start over at the end. Timestamps
///   are checked but not used: arrivals come from the load generator's Poisson process.
pub fn open(path: &Path, max_lines: u64, max_value: u32) -> Result<Workload, CsvError> {
    let file = std::fs::File::open(path).map_err(|source| CsvError::Io {
        what: path.display().to_string(),
        source,
    })?;
    from_reader(std::io::BufReader::new(file), max_lines, max_value).map_err(|e| match e {
        CsvError::Io { source, .. } => CsvError::Io {
            what: path.display().to_string(),
            source,
        },
        e => e,
    })
}

/// Reads at most `max_lines` lines of a trace from `reader` (see [`open`]); values are clamped
/// to `max_value` bytes.
pub fn from_reader<R: BufRead>(mut reader: R, max_lines: u64, max_value: u32) -> Result<Workload, CsvError> {
    let max_value = max_value.max(1);
    let mut index_of: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut seen: Vec<Seen> = Vec::new();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut taken: HashSet<Vec<u8>> = HashSet::new();
    let mut ops = Vec::new();
    let (mut lines, mut skipped) = (0u64, 0u64);
    let mut buf = Vec::new();
    let mut truncated = false;
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE_LEN as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|source| CsvError::Io {
                what: "input".into(),
                source,
            })?;
        if n == 0 {
            break;
        }
        if lines == max_lines {
            truncated = true;
            break;
        }
        lines += 1;
        let line_no = lines;
        let ends_line = buf.last() == Some(&b'\n');
        if !ends_line && buf.len() > MAX_LINE_LEN {
            return Err(CsvError::LineTooLong { line: line_no });
        }
        let mut text = buf.as_slice();
        while let [rest @ .., b'\n' | b'\r'] = text {
            text = rest;
        }
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line_no == 1 && text.starts_with(b"timestamp") {
            continue;
        }
        let line = parse_line(text, line_no)?;
        let is_put = match line.operation.to_ascii_lowercase().as_slice() {
            b"get" | b"gets" => false,
            b"set" | b"add" | b"replace" | b"cas" | b"append" | b"prepend" => true,
            _ => {
                skipped += 1;
                continue;
            }
        };
        let index = match index_of.get(line.key) {
            Some(&i) => i,
            None => {
                let i = keys.len() as u32;
                let mut key = line.key.to_vec();
                key.resize(key.len().max((line.key_size as usize).min(MAX_KEY_LEN)), b'_');
                while taken.contains(&key) {
                    key.push(b'#');
                }
                taken.insert(key.clone());
                keys.push(key);
                seen.push(Seen::default());
                index_of.insert(line.key.to_vec(), i);
                i
            }
        };
        let s = &mut seen[index as usize];
        let whole_write = matches!(
            line.operation.to_ascii_lowercase().as_slice(),
            b"set" | b"add" | b"replace" | b"cas"
        );
        if whole_write {
            s.last_write = Some(line.value_size);
        }
        if s.first_nonzero.is_none() && line.value_size > 0 {
            s.first_nonzero = Some(line.value_size);
        }
        ops.push((index, is_put));
    }
    if ops.is_empty() {
        return Err(CsvError::NoOperations { lines, skipped });
    }
    let mut clamped = 0u64;
    let objects: Vec<Object> = keys
        .into_iter()
        .zip(&seen)
        .map(|(key, s)| {
            let size = s.last_write.or(s.first_nonzero).unwrap_or(1);
            clamped += u64::from(size > max_value);
            Object {
                key,
                parts: vec![size.clamp(1, max_value)],
            }
        })
        .collect();
    let mut notes = vec![format!(
        "twitter-csv: {lines} lines read, {} requests over {} keys, {skipped} other operations skipped",
        ops.len(),
        objects.len()
    )];
    if truncated {
        notes.push(format!(
            "twitter-csv: stopped after {max_lines} lines (--twitter-max-lines raises it)"
        ));
    }
    if clamped > 0 {
        notes.push(format!(
            "twitter-csv: {clamped} values clamped to {max_value} bytes"
        ));
    }
    Ok(Workload {
        name: "twitter-csv".into(),
        objects,
        notes,
        requests: Requests::Replay(ops, 0),
        // Unused: a replay draws nothing.
        rng: rng(0, Stream::Ops),
    })
}

/// The fields of one line that the reader uses.
struct Line<'a> {
    key: &'a [u8],
    key_size: u32,
    value_size: u32,
    operation: &'a [u8],
}

fn parse_line(text: &[u8], line: u64) -> Result<Line<'_>, CsvError> {
    let fields: Vec<&[u8]> = text.split(|&b| b == b',').collect();
    if fields.len() != FIELDS.len() {
        return Err(CsvError::FieldCount {
            line,
            found: fields.len(),
        });
    }
    let bad = |i: usize, expected: &'static str| CsvError::Field {
        line,
        field: FIELDS[i],
        expected,
        found: String::from_utf8_lossy(&fields[i][..fields[i].len().min(64)]).into_owned(),
    };
    let unsigned = |i: usize| -> Result<u64, CsvError> {
        std::str::from_utf8(fields[i])
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| bad(i, "an unsigned integer"))
    };
    let size = |i: usize| -> Result<u32, CsvError> {
        u32::try_from(unsigned(i)?).map_err(|_| bad(i, "a size below 4 GiB"))
    };
    unsigned(0)?;
    let key = fields[1];
    if key.is_empty() {
        return Err(bad(1, "a non-empty key"));
    }
    if std::str::from_utf8(key).is_err() {
        return Err(bad(1, "a UTF-8 key"));
    }
    let key_size = size(2)?;
    let value_size = size(3)?;
    unsigned(4)?;
    let operation = fields[5].trim_ascii();
    if operation.is_empty() || !operation.iter().all(u8::is_ascii_alphabetic) {
        return Err(bad(5, "an operation name (letters)"));
    }
    std::str::from_utf8(fields[6])
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .ok_or_else(|| bad(6, "an integer ttl"))?;
    Ok(Line {
        key,
        key_size,
        value_size,
        operation,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::*;

    fn read(text: &str) -> Result<Workload, CsvError> {
        from_reader(text.as_bytes(), DEFAULT_MAX_LINES, 1 << 20)
    }

    const GOOD: &str = "\
0,keyA,8,100,1,get,0
0,keyB,6,2000,2,set,3600
1,keyA,8,0,1,gets,0
1,keyA,8,300,1,set,0
2,keyC,4,0,3,delete,0
2,keyB,6,50,2,append,0
3,keyD,4,0,4,get,0
3,keyA,8,0,1,incr,0
";

    #[test]
    fn good_lines_build_keys_sizes_and_ops() {
        let mut w = read(GOOD).unwrap();
        assert_eq!(w.name(), "twitter-csv");
        assert_eq!(
            w.notes()[0],
            "twitter-csv: 8 lines read, 6 requests over 3 keys, 2 other operations skipped"
        );
        let keys: Vec<&[u8]> = w.objects().iter().map(|o| o.key.as_slice()).collect();
        // Padded to key_size with `_`; keyC appears only in a skipped delete.
        assert_eq!(keys, [&b"keyA____"[..], b"keyB__", b"keyD"]);
        let sizes: Vec<u32> = w.objects().iter().map(|o| o.parts[0]).collect();
        // keyA: last set 300; keyB: the set's 2000 (the append is a fragment); keyD: never
        // sized, 1 byte.
        assert_eq!(sizes, [300, 2000, 1]);
        let ops: Vec<Op> = (0..7).map(|_| w.next_op()).collect();
        assert_eq!(
            ops,
            [
                Op::Get(0),
                Op::Put(1),
                Op::Get(0),
                Op::Put(0),
                Op::Put(1),
                Op::Get(2),
                Op::Get(0)
            ]
        );
    }

    #[test]
    fn header_blank_lines_and_crlf() {
        let w = read("timestamp,key,key_size,value_size,client_id,operation,ttl\r\n\r\n5,k,1,9,0,get,0\r\n")
            .unwrap();
        assert_eq!(
            w.objects(),
            [Object {
                key: b"k".to_vec(),
                parts: vec![9]
            }]
        );
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let cases: [(&str, u64, &str); 8] = [
            ("0,k,1,1,0,get,0\nx,k,1,1,0,get,0\n", 2, "timestamp"),
            ("0,,1,1,0,get,0\n", 1, "key"),
            ("0,k,-1,1,0,get,0\n", 1, "key_size"),
            ("0,k,1,big,0,get,0\n", 1, "value_size"),
            ("0,k,1,99999999999,0,get,0\n", 1, "value_size"),
            ("0,k,1,1,c,get,0\n", 1, "client_id"),
            ("0,k,1,1,0,,0\n", 1, "operation"),
            ("0,k,1,1,0,get,forever\n\n", 1, "ttl"),
        ];
        for (text, want_line, want_field) in cases {
            match read(text) {
                Err(e @ CsvError::Field { line, field, .. }) => {
                    assert_eq!((line, field), (want_line, want_field), "{text:?}");
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("line {want_line}")) && msg.contains(want_field),
                        "{msg}"
                    );
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        assert!(matches!(
            read("\n0,k,1,1,0,get\n"),
            Err(CsvError::FieldCount { line: 2, found: 6 })
        ));
        assert!(matches!(
            read("0,k,1,1,0,get,0,extra\n"),
            Err(CsvError::FieldCount { line: 1, found: 8 })
        ));
        assert!(matches!(
            read("0,k,1,1,0,delete,0\n"),
            Err(CsvError::NoOperations { lines: 1, skipped: 1 })
        ));
        let long = format!("0,{},1,1,0,get,0\n", "k".repeat(MAX_LINE_LEN + 10));
        assert!(matches!(read(&long), Err(CsvError::LineTooLong { line: 1 })));
    }

    #[test]
    fn max_lines_bounds_the_read_and_values_are_clamped() {
        let w = from_reader(GOOD.as_bytes(), 2, 1000).unwrap();
        assert!(w.notes()[0].starts_with("twitter-csv: 2 lines read"));
        assert_eq!(w.objects().len(), 2);
        assert_eq!(w.objects()[1].parts, [1000]);
        assert!(w.notes().iter().any(|n| n.contains("stopped after 2 lines")));
        assert!(w.notes().iter().any(|n| n.contains("1 values clamped")));
    }

    #[test]
    fn padded_keys_stay_unique() {
        let w = read("0,a,2,1,0,get,0\n0,a_,2,1,0,get,0\n").unwrap();
        let keys: Vec<&[u8]> = w.objects().iter().map(|o| o.key.as_slice()).collect();
        assert_eq!(keys, [&b"a_"[..], b"a_#"]);
    }

    #[test]
    fn open_names_a_missing_file() {
        let err = open(Path::new("/nonexistent/trace.csv"), 10, 10).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/trace.csv"), "{err}");
    }
}
