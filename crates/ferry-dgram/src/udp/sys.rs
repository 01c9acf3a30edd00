//! The unsafe edge of the UDP driver: `sendmmsg`/`recvmmsg` with their control messages
//! (`UDP_SEGMENT` out, `UDP_GRO` in), two socket options, `poll` and `getrandom`. Every
//! function here is safe to call: the memory handed to the kernel is borrowed for the call
//! only (no zero-copy flags), and every header, address and control buffer lives in a
//! [`Scratch`] the caller lends for the call (zeroed once, not per call: zeroing 64 of each,
//! 14 KiB, per `recvmmsg` and `sendmmsg` was 17 % of a 64-byte call's instructions at 128 in
//! flight).

use std::io::{self, IoSlice};
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd};

/// The most datagrams (or GSO groups) one `sendmmsg`/`recvmmsg` takes.
pub(crate) const MAX_BATCH: usize = 64;

/// Room for one control message with an `int` (or `u16`) payload, 8-aligned.
type Control = [u64; 4];
const _: () = assert!(
    mem::size_of::<Control>() >= 24,
    "CMSG_SPACE(4) on 64-bit Linux is 24"
);

/// The headers, addresses, iovecs and control buffers of one `sendmmsg` or `recvmmsg`,
/// kept by the driver and lent to each call, which sets every field the kernel reads.
pub(crate) struct Scratch {
    hdrs: [libc::mmsghdr; MAX_BATCH],
    names: [libc::sockaddr_storage; MAX_BATCH],
    controls: [Control; MAX_BATCH],
    iovs: [libc::iovec; MAX_BATCH],
}

// SAFETY: the raw pointers inside `hdrs` and `iovs` are written by each call before the
// syscall and point into the scratch itself or into memory that call borrows; no pointer is
// read outside a call, so moving the scratch to another thread between calls is sound.
unsafe impl Send for Scratch {}

impl Scratch {
    pub(crate) fn new() -> Box<Scratch> {
        // SAFETY: all-zero is a valid value of these plain C structs (null pointers, zero
        // lengths). Once per endpoint, so the copy onto the heap does not matter.
        Box::new(unsafe { mem::zeroed::<Scratch>() })
    }
}

/// One datagram (or, with `segment`, one GSO group) to send.
pub(crate) struct OutMsg<'a> {
    pub(crate) destination: SocketAddr,
    /// The bytes, gathered in order.
    pub(crate) iov: &'a [IoSlice<'a>],
    /// `UDP_SEGMENT`: the kernel cuts the bytes into datagrams of this size (the last may be
    /// shorter).
    pub(crate) segment: Option<u16>,
}

/// What `recvmmsg` said about one receive buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InMsg {
    /// Bytes written into the buffer.
    pub(crate) len: usize,
    /// The sender, if its address family is one we know.
    pub(crate) from: Option<SocketAddr>,
    /// The `UDP_GRO` segment size: the buffer holds several datagrams of this size (the
    /// last may be shorter).
    pub(crate) segment: Option<usize>,
    /// The datagram was longer than the buffer (`MSG_TRUNC`).
    pub(crate) truncated: bool,
}

impl InMsg {
    pub(crate) const EMPTY: InMsg = InMsg {
        len: 0,
        from: None,
        segment: None,
        truncated: false,
    };
}

fn to_raw(addr: &SocketAddr, storage: &mut libc::sockaddr_storage) -> libc::socklen_t {
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for `sockaddr_in`.
            unsafe {
                (storage as *mut libc::sockaddr_storage)
                    .cast::<libc::sockaddr_in>()
                    .write(sin)
            };
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for `sockaddr_in6`.
            unsafe {
                (storage as *mut libc::sockaddr_storage)
                    .cast::<libc::sockaddr_in6>()
                    .write(sin6)
            };
            mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

fn from_raw(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the kernel wrote a `sockaddr_in`; storage is aligned for it.
            let sin = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the kernel wrote a `sockaddr_in6`; storage is aligned for it.
            let sin6 = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// `sendmmsg(fd, msgs, MSG_DONTWAIT)`: how many of `msgs` (at most [`MAX_BATCH`]) the kernel
/// took, from the front. An error means the first was not sent.
pub(crate) fn sendmmsg(fd: BorrowedFd<'_>, msgs: &[OutMsg<'_>], scratch: &mut Scratch) -> io::Result<usize> {
    let n = msgs.len().min(MAX_BATCH);
    let Scratch {
        hdrs,
        names,
        controls,
        ..
    } = scratch;
    for (i, m) in msgs[..n].iter().enumerate() {
        let name_len = to_raw(&m.destination, &mut names[i]);
        let h = &mut hdrs[i].msg_hdr;
        h.msg_name = (&raw mut names[i]).cast();
        h.msg_namelen = name_len;
        // `IoSlice` is ABI-compatible with `struct iovec` on Unix (std guarantees it); the
        // kernel only reads through it.
        h.msg_iov = m.iov.as_ptr().cast::<libc::iovec>().cast_mut();
        h.msg_iovlen = m.iov.len();
        h.msg_control = std::ptr::null_mut();
        h.msg_controllen = 0;
        if let Some(seg) = m.segment {
            h.msg_control = controls[i].as_mut_ptr().cast();
            // SAFETY: CMSG_SPACE only computes a size.
            h.msg_controllen = unsafe { libc::CMSG_SPACE(mem::size_of::<u16>() as u32) } as usize;
            // SAFETY: `h` names `controls[i]`, which has room for one cmsg with a u16 (checked
            // above: 24 bytes >= CMSG_SPACE(2)); CMSG_FIRSTHDR/CMSG_DATA stay inside it.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(h);
                (*c).cmsg_level = libc::SOL_UDP;
                (*c).cmsg_type = libc::UDP_SEGMENT;
                (*c).cmsg_len = libc::CMSG_LEN(mem::size_of::<u16>() as u32) as usize;
                libc::CMSG_DATA(c).cast::<u16>().write_unaligned(seg);
            }
        }
    }
    const _: () = assert!(mem::size_of::<IoSlice<'_>>() == mem::size_of::<libc::iovec>());
    // SAFETY: `hdrs[..n]`, every field the kernel reads set above, point only at `names`,
    // `controls` (the scratch, borrowed for the call) and the borrowed iovecs of `msgs`, all
    // readable for the whole call; the kernel copies the data before returning (no MSG_ZEROCOPY).
    let sent = unsafe { libc::sendmmsg(fd.as_raw_fd(), hdrs.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}

/// `recvmmsg(fd, MSG_DONTWAIT)` into `buf`, cut into buffers of `buf_len` bytes (at most
/// [`MAX_BATCH`]); fills `out` in the same order and returns how many were received.
pub(crate) fn recvmmsg(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    buf_len: usize,
    out: &mut [InMsg; MAX_BATCH],
    scratch: &mut Scratch,
) -> io::Result<usize> {
    let Scratch {
        hdrs,
        names,
        controls,
        iovs,
    } = scratch;
    let mut n = 0;
    for (chunk, iov) in buf.chunks_exact_mut(buf_len).zip(iovs.iter_mut()) {
        iov.iov_base = chunk.as_mut_ptr().cast();
        iov.iov_len = chunk.len();
        n += 1;
    }
    for i in 0..n {
        let h = &mut hdrs[i].msg_hdr;
        h.msg_name = (&raw mut names[i]).cast();
        h.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_iov = &raw mut iovs[i];
        h.msg_iovlen = 1;
        h.msg_control = controls[i].as_mut_ptr().cast();
        h.msg_controllen = mem::size_of::<Control>();
    }
    // SAFETY: `hdrs[..n]`, every field the kernel reads set above, point at `names`, `iovs`,
    // `controls` (the scratch, borrowed for the call) and disjoint chunks of `buf` (mutably
    // borrowed for the call), each with its true length.
    let got = unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as u32,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    let got = got as usize;
    for i in 0..got {
        let h = &hdrs[i].msg_hdr;
        let mut m = InMsg::EMPTY;
        m.len = (hdrs[i].msg_len as usize).min(buf_len);
        m.truncated = h.msg_flags & libc::MSG_TRUNC != 0;
        m.from = from_raw(&names[i]);
        // SAFETY: the kernel filled `h.msg_control` (inside `controls[i]`) and set
        // `msg_controllen`; CMSG_FIRSTHDR/CMSG_NXTHDR bound every header by it.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(h) };
        while !c.is_null() {
            // SAFETY: `c` is non-null and inside the control buffer (see above); for
            // SOL_UDP/UDP_GRO the payload is an `int` within `cmsg_len`.
            unsafe {
                if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                    let seg = libc::CMSG_DATA(c).cast::<libc::c_int>().read_unaligned();
                    m.segment = usize::try_from(seg).ok().filter(|&s| s > 0);
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        out[i] = m;
    }
    Ok(got)
}

fn setsockopt_int(fd: BorrowedFd<'_>, level: i32, name: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a live `c_int` and its size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `UDP_GRO` on: the kernel may hand over several datagrams of one flow in one buffer.
pub(crate) fn enable_gro(fd: BorrowedFd<'_>) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_UDP, libc::UDP_GRO, 1)
}

/// `SO_SNDBUF`/`SO_RCVBUF` (the kernel doubles them, up to its `wmem_max`/`rmem_max`).
pub(crate) fn set_buffers(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let bytes = bytes.min(i32::MAX as usize) as libc::c_int;
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, bytes)?;
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes)
}

/// Waits until `fd` is readable (or writable, with `write`) or `timeout_ms` passes. Retries
/// on `EINTR`.
pub(crate) fn poll(fd: BorrowedFd<'_>, write: bool, timeout_ms: i32) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN | if write { libc::POLLOUT } else { 0 },
        revents: 0,
    };
    loop {
        // SAFETY: one valid `pollfd` for the duration of the call.
        if unsafe { libc::poll(&mut pfd, 1, timeout_ms) } >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Eight random bytes from the kernel (`getrandom`), for the endpoint's seed.
pub(crate) fn random_u64() -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    // SAFETY: `bytes` is writable for its length during the call.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != 8 {
        return Err(io::Error::last_os_error());
    }
    Ok(u64::from_ne_bytes(bytes))
}
