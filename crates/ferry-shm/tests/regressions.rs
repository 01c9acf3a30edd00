//! One test per bug found in the shared-memory transport.

use std::thread;

use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_testkit::shared_pool;
use ferry_transport::{Meta, TransportError};
use ferry_wire::sample::{RECORD, Record};
use ferry_wire::{Context, DynamicMessage, EncodeError, FieldDesc, Kind, Label, Limits, MessageDesc};

static REQUIRED: MessageDesc = MessageDesc::new(
    "regressions.Required",
    &[FieldDesc {
        name: "x",
        number: 1,
        kind: Kind::Int32,
        label: Label::Required,
        oneof: None,
    }],
    false,
);

/// A send that fails (here: a required field unset) used to consume an implicit request id, so
/// the receiver, which counts only messages that arrive, numbered every later message one
/// lower than the sender had.
#[test]
fn a_failed_send_does_not_consume_an_implicit_request_id() {
    let path = std::env::temp_dir().join(format!("ferry-shm-regression-ids-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let receiver = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
        let frame = conn.recv().unwrap();
        let limits = Limits {
            max_message_len: 1 << 30,
            ..Limits::default()
        };
        frame.view(&RECORD, &limits).unwrap();
        frame.meta().request_id
    });
    let pool = shared_pool();
    let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
    let incomplete = DynamicMessage::new(&REQUIRED);
    let id = conn.next_request_id();
    match conn.send(Meta::new(1, id), &incomplete) {
        Err(TransportError::Encode(EncodeError::MissingRequired { field })) if field == "x" => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(conn.next_request_id(), id, "the failed send used no id");
    let ctx = Context::new(pool.clone());
    let mut rec = Record::new(&ctx);
    rec.set_key(&b"k"[..]);
    conn.send(Meta::new(1, conn.next_request_id()), &rec).unwrap();
    conn.flush().unwrap();
    assert_eq!(receiver.join().unwrap(), id);
    assert_eq!(conn.stats().messages_sent, 1);
}

/// `ShmListener::bind` removed whatever was at its path to clear a stale socket, so a wrong
/// path deleted a regular file. Only a socket is removed now; anything else makes bind fail.
#[test]
fn bind_never_removes_a_file_that_is_not_a_socket() {
    let path = std::env::temp_dir().join(format!("ferry-shm-regression-file-{}", std::process::id()));
    std::fs::write(&path, b"precious").unwrap();
    assert!(ShmListener::bind(&path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
    std::fs::remove_file(&path).unwrap();
    // A stale socket is still cleared.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let listener = ShmListener::bind(&path).unwrap();
    drop(listener);
    assert!(!path.exists(), "the listener removes its socket when dropped");
}
