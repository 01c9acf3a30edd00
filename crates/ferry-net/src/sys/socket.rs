//! Socket syscalls the standard library does not wrap: `sendmsg` with flags, the
//! `MSG_ERRQUEUE` completion read, `poll`, and a few socket options.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `SO_EE_ORIGIN_ZEROCOPY` (`linux/errqueue.h`; not in `libc`).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED` (`linux/errqueue.h`; not in `libc`).
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// `struct sock_extended_err` from `linux/errqueue.h`.
#[repr(C)]
#[derive(Clone, Copy)]
struct SockExtendedErr {
    ee_errno: u32,
    ee_origin: u8,
    ee_type: u8,
    ee_code: u8,
    ee_pad: u8,
    ee_info: u32,
    ee_data: u32,
}
const _: () = assert!(mem::size_of::<SockExtendedErr>() == 16);

/// `sendmsg(fd, iov, flags | MSG_NOSIGNAL | MSG_DONTWAIT)`: bytes the kernel took.
///
/// # Safety
/// Every entry of `iov` must point at `iov_len` readable bytes that stay alive and unchanged
/// until the call returns, and, with `MSG_ZEROCOPY`, until the kernel's completion for it.
pub(crate) unsafe fn sendmsg(fd: BorrowedFd<'_>, iov: &[libc::iovec], zerocopy: bool) -> io::Result<usize> {
    // SAFETY: zeroed `msghdr` is a valid empty header (null name, no control data).
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = iov.as_ptr().cast_mut();
    msg.msg_iovlen = iov.len();
    let mut flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
    if zerocopy {
        flags |= libc::MSG_ZEROCOPY;
    }
    // SAFETY: `msg` points at `iov`, which is live for the call; the caller guarantees the
    // memory each entry names (see the function's contract).
    let n = unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `sendmsg(fd, slices, MSG_NOSIGNAL | MSG_DONTWAIT)` of borrowed slices, which the kernel
/// copies before the call returns (TLS records: never `MSG_ZEROCOPY`). Bytes the kernel took.
pub(crate) fn send_slices(fd: BorrowedFd<'_>, slices: &[io::IoSlice<'_>]) -> io::Result<usize> {
    // `IoSlice` is ABI-compatible with `struct iovec` on Unix (std guarantees it).
    let iov: &[libc::iovec] = {
        const _: () = assert!(mem::size_of::<io::IoSlice<'_>>() == mem::size_of::<libc::iovec>());
        // SAFETY: same size and layout (std documents `IoSlice` as `iovec` on Unix); the
        // borrow of `slices` outlives `iov`.
        unsafe { std::slice::from_raw_parts(slices.as_ptr().cast(), slices.len()) }
    };
    // SAFETY: every entry borrows readable memory of `slices` for the whole call, and without
    // `MSG_ZEROCOPY` the kernel is done with it when the call returns.
    unsafe { sendmsg(fd, iov, false) }
}

/// One zero-copy completion: ids `lo ..= hi`, and whether the kernel copied after all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ZcCompletion {
    pub(crate) lo: u32,
    pub(crate) hi: u32,
    pub(crate) copied: bool,
}

/// Reads one message from the socket's error queue without blocking. `Ok(None)` when the queue
/// is empty; non-zero-copy errors (a socket error) are returned as errors.
pub(crate) fn recv_completion(fd: BorrowedFd<'_>) -> io::Result<Option<ZcCompletion>> {
    // Room for one `cmsghdr` plus a `sock_extended_err` and the offender address, aligned.
    let mut control = [0u64; 16];
    // SAFETY: zeroed `msghdr` is a valid empty header.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = mem::size_of_val(&control);
    // SAFETY: `msg` names only `control`, which outlives the call; no data iovecs.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        };
    }
    // SAFETY: `msg` was filled by the kernel; CMSG_FIRSTHDR reads only its control fields.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and points inside `control` (the kernel bounds it by
        // `msg_controllen`, and CMSG_NXTHDR checks the bound).
        let (level, kind) = unsafe { ((*cmsg).cmsg_level, (*cmsg).cmsg_type) };
        let ours = (level == libc::SOL_IP && kind == libc::IP_RECVERR)
            || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR);
        if ours {
            // SAFETY: for IP(V6)_RECVERR the payload is a `sock_extended_err`; `control` is
            // 8-aligned and CMSG_DATA is aligned for it; read_unaligned avoids relying on that.
            let err: SockExtendedErr =
                unsafe { libc::CMSG_DATA(cmsg).cast::<SockExtendedErr>().read_unaligned() };
            if err.ee_origin == SO_EE_ORIGIN_ZEROCOPY && err.ee_errno == 0 {
                return Ok(Some(ZcCompletion {
                    lo: err.ee_info,
                    hi: err.ee_data,
                    copied: err.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
                }));
            }
            return Err(io::Error::from_raw_os_error(err.ee_errno as i32));
        }
        // SAFETY: `msg` and `cmsg` are as above.
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    Err(io::Error::other("error queue message without an extended error"))
}

/// What `poll` reported beyond the readiness asked for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ready {
    /// `POLLIN` or `POLLHUP`: a read will not block.
    pub(crate) read: bool,
    /// `POLLERR`: the error queue holds completions (or the socket failed).
    pub(crate) error: bool,
}

/// Waits until `fd` is readable (`read`), writable (`write`) or has an error-queue entry
/// (always watched), or `timeout_ms` passes (-1: no limit). Retries on `EINTR`.
pub(crate) fn poll(fd: BorrowedFd<'_>, read: bool, write: bool, timeout_ms: i32) -> io::Result<Ready> {
    let mut events = 0;
    if read {
        events |= libc::POLLIN;
    }
    if write {
        events |= libc::POLLOUT;
    }
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        // SAFETY: one valid `pollfd` for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if n >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(Ready {
        read: pfd.revents & (libc::POLLIN | libc::POLLHUP) != 0,
        error: pfd.revents & libc::POLLERR != 0,
    })
}

fn setsockopt<T>(fd: BorrowedFd<'_>, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live `T` and its size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `SO_ZEROCOPY` on: `MSG_ZEROCOPY` sends are then honoured.
pub(crate) fn enable_zerocopy(fd: BorrowedFd<'_>) -> io::Result<()> {
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_ZEROCOPY, &1i32)
}

/// `SO_SNDBUF` (the kernel doubles it, with a floor).
pub(crate) fn set_send_buffer(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_SNDBUF,
        &(bytes.min(i32::MAX as usize) as i32),
    )
}

/// `SO_RCVBUF` (the kernel doubles it, with a floor).
pub(crate) fn set_recv_buffer(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_RCVBUF,
        &(bytes.min(i32::MAX as usize) as i32),
    )
}

/// `SO_RCVLOWAT`: the socket polls readable once it holds `bytes` (or at an end of stream).
pub(crate) fn set_recv_low_water(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_RCVLOWAT,
        &(bytes.min(i32::MAX as usize) as i32),
    )
}

/// `TCP_CONGESTION`: the congestion control algorithm, by name (`cubic`, `bbr`, `reno`).
pub(crate) fn set_congestion(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: `name` is live for the call and its length is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
