//! The packed encodings redis-server writes for small collections inside an RDB string:
//! listpack (Redis 7), ziplist (Redis ≤ 6.2, still read by 7.0) and intset. Each is read by a
//! checked walk over the blob that yields [`Elem`]s; every offset is checked before use, so a
//! corrupt blob is an error naming the encoding and its byte, never a panic.

/// One element of a packed blob: a string (borrowed from the blob) or an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    /// A string entry.
    Str(&'a [u8]),
    /// An integer entry (Redis stores numeric strings as integers).
    Int(i64),
}

impl<'a> Elem<'a> {
    /// The element as Redis's string form (integers in decimal, written into `scratch`).
    pub fn to_bytes<'s>(self, scratch: &'s mut Vec<u8>) -> &'s [u8]
    where
        'a: 's,
    {
        match self {
            Elem::Str(s) => s,
            Elem::Int(n) => {
                scratch.clear();
                scratch.extend_from_slice(n.to_string().as_bytes());
                scratch
            }
        }
    }
}

/// What is wrong in a packed blob: the encoding, the byte of the blob, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{encoding}: {what} at its byte {offset}")]
pub struct PackedError {
    /// `listpack`, `ziplist` or `intset`.
    pub encoding: &'static str,
    /// The offset inside the blob.
    pub offset: usize,
    /// What is wrong.
    pub what: &'static str,
}

/// What a walk calls with each element; an error it returns stops the walk and is returned.
pub type Visit<'v> = dyn FnMut(Elem<'_>) -> Result<(), PackedError> + 'v;

/// The signature of the three walks.
pub type Walk = fn(&[u8], &mut Visit<'_>) -> Result<(), PackedError>;

/// A bounds-checked cursor over a blob.
struct Cursor<'a> {
    blob: &'a [u8],
    pos: usize,
    encoding: &'static str,
}

impl<'a> Cursor<'a> {
    fn err(&self, what: &'static str) -> PackedError {
        PackedError {
            encoding: self.encoding,
            offset: self.pos,
            what,
        }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], PackedError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.blob.len());
        let end = end.ok_or_else(|| self.err(what))?;
        let s = &self.blob[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, PackedError> {
        Ok(self.take(1, what)?[0])
    }

    /// `n` (1..=8) little-endian bytes as a signed integer of that width.
    fn int_le(&mut self, n: usize, what: &'static str) -> Result<i64, PackedError> {
        let b = self.take(n, what)?;
        let mut v = 0u64;
        for (i, &x) in b.iter().enumerate() {
            v |= u64::from(x) << (8 * i);
        }
        Ok(sign_extend(v, 8 * n as u32))
    }
}

/// `v`'s low `bits` bits as a two's-complement integer.
fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// Walks a listpack: 4-byte total length, 2-byte count, entries (each followed by its
/// back-length), `0xFF`. The total length must match the blob.
pub fn listpack(blob: &[u8], visit: &mut Visit<'_>) -> Result<(), PackedError> {
    let mut c = Cursor {
        blob,
        pos: 0,
        encoding: "listpack",
    };
    let total = c.int_le(4, "the header ends early")? as u32 as usize;
    if total != blob.len() {
        return Err(c.err("the header's total length is not the blob's"));
    }
    let _count = c.take(2, "the header ends early")?;
    loop {
        let start = c.pos;
        let b = c.byte("an entry runs past the end")?;
        let elem = match b {
            0xff => break,
            0x00..=0x7f => Elem::Int(i64::from(b)),
            0x80..=0xbf => Elem::Str(c.take(usize::from(b & 0x3f), "a string runs past the end")?),
            0xc0..=0xdf => {
                let lo = c.byte("an integer runs past the end")?;
                Elem::Int(sign_extend((u64::from(b & 0x1f) << 8) | u64::from(lo), 13))
            }
            0xe0..=0xef => {
                let lo = c.byte("a string length runs past the end")?;
                let len = (usize::from(b & 0x0f) << 8) | usize::from(lo);
                Elem::Str(c.take(len, "a string runs past the end")?)
            }
            0xf0 => {
                let len = c.int_le(4, "a string length runs past the end")? as u32 as usize;
                Elem::Str(c.take(len, "a string runs past the end")?)
            }
            0xf1 => Elem::Int(c.int_le(2, "an integer runs past the end")?),
            0xf2 => Elem::Int(c.int_le(3, "an integer runs past the end")?),
            0xf3 => Elem::Int(c.int_le(4, "an integer runs past the end")?),
            0xf4 => Elem::Int(c.int_le(8, "an integer runs past the end")?),
            _ => return Err(Cursor { pos: start, ..c }.err("an unknown entry encoding")),
        };
        let size = c.pos - start;
        let backlen = match size {
            0..=127 => 1,
            128..=16_382 => 2,
            16_383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        };
        c.take(backlen, "a back-length runs past the end")?;
        visit(elem)?;
    }
    if c.pos != blob.len() {
        return Err(c.err("bytes after the end marker"));
    }
    Ok(())
}

/// Walks a ziplist: 4-byte total length, 4-byte tail offset, 2-byte count, entries (previous
/// length, encoding, data), `0xFF`.
pub fn ziplist(blob: &[u8], visit: &mut Visit<'_>) -> Result<(), PackedError> {
    let mut c = Cursor {
        blob,
        pos: 0,
        encoding: "ziplist",
    };
    let total = c.int_le(4, "the header ends early")? as u32 as usize;
    if total != blob.len() {
        return Err(c.err("the header's total length is not the blob's"));
    }
    c.take(6, "the header ends early")?;
    loop {
        let prev = c.byte("an entry runs past the end")?;
        if prev == 0xff {
            break;
        }
        if prev == 0xfe {
            c.take(4, "a previous length runs past the end")?;
        }
        let b = c.byte("an entry runs past the end")?;
        let elem = match b >> 6 {
            0 => Elem::Str(c.take(usize::from(b & 0x3f), "a string runs past the end")?),
            1 => {
                let lo = c.byte("a string length runs past the end")?;
                let len = (usize::from(b & 0x3f) << 8) | usize::from(lo);
                Elem::Str(c.take(len, "a string runs past the end")?)
            }
            2 => {
                let l = c.take(4, "a string length runs past the end")?;
                let len = u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize;
                Elem::Str(c.take(len, "a string runs past the end")?)
            }
            _ => match b {
                0xc0 => Elem::Int(c.int_le(2, "an integer runs past the end")?),
                0xd0 => Elem::Int(c.int_le(4, "an integer runs past the end")?),
                0xe0 => Elem::Int(c.int_le(8, "an integer runs past the end")?),
                0xf0 => Elem::Int(c.int_le(3, "an integer runs past the end")?),
                0xfe => Elem::Int(c.int_le(1, "an integer runs past the end")?),
                0xf1..=0xfd => Elem::Int(i64::from(b & 0x0f) - 1),
                _ => return Err(c.err("an unknown entry encoding")),
            },
        };
        visit(elem)?;
    }
    if c.pos != blob.len() {
        return Err(c.err("bytes after the end marker"));
    }
    Ok(())
}

/// Walks an intset: 4-byte width (2, 4 or 8), 4-byte count, the integers.
pub fn intset(blob: &[u8], visit: &mut Visit<'_>) -> Result<(), PackedError> {
    let mut c = Cursor {
        blob,
        pos: 0,
        encoding: "intset",
    };
    let width = c.int_le(4, "the header ends early")? as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err(c.err("the integer width is not 2, 4 or 8"));
    }
    let count = c.int_le(4, "the header ends early")? as u32 as usize;
    if count.checked_mul(width) != Some(blob.len() - c.pos) {
        return Err(c.err("the count does not match the blob's length"));
    }
    for _ in 0..count {
        visit(Elem::Int(c.int_le(width, "an integer runs past the end")?))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect_lp(blob: &[u8]) -> Result<Vec<String>, PackedError> {
        let mut v = Vec::new();
        let mut s = Vec::new();
        listpack(blob, &mut |e| {
            v.push(String::from_utf8_lossy(e.to_bytes(&mut s)).into_owned());
            Ok(())
        })?;
        Ok(v)
    }

    /// A listpack as Redis 7.0 writes `RPUSH l a 5 -2 1000`: a 6-bit string, a 7-bit
    /// integer, and two 13-bit integers.
    #[test]
    fn listpack_entries() {
        let mut lp = vec![0, 0, 0, 0, 4, 0];
        lp.extend_from_slice(&[0x81, b'a', 2]);
        lp.extend_from_slice(&[5, 1]);
        lp.extend_from_slice(&[0xdf, 0xfe, 2]); // -2 in 13 bits: 0x1ffe
        lp.extend_from_slice(&[0xc3, 0xe8, 2]); // 1000 = 0x3e8
        lp.push(0xff);
        let n = lp.len() as u32;
        lp[..4].copy_from_slice(&n.to_le_bytes());
        assert_eq!(collect_lp(&lp).unwrap(), ["a", "5", "-2", "1000"]);
        let mut short = lp.clone();
        short.truncate(lp.len() - 3);
        let n = short.len() as u32;
        short[..4].copy_from_slice(&n.to_le_bytes());
        assert!(collect_lp(&short).is_err());
        assert!(collect_lp(&lp[..lp.len() - 1]).is_err());
    }

    #[test]
    fn intset_and_ziplist() {
        let mut is = vec![2, 0, 0, 0, 2, 0, 0, 0];
        is.extend_from_slice(&(-3i16).to_le_bytes());
        is.extend_from_slice(&7i16.to_le_bytes());
        let mut got = Vec::new();
        intset(&is, &mut |e| {
            got.push(format!("{e:?}"));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, ["Int(-3)", "Int(7)"]);
        assert!(intset(&is[..is.len() - 1], &mut |_| Ok(())).is_err());

        // A ziplist of "ab" and 12 (an immediate integer).
        let mut zl = vec![0; 10];
        zl.extend_from_slice(&[0, 0x02, b'a', b'b', 4, 0xfd, 0xff]);
        let n = zl.len() as u32;
        zl[..4].copy_from_slice(&n.to_le_bytes());
        let mut got = Vec::new();
        ziplist(&zl, &mut |e| {
            got.push(format!("{e:?}"));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, ["Str([97, 98])", "Int(12)"]);
    }
}
