//! FlatBuffers methods of the interop schema's `Root` on a real `ferry-rpc` server, over TCP
//! and shared memory: echo calls (small, and over 96 KiB built across 64-byte blocks) from the
//! blocking and the tokio client, foreground and background, each answer read back whole with
//! `unpack`; hostile requests answered `INVALID_ARGUMENT` (never a panic) while the server goes
//! on serving; a handler's status, a bad response and an unknown method reported as such.
//! Every pool is back to its baseline once server and clients are gone.

mod common;

use std::time::Duration;

use common::builders::Blocks;
use common::net::{big_root, frame_pool, many_slices, outstanding, packed, root};
use ferry_buf::Pool;
use ferry_flatbuffers_tests::interop::{Root, RootT};
use ferry_rpc::tokio::AsyncChannel;
use ferry_rpc::{Call, Channel, ChannelConfig, Code, ConnConfig, LoopConfig, Mode, Server, Services, Status};
use ferry_testkit::{Rng, Scratch, within};
use ferry_transport::{Payload, method_id};
use flatbuffers::rpc::{self, FlatRequest, FlatService};
use flatbuffers::{FlatBufferBuilder, Message, WIPOffset};

const ECHO_PATH: &str = "/flat.test.Echo/Echo";
const ECHO_BG_PATH: &str = "/flat.test.Echo/EchoBg";
const MISSING_PATH: &str = "/flat.test.Echo/Missing";
const BROKEN_PATH: &str = "/flat.test.Echo/Broken";
const ECHO: u16 = method_id(ECHO_PATH);
const ECHO_BG: u16 = method_id(ECHO_BG_PATH);
const MISSING: u16 = method_id(MISSING_PATH);
const BROKEN: u16 = method_id(BROKEN_PATH);

/// What the echo answers to `request`: the same `Root`, its name reversed and `u32_` plus one.
fn echoed(request: &RootT) -> RootT {
    let mut answer = request.clone();
    answer.name = request.name.chars().rev().collect();
    answer.u32_ = request.u32_.wrapping_add(1);
    answer
}

/// The echo handler: the request verified, unpacked, [`echoed`] and packed.
fn echo(
    _call: &Call<'_>,
    request: FlatRequest<'_>,
    fbb: &mut FlatBufferBuilder<'static>,
) -> Result<WIPOffset<Root<'static>>, Status> {
    let request = request.root::<Root>()?.unpack();
    Ok(echoed(&request).pack(fbb))
}

fn service() -> FlatService {
    FlatService::new()
        .method(ECHO_PATH, Mode::Foreground, echo)
        .method(ECHO_BG_PATH, Mode::Background, echo)
        .method(MISSING_PATH, Mode::Foreground, |_call, _request, _fbb| {
            Err::<WIPOffset<Root<'static>>, _>(Status::new(Code::NotFound, "nobody by that name"))
        })
        // A buggy handler: the root it returns is a string, not a `Root`.
        .method(BROKEN_PATH, Mode::Foreground, |_call, _request, fbb| {
            let text = fbb.create_string("not a table");
            Ok(WIPOffset::<Root<'static>>::new(text.value()))
        })
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

/// A blocking channel to each of `server`'s addresses (TCP, shared memory) whose connections
/// use `pool`, with the address; each connects when the iteration reaches it.
fn channels<'a>(server: &'a Server, pool: &'a Pool) -> impl Iterator<Item = (String, Channel)> + 'a {
    server.addrs().iter().map(|addr| {
        let addr = addr.to_string();
        let channel = Channel::connect_with(&addr, client_config(pool)).expect("connect");
        (addr, channel)
    })
}

/// Runs `test` with a server and pools (shared: shared-memory sessions send from them), then
/// checks every pool is back to its baseline once the server is shut down and everything
/// `test` made is dropped.
fn with_server(name: &str, test: impl FnOnce(&Server, &Pool, &Pool) + Send + 'static) {
    within(name, move || {
        let scratch = Scratch::new("flatbuffers-rpc");
        let (server_pool, client_pool, build_pool) = (frame_pool(true), frame_pool(true), frame_pool(true));
        let server = server(&scratch, &server_pool);
        test(&server, &client_pool, &build_pool);
        server.shutdown(Duration::from_secs(1));
        assert_eq!(outstanding(&server_pool), 0, "server pool back to baseline");
        assert_eq!(outstanding(&client_pool), 0, "client pool back to baseline");
        assert_eq!(outstanding(&build_pool), 0, "build pool back to baseline");
    });
}

/// Calls `method` on `channel` with `message`, `request` packed, and asserts that the answer
/// verifies as a `Root` and unpacks to [`echoed`]`(request)`.
fn assert_echo(channel: &Channel, method: u16, message: &Message, request: &RootT, case: &str) {
    let response = rpc::call(channel, method, message).unwrap_or_else(|e| panic!("{case}: {e}"));
    let answer = response.root::<Root>().expect("the response verifies").unpack();
    assert!(answer == echoed(request), "{case}: the echo of the request");
}

/// Echo calls over both transports, foreground and background: a small request, and one of
/// over 96 KiB built in 64-byte blocks (over 1,500 slices, one gather entry each over TCP).
#[test]
fn echo_over_tcp_and_shared_memory() {
    with_server(
        "echo_over_tcp_and_shared_memory",
        |server, client_pool, build_pool| {
            let (small, big) = (root(1, 64), big_root(5));
            let requests = [
                ("small", packed(build_pool, &small, Blocks::Default), &small),
                ("big", many_slices(build_pool, &big), &big),
            ];
            for (addr, channel) in channels(server, client_pool) {
                for method in [ECHO, ECHO_BG] {
                    for (what, message, request) in &requests {
                        let case = format!("{addr} {method} {what}");
                        assert_echo(&channel, method, message, request, &case);
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
            let request = root(2, 4 << 10);
            for addr in &addrs {
                let channel = AsyncChannel::connect_with(addr, client_config(&client_pool))
                    .await
                    .expect("connect");
                let message = packed(&build_pool, &request, Blocks::Tiny);
                let response = rpc::call_async(&channel, ECHO, &message).await.expect("call");
                let answer = response.root::<Root>().expect("the response verifies").unpack();
                assert!(answer == echoed(&request), "{addr}: the echo of the request");
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

/// Requests that are not valid `Root`s (short, out of bounds, the required name missing, bad
/// UTF-8, another type, cut, a Ferry message, and random corruptions of a valid one) get
/// `INVALID_ARGUMENT` naming the method and what the verifier found; never a panic
/// (`INTERNAL`), and the session and server go on serving.
#[test]
fn hostile_requests_get_invalid_argument_and_the_server_goes_on() {
    with_server(
        "hostile_requests_get_invalid_argument_and_the_server_goes_on",
        |server, client_pool, build_pool| {
            let valid_root = root(3, 64);
            let valid = packed(build_pool, &valid_root, Blocks::Default).to_vec();
            eprintln!("the valid request: {} bytes", valid.len());
            // What the generated builder would refuse to finish (`name` is required), built
            // slot by slot.
            let no_name = {
                let mut fbb = FlatBufferBuilder::with_pool(build_pool);
                let start = fbb.start_table();
                fbb.push_slot::<u32>(Root::VT_U32_, 3, 0);
                let table = fbb.end_table(start);
                fbb.finish(table, None);
                fbb.finished_message().to_vec()
            };
            let bad_utf8 = {
                let mut fbb = FlatBufferBuilder::with_pool(build_pool);
                let name = fbb.create_byte_string(&[0xff, 0xfe, 0xfd]);
                let start = fbb.start_table();
                fbb.push_slot_always(Root::VT_NAME, name);
                let table = fbb.end_table(start);
                fbb.finish(table, None);
                fbb.finished_message().to_vec()
            };
            let a_string = {
                let mut fbb = FlatBufferBuilder::with_pool(build_pool);
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
            for (addr, channel) in channels(server, client_pool) {
                let call_bytes = |method: u16, bytes: &[u8]| {
                    channel.call_payload(method, Payload::Bytes(bytes)).map(|_| ())
                };
                for (path, method) in [(ECHO_PATH, ECHO), (ECHO_BG_PATH, ECHO_BG)] {
                    for (case, bytes, what) in cases {
                        let case = format!("{addr} {path}: {case}");
                        let mut says = vec![path, "Root"];
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
                    // INVALID_ARGUMENT), none crashes a handler (which unpacks and packs the
                    // whole `Root`).
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
                                flatbuffers::root::<Root>(bytes).unwrap_or_else(|e| {
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
                    eprintln!("{addr} {path}: of 200 corruptions, {answered} answered, {refused} refused");
                    assert_eq!(answered + refused, 200);
                    assert!(refused > 0, "{addr} {path}: some corruptions are caught");
                }
                // The session still serves.
                let message = packed(build_pool, &valid_root, Blocks::Default);
                assert_echo(
                    &channel,
                    ECHO,
                    &message,
                    &valid_root,
                    &format!("{addr}: still serving"),
                );
            }
        },
    );
}

/// A handler's own status reaches the client as it is; a response that is not the caller's
/// type fails `INTERNAL` when read, naming the method and the type; a method the server does
/// not have is `UNIMPLEMENTED`; the session goes on.
#[test]
fn handler_status_and_a_bad_response() {
    with_server(
        "handler_status_and_a_bad_response",
        |server, client_pool, build_pool| {
            for (addr, channel) in channels(server, client_pool) {
                let request = root(4, 64);
                let message = packed(build_pool, &request, Blocks::Default);

                let status = rpc::call(&channel, MISSING, &message).expect_err("NOT_FOUND");
                assert_eq!(status.code, Code::NotFound, "{addr}: {status}");
                assert_eq!(status.message, "nobody by that name", "{addr}");

                let response = rpc::call(&channel, BROKEN, &message).expect("the call itself succeeds");
                let status = response.root::<Root>().expect_err("not a Root");
                assert_eq!(status.code, Code::Internal, "{addr}: {status}");
                assert!(status.message.contains(&BROKEN.to_string()), "{addr}: {status}");
                assert!(status.message.contains("Root"), "{addr}: {status}");
                // Read as what it is, it verifies.
                assert_eq!(response.root::<&str>().expect("a string"), "not a table");

                let status =
                    rpc::call(&channel, method_id("/flat.test.Echo/Nope"), &message).expect_err("unknown");
                assert_eq!(status.code, Code::Unimplemented, "{addr}: {status}");

                assert_echo(
                    &channel,
                    ECHO,
                    &message,
                    &request,
                    &format!("{addr}: still serving"),
                );
            }
        },
    );
}
