//! Partial writes: with a tiny `SO_SNDBUF` and a slow reader, every mode resumes a batch in
//! the middle of its gather list (more send calls than batches) and every byte arrives intact.

mod common;

use std::thread;

use common::records::{self, RecordSpec};
use common::{outstanding, pair, poll, pollfd, pool, within};
use ferry_net::{Config, Mode, TransportError};
use ferry_wire::Context;

fn specs(mode: Mode, salt: u64) -> Vec<RecordSpec> {
    let mut specs = records::records(0x09a2_71a1 ^ salt ^ mode as u64, 12);
    // However the dice fall, one message far larger than the socket buffers.
    specs[0].fields = (0..4)
        .map(|i| records::ValueSpec {
            data: vec![i; 100 << 10],
            source: records::Source::PoolOwned,
        })
        .collect();
    specs
}

/// One thread drives both ends without blocking: the sender writes until the kernel takes no
/// more (so every batch larger than the socket buffers is cut short), then the reader drains
/// what arrived. Nothing is read while a send call runs, so a batch can only complete over
/// several calls: deterministic partial writes.
fn interleaved(mode: Mode) {
    within(&format!("interleaved partial writes ({mode})"), move || {
        let (client_pool, server_pool) = (pool(), pool());
        let server_config = Config {
            read_buf: 4096,
            ..Config::default()
        };
        let (mut client, mut server) = pair(
            &client_pool,
            &Config::with_mode(mode),
            &server_pool,
            &server_config,
        );
        client.set_send_buffer(4096).unwrap();
        client.set_nonblocking(true);
        server.set_nonblocking(true);
        let specs = specs(mode, 1);
        let ctx = Context::new(client_pool.clone());
        let (mut next, mut received, mut would_block) = (0, 0, 0u64);
        while received < specs.len() {
            while next < specs.len() {
                let placed = records::place(&specs[next], &client_pool);
                let rec = records::build(&specs[next], &placed, &ctx);
                match client.send(specs[next].meta, &rec) {
                    Ok(()) => next += 1,
                    Err(TransportError::WouldBlock) => {
                        would_block += 1;
                        break;
                    }
                    Err(e) => panic!("send {next}: {e}"),
                }
            }
            if next == specs.len() {
                match client.flush() {
                    Ok(()) => {}
                    Err(TransportError::WouldBlock) => would_block += 1,
                    Err(e) => panic!("flush: {e}"),
                }
            }
            loop {
                match server.try_recv() {
                    Ok(Some(frame)) => {
                        records::check(&specs[received], &frame, received);
                        received += 1;
                    }
                    Ok(None) => break,
                    Err(e) => panic!("recv {received}: {e}"),
                }
            }
            if received < specs.len() {
                let pending = client.sender().has_pending();
                let mut fds = [
                    pollfd(&client, if pending { libc::POLLOUT } else { 0 }),
                    pollfd(&server, libc::POLLIN),
                ];
                poll(&mut fds);
                if fds[0].revents & libc::POLLERR != 0 {
                    client.sender().poll_completions().unwrap();
                }
            }
        }
        client.set_nonblocking(false);
        client.sender().wait_idle().unwrap();
        let stats = client.stats().send;
        eprintln!("{mode} ({}): {would_block} WouldBlock, {stats:?}", client.mode());
        assert!(would_block > 0, "{mode}: the socket buffers filled");
        assert!(
            stats.send_calls > stats.batches,
            "{mode}: some batch needed more than one call: {stats:?}"
        );
        if client.mode() != Mode::Copy {
            assert!(stats.queue.zero_copy_values_referenced > 0 || client.mode() == Mode::Auto);
        }
        drop((client, server));
        assert_eq!(outstanding(&client_pool), 0);
        assert_eq!(outstanding(&server_pool), 0);
    });
}

/// See [`interleaved`].
#[test]
fn interleaved_partial_writes_every_mode() {
    for mode in Mode::ALL {
        interleaved(mode);
    }
}

/// A blocking sender with a 4 KiB `SO_SNDBUF` against a reader on another thread that reads at
/// most 4 KiB at a time: batches of up to 256 KiB go out in many calls each, and arrive intact.
/// (The reader keeps its default `SO_RCVBUF`: a 4 KiB receive window, far below the loopback
/// MSS, makes TCP crawl on its timers without testing anything more.)
#[test]
fn blocking_sender_tiny_send_buffer_slow_reader_every_mode() {
    for mode in Mode::ALL {
        within(&format!("blocking partial writes ({mode})"), move || {
            let (client_pool, server_pool) = (pool(), pool());
            let server_config = Config {
                read_buf: 4096,
                ..Config::default()
            };
            let (mut client, mut server) = pair(
                &client_pool,
                &Config::with_mode(mode),
                &server_pool,
                &server_config,
            );
            client.set_send_buffer(4096).unwrap();
            let specs = std::sync::Arc::new(specs(mode, 2));
            let rx_specs = std::sync::Arc::clone(&specs);
            let reader = thread::spawn(move || {
                records::receive_all(&mut server, &rx_specs);
                let reads = server.stats().recv.reads;
                drop(server);
                assert_eq!(outstanding(&server_pool), 0);
                reads
            });
            records::send_all(&mut client, &client_pool, &specs).unwrap();
            client.sender().wait_idle().unwrap();
            let stats = client.stats().send;
            drop(client);
            let reads = reader.join().unwrap();
            eprintln!("{mode}: {reads} reads, {stats:?}");
            assert!(
                stats.send_calls > stats.batches,
                "{mode}: batches resumed mid-gather: {stats:?}"
            );
            assert_eq!(outstanding(&client_pool), 0);
        });
    }
}
