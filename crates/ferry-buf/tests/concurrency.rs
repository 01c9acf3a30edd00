//! Multithreaded use: clone/drop across threads, concurrent allocation with growth, recovery
//! racing with drops. Runs under Miri with small iteration counts.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;

use common::{all_bytes, assert_no_leaks, scaled, small_pool};
use ferry_buf::{PoolError, SharedBuf};

#[test]
fn clone_and_drop_across_threads() {
    let pool = small_pool();
    let buf = pool.copy_from(b"shared by every thread").unwrap();
    let rounds = scaled(20_000, 40);
    let threads = 4;
    let (to_dropper, dropped) = mpsc::channel::<SharedBuf>();
    let dropper = thread::spawn(move || {
        let mut n = 0usize;
        for buf in dropped {
            assert_eq!(&buf[..6], b"shared");
            n += 1;
        }
        n
    });
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let buf = buf.clone();
            let to_dropper = to_dropper.clone();
            thread::spawn(move || {
                for i in 0..rounds {
                    let a = buf.clone();
                    let b = a.slice(7..9);
                    assert_eq!(&*b, b"by");
                    if (i + t) % 4 == 0 {
                        to_dropper.send(a).unwrap(); // released on another thread
                    }
                }
            })
        })
        .collect();
    drop(to_dropper);
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(dropper.join().unwrap(), threads * rounds / 4);
    assert_eq!(buf.ref_count(), 1, "every clone was released");
    drop(buf);
    assert_no_leaks(&pool);
}

#[test]
fn concurrent_alloc_free_with_growth() {
    let pool = small_pool();
    let rounds = scaled(5_000, 20);
    let threads = 4;
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let pool = pool.clone();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let mut held = Vec::new();
                for i in 0..rounds {
                    let size = [64, 200, 1000, 4096][(i + t) % 4];
                    let tag = (t * 31 + i) as u8;
                    let mut buf = match pool.alloc(size) {
                        Ok(buf) => buf,
                        Err(PoolError::Exhausted { .. }) => {
                            held.clear();
                            continue;
                        }
                        Err(e) => panic!("{e}"),
                    };
                    buf.capacity_mut().fill(tag);
                    buf.set_len(size);
                    let buf = buf.freeze();
                    held.push((buf, tag));
                    if held.len() > 8 {
                        let (old, tag) = held.swap_remove(i % held.len());
                        assert!(all_bytes(&old, tag), "another thread wrote my slot");
                    }
                }
                for (buf, tag) in held {
                    assert!(all_bytes(&buf, tag), "another thread wrote my slot");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_no_leaks(&pool);
}

#[test]
fn recover_races_with_drops() {
    let pool = small_pool();
    let rounds = scaled(20_000, 40);
    let buf = pool.copy_from(&[42; 256]).unwrap();
    let keeper = buf.clone();
    let pool2 = pool.clone();
    let recoverer = thread::spawn(move || {
        for i in 0..rounds {
            let start = i % 200;
            let got = pool2
                .recover(&keeper[start..start + 50])
                .expect("keeper keeps it live");
            assert!(all_bytes(&got, 42));
        }
        keeper
    });
    for _ in 0..rounds {
        let clone = buf.clone();
        drop(clone);
    }
    let keeper = recoverer.join().unwrap();
    assert_eq!(buf.ref_count(), 2);
    drop((buf, keeper));
    assert_no_leaks(&pool);
}

#[test]
fn last_drop_on_another_thread_frees_the_pool() {
    let pool = small_pool();
    let buf = pool.copy_from(b"outlives the pool").unwrap();
    drop(pool);
    let handle = thread::spawn(move || {
        assert_eq!(&*buf, b"outlives the pool");
        // Dropping here unmaps the regions; Miri checks nothing leaks or dangles.
    });
    handle.join().unwrap();
}
