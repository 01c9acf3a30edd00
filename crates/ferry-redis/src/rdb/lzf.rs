//! LZF decompression (liblzf's format), for the compressed strings redis-server writes by
//! default (`rdbcompression yes`). Ferry does not compress what it writes.

/// Why a compressed string does not decompress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LzfError {
    /// A literal run or a back reference goes past the input.
    #[error("the compressed data ends inside an instruction at its byte {0}")]
    Truncated(usize),
    /// A back reference points before the start of the output.
    #[error("a back reference at compressed byte {0} points before the output's start")]
    BadReference(usize),
    /// The output is longer or shorter than the length the file gave.
    #[error("the data decompresses to {found} bytes or more, the file says {expected}")]
    Length {
        /// The length the file gave.
        expected: usize,
        /// What the data makes (at least).
        found: usize,
    },
}

/// Decompresses `input` into `out` (cleared first), which must come to exactly `len` bytes.
/// `len` is bounded by the caller; nothing larger is ever allocated.
pub fn decompress(input: &[u8], len: usize, out: &mut Vec<u8>) -> Result<(), LzfError> {
    out.clear();
    out.reserve(len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let lit = input.get(ip..ip + run).ok_or(LzfError::Truncated(ip))?;
            if out.len() + run > len {
                return Err(LzfError::Length {
                    expected: len,
                    found: out.len() + run,
                });
            }
            out.extend_from_slice(lit);
            ip += run;
            continue;
        }
        let at = ip - 1;
        let mut run = ctrl >> 5;
        if run == 7 {
            run += usize::from(*input.get(ip).ok_or(LzfError::Truncated(ip))?);
            ip += 1;
        }
        let low = usize::from(*input.get(ip).ok_or(LzfError::Truncated(ip))?);
        ip += 1;
        let back = ((ctrl & 0x1f) << 8) + low + 1;
        let run = run + 2;
        let start = out.len().checked_sub(back).ok_or(LzfError::BadReference(at))?;
        if out.len() + run > len {
            return Err(LzfError::Length {
                expected: len,
                found: out.len() + run,
            });
        }
        // Byte by byte: the reference may overlap what it produces (a repeated pattern).
        for k in 0..run {
            out.push(out[start + k]);
        }
    }
    if out.len() != len {
        return Err(LzfError::Length {
            expected: len,
            found: out.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{LzfError, decompress};

    #[test]
    fn literals_and_overlapping_references() {
        // "abc" as a literal run, then a reference 3 back of length 2+4 = 6: "abcabcabc".
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        let mut out = Vec::new();
        decompress(&input, 9, &mut out).unwrap();
        assert_eq!(out, b"abcabcabc");
        assert_eq!(
            decompress(&input, 8, &mut out),
            Err(LzfError::Length {
                expected: 8,
                found: 9
            })
        );
        assert_eq!(
            decompress(&[(1 << 5), 5], 3, &mut out),
            Err(LzfError::BadReference(0))
        );
        assert_eq!(decompress(&[5, b'a'], 6, &mut out), Err(LzfError::Truncated(1)));
    }
}
