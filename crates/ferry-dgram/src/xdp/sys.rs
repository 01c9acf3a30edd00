//! The unsafe edge of the AF_XDP driver: the socket, the UMEM registration, the four rings
//! mapped from the kernel, `poll`, the `sendto` kick, `XDP_STATISTICS` and `getrandom`.
//!
//! Rings are written by hand with `libc` rather than through xsk-rs: the UMEM must be the
//! pool's memory, the rings are a hundred lines, and every unsafe step stays in view here.
//!
//! **The UMEM is the pool's frames.** [`Xsk::open`] takes every slot of one pool region
//! (as [`BufMut`]s, so the pool hands them to no one else while the socket lives) and checks
//! that they tile the region exactly; that region is registered (`XDP_UMEM_REG`) with the
//! slot size as the chunk size, so UMEM address `i * frame` is slot `i`. Frames change hands
//! only through the rings, and this module keeps the books, so no frame is touched in user
//! space while the kernel may write it:
//!
//! ```text
//! rx frames (ring_size of them, a fixed set):
//!   fill ring ─► kernel copies a packet in ─► RX ring ─► recv() lends it read-only to the
//!   caller for one call (a packet spanning frames: a copy gathered from them) ─► straight
//!   back to the fill ring
//! tx frames (the rest):
//!   free list ─► send() lends it to the caller to write ─► TX ring ─► kernel (copies it
//!   out, or the NIC reads it in zero-copy mode) ─► completion ring ─► reclaim() ─► free list
//! ```
//!
//! Memory orderings, as the kernel's `xsk_queue.h` asks: the side that produces writes its
//! descriptors, then stores its producer index with `Release`; the side that consumes loads the
//! producer with `Acquire` before reading descriptors, and stores its consumer index with
//! `Release` after it is done with them (so the producer may reuse the slots).

use std::io;
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use ferry_buf::{BufMut, RegionInfo};

/// Where a UMEM frame is, from the kernel's side: its offset in the UMEM.
type UmemAddr = u64;

/// One mapped ring of the kernel's: its producer and consumer indexes and `size` slots of `T`.
struct Ring<T> {
    map: NonNull<libc::c_void>,
    map_len: usize,
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    slots: NonNull<T>,
    mask: u32,
    /// Our own index (the producer's for fill and TX, the consumer's for RX and completion):
    /// only we write it, so a plain copy of it is exact.
    local: u32,
}

impl<T: Copy> Ring<T> {
    /// Maps ring `pgoff` of `fd` with `size` slots at the kernel's offsets `off`.
    fn map(fd: BorrowedFd<'_>, off: &libc::xdp_ring_offset, pgoff: u64, size: u32) -> io::Result<Ring<T>> {
        let map_len = off.desc as usize + size as usize * mem::size_of::<T>();
        // SAFETY: a fresh shared mapping of the socket's ring, at an address the kernel picks;
        // the result is checked before use.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff as libc::off_t,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = map.cast::<u8>();
        let at = |offset: u64| {
            // SAFETY: the kernel's offsets lie inside the `map_len` bytes it mapped (it sized
            // the ring from `size` and reported these offsets for it).
            NonNull::new(unsafe { base.add(offset as usize) }).expect("mmap is not null")
        };
        let producer = at(off.producer).cast();
        let consumer = at(off.consumer).cast();
        let slots = at(off.desc).cast();
        Ok(Ring {
            map: NonNull::new(map).expect("mmap is not null"),
            map_len,
            producer,
            consumer,
            slots,
            mask: size - 1,
            // A fresh ring: both indexes start at 0.
            local: 0,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: the mapping lives as long as `self`; the index is an aligned u32 the kernel
        // and we access only atomically.
        unsafe { self.producer.as_ref() }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.consumer.as_ref() }
    }

    // Producer side (fill, TX).

    /// Free slots.
    fn room(&self) -> u32 {
        (self.mask + 1) - self.local.wrapping_sub(self.consumer().load(Ordering::Acquire))
    }

    /// Entries produced and not yet consumed by the kernel.
    fn outstanding(&self) -> u32 {
        self.local.wrapping_sub(self.consumer().load(Ordering::Acquire))
    }

    /// Writes `value` into the next slot, unpublished. The caller has checked [`room`](Self::room).
    fn write(&mut self, value: T) {
        let index = (self.local & self.mask) as usize;
        // SAFETY: `index <= mask < size`, the slot lies in the mapping; the slot is ours
        // (between the kernel's consumer index and ours + room), the kernel does not read it
        // until `publish`.
        unsafe { self.slots.as_ptr().add(index).write(value) };
        self.local = self.local.wrapping_add(1);
    }

    /// Hands the written slots to the kernel.
    fn publish(&self) {
        self.producer().store(self.local, Ordering::Release);
    }

    // Consumer side (RX, completion).

    /// Entries the kernel has produced that we have not consumed.
    fn available(&self) -> u32 {
        self.producer().load(Ordering::Acquire).wrapping_sub(self.local)
    }

    /// Reads the next entry. The caller has checked [`available`](Self::available).
    fn read(&mut self) -> T {
        let index = (self.local & self.mask) as usize;
        // SAFETY: `index < size`; the kernel published this slot (the `Acquire` load in
        // `available` orders its write before this read) and does not reuse it until `release`.
        let value = unsafe { self.slots.as_ptr().add(index).read() };
        self.local = self.local.wrapping_add(1);
        value
    }

    /// Gives the read slots back to the kernel.
    fn release(&self) {
        self.consumer().store(self.local, Ordering::Release);
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once; nothing points into it after `self`.
        unsafe { libc::munmap(self.map.as_ptr(), self.map_len) };
    }
}

/// The kernel's counters for the socket (`XDP_STATISTICS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KernelStats {
    /// Packets dropped for want of room in the RX ring (or any other reason the kernel counts).
    pub(crate) rx_dropped: u64,
    /// Times the kernel found the fill ring empty when a packet came.
    pub(crate) fill_ring_empty: u64,
    /// Times the RX ring was full.
    pub(crate) rx_ring_full: u64,
    /// Descriptors the kernel refused (ours, so a bug if ever non-zero).
    pub(crate) invalid_descs: u64,
}

/// An AF_XDP socket bound to one queue of one interface, with its UMEM and rings.
pub(crate) struct Xsk {
    // Field order is drop order: the rings are unmapped before the socket closes, and the
    // socket (the kernel's hold on the UMEM) closes before the frames go back to the pool.
    fill: Ring<UmemAddr>,
    completion: Ring<UmemAddr>,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fd: OwnedFd,
    /// The UMEM: every slot of one pool region, in address order (slot `i` is UMEM address
    /// `i * frame`). Held so the pool lends them to no one else.
    frames: Vec<BufMut>,
    frame: usize,
    /// TX frames we own (not in the TX or completion ring), as frame numbers.
    free: Vec<u32>,
    zero_copy: bool,
    /// The longest packet taken, and whether it may span frames (`XDP_USE_SG`).
    max_packet: usize,
    /// A packet spanning frames, gathered so far (its frames are already back on the fill
    /// ring).
    gather: Vec<u8>,
    /// Its fragments are being dropped: it grew beyond `max_packet`.
    gather_dropped: bool,
}

// SAFETY: the raw pointers are into this socket's own mappings, used only through `&mut self`
// (or atomically); the socket and frames may move to another thread with it.
unsafe impl Send for Xsk {}

/// Why the UMEM cannot be made from the given frames.
pub(crate) fn check_tiling(frames: &mut [BufMut], region: &RegionInfo) -> Result<(), &'static str> {
    frames.sort_by_key(|f| f.as_ptr().addr());
    if frames.len() * region.class != region.len {
        return Err("the frames do not fill the region");
    }
    let base = region.addr.addr();
    let tiled = frames
        .iter()
        .enumerate()
        .all(|(i, f)| f.capacity() == region.class && f.as_ptr().addr() == base + i * region.class);
    if tiled {
        Ok(())
    } else {
        Err("the frames are not the region's slots in order")
    }
}

impl Xsk {
    /// Opens a socket on `ifindex`'s queue `queue` with `frames` (every slot of `region`, see
    /// [`check_tiling`]) as its UMEM and rings of `ring_size` entries (a power of two; the fill
    /// ring starts full, the rest of the frames are for sending), for packets of up to
    /// `max_packet` bytes (over one frame: multi-buffer, `XDP_USE_SG`). Zero-copy if
    /// `zero_copy` and the driver takes it, else copy mode (a fresh socket).
    pub(crate) fn open(
        ifindex: u32,
        queue: u32,
        mut frames: Vec<BufMut>,
        region: &RegionInfo,
        ring_size: u32,
        zero_copy: bool,
        max_packet: usize,
    ) -> io::Result<Xsk> {
        check_tiling(&mut frames, region).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        if !ring_size.is_power_of_two() || ring_size as usize >= frames.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "ring size must be a power of two below the frame count",
            ));
        }
        let frame = region.class;
        let total = frames.len() as u32;
        let sg = if max_packet > frame { libc::XDP_USE_SG } else { 0 };
        let mut xsk = match zero_copy.then(|| {
            Xsk::socket(
                ifindex,
                queue,
                &frames,
                frame,
                ring_size,
                libc::XDP_ZEROCOPY | libc::XDP_USE_NEED_WAKEUP | sg,
            )
        }) {
            Some(Ok(parts)) => Xsk::from_parts(parts, frames, frame, true),
            _ => {
                let parts = Xsk::socket(
                    ifindex,
                    queue,
                    &frames,
                    frame,
                    ring_size,
                    libc::XDP_COPY | libc::XDP_USE_NEED_WAKEUP | sg,
                )?;
                Xsk::from_parts(parts, frames, frame, false)
            }
        };
        xsk.max_packet = max_packet;
        for i in 0..ring_size {
            xsk.fill.write(u64::from(i) * frame as u64);
        }
        xsk.fill.publish();
        xsk.free = (ring_size..total).rev().collect();
        Ok(xsk)
    }

    fn from_parts(parts: Parts, frames: Vec<BufMut>, frame: usize, zero_copy: bool) -> Xsk {
        let (fd, fill, completion, rx, tx) = parts;
        Xsk {
            fill,
            completion,
            rx,
            tx,
            fd,
            frames,
            frame,
            free: Vec::new(),
            zero_copy,
            max_packet: frame,
            gather: Vec::new(),
            gather_dropped: false,
        }
    }

    /// Makes, sets up and binds one socket (`mode`: `XDP_COPY` or `XDP_ZEROCOPY`, and
    /// `XDP_USE_SG` for packets over one frame).
    fn socket(
        ifindex: u32,
        queue: u32,
        frames: &[BufMut],
        frame: usize,
        ring_size: u32,
        mode: u16,
    ) -> io::Result<Parts> {
        // SAFETY: plain syscall; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let reg = libc::xdp_umem_reg {
            addr: frames[0].as_ptr().addr() as u64,
            len: (frames.len() * frame) as u64,
            chunk_size: frame as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        // Handing the region to the kernel: it may write any frame we put on the fill ring, and
        // reads those on the TX ring, until the socket closes. The frames are held by `Xsk`
        // (declared after `fd`, so freed after the socket closes) and lent out only per the
        // ring protocol in the module doc.
        setsockopt(fd.as_fd(), libc::XDP_UMEM_REG, &reg)?;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            setsockopt(fd.as_fd(), opt, &ring_size)?;
        }
        // SAFETY: all-zero is a valid `xdp_mmap_offsets` (plain integers).
        let mut off: libc::xdp_mmap_offsets = unsafe { mem::zeroed() };
        getsockopt(fd.as_fd(), libc::XDP_MMAP_OFFSETS, &mut off)?;
        let fill = Ring::map(fd.as_fd(), &off.fr, libc::XDP_UMEM_PGOFF_FILL_RING, ring_size)?;
        let completion = Ring::map(
            fd.as_fd(),
            &off.cr,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            ring_size,
        )?;
        let rx = Ring::map(fd.as_fd(), &off.rx, libc::XDP_PGOFF_RX_RING as u64, ring_size)?;
        let tx = Ring::map(fd.as_fd(), &off.tx, libc::XDP_PGOFF_TX_RING as u64, ring_size)?;
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: mode,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `addr` is a valid `sockaddr_xdp` on the stack, its size passed with it.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast(),
                mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((fd, fill, completion, rx, tx))
    }

    /// Whether the socket runs in zero-copy mode (else copy mode).
    pub(crate) fn zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The UMEM's frame count.
    pub(crate) fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Frames not in our hands: in the fill, RX, TX or completion ring.
    pub(crate) fn frames_in_use(&self) -> usize {
        self.frames.len() - self.free.len()
    }

    /// Receives up to `max` descriptors: each packet is lent to `handle` (its bytes,
    /// read-only, for the call: the frame itself, or for a packet spanning frames a copy
    /// gathered from them) and its frames go straight back to the fill ring. A packet longer
    /// than `max_packet` is dropped and counted in the result's second number, as is a
    /// descriptor outside the UMEM (a kernel bug). Returns the packets handed over and dropped.
    pub(crate) fn recv(&mut self, max: u32, mut handle: impl FnMut(&[u8])) -> (u32, u32) {
        let n = self.rx.available().min(max);
        let frame = self.frame as u64;
        let (mut packets, mut dropped) = (0, 0);
        for _ in 0..n {
            let desc = self.rx.read();
            let more = desc.options & libc::XDP_PKT_CONTD != 0;
            let (index, offset) = ((desc.addr / frame) as usize, (desc.addr % frame) as usize);
            let Some(f) = self.frames.get_mut(index) else {
                dropped += 1;
                continue;
            };
            let bytes = f.capacity_mut().get(offset..offset + desc.len as usize);
            match bytes {
                // A whole packet in one frame: lent as it is.
                Some(bytes) if !more && self.gather.is_empty() && !self.gather_dropped => {
                    handle(bytes);
                    packets += 1;
                }
                Some(bytes) if !self.gather_dropped && self.gather.len() + bytes.len() <= self.max_packet => {
                    self.gather.extend_from_slice(bytes);
                    if !more {
                        handle(&self.gather);
                        self.gather.clear();
                        packets += 1;
                    }
                }
                _ => {
                    self.gather.clear();
                    self.gather_dropped = more;
                    dropped += u32::from(!more);
                }
            }
            // The fill ring has room: the RX frames are a fixed set of ring_size, and this
            // one just left the RX ring.
            self.fill.write(index as u64 * frame);
        }
        if n > 0 {
            self.rx.release();
            self.fill.publish();
        }
        (packets, dropped)
    }

    /// Moves sent frames from the completion ring to the free list.
    pub(crate) fn reclaim(&mut self) {
        let n = self.completion.available();
        for _ in 0..n {
            let addr = self.completion.read();
            self.free.push((addr / self.frame as u64) as u32);
        }
        if n > 0 {
            self.completion.release();
        }
    }

    /// Whether frames and TX slots are free for [`send`](Self::send)ing a packet of
    /// `max_packet` bytes.
    pub(crate) fn can_send(&self) -> bool {
        let need = self.max_packet.div_ceil(self.frame);
        self.free.len() >= need && self.tx.room() as usize >= need
    }

    /// Copies the packet `parts` (gathered in order) into free frames, one after the other,
    /// and puts them on the TX ring (unpublished until [`kick`](Self::kick); all but the last
    /// marked `XDP_PKT_CONTD`). False, and nothing sent, if it is longer than `max_packet` or
    /// there is no room (never after [`can_send`](Self::can_send)).
    pub(crate) fn send(&mut self, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let need = len.div_ceil(self.frame).max(1);
        if len > self.max_packet || self.free.len() < need || (self.tx.room() as usize) < need {
            return false;
        }
        // A cursor over `parts`: the part, and the offset in it.
        let (mut part, mut at) = (0, 0);
        for i in 0..need {
            let index = self.free.pop().expect("checked: enough free frames");
            let buf = self.frames[index as usize].capacity_mut();
            let mut n = 0;
            while n < buf.len() && part < parts.len() {
                let src = &parts[part][at..];
                let k = src.len().min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&src[..k]);
                (n, at) = (n + k, at + k);
                if at == parts[part].len() {
                    (part, at) = (part + 1, 0);
                }
            }
            self.tx.write(libc::xdp_desc {
                addr: u64::from(index) * self.frame as u64,
                len: n as u32,
                options: if i + 1 < need { libc::XDP_PKT_CONTD } else { 0 },
            });
        }
        true
    }

    /// Hands the TX slots written by [`send`](Self::send) to the kernel (which sends them
    /// on the next [`kick`](Self::kick) or [`poll`](Self::poll)).
    pub(crate) fn publish_tx(&self) {
        self.tx.publish();
    }

    /// Asks the kernel to send the published TX slots (`sendto`; in copy mode the kernel sends
    /// up to 32 per call and says `EAGAIN` while more wait). Returns the `sendto` calls made;
    /// stops when the ring is empty, or when a call made no progress (the device is busy:
    /// [`tx_pending`](Self::tx_pending) says so, and the next call goes on).
    pub(crate) fn kick(&mut self) -> (u64, io::Result<()>) {
        let mut calls = 0;
        loop {
            let before = self.tx.outstanding();
            if before == 0 {
                return (calls, Ok(()));
            }
            calls += 1;
            // SAFETY: `sendto` with no buffer and no address: the kernel reads the TX ring.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS) => {}
                    _ => return (calls, Err(e)),
                }
            }
            if self.tx.outstanding() >= before {
                return (calls, Ok(()));
            }
        }
    }

    /// TX descriptors published (or written) and not yet taken by the kernel.
    pub(crate) fn tx_outstanding(&self) -> u32 {
        self.tx.outstanding()
    }

    /// Whether TX descriptors wait for the kernel.
    pub(crate) fn tx_pending(&self) -> bool {
        self.tx.outstanding() > 0
    }

    /// Waits up to `timeout_ms` for a packet in the RX ring. The socket is bound with
    /// `XDP_USE_NEED_WAKEUP`, so the kernel's poll first sends the published TX slots (up to
    /// 32 in copy mode; it wakes the driver in zero-copy mode): a poll that waits needs no
    /// [`kick`](Self::kick) of its own.
    pub(crate) fn poll(&self, timeout_ms: i32) -> io::Result<()> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid `pollfd` on the stack.
        let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The kernel's counters.
    pub(crate) fn kernel_stats(&self) -> io::Result<KernelStats> {
        // SAFETY: all-zero is a valid `xdp_statistics` (plain integers).
        let mut s: libc::xdp_statistics = unsafe { mem::zeroed() };
        getsockopt(self.fd.as_fd(), libc::XDP_STATISTICS, &mut s)?;
        Ok(KernelStats {
            rx_dropped: s.rx_dropped,
            fill_ring_empty: s.rx_fill_ring_empty_descs,
            rx_ring_full: s.rx_ring_full,
            invalid_descs: s.rx_invalid_descs + s.tx_invalid_descs,
        })
    }
}

impl AsFd for Xsk {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A bound socket and its fill, completion, RX and TX rings.
type Parts = (
    OwnedFd,
    Ring<UmemAddr>,
    Ring<UmemAddr>,
    Ring<libc::xdp_desc>,
    Ring<libc::xdp_desc>,
);

/// `setsockopt(SOL_XDP, opt, value)`.
fn setsockopt<T>(fd: BorrowedFd<'_>, opt: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a valid `T` for the call, its size passed with it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            opt,
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

/// `getsockopt(SOL_XDP, opt)` into `out`, which must be the kernel's full struct.
fn getsockopt<T>(fd: BorrowedFd<'_>, opt: libc::c_int, out: &mut T) -> io::Result<()> {
    let mut len = mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `out` is writable for `len` bytes; the kernel writes at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            opt,
            (out as *mut T).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != mem::size_of::<T>() {
        // An older kernel's shorter struct (no `flags` offsets, fewer counters): not supported.
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "SOL_XDP option {opt}: the kernel wrote {len} bytes, not {}",
                mem::size_of::<T>()
            ),
        ));
    }
    Ok(())
}

/// `if_nametoindex`.
pub(crate) fn ifindex(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in interface name"))?;
    // SAFETY: a NUL-terminated string, read for the call.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(index)
    }
}

/// The IPv4 addresses and the MAC address of interface `name`, as the calling thread's
/// network namespace sees it (`getifaddrs`).
pub(crate) fn interface_addrs(name: &str) -> io::Result<(Vec<std::net::Ipv4Addr>, Option<[u8; 6]>)> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is writable; the list it receives is freed below, once.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let (mut ips, mut mac) = (Vec::new(), None);
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs made, not freed until below.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: a non-null `ifa_name` is a NUL-terminated string owned by the list.
        let ifname = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        if ifname.to_bytes() != name.as_bytes() {
            continue;
        }
        // SAFETY: a non-null `ifa_addr` points at a sockaddr, whose family field says which
        // kind it is; each kind is read whole, unaligned reads making no assumption.
        match i32::from(unsafe { (*ifa.ifa_addr).sa_family }) {
            libc::AF_INET => {
                // SAFETY: as above: an AF_INET address is a sockaddr_in.
                let sin = unsafe { std::ptr::read_unaligned(ifa.ifa_addr.cast::<libc::sockaddr_in>()) };
                ips.push(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
            libc::AF_PACKET => {
                // SAFETY: as above: an AF_PACKET address is a sockaddr_ll.
                let sll = unsafe { std::ptr::read_unaligned(ifa.ifa_addr.cast::<libc::sockaddr_ll>()) };
                if sll.sll_halen == 6 {
                    let mut m = [0; 6];
                    m.copy_from_slice(&sll.sll_addr[..6]);
                    mac = Some(m);
                }
            }
            _ => {}
        }
    }
    // SAFETY: the list getifaddrs made, freed once; no reference into it outlives this.
    unsafe { libc::freeifaddrs(head) };
    Ok((ips, mac))
}

/// Eight random bytes from the kernel (`getrandom`), for the endpoint's seed.
pub(crate) fn random_u64() -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    // SAFETY: `bytes` is writable for its length.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(u64::from_ne_bytes(bytes))
}

const _: () = assert!(
    mem::size_of::<libc::xdp_desc>() == 16,
    "the kernel's struct xdp_desc"
);
const _: () = assert!(
    mem::size_of::<libc::xdp_umem_reg>() == 32,
    "the kernel's struct xdp_umem_reg"
);
