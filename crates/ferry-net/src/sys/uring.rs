//! io_uring zero-copy sends: `SEND_ZC` from a registered pool region when the gather list is
//! one contiguous range of one, `SENDMSG_ZC` otherwise. Each request yields a result CQE
//! (bytes sent) and, when it is flagged `MORE`, a notification CQE once the kernel no longer
//! reads the memory; both carry the request's id.

use std::collections::HashMap;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_buf::{Pool, RegionInfo};
use io_uring::{IoUring, cqueue, opcode, types};

/// `IORING_SEND_ZC_REPORT_USAGE`: notifications say whether the kernel copied after all.
const SEND_ZC_REPORT_USAGE: u16 = 8;
/// `IORING_NOTIF_USAGE_ZC_COPIED`, in the notification's `res`.
const NOTIF_USAGE_ZC_COPIED: i32 = i32::MIN;
/// Registered-buffer table size: regions beyond it are sent with `SENDMSG_ZC`.
const FIXED_SLOTS: u32 = 1024;
/// Submission and completion queue depth.
const RING_ENTRIES: u32 = 64;

/// A result: the request `id` sent `res` bytes (or failed with `-res`); `more` if its
/// notification is still to come.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendResult {
    pub(crate) res: i32,
    pub(crate) more: bool,
    /// Sent with `SEND_ZC` from a registered buffer.
    pub(crate) fixed: bool,
}

/// One send ring per connection.
pub(crate) struct Ring {
    ring: IoUring,
    /// Regions the pool announced, not yet registered.
    pending: Arc<Mutex<Vec<RegionInfo>>>,
    /// Registered regions: `addr / region_size` → fixed-buffer index.
    fixed: HashMap<usize, u16>,
    region_size: usize,
    fixed_ok: bool,
    msg: Box<libc::msghdr>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("fixed", &self.fixed.len())
            .finish_non_exhaustive()
    }
}

impl Ring {
    /// A ring whose fixed-buffer table follows `pool`'s regions. Registration failures only
    /// disable the `SEND_ZC` fast path.
    pub(crate) fn new(pool: &Pool) -> io::Result<Ring> {
        let ring = IoUring::new(RING_ENTRIES)?;
        let fixed_ok = ring.submitter().register_buffers_sparse(FIXED_SLOTS).is_ok();
        let pending = Arc::new(Mutex::new(Vec::new()));
        if fixed_ok {
            // The hook holds only a weak handle: once this ring is gone it does nothing.
            let weak = Arc::downgrade(&pending);
            pool.on_region(move |info| {
                if let Some(pending) = weak.upgrade() {
                    pending.lock().unwrap_or_else(PoisonError::into_inner).push(*info);
                }
            });
        }
        Ok(Ring {
            ring,
            pending,
            fixed: HashMap::new(),
            region_size: pool.config().region_size,
            fixed_ok,
            // SAFETY: an all-zero `msghdr` is a valid empty header.
            msg: Box::new(unsafe { mem::zeroed() }),
        })
    }

    fn sync_regions(&mut self) {
        let pending = mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        for info in pending {
            let Ok(index) = u16::try_from(info.index) else {
                continue;
            };
            if u32::from(index) >= FIXED_SLOTS {
                continue;
            }
            let iov = libc::iovec {
                iov_base: info.addr.cast_mut().cast(),
                iov_len: info.len,
            };
            // SAFETY: the range is a mapped pool region (the hook reports only mapped ones), and
            // registration pins its pages, so even if the pool is unmapped first the kernel
            // never touches freed memory; sends are only submitted from live pool buffers.
            let registered = unsafe {
                self.ring
                    .submitter()
                    .register_buffers_update(u32::from(index), &[iov], None)
            };
            if registered.is_ok() {
                self.fixed.insert(info.addr.addr() / self.region_size, index);
            }
        }
    }

    /// The ring's descriptor: readable when completions are waiting.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor is the ring's own and lives as long as `self`.
        unsafe { BorrowedFd::borrow_raw(self.ring.as_raw_fd()) }
    }

    /// The fixed-buffer index covering `iov`, if it lies in a registered region.
    fn fixed_index(&self, iov: &libc::iovec) -> Option<u16> {
        let start = iov.iov_base.addr();
        let key = start / self.region_size;
        let end = start.checked_add(iov.iov_len)?;
        let inside = end <= (key + 1) * self.region_size;
        self.fixed.get(&key).copied().filter(|_| inside)
    }

    /// Submits one zero-copy send of `iov` as request `id` and waits for its result. Other
    /// completions seen meanwhile are passed to `notified(id, copied)`.
    ///
    /// # Safety
    /// Every entry of `iov` must point at readable memory that stays alive and unchanged until
    /// the notification for `id` has been passed to `notified` (or the result said no
    /// notification follows).
    pub(crate) unsafe fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        iov: &[libc::iovec],
        id: u32,
        notified: &mut impl FnMut(u32, bool),
    ) -> io::Result<SendResult> {
        if self.fixed_ok {
            self.sync_regions();
        }
        let fd = types::Fd(fd.as_raw_fd());
        let flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
        let fixed = match iov {
            [one] => self
                .fixed_index(one)
                .filter(|_| u32::try_from(one.iov_len).is_ok()),
            _ => None,
        };
        let entry = match (fixed, iov) {
            (Some(index), [one]) => opcode::SendZc::new(fd, one.iov_base.cast(), one.iov_len as u32)
                .buf_index(Some(index))
                .flags(flags)
                .zc_flags(SEND_ZC_REPORT_USAGE)
                .build(),
            _ => {
                self.msg.msg_iov = iov.as_ptr().cast_mut();
                self.msg.msg_iovlen = iov.len();
                opcode::SendMsgZc::new(fd, &*self.msg)
                    .ioprio(SEND_ZC_REPORT_USAGE)
                    .flags(flags as u32)
                    .build()
            }
        }
        .user_data(u64::from(id));
        // SAFETY: the entry names `self.msg` (boxed, lives as long as the ring) and `iov`,
        // which the caller keeps valid until the result (the kernel copies the header and the
        // iovec array when it issues the request, before the result is posted); the memory
        // they point at is the caller's to keep until the notification.
        unsafe {
            self.ring
                .submission()
                .push(&entry)
                .map_err(|_| io::Error::other("submission queue full"))?;
        }
        loop {
            self.ring.submit_and_wait(1)?;
            let mut result = None;
            for cqe in self.ring.completion() {
                let cid = cqe.user_data() as u32;
                if cqueue::notif(cqe.flags()) {
                    notified(cid, cqe.result() & NOTIF_USAGE_ZC_COPIED != 0);
                } else if cid == id {
                    result = Some(SendResult {
                        res: cqe.result(),
                        more: cqueue::more(cqe.flags()),
                        fixed: fixed.is_some(),
                    });
                }
            }
            if let Some(result) = result {
                return Ok(result);
            }
        }
    }

    /// Passes every notification already posted to `notified`; with `wait`, first waits for
    /// at least one completion, at most `wait` long.
    pub(crate) fn reap(
        &mut self,
        wait: Option<Duration>,
        notified: &mut impl FnMut(u32, bool),
    ) -> io::Result<()> {
        if let Some(timeout) = wait {
            let ts = types::Timespec::from(timeout);
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ETIME) || e.kind() == io::ErrorKind::Interrupted => {
                }
                Err(e) => return Err(e),
            }
        }
        for cqe in self.ring.completion() {
            if cqueue::notif(cqe.flags()) {
                notified(cqe.user_data() as u32, cqe.result() & NOTIF_USAGE_ZC_COPIED != 0);
            }
        }
        Ok(())
    }
}

// SAFETY: `msg` is only read by the kernel during a `send` call, which takes `&mut self`; the
// ring itself is owned, and the pending-region list is behind a mutex.
unsafe impl Send for Ring {}
