//! Linux backend: `mmap` a `PROT_NONE` reservation, then map regions over it with `MAP_FIXED`.
//!
//! Page choice per region (when huge pages are asked for), in order: hugetlbfs 2 MiB pages if
//! enough are free, transparent huge pages if THP is not disabled, else 4 KiB pages. A region
//! is prefaulted before it is handed out if asked, else each page is faulted on first touch;
//! `mlock`ed if asked (best effort; `MLOCK_ONFAULT` for a region not prefaulted, so locking
//! does not fault it in). Memory not yet touched is still valid: an anonymous page reads as
//! zero, a memfd's pages exist up to its sealed size (the peer's mapping reads zeroes), and
//! hugetlb pages were reserved when mapped.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::{self, NonNull};

use super::{Cursor, MapOptions, Mapped};
use crate::{PageKind, PoolError};

const HUGE_PAGE: usize = 2 << 20;
/// Stride for prefaulting; the smallest page size Linux uses.
const BASE_PAGE: usize = 4096;

/// `len` bytes of address space aligned to `region_size`, `PROT_NONE` until regions are mapped.
#[derive(Debug)]
pub(crate) struct Reservation {
    base: NonNull<u8>,
    len: usize,
    region_size: usize,
    cursor: Cursor,
    /// For a shared pool: the memfd mapped over the whole reservation, and whether it is
    /// hugetlb-backed.
    memfd: Option<(OwnedFd, bool)>,
}

// SAFETY: `base` is the address of a mapping this value owns; the reservation itself never
// reads or writes through it except in `map_next` on a freshly claimed region, which no other
// thread can reach yet. Who accesses mapped regions is governed by the pool.
unsafe impl Send for Reservation {}
// SAFETY: as for `Send`; `&self` methods only touch the atomic cursor and unclaimed regions.
unsafe impl Sync for Reservation {}

fn os_error(what: &str) -> PoolError {
    PoolError::Map(format!("{what}: {}", io::Error::last_os_error()))
}

impl Reservation {
    /// Reserves `len` bytes aligned to `region_size` (both validated by `PoolConfig`); with
    /// `shared`, backs them with a memfd mapped `MAP_SHARED` (hugetlb if `huge` and the
    /// kernel can reserve the pages), still `PROT_NONE` until regions are mapped.
    pub(crate) fn new(len: usize, region_size: usize, shared: bool, huge: bool) -> Result<Self, PoolError> {
        // Over-reserve by one region, then trim, to get the alignment hugetlb `MAP_FIXED` needs.
        let total = len
            .checked_add(region_size)
            .ok_or(PoolError::Config("max_bytes + region_size overflows"))?;
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses; touches no
        // existing memory.
        let raw = unsafe {
            libc::mmap(
                ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(os_error("reserving address space"));
        }
        let raw = raw.cast::<u8>();
        let head = raw.addr().next_multiple_of(region_size) - raw.addr();
        let tail = total - head - len;
        // SAFETY: `head + len + tail == total`, so both trimmed pieces lie inside the mapping
        // just created, which nothing else uses yet.
        unsafe {
            if head > 0 {
                libc::munmap(raw.cast(), head);
            }
            if tail > 0 {
                libc::munmap(raw.add(head + len).cast(), tail);
            }
        }
        // SAFETY: `head < total`, so `raw + head` is inside the (non-null) mapping.
        let base = unsafe { NonNull::new_unchecked(raw.add(head)) };
        let mut reservation = Reservation {
            base,
            len,
            region_size,
            cursor: Cursor::new(len / region_size),
            memfd: None,
        };
        if shared {
            // Hugetlb only if the pages are there and the file can reserve them: the probe maps
            // it at an address of the kernel's choosing, so a failure disturbs nothing (a
            // failed MAP_FIXED over the reservation could leave a hole another thread's mapping
            // might take).
            let hugetlb = huge
                && len % HUGE_PAGE == 0
                && region_size % HUGE_PAGE == 0
                && hugetlb_pages_available() >= len / HUGE_PAGE;
            let fd = if hugetlb {
                create_memfd(len, true).ok()
            } else {
                None
            };
            let (fd, hugetlb) = match fd {
                Some(fd) => (fd, true),
                None => (create_memfd(len, false)?, false),
            };
            // SAFETY: `base..base + len` is the reservation just made; nothing uses it.
            unsafe { map_memfd(base, len, &fd) }?;
            reservation.memfd = Some((fd, hugetlb));
        }
        Ok(reservation)
    }

    /// The memfd behind a shared reservation.
    pub(crate) fn memfd(&self) -> Option<BorrowedFd<'_>> {
        self.memfd.as_ref().map(|(fd, _)| fd.as_fd())
    }

    /// Address of the first byte.
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Maps the next unused region, or returns `None` if every region is in use.
    pub(crate) fn map_next(&self, options: MapOptions) -> Result<Option<Mapped>, PoolError> {
        let Some(index) = self.cursor.claim() else {
            return Ok(None);
        };
        // SAFETY: `index < len / region_size`, so the region lies inside the reservation.
        let ptr = unsafe { self.base.add(index * self.region_size) };
        let len = self.region_size;
        let huge = options.huge_pages && len % HUGE_PAGE == 0;

        let mut pages = self
            .memfd
            .as_ref()
            .and_then(|(_, hugetlb)| hugetlb.then_some(PageKind::Huge2M));
        if let Some(PageKind::Huge2M) = pages {
            // A hugetlb memfd: open the region in place; its pages were reserved at creation.
            // SAFETY: the range is our own reservation, claimed once via the cursor.
            if unsafe { libc::mprotect(ptr.as_ptr().cast(), len, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
                return Err(os_error("mprotect of a shared region"));
            }
        } else if self.memfd.is_none() && huge && hugetlb_pages_available() >= len / HUGE_PAGE {
            // SAFETY: the range is our own PROT_NONE reservation, claimed once via the cursor,
            // so replacing it affects no live memory.
            if unsafe { map_fixed(ptr, len, libc::MAP_HUGETLB | libc::MAP_HUGE_2MB) }.is_ok() {
                pages = Some(PageKind::Huge2M);
            } else {
                // Another process took the pages between the check and the mmap. A failed
                // MAP_FIXED can leave a hole (seen on 6.18 for a failed hugetlb reservation),
                // which this closes again; the window is a few instructions long, and only opens
                // when the free-page count said the mapping would succeed.
                // SAFETY: as above, the range is ours and unused.
                unsafe { reserve_fixed(ptr, len) }?;
            }
        }
        let pages = match pages {
            Some(pages) => pages,
            None => {
                // Open the reservation in place rather than mapping over it: a failed mprotect
                // leaves the reservation intact, where a failed MAP_FIXED on kernels before 6.12
                // could leave a hole another mapping might take.
                // SAFETY: as above, the range is ours and unused.
                if unsafe { libc::mprotect(ptr.as_ptr().cast(), len, libc::PROT_READ | libc::PROT_WRITE) }
                    != 0
                {
                    return Err(PoolError::Map(format!(
                        "mprotect of a region: {}",
                        io::Error::last_os_error()
                    )));
                }
                // SAFETY: `ptr..ptr + len` is the mapping just created.
                let thp = huge
                    && thp_enabled()
                    && unsafe { libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_HUGEPAGE) } == 0;
                if thp {
                    PageKind::Transparent
                } else {
                    if !huge {
                        // Base pages even where THP is `always`: a region faulted on demand
                        // must not zero a huge page on the thread that touches it first.
                        // Advice only: a failure leaves the system's default.
                        // SAFETY: as above; advice on our own mapping, no memory accessed.
                        unsafe { libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_NOHUGEPAGE) };
                    }
                    PageKind::Base
                }
            }
        };
        if options.prefault {
            // SAFETY: `ptr..ptr + len` is mapped read-write just above and not yet shared.
            unsafe { prefault(ptr, len) };
        }

        let (locked, mlock_error) = if options.mlock {
            // Locking a range faults it in unless `MLOCK_ONFAULT`: then pages are locked as they
            // are touched.
            let flags = if options.prefault { 0 } else { libc::MLOCK_ONFAULT };
            // SAFETY: locks our own mapping; no memory is read or written.
            match unsafe { libc::mlock2(ptr.as_ptr().cast(), len, flags) } {
                0 => (true, None),
                _ => (false, Some(io::Error::last_os_error().to_string())),
            }
        } else {
            (false, None)
        };
        Ok(Some(Mapped {
            index,
            ptr,
            len,
            pages,
            locked,
            mlock_error,
        }))
    }
}

impl Reservation {
    /// Faults in every page of region `index` for writing, without reading or writing its
    /// bytes (`MADV_POPULATE_WRITE`): safe while buffers in the region are in use on other
    /// threads, whose data stays as it is. Best effort: if the kernel lacks it (before 5.14) or
    /// the pages cannot be had, the region's pages are faulted as they are touched, and the
    /// first failure is reported on stderr.
    pub(crate) fn prefault(&self, index: usize) {
        if index >= self.len / self.region_size {
            return;
        }
        // SAFETY: `index` is inside the reservation (checked), so the range is ours; the
        // advice only populates page tables, it never changes the memory's contents.
        let populated = unsafe {
            libc::madvise(
                self.base.as_ptr().add(index * self.region_size).cast(),
                self.region_size,
                libc::MADV_POPULATE_WRITE,
            )
        } == 0;
        if !populated {
            static REPORTED: std::sync::Once = std::sync::Once::new();
            let error = io::Error::last_os_error();
            REPORTED.call_once(|| {
                eprintln!(
                    "ferry-buf: prefaulting a region of a long-lived pool off its thread failed                      ({error}); its pages are faulted as buffers touch them"
                );
            });
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the range `new` kept; the pool drops the reservation only once
        // no buffer refers into it.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// A memfd of `len` bytes; with `hugetlb`, backed by 2 MiB pages, and checked to reserve all
/// of them (a shared hugetlb mapping reserves its file's pages when made, and the reservation
/// stays with the file).
fn create_memfd(len: usize, hugetlb: bool) -> Result<OwnedFd, PoolError> {
    let flags = if hugetlb {
        libc::MFD_HUGETLB | libc::MFD_HUGE_2MB
    } else {
        0
    };
    // SAFETY: a NUL-terminated name; the call creates a new file descriptor.
    let raw = unsafe {
        libc::memfd_create(
            c"ferry-pool".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING | flags,
        )
    };
    if raw < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let size = libc::off_t::try_from(len).map_err(|_| PoolError::Config("max_bytes does not fit off_t"))?;
    // SAFETY: plain syscall on our own descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), size) } != 0 {
        return Err(os_error("ftruncate of the pool memfd"));
    }
    // Sealed at its size: a process that maps it (a peer given the descriptor) can rely on
    // every page existing; one that shrank it would make readers of the tail fault (SIGBUS).
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: plain syscall on our own descriptor.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(os_error("sealing the pool memfd"));
    }
    if hugetlb {
        // SAFETY: a new mapping at an address the kernel chooses; touches no existing memory.
        let probe = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if probe == libc::MAP_FAILED {
            return Err(os_error("reserving huge pages for the pool memfd"));
        }
        // SAFETY: unmaps exactly the probe mapping made above.
        unsafe { libc::munmap(probe, len) };
    }
    Ok(fd)
}

/// Maps `fd` (`len` bytes) `MAP_SHARED`, `PROT_NONE`, over `ptr..ptr + len`.
///
/// # Safety
/// `ptr..ptr + len` must be this process's reservation and hold no live data.
unsafe fn map_memfd(ptr: NonNull<u8>, len: usize, fd: &OwnedFd) -> Result<(), PoolError> {
    // SAFETY: the caller guarantees the range is ours and unused; MAP_FIXED replaces it with
    // the (inaccessible until mprotect) shared mapping.
    let got = unsafe {
        libc::mmap(
            ptr.as_ptr().cast(),
            len,
            libc::PROT_NONE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd.as_raw_fd(),
            0,
        )
    };
    if got == libc::MAP_FAILED {
        let error = os_error("mapping the pool memfd");
        // Kernels before 6.12 may have unmapped the range on failure: put the reservation back.
        // SAFETY: as above.
        unsafe { reserve_fixed(ptr, len) }?;
        return Err(error);
    }
    Ok(())
}

/// Maps `len` anonymous read-write bytes at `ptr`, replacing what is there.
///
/// # Safety
/// `ptr..ptr + len` must be part of this process's reservation and hold no live data.
unsafe fn map_fixed(ptr: NonNull<u8>, len: usize, extra_flags: i32) -> Result<(), PoolError> {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | extra_flags;
    // SAFETY: the caller guarantees the range is ours and unused; MAP_FIXED replaces it.
    let got = unsafe {
        libc::mmap(
            ptr.as_ptr().cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if got == libc::MAP_FAILED {
        return Err(os_error("mapping a region"));
    }
    Ok(())
}

/// Puts a `PROT_NONE` reservation back at `ptr..ptr + len`.
///
/// # Safety
/// As for [`map_fixed`].
unsafe fn reserve_fixed(ptr: NonNull<u8>, len: usize) -> Result<(), PoolError> {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE;
    // SAFETY: the caller guarantees the range is ours and unused.
    let got = unsafe { libc::mmap(ptr.as_ptr().cast(), len, libc::PROT_NONE, flags, -1, 0) };
    if got == libc::MAP_FAILED {
        return Err(os_error("restoring the reservation"));
    }
    Ok(())
}

/// Touches every page so the hot path never faults.
///
/// # Safety
/// `ptr..ptr + len` must be mapped read-write and not yet visible to any other thread.
unsafe fn prefault(ptr: NonNull<u8>, len: usize) {
    for offset in (0..len).step_by(BASE_PAGE) {
        // SAFETY: `offset < len`, inside the mapping; a fresh anonymous page reads as zero, so
        // writing zero leaves the (initialized) contents unchanged.
        unsafe { ptr.add(offset).write_volatile(0) };
    }
}

/// Gives the calling thread the lowest scheduling priority (nice 19), best effort: the
/// grower's zeroing then waits for every other runnable thread.
pub(crate) fn lower_priority() {
    // SAFETY: a plain system call on the calling thread (on Linux, `who == 0` with
    // `PRIO_PROCESS` is the calling thread); it touches no memory.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
}

/// Free 2 MiB hugetlb pages not already promised to another mapping.
fn hugetlb_pages_available() -> usize {
    let read = |name: &str| -> usize {
        std::fs::read_to_string(format!("/sys/kernel/mm/hugepages/hugepages-2048kB/{name}"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    };
    read("free_hugepages").saturating_sub(read("resv_hugepages"))
}

/// Whether transparent huge pages are enabled (`always` or `madvise` mode).
fn thp_enabled() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|mode| !mode.contains("[never]"))
}
