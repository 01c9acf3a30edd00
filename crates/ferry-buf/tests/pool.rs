//! Allocation, size classes, growth, exhaustion, hooks and statistics.

mod common;

use std::sync::{Arc, Mutex};

use common::{MAX_BYTES, REGION, all_bytes, assert_no_leaks, small_config, small_pool};
use ferry_buf::{MIN_CLASS, PageKind, Pool, PoolConfig, PoolError, RegionInfo};

fn classes() -> impl Iterator<Item = usize> {
    (0..)
        .map(|shift| MIN_CLASS << shift)
        .take_while(|&class| class <= REGION)
}

#[test]
fn every_class_allocates_and_frees() {
    let pool = small_pool();
    let mut bufs = Vec::new();
    for class in classes() {
        for request in [class / 2 + 1, class] {
            let mut buf = pool.alloc(request).unwrap();
            assert_eq!(buf.capacity(), class.max(MIN_CLASS), "request {request}");
            assert!(buf.is_empty());
            buf.capacity_mut().fill(0xA5);
            buf.set_len(request);
            bufs.push(buf);
        }
    }
    let stats = pool.stats();
    assert_eq!(stats.classes.len(), classes().count());
    for class in &stats.classes {
        assert_eq!(class.buffers_outstanding, 2, "{class:?}");
        assert_eq!(class.bytes_outstanding, 2 * class.class);
        // The largest class has one slot per region.
        assert_eq!(class.regions, if class.class == REGION { 2 } else { 1 });
    }
    let regions = classes().count() + 1;
    assert_eq!(stats.regions, regions);
    assert_eq!(stats.mapped_bytes, regions * REGION);
    for buf in &bufs {
        assert!(all_bytes(buf, 0xA5), "buffers must not overlap");
    }
    drop(bufs);
    assert_no_leaks(&pool);
    assert_eq!(pool.stats().regions, regions, "regions stay mapped");
}

#[test]
fn zero_capacity_gets_the_smallest_class() {
    let pool = small_pool();
    assert_eq!(pool.alloc(0).unwrap().capacity(), MIN_CLASS);
}

#[test]
fn freed_slot_is_reused_without_growth() {
    let pool = small_pool();
    let addr = pool.alloc(100).unwrap().as_ptr();
    let again = pool.alloc(100).unwrap();
    assert_eq!(again.as_ptr(), addr, "the free list is LIFO");
    assert_eq!(pool.stats().regions, 1);
}

#[test]
fn memory_is_zeroed_when_fresh() {
    let pool = small_pool();
    let mut buf = pool.alloc(REGION).unwrap();
    assert!(all_bytes(buf.capacity_mut(), 0));
}

#[test]
fn too_large_is_an_error() {
    let pool = small_pool();
    assert_eq!(
        pool.alloc(REGION + 1).unwrap_err(),
        PoolError::TooLarge {
            requested: REGION + 1,
            max: REGION
        }
    );
    assert_eq!(pool.max_class(), REGION);
    assert!(pool.copy_from(&vec![0; REGION + 1]).is_err());
    assert_eq!(pool.stats().regions, 0);
}

#[test]
fn exhaustion_is_an_error_and_recovers_after_free() {
    let pool = small_pool();
    let regions = MAX_BYTES / REGION;
    let mut bufs: Vec<_> = (0..regions).map(|_| pool.alloc(REGION).unwrap()).collect();
    assert_eq!(
        pool.alloc(REGION).unwrap_err(),
        PoolError::Exhausted {
            class: REGION,
            max_bytes: MAX_BYTES
        }
    );
    // Every region belongs to the largest class now, so other classes are exhausted too.
    assert!(matches!(
        pool.alloc(64),
        Err(PoolError::Exhausted { class: 64, .. })
    ));
    assert_eq!(pool.stats().mapped_bytes, MAX_BYTES);

    bufs.pop();
    let buf = pool.alloc(REGION).expect("a freed slot is allocatable again");
    drop((buf, bufs));
    assert_no_leaks(&pool);
}

#[test]
fn growth_adds_regions_and_calls_hooks() {
    let pool = small_pool();
    let early: Arc<Mutex<Vec<RegionInfo>>> = Arc::default();
    let seen = early.clone();
    pool.on_region(move |info| seen.lock().unwrap().push(*info));
    assert!(early.lock().unwrap().is_empty(), "no region yet");

    // Class 64 KiB: one slot per region, so each allocation adds a region.
    let bufs: Vec<_> = (0..3).map(|_| pool.alloc(REGION).unwrap()).collect();
    let small = pool.alloc(1000).unwrap();
    assert_eq!(pool.stats().regions, 4);

    // Which index each region gets depends on the grower: once a class has a region, the
    // next one is mapped ahead by the grower thread, and a growth that comes first maps its
    // own past it. So: four distinct regions, at most one index left to the one ahead.
    let infos = early.lock().unwrap().clone();
    let sorted = |v: &[usize]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    let first = sorted(&infos.iter().map(|i| i.index).collect::<Vec<_>>());
    assert!(
        first.windows(2).all(|w| w[0] < w[1]) && first[3] <= 4,
        "four regions: {first:?}"
    );
    assert_eq!(
        infos.iter().map(|i| i.class).collect::<Vec<_>>(),
        [REGION, REGION, REGION, 1024]
    );
    let base = infos[0].addr.addr();
    for info in &infos {
        assert_eq!(info.len, REGION);
        assert_eq!(info.addr.addr() % REGION, 0, "regions are aligned to their size");
        assert_eq!(
            info.addr.addr() - base,
            info.index * REGION,
            "regions tile one range"
        );
        let expected = if cfg!(miri) {
            PageKind::Heap
        } else {
            PageKind::Base
        };
        assert_eq!(
            info.pages, expected,
            "64 KiB regions are too small for huge pages"
        );
    }
    for (buf, info) in bufs.iter().zip(&infos) {
        assert_eq!(buf.as_ptr(), info.addr, "a one-slot region's slot is the region");
    }
    assert!(pool.contains(&small));

    // A hook registered late sees the existing regions at once, then new ones.
    let late: Arc<Mutex<Vec<usize>>> = Arc::default();
    let seen = late.clone();
    pool.on_region(move |info| seen.lock().unwrap().push(info.index));
    assert_eq!(sorted(&late.lock().unwrap()), first);
    let more = pool.alloc(64).unwrap();
    // Both hooks saw the same new region, once.
    let added = early.lock().unwrap()[4..]
        .iter()
        .map(|i| i.index)
        .collect::<Vec<_>>();
    assert!(
        added.len() == 1 && !first.contains(&added[0]),
        "one new region: {added:?}"
    );
    assert_eq!(late.lock().unwrap()[4..], added);

    drop((bufs, small, more));
    assert_no_leaks(&pool);
}

#[test]
fn mlock_outcome_is_reported() {
    let pool = small_pool();
    let info: Arc<Mutex<Option<RegionInfo>>> = Arc::default();
    let seen = info.clone();
    pool.on_region(move |region| *seen.lock().unwrap() = Some(*region));
    let _buf = pool.alloc(64).unwrap();
    let info = info.lock().unwrap().expect("one region");
    let stats = pool.stats();
    if cfg!(miri) {
        assert!(!info.locked, "heap regions are never locked");
        assert_eq!(stats.mlock_failures, 0, "not a failure: locking is unavailable");
    } else {
        assert_eq!(info.locked, stats.mlock_failures == 0, "{info:?} {stats:?}");
        if !info.locked {
            println!("note: mlock failed here (RLIMIT_MEMLOCK?); checked that it is reported");
        }
    }
}

#[test]
fn no_mlock_when_not_asked() {
    let pool = Pool::new(PoolConfig {
        mlock: false,
        ..small_config()
    })
    .unwrap();
    let locked: Arc<Mutex<Vec<bool>>> = Arc::default();
    let seen = locked.clone();
    pool.on_region(move |region| seen.lock().unwrap().push(region.locked));
    let _buf = pool.alloc(64).unwrap();
    assert_eq!(*locked.lock().unwrap(), [false]);
    assert_eq!(pool.stats().mlock_failures, 0);
}

#[test]
fn contains_checks_the_address_range_only() {
    let pool = small_pool();
    let buf = pool.copy_from(b"inside").unwrap();
    assert!(pool.contains(&buf));
    assert!(pool.contains(&buf[1..3]));
    assert!(!pool.contains(b"static bytes"));
    let heap = vec![1u8; 16];
    assert!(!pool.contains(&heap));
    let other = small_pool();
    assert!(!other.contains(&buf), "another pool's memory");
}

#[test]
fn buffers_outlive_every_pool_handle() {
    let pool = small_pool();
    let buf = pool.copy_from(b"still here").unwrap();
    let clone = pool.clone();
    drop((pool, clone));
    assert_eq!(&*buf, b"still here");
    let copy = buf.clone();
    drop(buf);
    assert_eq!(&*copy, b"still here");
}

#[test]
fn invalid_config_is_rejected() {
    let config = PoolConfig {
        region_size: 100_000,
        ..small_config()
    };
    assert!(matches!(Pool::new(config), Err(PoolError::Config(_))));
    let config = PoolConfig {
        max_bytes: REGION + 1,
        ..small_config()
    };
    assert!(matches!(Pool::new(config), Err(PoolError::Config(_))));
}

#[test]
fn pool_and_buffers_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Pool>();
    send_sync::<ferry_buf::SharedBuf>();
    send_sync::<ferry_buf::BufMut>();
    assert_eq!(size_of::<ferry_buf::SharedBuf>(), 3 * size_of::<usize>());
    assert_eq!(size_of::<Option<ferry_buf::SharedBuf>>(), 3 * size_of::<usize>());
}

/// A shared pool's buffers are visible through its memfd at `offset_of`, as another process
/// mapping it would see them.
#[test]
#[cfg_attr(miri, ignore = "memfd needs the Linux backend")]
fn shared_pool_memory_is_visible_through_its_memfd() {
    use std::os::unix::fs::FileExt;

    for huge_pages in [false, true] {
        let pool = Pool::new(PoolConfig {
            shared: true,
            huge_pages,
            region_size: 2 << 20,
            max_bytes: 8 << 20,
            mlock: false,
        })
        .unwrap();
        let file = std::fs::File::from(
            pool.memfd()
                .expect("a shared pool has a memfd")
                .try_clone_to_owned()
                .unwrap(),
        );
        assert_eq!(file.metadata().unwrap().len(), 8 << 20);
        let mut bufs = Vec::new();
        for (i, size) in [100usize, 5000, 1 << 20].into_iter().enumerate() {
            let mut buf = pool.alloc(size).unwrap();
            buf.capacity_mut()[..size].fill(i as u8 + 1);
            buf.set_len(size);
            let buf = buf.freeze();
            let offset = pool.offset_of(&buf).unwrap();
            let mut seen = vec![0u8; size];
            file.read_exact_at(&mut seen, offset as u64).unwrap();
            assert_eq!(seen, &buf[..], "huge_pages {huge_pages}, size {size}");
            bufs.push(buf);
        }
        assert_eq!(pool.offset_of(&[1, 2, 3]), None, "heap memory is not in the pool");
        drop(bufs);
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }
    let private = Pool::new(small_config()).unwrap();
    assert!(private.memfd().is_none());
}

/// Regression: creating a shared pool with `huge_pages` on a machine without free hugetlb
/// pages used to attempt a `MAP_FIXED` hugetlb mapping over the fresh reservation; its failure
/// left a hole that another thread's mapping could take, and restoring the reservation then
/// clobbered that mapping (a SIGSEGV in a concurrent test). Pools made on many threads at once
/// must keep every buffer intact.
#[test]
#[cfg_attr(miri, ignore = "memfd needs the Linux backend")]
fn shared_pools_created_concurrently_never_clobber_each_other() {
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            std::thread::spawn(move || {
                for round in 0..20u8 {
                    let pool = Pool::new(PoolConfig {
                        shared: round % 2 == 0,
                        huge_pages: true,
                        region_size: 2 << 20,
                        max_bytes: 16 << 20,
                        mlock: false,
                    })
                    .unwrap();
                    let bufs: Vec<_> = (0..8usize)
                        .map(|i| {
                            let mut b = pool.alloc(4096 << (i % 4)).unwrap();
                            let len = b.capacity();
                            b.capacity_mut().fill(t ^ round);
                            b.set_len(len);
                            b.freeze()
                        })
                        .collect();
                    std::thread::yield_now();
                    assert!(bufs.iter().all(|b| b.iter().all(|&x| x == t ^ round)));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// A warm pool serves buffers as a cold one does, whether its regions come ahead or on demand
/// (under Miri the grower's work runs on the asking thread, so both paths run there too), and
/// its last region may be the one the grower maps ahead.
#[test]
fn a_warm_pool_serves_buffers_as_a_cold_one() {
    let pool = Pool::new(PoolConfig {
        max_bytes: 4 * REGION,
        ..small_config()
    })
    .unwrap();
    let before = pool.copy_from(b"before").unwrap();
    pool.keep_warm();
    // A region each, the pool's three others.
    let whole: Vec<_> = (0..3u8).map(|i| pool.copy_from(&[i; REGION]).unwrap()).collect();
    assert_eq!(&*before, b"before");
    for (i, buf) in whole.iter().enumerate() {
        assert!(buf.iter().all(|&b| usize::from(b) == i), "buffer {i}");
    }
    assert_eq!(pool.stats().regions, 4);
    drop((before, whole));
    assert_eq!(pool.stats().buffers_outstanding(), 0);
}
