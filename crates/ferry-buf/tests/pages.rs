//! Page backing of real regions (Linux, not Miri): a size class's first region in base pages
//! faulted on first touch; its later ones hugetlb when free 2 MiB pages exist, else
//! transparent huge pages, else base pages, prefaulted. A missing kernel feature skips its
//! check with a printed reason.
#![cfg(all(target_os = "linux", not(miri)))]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_buf::{BufMut, PageKind, Pool, PoolConfig, RegionInfo};

const REGION: usize = 2 << 20;

/// A pool of `config`, and the regions its hook has seen so far.
fn watched(config: PoolConfig) -> (Pool, Arc<Mutex<Vec<RegionInfo>>>) {
    let pool = Pool::new(config).unwrap();
    let seen: Arc<Mutex<Vec<RegionInfo>>> = Arc::default();
    let hook = seen.clone();
    pool.on_region(move |info| hook.lock().unwrap().push(*info));
    (pool, seen)
}

/// Waits until the grower has a region ready ahead for `pool` (a condition, polled).
fn wait_ready_ahead(pool: &Pool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while pool.stats().regions_ready_ahead == 0 {
        assert!(
            Instant::now() < deadline,
            "no region ready ahead: {:?}",
            pool.stats()
        );
        std::thread::yield_now();
    }
}

/// A region the grower mapped ahead: the third of the largest class (whose buffers fill a
/// region each). The class's first two are mapped on demand, in base pages faulted on
/// touch; needing the second asks the grower for the next.
fn region_ahead(config: PoolConfig) -> (Pool, RegionInfo) {
    let (pool, seen) = watched(config);
    let fill = |pool: &Pool| {
        let mut buf = pool.alloc(REGION).unwrap();
        // The whole region is mapped, writable and zeroed.
        assert!(buf.capacity_mut().iter().all(|&b| b == 0));
        buf.capacity_mut().fill(1);
        buf
    };
    let mut bufs = vec![fill(&pool), fill(&pool)];
    wait_ready_ahead(&pool);
    bufs.push(fill(&pool));
    assert_eq!(pool.stats().regions_taken_ahead, 1);
    drop(bufs);
    let info = seen.lock().unwrap()[2];
    (pool, info)
}

/// Resident bytes of `addr..addr + len` (the present bits of `/proc/self/pagemap`).
fn resident(addr: *const u8, len: usize) -> usize {
    use std::io::{Read, Seek, SeekFrom};
    const PAGE: usize = 4096;
    let mut pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
    pagemap
        .seek(SeekFrom::Start((addr.addr() / PAGE * 8) as u64))
        .unwrap();
    let mut entries = vec![0; len / PAGE * 8];
    pagemap.read_exact(&mut entries).unwrap();
    let present = entries
        .chunks_exact(8)
        .filter(|e| u64::from_ne_bytes((*e).try_into().unwrap()) >> 63 == 1)
        .count();
    present * PAGE
}

fn sysfs(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn free_huge_pages() -> usize {
    let read = |name| {
        sysfs(&format!("/sys/kernel/mm/hugepages/hugepages-2048kB/{name}"))
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(0)
    };
    read("free_hugepages").saturating_sub(read("resv_hugepages"))
}

fn thp_enabled() -> bool {
    sysfs("/sys/kernel/mm/transparent_hugepage/enabled").is_some_and(|m| !m.contains("[never]"))
}

#[test]
fn huge_pages_when_available() {
    let config = PoolConfig {
        region_size: REGION,
        max_bytes: 8 * REGION,
        ..Default::default()
    };
    let free = free_huge_pages();
    let (_pool, info) = region_ahead(config);
    assert_eq!(info.len, REGION);
    assert_eq!(info.addr.addr() % REGION, 0);
    if free > 0 {
        assert_eq!(info.pages, PageKind::Huge2M, "{free} free hugetlb pages");
    } else if thp_enabled() {
        println!("skip hugetlb check: no free 2 MiB pages (nr_hugepages); checked THP instead");
        assert_eq!(info.pages, PageKind::Transparent);
    } else {
        println!("skip hugetlb and THP checks: neither is available; checked base pages");
        assert_eq!(info.pages, PageKind::Base);
    }
}

#[test]
fn base_pages_when_huge_pages_are_off() {
    let config = PoolConfig {
        region_size: REGION,
        max_bytes: 4 * REGION,
        huge_pages: false,
        ..Default::default()
    };
    let (_pool, info) = region_ahead(config);
    assert_eq!(info.pages, PageKind::Base);
}

#[test]
fn default_config_reserves_without_committing() {
    // 1 GiB of address space, nothing mapped until the first allocation.
    let pool = Pool::new(PoolConfig::default()).unwrap();
    assert_eq!(pool.stats().mapped_bytes, 0);
    let buf = pool.copy_from(b"first").unwrap();
    assert_eq!(pool.stats().mapped_bytes, 8 << 20);
    assert_eq!(pool.max_class(), 8 << 20);
    drop(buf);
}

/// The regression of the reconnect storm (issue 28): every connection makes a pool, and each
/// pool's first buffer of a class zeroed the class's whole region (8 MiB by default, a huge
/// page at a time) on the connecting thread.
#[test]
fn a_new_pools_first_buffer_faults_its_pages_not_its_region() {
    let (pool, seen) = watched(PoolConfig::default());
    let buf = pool.copy_from(b"first").unwrap();
    let info = seen.lock().unwrap()[0];
    assert_eq!(info.pages, PageKind::Base);
    assert_eq!(info.len, 8 << 20);
    assert_eq!(
        resident(info.addr, info.len),
        4096,
        "one page of {} resident",
        info.len
    );
    drop(buf);

    // The class's second region is mapped on demand too, and asks the grower for the next:
    // the third is ready, prefaulted, before it is needed.
    let mut whole: Vec<_> = (0..2).map(|_| pool.alloc(8 << 20).unwrap()).collect();
    wait_ready_ahead(&pool);
    whole.push(pool.alloc(8 << 20).unwrap());
    let infos = seen.lock().unwrap().clone();
    assert_eq!(infos.len(), 4);
    for on_demand in &infos[1..3] {
        assert_eq!(
            resident(on_demand.addr, on_demand.len),
            0,
            "{on_demand:?}, untouched"
        );
    }
    assert_eq!(
        resident(infos[3].addr, infos[3].len),
        8 << 20,
        "the region ahead, prefaulted"
    );
    let stats = pool.stats();
    assert_eq!((stats.regions, stats.regions_taken_ahead), (4, 1));
    drop(whole);
}

/// Waits until the grower has faulted in all of `region` (a condition, polled).
fn wait_faulted_in(region: &RegionInfo) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while resident(region.addr, region.len) < region.len {
        assert!(
            Instant::now() < deadline,
            "the grower did not fault in {region:?}: {} bytes resident",
            resident(region.addr, region.len)
        );
        std::thread::yield_now();
    }
}

/// Minor page faults of the calling thread so far (`/proc/thread-self/stat`, field 10).
fn thread_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // The fields after the command name (which may hold spaces): state is field 3.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(7).unwrap().parse().unwrap()
}

/// The regression of the never-read row (issue 28): an event loop's pool maps each class's
/// first regions on demand, and the loop faulted their pages one by one (each a 4 KiB page
/// zeroed) as it received frames into new buffers. A warm pool's region is the one the
/// grower mapped ahead, or one mapped on demand that the grower then faults in: either way,
/// once the grower is done, the owner writes its next buffers without a fault.
#[test]
fn a_warm_pools_owner_faults_no_page_of_its_next_buffers() {
    const CLASS: usize = 16 << 10;
    const BUFFERS: usize = 64;
    let (pool, seen) = watched(PoolConfig::default());
    pool.keep_warm();
    let first = pool.alloc(CLASS).unwrap();
    let info = seen.lock().unwrap()[0];
    wait_faulted_in(&info);
    // Written now, so that storing the buffers faults no page of the vector's.
    let mut bufs: Vec<Option<BufMut>> = (0..BUFFERS).map(|_| None).collect();
    // Reading the count allocates: once first, so that the reads around the writes fault
    // nothing themselves.
    let before = (thread_faults(), thread_faults()).1;
    for slot in &mut bufs {
        let mut buf = pool.alloc(CLASS).unwrap();
        buf.capacity_mut().fill(1);
        *slot = Some(buf);
    }
    let faults = thread_faults() - before;
    assert_eq!(
        faults, 0,
        "pages the owner faulted writing {BUFFERS} buffers of {CLASS} bytes"
    );
    drop((first, bufs));
}

/// Keeping a pool warm after it is in use faults in the regions it already has, and the
/// grower's prefault leaves the bytes of buffers in use as they were.
#[test]
fn keeping_a_used_pool_warm_keeps_its_buffers_bytes() {
    let (pool, seen) = watched(PoolConfig::default());
    let mut buf = pool.alloc(64 << 10).unwrap();
    let pattern: Vec<u8> = (0..buf.capacity()).map(|i| (i % 251) as u8).collect();
    buf.capacity_mut().copy_from_slice(&pattern);
    let info = seen.lock().unwrap()[0];
    assert_eq!(resident(info.addr, info.len), 64 << 10, "only the buffer's pages");
    pool.keep_warm();
    wait_faulted_in(&info);
    assert!(buf.capacity_mut() == &pattern[..], "the buffer's bytes changed");
}

/// A warm pool has a region ready ahead before its first buffer, and asks for the next as it
/// takes it: a class's first region is a prefaulted one (huge pages where there are), not one
/// its owner faults page by page.
#[test]
fn a_warm_pools_first_region_is_the_one_mapped_ahead() {
    let (pool, seen) = watched(PoolConfig {
        region_size: REGION,
        max_bytes: 8 * REGION,
        ..Default::default()
    });
    pool.keep_warm();
    wait_ready_ahead(&pool);
    let buf = pool.alloc(64).unwrap();
    let info = seen.lock().unwrap()[0];
    assert_eq!(pool.stats().regions_taken_ahead, 1);
    assert_eq!(resident(info.addr, info.len), info.len, "{info:?}, prefaulted");
    wait_ready_ahead(&pool);
    drop(buf);
}
