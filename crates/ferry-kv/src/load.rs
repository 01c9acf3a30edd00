//! Preloading a key space: from any generator of `(key, part sizes)`, or from a file of
//! `key,value-size` lines. Values are filled with [`fill`](crate::fill) bytes.

use std::path::{Path, PathBuf};

use ferry_buf::SharedBuf;

use crate::{Store, StoreError, Value, fill};

/// Why loading failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not `key,value-size`.
    #[error("{path}:{line}: {what}")]
    Line {
        /// The file.
        path: PathBuf,
        /// Its 1-based number.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The store refused a value.
    #[error("storing key {key:?}: {source}")]
    Store {
        /// The key (lossily as text).
        key: String,
        /// Why.
        source: StoreError,
    },
}

/// Stores every `(key, part sizes)` of `objects`: one size gives a single buffer, several a
/// vector. Returns the number of keys stored.
pub fn load<'k>(
    store: &Store,
    objects: impl IntoIterator<Item = (&'k [u8], &'k [u32])>,
) -> Result<usize, LoadError> {
    let mut n = 0;
    for (key, sizes) in objects {
        let value = filled(store, key, sizes).map_err(|source| LoadError::Store {
            key: String::from_utf8_lossy(key).into_owned(),
            source,
        })?;
        store.put_value(key, value).map_err(|source| LoadError::Store {
            key: String::from_utf8_lossy(key).into_owned(),
            source,
        })?;
        n += 1;
    }
    Ok(n)
}

/// A value of parts of `sizes`, filled for `key`, built in the store's pool.
pub fn filled(store: &Store, key: &[u8], sizes: &[u32]) -> Result<Value, StoreError> {
    store.check_key(key)?;
    store.check_parts(sizes.len())?;
    for &len in sizes {
        store.check_value(len as usize)?;
    }
    let mut parts = Vec::with_capacity(sizes.len());
    for (p, &len) in sizes.iter().enumerate() {
        let len = len as usize;
        let mut buf = store.pool().alloc(len).map_err(|e| store.pool_full(e, len))?;
        fill::fill(key, p as u32, &mut buf.capacity_mut()[..len]);
        buf.set_len(len);
        parts.push(buf.freeze());
    }
    Ok(match <[SharedBuf; 1]>::try_from(parts) {
        Ok([one]) => Value::Single(one),
        Err(parts) => Value::Vector(parts.into_boxed_slice()),
    })
}

/// Reads a file of `key,value-size` lines (blank lines and `#` comments skipped) and stores
/// each key with a single value of that size. Returns the number of keys stored.
pub fn load_file(store: &Store, path: &Path) -> Result<usize, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_owned(),
        source,
    })?;
    let entries = parse(&text).map_err(|(line, what)| LoadError::Line {
        path: path.to_owned(),
        line,
        what,
    })?;
    load(
        store,
        entries
            .iter()
            .map(|(k, s)| (k.as_bytes(), std::slice::from_ref(s))),
    )
}

/// Parses `key,value-size` lines; an error is the 1-based line number and what is wrong.
pub fn parse(text: &str) -> Result<Vec<(String, u32)>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, size)) = line.rsplit_once(',') else {
            return Err((i + 1, format!("`{line}` is not `key,value-size`")));
        };
        if key.is_empty() {
            return Err((i + 1, "the key is empty".to_owned()));
        }
        let size = size
            .trim()
            .parse::<u32>()
            .map_err(|e| (i + 1, format!("value size `{}`: {e}", size.trim())))?;
        out.push((key.to_owned(), size));
    }
    Ok(out)
}
