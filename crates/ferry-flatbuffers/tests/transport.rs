//! A FlatBuffer built across hundreds of 64-byte pool blocks, sent as one frame of one gather
//! entry per slice, arrives byte for byte and verifies: over TCP in every send mode the kernel
//! offers (more slices than one `sendmsg` takes, so the frame needs several calls), and over
//! shared memory (copied into the block). Every pool is back to its baseline afterwards.
//!
//! The table is written by hand (what `flatc --rust` generates for it, trimmed), so that these
//! tests need no `flatc`:
//!
//! ```text
//! table Item { name: string (required); id: ulong; data: [ubyte]; nums: [uint]; tags: [string]; }
//! ```

use std::thread;

use ferry_buf::{Pool, PoolConfig};
use ferry_flatbuffers::{FlatBufferBuilder, Message, PoolAllocator, ReadError, VerifierOptions, read_frame};
use ferry_net::frame::HEADER_LEN;
use ferry_net::{Config, Connection, Meta, Mode};
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_testkit::{Rng, Scratch, shared_pool, spawn, within};
use ferry_transport::{Payload, TransportError};

use item::Item;

/// The frame kind the tests send with.
const KIND: u16 = 0xf1a7;

/// Gather entries one `sendmsg` takes on Linux (`UIO_MAXIOV`).
const IOV_MAX: usize = 1024;

/// Set (to anything) to make a test that needs a kernel feature this machine lacks fail instead
/// of skipping (as in `ferry-net`'s tests).
const REQUIRE_KERNEL_FEATURES_VAR: &str = "FERRY_REQUIRE_KERNEL_FEATURES";

/// `Item`, as `flatc --rust` would generate it: a reader over a verified table, its verifier,
/// and a builder function.
mod item {
    // `Follow::follow` and `Table::get` are the stock runtime's unsafe entry points, called the
    // way generated code calls them.
    #![allow(unsafe_code)]

    use ferry_flatbuffers::{
        FlatBufferBuilder, Follow, ForwardsUOffset, InvalidFlatbuffer, Table, Vector, Verifiable, Verifier,
        WIPOffset,
    };

    pub const NAME: u16 = 4;
    pub const ID: u16 = 6;
    pub const DATA: u16 = 8;
    pub const NUMS: u16 = 10;
    pub const TAGS: u16 = 12;

    /// A verified `Item`, read in place.
    #[derive(Clone, Copy, Debug)]
    pub struct Item<'a> {
        table: Table<'a>,
    }

    impl<'a> Follow<'a> for Item<'a> {
        type Inner = Item<'a>;
        unsafe fn follow(buf: &'a [u8], loc: usize) -> Item<'a> {
            // SAFETY: the caller (`flatbuffers::root`, after the verifier) guarantees a table at
            // `loc`, as `Follow::follow` requires.
            let table = unsafe { Table::new(buf, loc) };
            Item { table }
        }
    }

    impl Verifiable for Item<'_> {
        fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
            v.visit_table(pos)?
                .visit_field::<ForwardsUOffset<&str>>("name", NAME, true)?
                .visit_field::<u64>("id", ID, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, u8>>>("data", DATA, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, u32>>>("nums", NUMS, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, ForwardsUOffset<&str>>>>("tags", TAGS, false)?
                .finish();
            Ok(())
        }
    }

    impl<'a> Item<'a> {
        pub fn name(&self) -> &'a str {
            // SAFETY: verified as an `Item`: slot NAME is a string, and required.
            unsafe { self.table.get::<ForwardsUOffset<&str>>(NAME, None) }.unwrap_or_default()
        }

        pub fn id(&self) -> u64 {
            // SAFETY: verified as an `Item`: slot ID is a `u64`.
            unsafe { self.table.get::<u64>(ID, Some(0)) }.unwrap_or(0)
        }

        pub fn data(&self) -> Option<Vector<'a, u8>> {
            // SAFETY: verified as an `Item`: slot DATA is a `[ubyte]`.
            unsafe { self.table.get::<ForwardsUOffset<Vector<'a, u8>>>(DATA, None) }
        }

        pub fn nums(&self) -> Option<Vector<'a, u32>> {
            // SAFETY: verified as an `Item`: slot NUMS is a `[uint]`.
            unsafe { self.table.get::<ForwardsUOffset<Vector<'a, u32>>>(NUMS, None) }
        }

        pub fn tags(&self) -> Option<Vector<'a, ForwardsUOffset<&'a str>>> {
            // SAFETY: verified as an `Item`: slot TAGS is a `[string]`.
            unsafe {
                self.table
                    .get::<ForwardsUOffset<Vector<'a, ForwardsUOffset<&'a str>>>>(TAGS, None)
            }
        }
    }

    /// The fields of an `Item`, to build one and to check one read back.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Fields {
        pub name: String,
        pub id: u64,
        pub data: Vec<u8>,
        pub nums: Vec<u32>,
        pub tags: Vec<String>,
    }

    impl Fields {
        /// Builds the table (not finished) the way generated code does.
        pub fn build(&self, fbb: &mut FlatBufferBuilder<'static>) -> WIPOffset<Item<'static>> {
            let tags: Vec<_> = self.tags.iter().map(|t| fbb.create_string(t)).collect();
            let tags = fbb.create_vector(&tags);
            let nums = fbb.create_vector(&self.nums);
            let data = fbb.create_vector(&self.data[..]);
            let name = fbb.create_string(&self.name);
            let start = fbb.start_table();
            fbb.push_slot::<u64>(ID, self.id, 0);
            fbb.push_slot_always(TAGS, tags);
            fbb.push_slot_always(NUMS, nums);
            fbb.push_slot_always(DATA, data);
            fbb.push_slot_always(NAME, name);
            let table = fbb.end_table(start);
            fbb.required(table, NAME, "name");
            WIPOffset::new(table.value())
        }

        /// What `item` holds, copied out.
        pub fn read(item: &Item<'_>) -> Fields {
            Fields {
                name: item.name().to_owned(),
                id: item.id(),
                data: item.data().map(|d| d.bytes().to_vec()).unwrap_or_default(),
                nums: item.nums().map(|n| n.iter().collect()).unwrap_or_default(),
                tags: item
                    .tags()
                    .map(|t| t.iter().map(str::to_owned).collect())
                    .unwrap_or_default(),
            }
        }
    }
}

/// About 100 KiB of fields, determined by `seed`: a 96 KiB byte vector, 1,000 `u32`s and 16
/// strings, some longer than a block.
fn fields(seed: u64) -> item::Fields {
    let mut rng = Rng::new(seed);
    item::Fields {
        name: format!("item-{seed}"),
        id: rng.u64(),
        data: rng.bytes(96 << 10),
        nums: (0..1000).map(|_| rng.u64() as u32).collect(),
        tags: (0..16)
            .map(|i| "tag".repeat(rng.range(1, 60)) + &i.to_string())
            .collect(),
    }
}

/// A builder whose every block is 64 bytes (the pool's smallest class): a message of `n` bytes
/// is about `n / 64` slices.
fn tiny_builder(pool: &Pool) -> FlatBufferBuilder<'static> {
    FlatBufferBuilder::new_in(PoolAllocator::with_first_block(pool, 64).max_block_size(64))
}

/// `fields` built in 64-byte blocks of `pool` and finished.
fn message(pool: &Pool, fields: &item::Fields) -> Message {
    let mut fbb = tiny_builder(pool);
    let root = fields.build(&mut fbb);
    fbb.finish(root, None);
    let message = fbb.finished_message();
    assert!(
        message.slices().len() > IOV_MAX,
        "{} slices: the message must need more than one sendmsg",
        message.slices().len()
    );
    assert!(message.slices().iter().all(|s| s.len() <= 64));
    message
}

/// A private pool that holds TCP frames of the default maximum length (8 MiB regions).
fn tcp_pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 8 << 20,
        max_bytes: 256 << 20,
        mlock: false,
        ..PoolConfig::default()
    })
    .expect("pool")
}

fn outstanding(pool: &Pool) -> usize {
    pool.stats().buffers_outstanding()
}

/// A loopback pair: (client, server).
fn tcp_pair(client_pool: &Pool, server_pool: &Pool, mode: Mode) -> (Connection, Connection) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let client = Connection::connect(
        listener.local_addr().unwrap(),
        client_pool,
        &Config::with_mode(mode),
    )
    .expect("client connection");
    let server = Connection::new(
        listener.accept().expect("accept").0,
        server_pool,
        &Config::default(),
    )
    .expect("server connection");
    (client, server)
}

/// Prints a loud SKIPPED with the reason, or fails the test when
/// `FERRY_REQUIRE_KERNEL_FEATURES` is set.
fn skip(test: &str, reason: &str) {
    if std::env::var_os(REQUIRE_KERNEL_FEATURES_VAR).is_some() {
        panic!("{test}: cannot run ({reason}) and {REQUIRE_KERNEL_FEATURES_VAR} is set");
    }
    use std::io::Write;
    let banner = "*".repeat(70);
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n{banner}\nSKIPPED: {test}: {reason}\n{banner}\n"
    );
}

/// The message over TCP in `mode`: one frame whose slices are gather entries (only the frame
/// header is written into staging), in as many `sendmsg` calls as the entries need; it arrives
/// identical and verifies, and every buffer goes back to its pool (zero-copy modes: once the
/// kernel's completions have come).
fn many_slices_over_tcp(mode: Mode) {
    let test = format!("many_slices_over_tcp_{mode}");
    within(&test.clone(), move || {
        let (client_pool, server_pool, build_pool) = (tcp_pool(), tcp_pool(), tcp_pool());
        let (mut client, mut server) = tcp_pair(&client_pool, &server_pool, mode);
        if client.mode() != mode {
            let why = format!("{mode} mode unavailable here (fell back to {})", client.mode());
            skip(&test, &why);
            return;
        }
        let fields = fields(7);
        let message = message(&build_pool, &fields);
        let expect = message.to_vec();
        let slices = message.slices().len();

        let reader = thread::spawn(move || {
            let frame = server.recv().expect("recv");
            assert_eq!(frame.meta(), Meta::new(KIND, 42));
            let item = read_frame::<Item>(&frame, &VerifierOptions::default()).expect("verifies");
            let read = item::Fields::read(&item);
            let bytes = frame.payload().to_vec();
            drop(frame);
            drop(server);
            assert_eq!(outstanding(&server_pool), 0, "server pool back to baseline");
            (read, bytes)
        });
        client
            .send_payload(Meta::new(KIND, 42), message.payload())
            .expect("send");
        client.flush().expect("flush");
        let (read, bytes) = reader.join().expect("reader");
        assert!(bytes == expect, "{mode}: the frame is the message, byte for byte");
        assert_eq!(read, fields, "{mode}: the fields read back");

        let stats = client.stats().send;
        eprintln!("{mode}: {slices} slices; {stats:?}");
        assert_eq!(
            stats.queue.staged_bytes, HEADER_LEN as u64,
            "{mode}: only the frame header is copied; each slice is its own gather entry: {stats:?}"
        );
        assert_eq!(stats.queue.wire_bytes, (HEADER_LEN + expect.len()) as u64);
        let entries = slices + 1;
        assert!(
            stats.send_calls >= entries.div_ceil(IOV_MAX) as u64,
            "{mode}: {entries} entries take at least {} calls of {IOV_MAX}: {stats:?}",
            entries.div_ceil(IOV_MAX)
        );

        // Zero-copy sends hold the blocks until the kernel's completion.
        client.sender().wait_idle().expect("wait_idle");
        assert_eq!(client.in_flight(), 0);
        if matches!(mode, Mode::ZeroCopy | Mode::Uring) {
            let completions = client.stats().send.completions;
            assert!(
                completions.completed > 0,
                "{mode}: the blocks were held until the kernel's completion: {completions:?}"
            );
        }
        drop(client);
        drop(message);
        assert_eq!(
            outstanding(&client_pool),
            0,
            "{mode}: client pool back to baseline"
        );
        assert_eq!(
            outstanding(&build_pool),
            0,
            "{mode}: every block back in the pool"
        );
    });
}

#[test]
fn many_slices_over_tcp_copy() {
    many_slices_over_tcp(Mode::Copy);
}

#[test]
fn many_slices_over_tcp_gather() {
    many_slices_over_tcp(Mode::Gather);
}

#[test]
fn many_slices_over_tcp_zerocopy() {
    many_slices_over_tcp(Mode::ZeroCopy);
}

#[test]
fn many_slices_over_tcp_uring() {
    many_slices_over_tcp(Mode::Uring);
}

#[test]
fn many_slices_over_tcp_auto() {
    many_slices_over_tcp(Mode::Auto);
}

/// The message over shared memory: copied into the block, read contiguously in the peer's
/// memory, identical and verified; every buffer back in its pool once the block is
/// acknowledged.
#[test]
fn many_slices_over_shared_memory() {
    let scratch = Scratch::new("flatbuffers-shm");
    let listener = ShmListener::bind(scratch.0.join("many.sock")).expect("bind");
    let path = listener.path().to_path_buf();
    let fields = fields(11);
    let want = fields.clone();

    let receiver = spawn("receiver", move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).expect("accept");
        let frame = conn.recv().expect("recv");
        assert_eq!(frame.meta(), Meta::new(KIND, 0));
        let item = read_frame::<Item>(&frame, &VerifierOptions::default()).expect("verifies");
        assert_eq!(item::Fields::read(&item), want);
        let bytes = frame.bytes().expect("a payload is contiguous").to_vec();
        drop(frame);
        // Acknowledges the block, then waits for the sender to close.
        conn.wait_idle().expect("wait_idle");
        assert!(
            conn.recv().is_err(),
            "the sender closes after its block is acknowledged"
        );
        drop(conn);
        assert_eq!(outstanding(&pool), 0, "receiver pool back to baseline");
        bytes
    });
    let sender = spawn("sender", move || {
        let (pool, build_pool) = (shared_pool(), tcp_pool());
        let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).expect("connect");
        let message = message(&build_pool, &fields);
        let expect = message.to_vec();
        conn.send_payload(Meta::new(KIND, 0), message.payload())
            .expect("send");
        conn.flush().expect("flush");
        conn.wait_idle().expect("the receiver acknowledges the block");
        assert_eq!(conn.in_flight(), 0);
        drop(conn);
        drop(message);
        assert_eq!(outstanding(&pool), 0, "sender pool back to baseline");
        assert_eq!(outstanding(&build_pool), 0, "every block back in the pool");
        expect
    });
    let expect = sender.join();
    let bytes = receiver.join();
    assert!(bytes == expect, "the frame is the message, byte for byte");
}

/// What is not a FlatBuffer of the type asked for is a typed error naming the frame, never a
/// panic: a cut message, bytes of garbage, and (over shared memory) a Ferry message, which has
/// no contiguous bytes.
#[test]
fn read_frame_errors_name_the_frame() {
    within("read_frame_errors_name_the_frame", || {
        let (client_pool, server_pool, build_pool) = (tcp_pool(), tcp_pool(), tcp_pool());
        let (mut client, mut server) = tcp_pair(&client_pool, &server_pool, Mode::Gather);
        let whole = message(&build_pool, &fields(3)).to_vec();
        client
            .send_payload(Meta::new(KIND, 1), Payload::Bytes(&whole[..whole.len() - 100]))
            .unwrap();
        client
            .send_payload(Meta::new(KIND, 2), Payload::Bytes(&[0xff; 40]))
            .unwrap();
        client.flush().unwrap();
        let opts = VerifierOptions::default();
        for (id, len) in [(1, whole.len() - 100), (2, 40)] {
            let frame = server.recv().unwrap();
            let err = read_frame::<Item>(&frame, &opts).unwrap_err();
            match &err {
                ReadError::Invalid {
                    root,
                    kind,
                    request_id,
                    len: got,
                    ..
                } => {
                    assert!(root.contains("Item"), "{err}");
                    assert_eq!((*kind, *request_id, *got), (KIND, id, len), "{err}");
                }
                other => panic!("frame {id}: {other}"),
            }
            let text = err.to_string();
            assert!(!text.contains('\n'), "one line: {text:?}");
            assert!(text.contains(&format!("request id {id}")), "{text}");
        }
        drop((client, server));
        assert_eq!(outstanding(&client_pool) + outstanding(&server_pool), 0);
    });

    let scratch = Scratch::new("flatbuffers-shm-errors");
    let listener = ShmListener::bind(scratch.0.join("errors.sock")).expect("bind");
    let path = listener.path().to_path_buf();
    let receiver = spawn("receiver", move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).expect("accept");
        let frame = conn.recv().expect("recv");
        let err = read_frame::<Item>(&frame, &VerifierOptions::default()).unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::NotPayload {
                    kind: KIND,
                    request_id: 0
                }
            ),
            "{err}"
        );
        drop(frame);
        conn.wait_idle().expect("wait_idle");
        assert!(conn.recv().is_err());
        drop(conn);
        assert_eq!(outstanding(&pool), 0);
    });
    let sender = spawn("sender", move || {
        let pool = shared_pool();
        let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).expect("connect");
        let ctx = ferry_wire::Context::new(pool.clone());
        let mut record = ferry_wire::sample::Record::new(&ctx);
        record.set_key(&b"not a flatbuffer"[..]);
        conn.send(Meta::new(KIND, 0), &record).expect("send");
        conn.flush().expect("flush");
        conn.wait_idle().expect("wait_idle");
        drop(conn);
        assert_eq!(outstanding(&pool), 0);
    });
    sender.join();
    receiver.join();
}

/// A send of a frame longer than the connection's limit is refused whole, with nothing queued:
/// the caller learns the limit, the connection stays usable.
#[test]
fn a_message_longer_than_the_frame_limit_is_refused_whole() {
    within("a_message_longer_than_the_frame_limit_is_refused_whole", || {
        let (client_pool, server_pool, build_pool) = (tcp_pool(), tcp_pool(), tcp_pool());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let config = Config {
            max_frame_len: 64 << 10,
            ..Config::default()
        };
        let mut client = Connection::connect(listener.local_addr().unwrap(), &client_pool, &config).unwrap();
        let mut server =
            Connection::new(listener.accept().unwrap().0, &server_pool, &Config::default()).unwrap();
        let message = message(&build_pool, &fields(5));
        match client.send_payload(Meta::new(KIND, 1), message.payload()) {
            Err(TransportError::TooLong { len, max }) => {
                assert_eq!((len, max), (message.len(), 64 << 10));
            }
            other => panic!("expected TooLong, got {other:?}"),
        }
        // Still usable: a small message goes through.
        let mut fbb = FlatBufferBuilder::new(&build_pool);
        let small = item::Fields {
            name: "small".into(),
            id: 1,
            data: vec![1, 2, 3],
            nums: vec![4],
            tags: vec!["t".into()],
        };
        let root = small.build(&mut fbb);
        fbb.finish(root, None);
        client
            .send_payload(Meta::new(KIND, 2), fbb.finished_message().payload())
            .unwrap();
        client.flush().unwrap();
        let frame = server.recv().unwrap();
        assert_eq!(frame.meta().request_id, 2);
        let item = read_frame::<Item>(&frame, &VerifierOptions::default()).unwrap();
        assert_eq!(item::Fields::read(&item), small);
        drop((frame, client, server, message, fbb));
        for pool in [&client_pool, &server_pool, &build_pool] {
            assert_eq!(outstanding(pool), 0);
        }
    });
}
