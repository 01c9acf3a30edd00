//! Fuzz target `decode`: peer bytes through the validator, the views and back.
//!
//! Each input is decoded as an `AllKinds` (every field kind, recursion, maps, a oneof) and as a
//! `Record`. Whatever `View::decode` accepts is read in full with the typed accessors and
//! `DynamicMessage::from_view` (which may reject bad UTF-8 and nothing else), re-encoded with
//! `Outgoing::to_vec`, and decoded again: the re-encoding must be accepted and must read back
//! as the same message. Panics anywhere are bugs.
#![no_main]

use ferry::sample::{ALL_KINDS, RECORD};
use ferry::wire::{DecodeErrorKind, DynamicMessage, Kind, Label, MessageDesc};
use ferry::{Context, Limits, Outgoing, View};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    check(data, &ALL_KINDS);
    check(data, &RECORD);
});

/// The default limits with a smaller element budget: a valid input may describe a DAG that
/// `from_view` expands into one message per element visited, and a 4 Mi budget makes single
/// runs slow enough to hide everything else.
const LIMITS: Limits = Limits {
    max_message_len: 64 << 20,
    max_depth: 64,
    max_elements: 1 << 16,
};

fn check(data: &[u8], desc: &'static MessageDesc) {
    let Ok(view) = View::decode(data, desc, &LIMITS) else {
        return;
    };
    read_with_accessors(&view, 0, &mut 1024);
    misuse_accessors(&view);
    let ctx = Context::copy_only();
    let message = match DynamicMessage::from_view(&view, &ctx) {
        Ok(m) => m,
        Err(err) => {
            assert!(
                matches!(err.kind(), DecodeErrorKind::InvalidUtf8 { .. }),
                "from_view: {err}"
            );
            return;
        }
    };
    let again = message.to_vec().expect("a decoded message re-encodes");
    let view2 = match View::decode(&again, desc, &LIMITS) {
        Ok(v) => v,
        Err(err) => panic!("the re-encoding of a valid message does not decode: {err}"),
    };
    let back = DynamicMessage::from_view(&view2, &ctx).expect("re-encoded strings are UTF-8");
    // Not `assert_eq!`: NaN floats are equal here when their bits are.
    assert!(
        back == message,
        "the round trip changed the message"
    );
}

/// Typed accessors on every field, and nested views, as generated code would use them.
fn read_with_accessors(view: &View<'_>, depth: u32, work: &mut u32) {
    if *work == 0 || depth > 70 {
        return;
    }
    *work -= 1;
    let present: Vec<u32> = view.present_fields().collect();
    assert!(
        present.windows(2).all(|w| w[0] < w[1]),
        "present_fields not ascending"
    );
    for f in view.desc().fields() {
        let n = f.number;
        assert_eq!(view.has(n), present.contains(&n));
        match (f.label, f.kind) {
            (Label::Repeated, Kind::Message(_)) => {
                for child in view.messages(n).iter() {
                    read_with_accessors(&child, depth + 1, work);
                }
            }
            (Label::Repeated, Kind::String | Kind::Bytes) => {
                let _ = view.bytes_list(n).strs().filter(Result::is_ok).count();
            }
            (Label::Repeated, _) => {
                let _ = view.scalars::<u64>(n).iter().fold(0u64, u64::wrapping_add);
                let _ = view.scalars::<bool>(n).iter().filter(|b| *b).count();
            }
            (_, Kind::Message(_)) => match view.message(n) {
                Some(child) => read_with_accessors(&child, depth + 1, work),
                None => assert!(!view.has(n), "present message field {n} has no view"),
            },
            (_, Kind::String | Kind::Bytes) => {
                let _ = view.str(n);
                assert_eq!(view.bytes(n).is_some(), view.has(n));
            }
            (_, _) => {
                let _ = (view.scalar::<u64>(n), view.scalar::<f32>(n));
            }
        }
    }
}

/// Every accessor on every field number, whatever its kind (and on a few unknown numbers):
/// accessors are total, so wrong-kind calls return nothing, never panic.
fn misuse_accessors(view: &View<'_>) {
    let known = view.desc().fields().iter().map(|f| f.number);
    for n in known.chain([0, 19, 64, 70_001, u32::MAX]) {
        let _ = (view.entry(n), view.scalar::<f64>(n), view.bytes(n), view.str(n));
        let _ = view.scalars::<u32>(n).iter().count();
        let _ = view.bytes_list(n).iter().count();
        for child in view.message(n).into_iter().chain(view.messages(n).iter().take(4)) {
            let _ = child.present_fields().count();
            let _ = child.bytes_list(36).iter().count();
        }
    }
}

