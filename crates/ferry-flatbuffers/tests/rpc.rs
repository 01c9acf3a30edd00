//! FlatBuffers methods on a real `ferry-rpc` server, over TCP and shared memory: echo calls
//! (small, and 100 KiB built across 64-byte blocks) from the blocking and the tokio client,
//! foreground and background; hostile requests answered `INVALID_ARGUMENT` (never a panic)
//! while the server goes on serving; a handler's status and a bad response reported as such.
//! Every pool is back to its baseline once server and clients are gone.
//!
//! The table is written by hand (what `flatc --rust` generates for it, trimmed):
//!
//! ```text
//! table Greeting { name: string (required); count: uint; data: [ubyte]; }
//! ```
#![cfg(feature = "rpc")]

use std::time::Duration;

use ferry_buf::{Pool, PoolConfig};
use ferry_flatbuffers::rpc::{self, FlatRequest, FlatService};
use ferry_flatbuffers::{FlatBufferBuilder, Message, PoolAllocator, WIPOffset};
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::{Call, Channel, ChannelConfig, Code, ConnConfig, LoopConfig, Mode, Server, Services, Status};
use ferry_testkit::{Rng, Scratch, within};
use ferry_transport::{Payload, method_id};

use greeting::Greeting;

const ECHO_PATH: &str = "/flat.test.Echo/Echo";
const ECHO_BG_PATH: &str = "/flat.test.Echo/EchoBg";
const MISSING_PATH: &str = "/flat.test.Echo/Missing";
const BROKEN_PATH: &str = "/flat.test.Echo/Broken";
const ECHO: u16 = method_id(ECHO_PATH);
const ECHO_BG: u16 = method_id(ECHO_BG_PATH);
const MISSING: u16 = method_id(MISSING_PATH);
const BROKEN: u16 = method_id(BROKEN_PATH);

/// `Greeting`, as `flatc --rust` would generate it: a reader over a verified table, its
/// verifier, and a builder function.
mod greeting {
    // `Follow::follow` and `Table::get` are the stock runtime's unsafe entry points, called the
    // way generated code calls them.
    #![allow(unsafe_code)]

    use ferry_flatbuffers::{
        FlatBufferBuilder, Follow, ForwardsUOffset, InvalidFlatbuffer, Table, Vector, Verifiable, Verifier,
        WIPOffset,
    };

    pub const NAME: u16 = 4;
    pub const COUNT: u16 = 6;
    pub const DATA: u16 = 8;

    /// A verified `Greeting`, read in place.
    #[derive(Clone, Copy, Debug)]
    pub struct Greeting<'a> {
        table: Table<'a>,
    }

    impl<'a> Follow<'a> for Greeting<'a> {
        type Inner = Greeting<'a>;
        unsafe fn follow(buf: &'a [u8], loc: usize) -> Greeting<'a> {
            // SAFETY: the caller (`flatbuffers::root`, after the verifier) guarantees a table at
            // `loc`, as `Follow::follow` requires.
            let table = unsafe { Table::new(buf, loc) };
            Greeting { table }
        }
    }

    impl Verifiable for Greeting<'_> {
        fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
            v.visit_table(pos)?
                .visit_field::<ForwardsUOffset<&str>>("name", NAME, true)?
                .visit_field::<u32>("count", COUNT, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, u8>>>("data", DATA, false)?
                .finish();
            Ok(())
        }
    }

    impl<'a> Greeting<'a> {
        pub fn name(&self) -> &'a str {
            // SAFETY: verified as a `Greeting`: slot NAME is a string, and required.
            unsafe { self.table.get::<ForwardsUOffset<&str>>(NAME, None) }.unwrap_or_default()
        }

        pub fn count(&self) -> u32 {
            // SAFETY: verified as a `Greeting`: slot COUNT is a `u32`.
            unsafe { self.table.get::<u32>(COUNT, Some(0)) }.unwrap_or(0)
        }

        pub fn data(&self) -> &'a [u8] {
            // SAFETY: verified as a `Greeting`: slot DATA is a `[ubyte]`.
            unsafe { self.table.get::<ForwardsUOffset<Vector<'a, u8>>>(DATA, None) }
                .map_or(&[], |d| d.bytes())
        }
    }

    /// Builds a `Greeting` (not finished) the way generated code does.
    pub fn build(
        fbb: &mut FlatBufferBuilder<'static>,
        name: &str,
        count: u32,
        data: &[u8],
    ) -> WIPOffset<Greeting<'static>> {
        let data = fbb.create_vector(data);
        let name = fbb.create_string(name);
        let start = fbb.start_table();
        fbb.push_slot_always(DATA, data);
        fbb.push_slot::<u32>(COUNT, count, 0);
        fbb.push_slot_always(NAME, name);
        let table = fbb.end_table(start);
        fbb.required(table, NAME, "name");
        WIPOffset::new(table.value())
    }
}

/// The echo: the name reversed, the count plus one, the data as it came.
fn echo(
    _call: &Call<'_>,
    request: FlatRequest<'_>,
    fbb: &mut FlatBufferBuilder<'static>,
) -> Result<WIPOffset<Greeting<'static>>, Status> {
    let req = request.root::<Greeting>()?;
    let name: String = req.name().chars().rev().collect();
    Ok(greeting::build(
        fbb,
        &name,
        req.count().wrapping_add(1),
        req.data(),
    ))
}

fn service() -> FlatService {
    FlatService::new()
        .method(ECHO_PATH, Mode::Foreground, echo)
        .method(ECHO_BG_PATH, Mode::Background, echo)
        .method(MISSING_PATH, Mode::Foreground, |_call, _request, _fbb| {
            Err::<WIPOffset<Greeting<'static>>, _>(Status::new(Code::NotFound, "nobody by that name"))
        })
        // A buggy handler: the root it returns is a string, not a `Greeting`.
        .method(BROKEN_PATH, Mode::Foreground, |_call, _request, fbb| {
            let text = fbb.create_string("not a table");
            Ok(WIPOffset::<Greeting<'static>>::new(text.value()))
        })
}

/// A shared pool (shared-memory sessions send from it) that also holds TCP frames of the
/// default maximum length (8 MiB regions).
fn pool() -> Pool {
    Pool::new(PoolConfig {
        shared: true,
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

/// The server of [`service`] on TCP and shared memory, every session sending from `pool`.
fn server(scratch: &Scratch, pool: &Pool) -> Server {
    let services = Services::builder()
        .service(service())
        .expect("add")
        .workers(1)
        .build()
        .expect("services");
    let config = LoopConfig {
        conn: ConnConfig {
            shared_pool: Some(pool.clone()),
            ..ConnConfig::default()
        },
        ..LoopConfig::default()
    };
    Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen(&scratch.shm("flat"))
        .loops(1)
        .config(config)
        .start()
        .expect("server starts")
}

/// A client configuration whose connections (TCP, and shared memory) use `pool`.
fn client_config(pool: &Pool) -> ChannelConfig {
    ChannelConfig {
        conn: ConnConfig {
            shared_pool: Some(pool.clone()),
            ..ConnConfig::default()
        },
        ..ChannelConfig::default()
    }
}

/// A `Greeting` finished in blocks of `pool`: 64-byte blocks when `tiny`.
fn request(pool: &Pool, name: &str, count: u32, data: &[u8], tiny: bool) -> Message {
    let mut fbb = if tiny {
        FlatBufferBuilder::new_in(PoolAllocator::with_first_block(pool, 64).max_block_size(64))
    } else {
        FlatBufferBuilder::new(pool)
    };
    let root = greeting::build(&mut fbb, name, count, data);
    fbb.finish(root, None);
    fbb.finished_message()
}

/// Runs `test` with a server and pools, then checks every pool is back to its baseline once
/// the server is shut down and everything `test` made is dropped.
fn with_server(name: &str, test: impl FnOnce(&Server, &Pool, &Pool) + Send + 'static) {
    within(name, move || {
        let scratch = Scratch::new("flatbuffers-rpc");
        let (server_pool, client_pool, build_pool) = (pool(), pool(), pool());
        let server = server(&scratch, &server_pool);
        test(&server, &client_pool, &build_pool);
        server.shutdown(Duration::from_secs(1));
        assert_eq!(outstanding(&server_pool), 0, "server pool back to baseline");
        assert_eq!(outstanding(&client_pool), 0, "client pool back to baseline");
        assert_eq!(outstanding(&build_pool), 0, "build pool back to baseline");
    });
}

/// Echo calls over both transports, foreground and background: a small request, and one of
/// 100 KiB built in 64-byte blocks (over 1,600 slices, one gather entry each over TCP).
#[test]
fn echo_over_tcp_and_shared_memory() {
    with_server(
        "echo_over_tcp_and_shared_memory",
        |server, client_pool, build_pool| {
            let big = Rng::new(5).bytes(100 << 10);
            for addr in server.addrs() {
                let addr = addr.to_string();
                let channel = Channel::connect_with(&addr, client_config(client_pool)).expect("connect");
                for method in [ECHO, ECHO_BG] {
                    for (name, data, tiny) in [("ferry", &b"small"[..], false), ("big one", &big[..], true)] {
                        let msg = request(build_pool, name, 41, data, tiny);
                        if tiny {
                            assert!(msg.slices().len() > 1024, "{} slices", msg.slices().len());
                        }
                        let response = rpc::call(&channel, method, &msg)
                            .unwrap_or_else(|e| panic!("{addr} {method} {name}: {e}"));
                        let greeting = response.root::<Greeting>().expect("the response verifies");
                        let reversed: String = name.chars().rev().collect();
                        assert_eq!(greeting.name(), reversed, "{addr} {method}");
                        assert_eq!(greeting.count(), 42, "{addr} {method}");
                        assert!(greeting.data() == data, "{addr} {method} {name}: data echoed");
                    }
                }
            }
        },
    );
}

/// The same echo from the tokio client.
#[test]
fn echo_from_the_async_client() {
    with_server("echo_from_the_async_client", |server, client_pool, build_pool| {
        let addrs: Vec<String> = server.addrs().iter().map(ToString::to_string).collect();
        let (client_pool, build_pool) = (client_pool.clone(), build_pool.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        tokio::task::LocalSet::new().block_on(&runtime, async move {
            for addr in &addrs {
                let channel = AsyncChannel::connect_with(addr, client_config(&client_pool))
                    .await
                    .expect("connect");
                let msg = request(&build_pool, "tokio", 1, &[9; 3000], true);
                let response = rpc::call_async(&channel, ECHO, &msg).await.expect("call");
                let greeting = response.root::<Greeting>().expect("the response verifies");
                assert_eq!(greeting.name(), "oikot", "{addr}");
                assert_eq!((greeting.count(), greeting.data()), (2, &[9; 3000][..]), "{addr}");
            }
        });
    });
}

/// Asserts `result` is `INVALID_ARGUMENT` whose message contains each of `says`.
fn assert_invalid(result: Result<(), Status>, says: &[&str], case: &str) {
    let status = result.expect_err(case);
    assert_eq!(status.code, Code::InvalidArgument, "{case}: {status}");
    for what in says {
        assert!(status.message.contains(what), "{case}: says {what:?}: {status}");
    }
}

/// Requests that are not valid `Greeting`s (short, out of bounds, a required field missing,
/// bad UTF-8, another type, cut, a Ferry message, and random corruptions of a valid one) get
/// `INVALID_ARGUMENT` naming the method and what the verifier found; never a panic
/// (`INTERNAL`), and the session and server go on serving.
#[test]
fn hostile_requests_get_invalid_argument_and_the_server_goes_on() {
    with_server(
        "hostile_requests_get_invalid_argument_and_the_server_goes_on",
        |server, client_pool, build_pool| {
            let valid = request(build_pool, "valid", 7, b"payload", false).to_vec();
            let no_name = {
                let mut fbb = FlatBufferBuilder::new(build_pool);
                let start = fbb.start_table();
                fbb.push_slot::<u32>(greeting::COUNT, 3, 0);
                let table = fbb.end_table(start);
                fbb.finish(table, None);
                fbb.finished_message().to_vec()
            };
            let bad_utf8 = {
                let mut fbb = FlatBufferBuilder::new(build_pool);
                let name = fbb.create_byte_string(&[0xff, 0xfe, 0xfd]);
                let start = fbb.start_table();
                fbb.push_slot_always(greeting::NAME, name);
                let table = fbb.end_table(start);
                fbb.finish(table, None);
                fbb.finished_message().to_vec()
            };
            let a_string = {
                let mut fbb = FlatBufferBuilder::new(build_pool);
                let s = fbb.create_string("just a string");
                fbb.finish(s, None);
                fbb.finished_message().to_vec()
            };
            // A table whose vtable offset points far outside the buffer.
            let far_vtable = [4, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f];
            let cases: [(&str, &[u8], Option<&str>); 8] = [
                ("empty", &[], Some("out of bounds")),
                ("three bytes", &[1, 2, 3], Some("out of bounds")),
                (
                    "root offset out of bounds",
                    &[0xf0, 0xff, 0xff, 0x0f, 0, 0, 0, 0],
                    None,
                ),
                ("vtable out of bounds", &far_vtable, None),
                ("missing required name", &no_name, Some("name")),
                ("name not UTF-8", &bad_utf8, Some("Utf8")),
                ("a string, not a table", &a_string, None),
                ("cut short", &valid[..valid.len() - 12], None),
            ];
            let mut rng = Rng::new(ferry_testkit::seed("FERRY_FLATBUFFERS_SEED", 0xf1a7));
            for addr in server.addrs() {
                let addr = addr.to_string();
                let channel = Channel::connect_with(&addr, client_config(client_pool)).expect("connect");
                let call_bytes = |method: u16, bytes: &[u8]| {
                    channel.call_payload(method, Payload::Bytes(bytes)).map(|_| ())
                };
                for (path, method) in [(ECHO_PATH, ECHO), (ECHO_BG_PATH, ECHO_BG)] {
                    for (case, bytes, what) in cases {
                        let case = format!("{addr} {path}: {case}");
                        let mut says = vec![path, "Greeting"];
                        says.extend(what);
                        assert_invalid(call_bytes(method, bytes), &says, &case);
                    }
                    // A Ferry message sent to a FlatBuffers method. (Over shared memory to a
                    // background method, `ferry-rpc` refuses it before the handler, in its own
                    // words: "a raw method got a Ferry message".)
                    let ctx = channel.context().clone();
                    let mut record = ferry_wire::sample::Record::new(&ctx);
                    record.set_key(&b"a Ferry message"[..]);
                    let result = channel
                        .call::<ferry_wire::sample::Record<'static>>(method, &record)
                        .map(|_| ());
                    assert_invalid(result, &[], &format!("{addr} {path}: a Ferry message"));

                    // Random corruptions of a valid request: each is answered (a verified echo or
                    // INVALID_ARGUMENT), none crashes a handler.
                    let (mut answered, mut refused) = (0, 0);
                    for i in 0..200 {
                        let mut bytes = valid.clone();
                        for _ in 0..rng.range(1, 4) {
                            let at = rng.range(0, bytes.len());
                            bytes[at] = rng.u64() as u8;
                        }
                        match channel.call_payload(method, Payload::Bytes(&bytes)) {
                            Ok(response) => {
                                let frame = response.frame();
                                let bytes = ferry_transport::Received::bytes(frame).expect("a payload");
                                ferry_flatbuffers::root::<Greeting>(bytes).unwrap_or_else(|e| {
                                    panic!("{addr} {path} corruption {i}: bad echo: {e}")
                                });
                                answered += 1;
                            }
                            Err(status) => {
                                assert_eq!(
                                    status.code,
                                    Code::InvalidArgument,
                                    "{addr} {path} corruption {i}: {status}"
                                );
                                refused += 1;
                            }
                        }
                    }
                    assert_eq!(answered + refused, 200);
                    assert!(refused > 0, "{addr} {path}: some corruptions are caught");
                }
                // The session still serves.
                let msg = request(build_pool, "after", 1, b"ok", false);
                let response = rpc::call(&channel, ECHO, &msg).expect("still serving");
                assert_eq!(response.root::<Greeting>().unwrap().name(), "retfa");
            }
        },
    );
}

/// A handler's own status reaches the client as it is; a response that is not the caller's
/// type fails `INTERNAL` when read, naming the method and the type; the session goes on.
#[test]
fn handler_status_and_a_bad_response() {
    with_server(
        "handler_status_and_a_bad_response",
        |server, client_pool, build_pool| {
            for addr in server.addrs() {
                let addr = addr.to_string();
                let channel = Channel::connect_with(&addr, client_config(client_pool)).expect("connect");
                let msg = request(build_pool, "who", 0, b"", false);

                let status = rpc::call(&channel, MISSING, &msg).expect_err("NOT_FOUND");
                assert_eq!(status.code, Code::NotFound, "{addr}: {status}");
                assert_eq!(status.message, "nobody by that name", "{addr}");

                let response = rpc::call(&channel, BROKEN, &msg).expect("the call itself succeeds");
                let status = response.root::<Greeting>().expect_err("not a Greeting");
                assert_eq!(status.code, Code::Internal, "{addr}: {status}");
                assert!(status.message.contains(&BROKEN.to_string()), "{addr}: {status}");
                assert!(status.message.contains("Greeting"), "{addr}: {status}");
                // Read as what it is, it verifies.
                assert_eq!(response.root::<&str>().expect("a string"), "not a table");

                let status =
                    rpc::call(&channel, method_id("/flat.test.Echo/Nope"), &msg).expect_err("unknown");
                assert_eq!(status.code, Code::Unimplemented, "{addr}: {status}");

                let response = rpc::call(&channel, ECHO, &msg).expect("still serving");
                assert_eq!(response.root::<Greeting>().unwrap().name(), "ohw");
            }
        },
    );
}
