//! The unsafe edge of the shared-memory transport: mapping the peer's memfd read-only, words
//! of shared memory read and written atomically, the write prefetch of this side's own blocks,
//! descriptor passing, and eventfds.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use ferry_buf::BufMut;

/// The peer's memfd, mapped read-only: everything the peer sends lies in it.
///
/// The peer can write this memory at any time. Reads of protocol metadata go through
/// [`Mapping::load_u64`] / [`Mapping::copy_out`] (read once, then validated); payload bytes are
/// handed out as slices ([`Mapping::bytes`]) for in-place decoding, which is bounds-checked
/// against the mapping, so a peer that rewrites them can make the reader see different bytes
/// but never read outside the mapping.
#[derive(Debug)]
pub(crate) struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is a read-only view of shared memory; it is only read, through the
// methods below, which are safe to call from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps all of `fd` (its size from `fstat`, not from the peer's word) read-only, shared.
    /// Refuses a file that is not sealed against shrinking: the peer could truncate it and
    /// make every read of the tail fault (SIGBUS).
    pub(crate) fn map_readonly(fd: BorrowedFd<'_>) -> io::Result<Mapping> {
        // SAFETY: plain syscall on a descriptor we hold.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(io::Error::other(
                "the peer's memory is not a memfd sealed against shrinking",
            ));
        }
        // SAFETY: a zeroed `stat` is a valid output buffer.
        let mut st: libc::stat = unsafe { mem::zeroed() };
        // SAFETY: `st` is a valid, writable `stat`.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let len = usize::try_from(st.st_size).map_err(|_| io::Error::other("negative memfd size"))?;
        if len == 0 {
            return Err(io::Error::other("the peer's memfd is empty"));
        }
        // SAFETY: a new mapping at an address the kernel chooses; touches no existing memory.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            base: NonNull::new(raw.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?,
            len,
        })
    }

    /// Whether `offset .. offset + len` lies inside the mapping.
    pub(crate) fn contains(&self, offset: usize, len: usize) -> bool {
        offset <= self.len && len <= self.len - offset
    }

    /// The 8-byte word at `offset` (8-aligned, inside), read atomically (acquire).
    pub(crate) fn load_u64(&self, offset: usize) -> Option<u64> {
        if offset % 8 != 0 || !self.contains(offset, 8) {
            return None;
        }
        // SAFETY: inside the mapping and 8-aligned (the mapping is page-aligned); the memory is
        // shared with the peer, which writes such words atomically; an atomic load of read-only
        // memory is a plain load on the targets Linux supports for this crate.
        Some(unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) }.load(Ordering::Acquire))
    }

    /// Asks the CPU to start loading the cache lines of `offset .. offset + len` (the part
    /// inside the mapping), so that lines whose addresses are known early arrive together
    /// rather than one after another. A hint: no effect on what is read.
    pub(crate) fn prefetch(&self, offset: usize, len: usize) {
        let end = offset.saturating_add(len).min(self.len);
        let mut at = offset;
        while at < end {
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                // SAFETY: `at` is inside the mapping (below `end`, at most its length); a
                // prefetch reads nothing into the program and never faults.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(self.base.as_ptr().add(at).cast::<i8>()) };
            }
            at += 64;
        }
    }

    /// `N` 8-aligned words at `offset`, little-endian, each loaded once (preambles and message
    /// headers: what is loaded is what gets validated). `None` if unaligned or outside.
    pub(crate) fn load_words<const N: usize>(&self, offset: usize) -> Option<[u64; N]> {
        if offset % 8 != 0 || !self.contains(offset, 8 * N) {
            return None;
        }
        Some(std::array::from_fn(|i| {
            // SAFETY: the 8 bytes are inside the mapping (range checked above) and 8-aligned
            // (the mapping is page-aligned); volatile, since the peer may be writing them.
            let word = unsafe {
                self.base
                    .as_ptr()
                    .add(offset + 8 * i)
                    .cast::<u64>()
                    .read_volatile()
            };
            u64::from_le(word)
        }))
    }

    /// Copies `out.len()` bytes at `offset` out of the mapping (read once: the copy is what
    /// gets validated). `None` if the range is outside.
    pub(crate) fn copy_out(&self, offset: usize, out: &mut [u8]) -> Option<()> {
        if !self.contains(offset, out.len()) {
            return None;
        }
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: the source byte is inside the mapping (range checked above); volatile,
            // since the peer may be writing it.
            *b = unsafe { self.base.as_ptr().add(offset + i).read_volatile() };
        }
        Some(())
    }

    /// The whole mapping as bytes, for in-place decoding (see the type's docs).
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `base .. base + len` is mapped readable for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.len) }
    }
}

/// Asks the CPU to take the cache lines of `bytes` for writing: x86-64's `prefetchw`, where
/// the CPU has it (else nothing). For memory this side is about to write that the peer has
/// read since it was last written: the peer's copies are invalidated now, in the background,
/// rather than when the stores that refill the lines leave the store buffer (each store then
/// waits for its line, and every later store, the ring entry's among them, behind it). A
/// hint: no effect on the memory's contents.
pub(crate) fn prefetch_write(bytes: &mut [u8]) {
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = bytes;
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if *HAS_PREFETCHW {
        for at in (0..bytes.len()).step_by(64) {
            // SAFETY: `prefetchw` exists on this CPU (checked above); it is a hint that
            // neither changes memory nor faults, and its address lies inside `bytes`.
            unsafe {
                std::arch::asm!(
                    "prefetchw [{}]",
                    in(reg) bytes.as_ptr().add(at),
                    options(nostack, preserves_flags, readonly)
                );
            }
        }
    }
}

/// Whether the CPU has `prefetchw` (CPUID 8000_0001h, ECX bit 8: PRFCHW), asked once.
#[cfg(all(target_arch = "x86_64", not(miri)))]
static HAS_PREFETCHW: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
    use std::arch::x86_64::__cpuid;
    __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
});

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map_readonly` made; every slice handed out
        // borrows `self`, so none outlives it.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// This side's control area: a buffer of its own shared memory (in its pool's memfd) that the
/// peer reads, as the 8-byte words it is written in. Its address and length are taken once, so
/// a store costs a range check, not a slice of the buffer and an alignment check.
#[derive(Debug)]
pub(crate) struct OwnWords {
    /// Keeps the memory allocated; not accessed through after `new`.
    _buf: BufMut,
    base: NonNull<AtomicU64>,
    words: usize,
}

impl OwnWords {
    /// The first `buf.len()` bytes of `buf` as words.
    ///
    /// # Panics
    /// If `buf` is not 8-aligned (a bug in this crate, not peer input).
    pub(crate) fn new(mut buf: BufMut) -> OwnWords {
        let len = buf.len();
        let area = &mut buf.capacity_mut()[..len];
        assert_eq!(area.as_ptr().addr() % 8, 0, "shared words are 8-aligned");
        let base = NonNull::from(area).cast();
        OwnWords {
            _buf: buf,
            base,
            words: len / 8,
        }
    }

    /// Stores `value` with release ordering in the word at byte `offset`.
    ///
    /// # Panics
    /// If `offset` is not 8-aligned or the word is outside the area (a bug in this crate, not
    /// peer input).
    pub(crate) fn store(&self, offset: usize, value: u64) {
        let word = offset / 8;
        assert!(
            offset % 8 == 0 && word < self.words,
            "a shared word outside the control area"
        );
        // SAFETY: `word` is inside the area (checked above), which `_buf` keeps allocated for
        // the life of `self` and which nothing else accesses after `new` (the base is 8-aligned,
        // checked there); it is only accessed atomically, here and by the peer.
        unsafe { self.base.add(word).as_ref() }.store(value, Ordering::Release);
    }
}

/// Sends `data` and the descriptors `fds` in one message on `sock`.
pub(crate) fn send_fds(sock: &UnixStream, data: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    let raw: Vec<i32> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let payload = mem::size_of_val(raw.as_slice()) as u32;
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(payload) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let iov = [IoSlice::new(data)];
    // SAFETY: a zeroed `msghdr` is a valid empty header.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = iov.as_ptr().cast_mut().cast();
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: `msg` names `control`, which has room for one cmsg of `payload` bytes.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(payload) as usize;
        std::ptr::copy_nonoverlapping(raw.as_ptr(), libc::CMSG_DATA(cmsg).cast::<i32>(), raw.len());
    }
    // A signal before anything was sent interrupts the call with nothing sent: send again.
    let n = retry_interrupted(|| {
        // SAFETY: `msg` points at live buffers for the duration of the call.
        unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) }
    })?;
    if n as usize != data.len() {
        return Err(io::Error::other("short write of the setup message"));
    }
    Ok(())
}

/// Makes a socket call until a signal does not interrupt it: its count, or its error.
fn retry_interrupted(mut call: impl FnMut() -> isize) -> io::Result<isize> {
    loop {
        let n = call();
        if n >= 0 {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receives one message of exactly `data.len()` bytes with up to `max_fds` descriptors.
pub(crate) fn recv_fds(sock: &UnixStream, data: &mut [u8], max_fds: usize) -> io::Result<Vec<OwnedFd>> {
    let payload = (max_fds * mem::size_of::<i32>()) as u32;
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(payload) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = [IoSliceMut::new(data)];
    // SAFETY: a zeroed `msghdr` is a valid empty header.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr().cast();
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // A signal before anything arrived interrupts the call with nothing taken (one after some
    // data returns the short count, refused below): wait again.
    let n = retry_interrupted(|| {
        // SAFETY: `msg` points at live, writable buffers for the duration of the call.
        unsafe {
            libc::recvmsg(
                sock.as_raw_fd(),
                &mut msg,
                libc::MSG_CMSG_CLOEXEC | libc::MSG_WAITALL,
            )
        }
    })?;
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `msg`; the CMSG macros stay within `msg_controllen`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(cmsg).cast::<i32>();
                for i in 0..bytes / mem::size_of::<i32>() {
                    // Each received descriptor is new and ours alone.
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::other("the peer sent more descriptors than expected"));
    }
    if n as usize != data.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "short setup message",
        ));
    }
    Ok(fds)
}

/// A new non-blocking eventfd (a doorbell).
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: creates a new descriptor.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Checks that `fd` is an eventfd and makes it non-blocking: a peer could hand over a
/// descriptor whose writes block (a full pipe or socket) and stall every send that rings it.
pub(crate) fn adopt_doorbell(fd: &OwnedFd) -> io::Result<()> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
    if link.as_os_str() != "anon_inode:[eventfd]" {
        return Err(io::Error::other(format!(
            "the peer's doorbell is not an eventfd ({})",
            link.display()
        )));
    }
    // SAFETY: plain syscalls on a descriptor we own.
    let ok = unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Rings a doorbell.
pub(crate) fn ring(fd: BorrowedFd<'_>) -> io::Result<()> {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes from a live buffer.
    let n = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) };
    if n < 0 {
        let e = io::Error::last_os_error();
        // A full counter still wakes the reader.
        if e.kind() != io::ErrorKind::WouldBlock {
            return Err(e);
        }
    }
    Ok(())
}

/// Clears a doorbell (non-blocking).
pub(crate) fn drain(fd: BorrowedFd<'_>) {
    let mut buf = [0u8; 8];
    // SAFETY: reads at most 8 bytes into a live buffer.
    let _ = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
}

/// Waits until `doorbell` is readable or `socket` is readable/hung up, or `timeout_ms` passes.
/// Returns whether the socket signalled (the peer closed or died).
pub(crate) fn wait(doorbell: BorrowedFd<'_>, socket: BorrowedFd<'_>, timeout_ms: i32) -> io::Result<bool> {
    let mut fds = [
        libc::pollfd {
            fd: doorbell.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: socket.as_fd().as_raw_fd(),
            events: libc::POLLIN | libc::POLLRDHUP,
            revents: 0,
        },
    ];
    // SAFETY: two valid `pollfd`s for the duration of the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(fds[1].revents != 0)
}

/// Whether the peer has closed `socket` (it never sends after the handshake, so readable
/// means end of stream). Does not wait.
pub(crate) fn hung_up(socket: BorrowedFd<'_>) -> bool {
    let mut fd = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid `pollfd` for the duration of the call.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & (libc::POLLHUP | libc::POLLRDHUP | libc::POLLERR) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn ignore(_: libc::c_int) {}

    /// Regression: a signal delivered while the setup exchange waited in `recvmsg` failed the
    /// connection with "Interrupted system call" (seen in `serve.rs`'s reconnect test).
    #[test]
    fn a_signal_during_the_setup_exchange_is_not_an_error() {
        // SAFETY: installs a handler that does nothing, without SA_RESTART, so that a blocked
        // socket call returns EINTR.
        unsafe {
            let mut action: libc::sigaction = mem::zeroed();
            action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as usize;
            assert_eq!(libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()), 0);
        }
        let (a, b) = UnixStream::pair().unwrap();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let receiver = std::thread::spawn(move || {
            // SAFETY: gettid and pthread_self have no preconditions.
            tid_tx
                .send(unsafe { (libc::gettid(), libc::pthread_self()) })
                .unwrap();
            let mut data = [0u8; 4];
            recv_fds(&b, &mut data, 2).map(|fds| (data, fds.len()))
        });
        let (tid, thread) = tid_rx.recv().unwrap();
        // Wait until the receiver sleeps in the kernel (state S), then interrupt it.
        let stat = format!("/proc/self/task/{tid}/stat");
        let sleeping = || {
            std::fs::read_to_string(&stat)
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .map(|rest| rest.trim_start().starts_with('S'))
                })
                .unwrap_or(false)
        };
        while !sleeping() {
            std::thread::yield_now();
        }
        // SAFETY: the thread is alive: it cannot return before the data below is sent.
        assert_eq!(unsafe { libc::pthread_kill(thread, libc::SIGUSR2) }, 0);
        let fd = eventfd().unwrap();
        send_fds(&a, b"ping", &[fd.as_fd()]).unwrap();
        let (data, fds) = receiver.join().unwrap().expect("the interrupted wait went on");
        assert_eq!((&data, fds), (b"ping", 1));
    }
}
