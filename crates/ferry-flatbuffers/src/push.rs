//! The one call into the `flatbuffers` crate's unsafe `Push::push`, which generated structs,
//! scalars and offsets implement.

#![allow(unsafe_code)]

use stock::Push;

/// Writes `x` into `dst` (its `P::size()` bytes), `written_len` being how many bytes of the
/// message follow `dst` (offsets are encoded relative to it).
///
/// # Panics
/// If `dst` is shorter than `P::size()`.
#[inline]
pub(crate) fn push_into<P: Push>(x: &P, dst: &mut [u8], written_len: usize) {
    assert!(
        dst.len() >= P::size(),
        "push of {} bytes into {}",
        P::size(),
        dst.len()
    );
    // SAFETY: `Push::push` requires `dst` to be at least `P::size()` bytes (asserted above) and
    // aligned to `P::alignment()`. FlatBuffers alignment is of offsets from the end of the
    // message, which the builder established with `align` before reserving `dst`, exactly as
    // the stock builder does; like the stock builder's `Vec<u8>`, our blocks give no stronger
    // address alignment, and every `Push` implementation (scalars through
    // `emplace_scalar`'s `copy_nonoverlapping`, generated structs by `copy_from_slice`,
    // offsets through `emplace_scalar`) writes bytes without assuming it.
    unsafe { x.push(dst, written_len) }
}
