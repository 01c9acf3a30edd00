//! Smoke test: a copy-only message with many field kinds round-trips.
use ferry_wire::sample::{ALL_KINDS, RECORD};
use ferry_wire::{Context, HybridBytes, Limits, Outgoing, View};
use ferry_wire::{DynamicMessage, List, Value};

#[test]
fn copy_only_all_kinds_round_trip() {
    let ctx = Context::copy_only();
    let mut m = DynamicMessage::new(&ALL_KINDS);
    m.set(1, Value::I32(-5)).unwrap();
    m.set(15, Value::Bytes(HybridBytes::new(b"hello", ctx))).unwrap();
    m.set(21, Value::List(List::I32(vec![1, -2, 3]))).unwrap();
    let mut child = DynamicMessage::new(&ALL_KINDS);
    child.set(100, Value::U64(9)).unwrap();
    m.set(17, Value::Message(child.clone())).unwrap();
    m.set(37, Value::List(List::Messages(vec![child.clone(), child])))
        .unwrap();
    m.insert_map_entry(40, Value::Bytes(HybridBytes::new(b"b", ctx)), Value::I64(2))
        .unwrap();
    m.insert_map_entry(40, Value::Bytes(HybridBytes::new(b"a", ctx)), Value::I64(1))
        .unwrap();
    m.set(70000, Value::Bytes(HybridBytes::new(&[1, 2, 3], ctx)))
        .unwrap();
    let bytes = m.to_vec().unwrap();
    assert_eq!(bytes.len(), m.layout().total_len());
    let view = View::decode(&bytes, &ALL_KINDS, &Limits::default()).unwrap();
    let back = DynamicMessage::from_view(&view, ctx).unwrap();
    assert_eq!(back, m);
    let _ = &RECORD;
}
