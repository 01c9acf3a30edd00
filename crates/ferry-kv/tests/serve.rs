//! The store served by a real `ferry::rpc::Server` over TCP loopback and shared memory, called
//! through the generated client: every operation, values sent by reference from the store's
//! memory, a value overwritten while a response still references it, a full store, and
//! hostile requests.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use ferry::Context;
use ferry::rpc::{
    Channel, Code, ConnConfig, EventLoop, LoopConfig, LoopSession, Server, Services, Status, Thresholds,
};
use ferry::transport::Payload;
use ferry_buf::{Pool, PoolConfig};
use ferry_kv::proto::ferry::kv::{self as pb, KvClient, KvServer, kv_service};
use ferry_kv::{KvService, Store, StoreConfig, fill};
use ferry_testkit::Scratch;

fn store(max_bytes: usize) -> Arc<Store> {
    let pool = Pool::new(PoolConfig {
        shared: true,
        region_size: 8 << 20,
        max_bytes: 96 << 20,
        huge_pages: false,
        mlock: false,
    })
    .expect("pool");
    Arc::new(Store::new(
        pool,
        StoreConfig {
            max_bytes,
            max_keys: 64,
            max_parts: 8,
            max_value_len: 64 << 10,
            ..StoreConfig::default()
        },
    ))
}

/// A server of `store` on one loop, listening on TCP and shared memory.
fn serve(store: &Arc<Store>, scratch: &Scratch) -> Server {
    let services = Services::builder()
        .service(KvServer::new(KvService::new(store.clone())))
        .expect("service")
        .build()
        .expect("services");
    Server::builder(services)
        .listen("tcp://127.0.0.1:0")
        .listen(&format!("shm://{}/kv.sock", scratch.0.display()))
        .loops(1)
        .config(LoopConfig {
            // The default thresholds (512 B), whatever file the machine has.
            conn: store.serving_config(ConnConfig {
                thresholds: Thresholds::MEASURED,
                ..ConnConfig::default()
            }),
            ..LoopConfig::default()
        })
        .start()
        .expect("server starts")
}

/// Runs `test` against a fresh store and server, once per transport.
fn each_transport(max_bytes: usize, test: impl Fn(&Arc<Store>, &KvClient<Channel>)) {
    for transport in 0..2 {
        let scratch = Scratch::new("serve");
        let store = store(max_bytes);
        let server = serve(&store, &scratch);
        let addr = server.addrs()[transport].to_string();
        eprintln!("over {addr}");
        let client = KvClient::new(Channel::connect(&addr).expect("connect"));
        test(&store, &client);
        drop(client);
        server.shutdown(Duration::from_secs(1));
        // Every value the test left is the store's; dropping the store returns the pool.
        let pool = store.pool().clone();
        drop(store);
        assert_eq!(
            pool.stats().buffers_outstanding(),
            0,
            "pool buffers leaked over {addr}"
        );
    }
}

fn key<'a>(ctx: &'a Context, k: &'a str) -> pb::Key<'a> {
    let mut m = pb::Key::new(ctx);
    m.set_key(k);
    m
}

fn put(client: &KvClient<Channel>, k: &str, values: &[Vec<u8>]) -> Result<u64, Status> {
    let ctx = client.inner().context();
    let mut m = pb::Put::new(ctx);
    m.set_key(k);
    for v in values {
        m.append_values(&v[..]);
    }
    Ok(client.put(&m)?.view()?.count())
}

fn get(client: &KvClient<Channel>, k: &str) -> Result<Vec<u8>, Status> {
    let ctx = client.inner().context();
    Ok(client.get(&key(ctx, k))?.view()?.value().to_vec())
}

fn get_list(client: &KvClient<Channel>, k: &str) -> Result<Vec<Vec<u8>>, Status> {
    let ctx = client.inner().context();
    let r = client.get_list(&key(ctx, k))?;
    let v = r.view()?;
    Ok(v.values().iter().map(<[u8]>::to_vec).collect())
}

#[test]
fn every_operation_over_both_transports() {
    each_transport(64 << 20, |_, client| {
        let ctx = client.inner().context();
        let small = fill::value(b"s", 0, 100);
        let big = fill::value(b"b", 0, 8192);
        assert_eq!(put(client, "s", std::slice::from_ref(&small)).unwrap(), 1);
        assert_eq!(put(client, "b", std::slice::from_ref(&big)).unwrap(), 1);
        assert_eq!(get(client, "s").unwrap(), small);
        assert_eq!(get(client, "b").unwrap(), big);

        // A vector: GetList returns every part, GetFromList one, Get refuses it.
        let parts: Vec<Vec<u8>> = [10, 4096, 600]
            .iter()
            .enumerate()
            .map(|(i, &n)| fill::value(b"v", i as u32, n))
            .collect();
        assert_eq!(put(client, "v", &parts).unwrap(), 3);
        assert_eq!(get_list(client, "v").unwrap(), parts);
        let mut li = pb::ListIndex::new(ctx);
        li.set_key("v");
        li.set_index(1);
        assert_eq!(
            client.get_from_list(&li).unwrap().view().unwrap().value(),
            &parts[1][..]
        );
        li.set_index(3);
        assert_eq!(
            client.get_from_list(&li).unwrap_err().code,
            Code::FailedPrecondition
        );
        assert_eq!(get(client, "v").unwrap_err().code, Code::FailedPrecondition);

        // A list grown by Append (from a single value, then from nothing).
        let mut ap = pb::Append::new(ctx);
        ap.set_key("s");
        ap.set_value(&big[..]);
        assert_eq!(client.append(&ap).unwrap().view().unwrap().count(), 2);
        assert_eq!(get_list(client, "s").unwrap(), vec![small.clone(), big.clone()]);
        ap.set_key("new");
        assert_eq!(client.append(&ap).unwrap().view().unwrap().count(), 1);
        assert_eq!(get_list(client, "new").unwrap(), vec![big.clone()]);

        // GetM: single values of several keys; a missing one fails the call and names it.
        put(client, "s2", std::slice::from_ref(&small)).unwrap();
        let mut keys = pb::Keys::new(ctx);
        keys.append_keys("b");
        keys.append_keys("s2");
        let r = client.get_m(&keys).unwrap();
        let got: Vec<Vec<u8>> = r.view().unwrap().values().iter().map(<[u8]>::to_vec).collect();
        assert_eq!(got, vec![big.clone(), small.clone()]);
        keys.append_keys("nope");
        let err = client.get_m(&keys).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        assert!(err.message.contains("nope"), "{err}");

        // Delete counts the keys that were there.
        let mut del = pb::Keys::new(ctx);
        del.append_keys("b");
        del.append_keys("nope");
        assert_eq!(client.delete(&del).unwrap().view().unwrap().count(), 1);
        assert_eq!(get(client, "b").unwrap_err().code, Code::NotFound);
    });
}

#[test]
fn large_values_leave_from_the_stores_memory() {
    // Over shared memory the client maps the store's pool: a large value's bytes in the
    // response are the stored buffer itself, at the same offset of the same memfd.
    let scratch = Scratch::new("zc");
    let store = store(64 << 20);
    let server = serve(&store, &scratch);
    let value = fill::value(b"big", 0, 16 << 10);
    store.put(b"big", &[&value]).unwrap();
    let stored = store.get("big").unwrap();
    let client = KvClient::new(Channel::connect(&server.addrs()[1].to_string()).expect("connect"));
    let ctx = client.inner().context();
    let response = client.get(&key(ctx, "big")).unwrap();
    let got = response.view().unwrap().value();
    assert_eq!(got, &value[..]);
    let ferry::rpc::Frame::Shm(frame) = response.frame() else {
        panic!("a shared-memory frame")
    };
    let offset = got.as_ptr() as usize - frame.region().as_ptr() as usize;
    assert_eq!(
        Some(offset),
        store.pool().offset_of(&stored),
        "the value was copied, not referenced"
    );
    drop((response, client));
    server.shutdown(Duration::from_secs(1));
}

#[test]
fn a_value_overwritten_while_its_response_is_queued_arrives_intact() {
    // Pipelined in one batch: GET k, then PUT k (same size, other bytes), then GET k. The
    // first response references the old buffer, still queued when the PUT replaces it: it
    // must carry the old bytes, the second the new ones. A store that reused or rewrote the
    // old buffer in place would send the new bytes twice.
    for transport in 0..2 {
        let scratch = Scratch::new("overwrite");
        let store = store(64 << 20);
        let server = serve(&store, &scratch);
        let old = fill::value(b"k", 0, 8192);
        let new = fill::value(b"k", 1, 8192);
        store.put(b"k", &[&old]).unwrap();

        let mut lp = EventLoop::new(LoopConfig::default()).expect("loop");
        let session = lp.connect(&server.addrs()[transport]).expect("connect");
        let client = KvClient::new(LoopSession {
            id: session,
            timeout: Some(Duration::from_secs(10)),
        });
        let ctx = lp.context(session).expect("context");
        let got: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
        let (g1, g2) = (got.clone(), got.clone());
        client
            .get(&mut lp, &key(&ctx, "k"), move |_, r| {
                g1.borrow_mut().push(r.unwrap().value().to_vec())
            })
            .unwrap();
        let mut p = pb::Put::new(&ctx);
        p.set_key("k");
        p.append_values(&new[..]);
        client
            .put(&mut lp, &p, |_, r| assert_eq!(r.unwrap().count(), 1))
            .unwrap();
        client
            .get(&mut lp, &key(&ctx, "k"), move |_, r| {
                g2.borrow_mut().push(r.unwrap().value().to_vec())
            })
            .unwrap();
        lp.run_until(|_| got.borrow().len() == 2);
        let got = got.take();
        assert!(
            got[0] == old,
            "the first GET saw other bytes than the value it read"
        );
        assert!(got[1] == new, "the second GET did not see the PUT");
        drop(lp);
        server.shutdown(Duration::from_secs(1));
    }
}

#[test]
fn a_full_store_answers_resource_exhausted_and_recovers_after_deletes() {
    each_transport(64 << 10, |store, client| {
        let v = vec![1u8; 16 << 10];
        for i in 0..4 {
            put(client, &format!("k{i}"), std::slice::from_ref(&v)).unwrap();
        }
        let err = put(client, "k4", std::slice::from_ref(&v)).unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted, "{err}");
        assert!(err.message.contains("out of memory"), "{err}");
        assert_eq!(store.used_bytes(), 64 << 10);
        // Earlier values are untouched, and a delete makes room.
        assert_eq!(get(client, "k0").unwrap(), v);
        let mut del = pb::Keys::new(client.inner().context());
        del.append_keys("k0");
        client.delete(&del).unwrap();
        put(client, "k4", std::slice::from_ref(&v)).unwrap();
        assert_eq!(store.len(), 4);
    });
}

#[test]
fn hostile_requests_get_errors_and_the_server_keeps_serving() {
    each_transport(64 << 20, |_, client| {
        let ch = client.inner();
        let ctx = ch.context();
        // Bytes that are no message.
        let err = ch
            .call_payload(kv_service::GET, Payload::Bytes(&[0xff; 40]))
            .unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        // A key past the limit.
        let long = "x".repeat(5000);
        assert_eq!(get(client, &long).unwrap_err().code, Code::NotFound);
        let err = put(client, &long, &[vec![1]]).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        assert!(err.message.contains("key length"), "{err}");
        // An empty Put, and too many keys in one GetM.
        let err = put(client, "e", &[]).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        let mut keys = pb::Keys::new(ctx);
        for i in 0..65 {
            keys.append_keys(format!("k{i}"));
        }
        let err = client.get_m(&keys).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        assert!(err.message.contains("keys in a request"), "{err}");
        // A key that is not UTF-8 in a multi-key request.
        // (`Values` has `repeated bytes` as field 1 where `Keys` has `repeated string`.)
        let mut raw = pb::Values::new(ctx);
        raw.append_values(&[0xc3, 0x28][..]);
        let err = ch
            .call::<pb::Values<'static>>(kv_service::GET_M, &raw)
            .unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        // A value past the limit, a list grown past the limit, a Delete of too many keys.
        let err = put(client, "big", &[vec![1; (64 << 10) + 1]]).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        assert!(err.message.contains("value length"), "{err}");
        let mut ap = pb::Append::new(ctx);
        ap.set_key("list");
        ap.set_value(&b"x"[..]);
        for n in 1..=8 {
            assert_eq!(client.append(&ap).unwrap().view().unwrap().count(), n);
        }
        let err = client.append(&ap).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        assert!(err.message.contains("buffers in a value"), "{err}");
        let err = client.delete(&keys).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument, "{err}");
        // Values that each fit but together would not fit one response.
        let parts = vec![vec![2u8; 60 << 10]; 8];
        put(client, "wide", &parts).unwrap();
        let err = get_list(client, "wide").unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted, "{err}");
        assert!(err.message.contains("response"), "{err}");
        // Still serving.
        put(client, "ok", &[vec![7; 10]]).unwrap();
        assert_eq!(get(client, "ok").unwrap(), vec![7; 10]);
    });
}
