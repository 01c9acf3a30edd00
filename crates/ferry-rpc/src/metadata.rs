//! Call metadata: gRPC's headers and trailers as a call carries them, an ordered list of
//! `(key, value)` entries. Keys follow gRPC's rule (non-empty, ASCII `[0-9a-z_.-]`; ASCII
//! capitals are lowered on insert); values are any bytes (binary values belong under `-bin`
//! keys, and HTTP's rules for the rest are the gateway's to apply). A key may appear more
//! than once ([`append`](Metadata::append)).
//!
//! Every `Metadata` fits one metadata frame: at most [`MAX_METADATA_ENTRIES`] entries and
//! [`MAX_METADATA_BYTES`] encoded (see [`encoded_len`](Metadata::encoded_len) and the frame
//! table in [`wire`](crate::wire)); an insert past either limit is refused, so sending never
//! fails for size.

/// Entries one metadata frame holds at most.
pub const MAX_METADATA_ENTRIES: usize = 64;

/// Bytes one metadata frame's payload holds at most (counts and lengths included).
pub const MAX_METADATA_BYTES: usize = 8 * 1024;

/// Why metadata (a key, an entry, or a frame's payload) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// A key with no bytes.
    #[error("entry {entry}: empty key")]
    EmptyKey {
        /// The entry's index.
        entry: usize,
    },
    /// A key byte outside `[0-9a-z_.-]`.
    #[error("entry {entry}: key byte {byte:#04x} at {offset} is not one of [0-9a-z_.-]")]
    KeyByte {
        /// The entry's index.
        entry: usize,
        /// The byte.
        byte: u8,
        /// Its offset in the key.
        offset: usize,
    },
    /// More entries than a frame holds.
    #[error("{count} entries (at most {max})")]
    TooManyEntries {
        /// How many (or would be).
        count: usize,
        /// The limit, [`MAX_METADATA_ENTRIES`].
        max: usize,
    },
    /// More bytes than a frame holds.
    #[error("{len} bytes encoded (at most {max})")]
    TooLarge {
        /// The encoded length (or what it would be).
        len: usize,
        /// The limit, [`MAX_METADATA_BYTES`].
        max: usize,
    },
    /// A payload that ends inside an entry.
    #[error("entry {entry}: payload ends at byte {len}, inside the {what}")]
    Truncated {
        /// The entry's index (the count is entry 0's prefix).
        entry: usize,
        /// What was being read: `count`, `key length`, `key`, `value length`, `value`.
        what: &'static str,
        /// The payload's length.
        len: usize,
    },
    /// Bytes after the last entry.
    #[error("{extra} bytes after the last of {count} entries")]
    Trailing {
        /// The entry count.
        count: usize,
        /// How many bytes are left over.
        extra: usize,
    },
}

/// Encoded bytes of the count prefix.
const COUNT_LEN: usize = 2;
/// Encoded bytes of an entry besides its key and value.
const ENTRY_OVERHEAD: usize = 2 + 4;

/// A call's metadata: an ordered list of `(key, value)` entries, every one valid and the whole
/// within one frame's limits. Empty by default (no allocation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    entries: Vec<(String, Vec<u8>)>,
    /// The encoded length of the entries (without the count prefix).
    bytes: usize,
}

impl Metadata {
    /// No entries.
    pub const fn new() -> Metadata {
        Metadata {
            entries: Vec::new(),
            bytes: 0,
        }
    }

    /// Sets `key` to `value`: the first entry of `key` takes the value (the others of `key`
    /// are removed), or a new entry goes last. Capitals in `key` are lowered; refused (and
    /// nothing changes) for an invalid key or if the result would not fit a frame.
    pub fn insert(&mut self, key: &str, value: impl Into<Vec<u8>>) -> Result<(), MetadataError> {
        let key = normalize_key(key, self.entries.len())?;
        let value = value.into();
        let Some(first) = self.entries.iter().position(|(k, _)| *k == key) else {
            return self.push(key, value);
        };
        let removed: usize = self.entries[first..]
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(k, v)| entry_len(k, v))
            .sum();
        let bytes = self.bytes - removed + entry_len(&key, &value);
        check_len(bytes)?;
        let mut index = 0;
        self.entries.retain(|(k, _)| {
            index += 1;
            index - 1 <= first || *k != key
        });
        self.entries[first].1 = value;
        self.bytes = bytes;
        Ok(())
    }

    /// Adds an entry last, after any of the same key. Capitals in `key` are lowered; refused
    /// for an invalid key or if the result would not fit a frame.
    pub fn append(&mut self, key: &str, value: impl Into<Vec<u8>>) -> Result<(), MetadataError> {
        let key = normalize_key(key, self.entries.len())?;
        self.push(key, value.into())
    }

    /// The value of the first entry of `key` (capitals lowered), if any.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_slice())
    }

    /// The values of every entry of `key` (capitals lowered), in order.
    pub fn get_all<'s>(&'s self, key: &'s str) -> impl Iterator<Item = &'s [u8]> + 's {
        self.entries
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_slice())
    }

    /// Removes every entry of `key` (capitals lowered); returns how many there were.
    pub fn remove(&mut self, key: &str) -> usize {
        let before = self.entries.len();
        let mut removed = 0;
        self.entries.retain(|(k, v)| {
            let hit = k.eq_ignore_ascii_case(key);
            if hit {
                removed += entry_len(k, v);
            }
            !hit
        });
        self.bytes -= removed;
        before - self.entries.len()
    }

    /// The entries in order, as `(key, value)`.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &[u8])> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The length of the metadata frame's payload ([`encode`](Self::encode)): at most
    /// [`MAX_METADATA_BYTES`].
    pub fn encoded_len(&self) -> usize {
        COUNT_LEN + self.bytes
    }

    /// The metadata frame's payload: the entry count (u16 LE), then per entry the key's length
    /// (u16 LE), the key, the value's length (u32 LE), the value.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(&(self.entries.len() as u16).to_le_bytes());
        for (k, v) in &self.entries {
            out.extend_from_slice(&(k.len() as u16).to_le_bytes());
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        debug_assert_eq!(out.len(), self.encoded_len());
        out
    }

    /// Reads a metadata frame's payload, checking every limit and key before it allocates
    /// (keys must be lowercase already: a sender lowers them).
    pub fn decode(payload: &[u8]) -> Result<Metadata, MetadataError> {
        let len = payload.len();
        if len > MAX_METADATA_BYTES {
            return Err(MetadataError::TooLarge {
                len,
                max: MAX_METADATA_BYTES,
            });
        }
        let mut rest = payload;
        let mut take = |n: usize, entry: usize, what: &'static str| -> Result<&[u8], MetadataError> {
            let (head, tail) =
                rest.split_at_checked(n)
                    .ok_or(MetadataError::Truncated { entry, what, len })?;
            rest = tail;
            Ok(head)
        };
        let count = usize::from(u16::from_le_bytes(
            take(COUNT_LEN, 0, "count")?.try_into().expect("2 bytes"),
        ));
        if count > MAX_METADATA_ENTRIES {
            return Err(MetadataError::TooManyEntries {
                count,
                max: MAX_METADATA_ENTRIES,
            });
        }
        let mut md = Metadata {
            entries: Vec::with_capacity(count),
            bytes: len - COUNT_LEN,
        };
        for entry in 0..count {
            let key_len = usize::from(u16::from_le_bytes(
                take(2, entry, "key length")?.try_into().expect("2 bytes"),
            ));
            let key = take(key_len, entry, "key")?;
            check_key(key, entry)?;
            let value_len = u32::from_le_bytes(take(4, entry, "value length")?.try_into().expect("4 bytes"));
            let value = take(value_len as usize, entry, "value")?;
            let key = std::str::from_utf8(key).expect("checked: ASCII").to_owned();
            md.entries.push((key, value.to_vec()));
        }
        if !rest.is_empty() {
            return Err(MetadataError::Trailing {
                count,
                extra: rest.len(),
            });
        }
        Ok(md)
    }

    fn push(&mut self, key: String, value: Vec<u8>) -> Result<(), MetadataError> {
        let count = self.entries.len() + 1;
        if count > MAX_METADATA_ENTRIES {
            return Err(MetadataError::TooManyEntries {
                count,
                max: MAX_METADATA_ENTRIES,
            });
        }
        let bytes = self.bytes + entry_len(&key, &value);
        check_len(bytes)?;
        self.entries.push((key, value));
        self.bytes = bytes;
        Ok(())
    }
}

/// Encoded bytes of one entry.
fn entry_len(key: &str, value: &[u8]) -> usize {
    ENTRY_OVERHEAD + key.len() + value.len()
}

/// Whether entries of `bytes` encoded bytes fit a frame.
fn check_len(bytes: usize) -> Result<(), MetadataError> {
    let len = COUNT_LEN + bytes;
    if len > MAX_METADATA_BYTES {
        return Err(MetadataError::TooLarge {
            len,
            max: MAX_METADATA_BYTES,
        });
    }
    Ok(())
}

/// gRPC's rule for a key: non-empty, every byte in `[0-9a-z_.-]`.
pub(crate) fn check_key(key: &[u8], entry: usize) -> Result<(), MetadataError> {
    if key.is_empty() {
        return Err(MetadataError::EmptyKey { entry });
    }
    match key
        .iter()
        .position(|&b| !matches!(b, b'0'..=b'9' | b'a'..=b'z' | b'_' | b'.' | b'-'))
    {
        Some(offset) => Err(MetadataError::KeyByte {
            entry,
            byte: key[offset],
            offset,
        }),
        None => Ok(()),
    }
}

/// `key` with ASCII capitals lowered, checked.
fn normalize_key(key: &str, entry: usize) -> Result<String, MetadataError> {
    let key = key.to_ascii_lowercase();
    check_key(key.as_bytes(), entry)?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_replaces_append_adds() {
        let mut md = Metadata::new();
        md.append("x-a", "1").unwrap();
        md.append("x-b", "2").unwrap();
        md.append("X-A", "3").unwrap();
        assert_eq!(md.get_all("x-a").collect::<Vec<_>>(), [b"1", b"3"]);
        md.insert("x-a", "4").unwrap();
        let all: Vec<(&str, &[u8])> = md.iter().collect();
        assert_eq!(all, [("x-a", &b"4"[..]), ("x-b", b"2")]);
        assert_eq!(md.encoded_len(), md.encode().len());
        md.insert("x-c", vec![0, 255]).unwrap();
        assert_eq!(md.get("X-C"), Some(&[0u8, 255][..]));
        assert_eq!(md.remove("x-b"), 1);
        assert_eq!(md.len(), 2);
        assert_eq!(md.encoded_len(), md.encode().len());
        assert_eq!(Metadata::decode(&md.encode()), Ok(md));
    }

    #[test]
    fn invalid_keys_are_refused() {
        let mut md = Metadata::new();
        assert_eq!(md.insert("", "v"), Err(MetadataError::EmptyKey { entry: 0 }));
        assert_eq!(
            md.append("a b", "v"),
            Err(MetadataError::KeyByte {
                entry: 0,
                byte: b' ',
                offset: 1
            })
        );
        assert!(matches!(
            md.insert("é", "v"),
            Err(MetadataError::KeyByte { offset: 0, .. })
        ));
        assert!(md.is_empty());
    }

    #[test]
    fn limits_hold_on_insert() {
        let mut md = Metadata::new();
        for i in 0..MAX_METADATA_ENTRIES {
            md.append(&format!("k{i}"), "").unwrap();
        }
        assert_eq!(
            md.append("one-more", ""),
            Err(MetadataError::TooManyEntries { count: 65, max: 64 })
        );
        let mut md = Metadata::new();
        let room = MAX_METADATA_BYTES - COUNT_LEN - ENTRY_OVERHEAD - 1;
        md.insert("k", vec![7; room]).unwrap();
        assert_eq!(md.encoded_len(), MAX_METADATA_BYTES);
        assert!(matches!(md.append("j", ""), Err(MetadataError::TooLarge { .. })));
        // Replacing the value with a smaller one fits; a larger one does not.
        md.insert("k", vec![7; 10]).unwrap();
        assert!(matches!(
            md.insert("k", vec![7; MAX_METADATA_BYTES]),
            Err(MetadataError::TooLarge { .. })
        ));
        assert_eq!(md.get("k").map(<[u8]>::len), Some(10));
    }
}
