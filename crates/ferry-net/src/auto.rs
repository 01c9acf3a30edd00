//! [`Mode::Auto`](crate::Mode::Auto): the per-message choice between the primitives.
//!
//! The rule, from `ferry bench datapath` on this kind of machine (see
//! `docs/benchmarks/datapath.md`):
//!
//! 1. **Copy or gather, per message.** A message whose zero-copy values average at least
//!    [`GATHER_MIN_VALUE`] bytes is gathered: its values become gather entries of the
//!    `sendmsg`. Smaller values are copied into the staging buffer, because one more gather
//!    entry costs the kernel more than copying a value of up to a few KiB does (on loopback,
//!    batched, gathering 1-2 KiB values ran at 0.7-0.9x the throughput of copying them, and
//!    values of 4 KiB and more at 1.0-1.1x).
//! 2. **`MSG_ZEROCOPY`, per send call,** when the call carries at least [`ZEROCOPY_MIN_CALL`]
//!    bytes, *and* the kernel is not copying anyway: after [`PROBE_CALLS`] zero-copy calls,
//!    if more than half of the completions were flagged `SO_EE_CODE_ZEROCOPY_COPIED` (always
//!    the case on loopback and veth), the connection stops asking for zero copy.
//!
//! io_uring `SEND_ZC` is never chosen automatically: with every completion copied on the
//! paths this machine has, it only adds a notification per request.

use ferry_wire::Layout;

use crate::queue::Placement;

/// Smallest average zero-copy value, in bytes, that [`Mode::Auto`](crate::Mode::Auto) sends as
/// a gather entry rather than copying.
pub const GATHER_MIN_VALUE: usize = 4096;

/// Smallest send call, in bytes, for which [`Mode::Auto`](crate::Mode::Auto) asks for
/// `MSG_ZEROCOPY` (the kernel's documentation puts the break-even around 10 KB).
pub const ZEROCOPY_MIN_CALL: usize = 64 << 10;

/// Zero-copy calls observed before deciding whether the kernel really avoids the copy.
pub const PROBE_CALLS: u64 = 16;

#[derive(Debug, Clone)]
pub(crate) struct Auto {
    zerocopy: bool,
    completed: u64,
    copied: u64,
}

impl Auto {
    pub(crate) fn new(zerocopy_available: bool) -> Auto {
        Auto {
            zerocopy: zerocopy_available,
            completed: 0,
            copied: 0,
        }
    }

    pub(crate) fn placement(&self, layout: &Layout) -> Placement {
        match layout.zero_copy_len.checked_div(layout.zero_copy_count) {
            Some(avg) if avg >= GATHER_MIN_VALUE => Placement::Gather,
            _ => Placement::Copy,
        }
    }

    /// Whether to send this gather list with `MSG_ZEROCOPY`.
    pub(crate) fn zerocopy(&self, iov: &[libc::iovec]) -> bool {
        self.zerocopy && iov.iter().map(|v| v.iov_len).sum::<usize>() >= ZEROCOPY_MIN_CALL
    }

    /// Records `calls` completions, all `copied` or not.
    pub(crate) fn observe(&mut self, copied: bool, calls: u32) {
        self.completed += u64::from(calls);
        if copied {
            self.copied += u64::from(calls);
        }
        if self.zerocopy && self.completed >= PROBE_CALLS && self.copied * 2 > self.completed {
            self.zerocopy = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_asking_for_zero_copy_once_the_kernel_copies() {
        let mut a = Auto::new(true);
        let big = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: ZEROCOPY_MIN_CALL,
        }];
        let small = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: ZEROCOPY_MIN_CALL - 1,
        }];
        assert!(a.zerocopy(&big));
        assert!(!a.zerocopy(&small));
        a.observe(true, (PROBE_CALLS - 1) as u32);
        assert!(a.zerocopy, "still probing");
        a.observe(true, 1);
        assert!(!a.zerocopy(&big));
        let mut real = Auto::new(true);
        real.observe(false, 100);
        assert!(
            real.zerocopy(&big),
            "a kernel that does not copy keeps zero copy on"
        );
        assert!(!Auto::new(false).zerocopy(&big));
    }
}
