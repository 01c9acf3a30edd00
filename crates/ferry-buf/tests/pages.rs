//! Page backing of real regions (Linux, not Miri): hugetlb when free 2 MiB pages exist, else
//! transparent huge pages, else base pages. A missing kernel feature skips its check with a
//! printed reason.
#![cfg(all(target_os = "linux", not(miri)))]

use std::sync::{Arc, Mutex};

use ferry_buf::{PageKind, Pool, PoolConfig, RegionInfo};

const REGION: usize = 2 << 20;

fn first_region(config: PoolConfig) -> (Pool, RegionInfo) {
    let pool = Pool::new(config).unwrap();
    let seen: Arc<Mutex<Vec<RegionInfo>>> = Arc::default();
    let hook = seen.clone();
    pool.on_region(move |info| hook.lock().unwrap().push(*info));
    let mut buf = pool.alloc(REGION).unwrap();
    // The whole region is mapped, writable and zeroed.
    assert!(buf.capacity_mut().iter().all(|&b| b == 0));
    buf.capacity_mut().fill(1);
    drop(buf);
    let info = seen.lock().unwrap()[0];
    (pool, info)
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
    let (_pool, info) = first_region(config);
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
        max_bytes: 2 * REGION,
        huge_pages: false,
        ..Default::default()
    };
    let (_pool, info) = first_region(config);
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
