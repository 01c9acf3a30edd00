//! [`Copies`]: contiguous copies of a message that spans several blocks, made through `&self`
//! for the stock API's `finished_data()` and `unfinished_data()` (which return one `&[u8]`
//! borrowed from the builder) and kept until the builder is next changed (`&mut self`).

#![allow(unsafe_code)]

use std::sync::Mutex;

/// Copies made since the last [`clear`](Self::clear), each under the message length it was
/// made at (while a message is built, its bytes at a given length never change).
#[derive(Default)]
pub(crate) struct Copies {
    made: Mutex<Vec<(usize, Box<[u8]>)>>,
}

impl Copies {
    /// The copy for a message of `len` bytes, made by `make` if the last copy is not of that
    /// length. Kept until [`clear`](Self::clear).
    pub(crate) fn get_or_make(&self, len: usize, make: impl FnOnce() -> Vec<u8>) -> &[u8] {
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = made.last().is_none_or(|(at, _)| *at != len);
        if fresh {
            made.push((len, make().into_boxed_slice()));
        }
        let copy: &[u8] = &made.last().expect("pushed above").1;
        let (ptr, n) = (copy.as_ptr(), copy.len());
        drop(made);
        // SAFETY: the bytes are a `Box<[u8]>`'s heap allocation, which no later push moves
        // (the list moves the box, not what it points to) and which is only dropped or
        // written by `clear` and `last_mut`, both `&mut self`: so no caller can hold the
        // returned `&self`-bound slice while they run.
        unsafe { std::slice::from_raw_parts(ptr, n) }
    }

    /// The newest copy, to write to.
    pub(crate) fn last_mut(&mut self) -> Option<&mut [u8]> {
        let made = self.made.get_mut().unwrap_or_else(|e| e.into_inner());
        made.last_mut().map(|(_, copy)| &mut copy[..])
    }

    /// How many copies were made since the last [`clear`](Self::clear), and their bytes.
    pub(crate) fn made(&self) -> (usize, usize) {
        let made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        (made.len(), made.iter().map(|(_, copy)| copy.len()).sum())
    }

    /// Drops every copy.
    pub(crate) fn clear(&mut self) {
        let made = self.made.get_mut().unwrap_or_else(|e| e.into_inner());
        if !made.is_empty() {
            made.clear();
        }
    }
}
