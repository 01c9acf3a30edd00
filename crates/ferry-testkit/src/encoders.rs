//! Checks that a message type's straight-line encoder (`Encode::size_into` / `write_into`, as
//! `ferry-build` generates them) and the generic visitor path ([`VisitorPath`]) agree on
//! everything an [`Outgoing`] reports: layout, bytes, region-relative bytes, the zero-copy
//! listing and its counted references, and errors.

use ferry_wire::{Encode, EncodeError, Layout, Outgoing, VisitorPath};

/// A header segment, or why writing it failed.
type Written = Result<Vec<u8>, EncodeError>;

/// (address, length) of each zero-copy value, in the order reported.
fn listed(m: &dyn Outgoing) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    m.for_each_zero_copy(&mut |b| out.push((b.as_ptr() as usize, b.len())));
    out
}

/// `write_head` into a buffer pre-filled with `fill` (so that a byte left unwritten shows).
fn head(m: &dyn Outgoing, layout: &Layout, fill: u8) -> Written {
    let mut out = vec![fill; layout.head_len];
    m.write_head(layout, &mut out).map(|()| out)
}

/// `write_head_gather`: the segment and what it listed.
fn gathered(m: &dyn Outgoing, layout: &Layout) -> (Written, Vec<(usize, usize)>) {
    let mut out = vec![0x5a; layout.head_len];
    let mut list = Vec::new();
    let r = m.write_head_gather(layout, &mut out, &mut |b| {
        list.push((b.as_ptr() as usize, b.len()))
    });
    (r.map(|()| out), list)
}

/// `write_head_in` at `base`, placing the zero-copy values at increasing offsets after
/// `first`, failing for the value numbered `fail_at` (if any).
fn region(
    m: &dyn Outgoing,
    layout: &Layout,
    base: u64,
    first: u64,
    fail_at: Option<usize>,
) -> (Written, Vec<usize>) {
    let mut out = vec![0xa5; layout.head_len];
    let mut next = first;
    let mut seen = Vec::new();
    let r = m.write_head_in(layout, &mut out, base, &mut |b| {
        seen.push(b.len());
        if fail_at == Some(seen.len() - 1) {
            return None;
        }
        let at = next;
        next += b.len() as u64 + 3;
        Some(at)
    });
    (r.map(|()| out), seen)
}

/// Asserts that `m` encodes exactly as the generic visitor path encodes it; `what` names the
/// case in a failure.
pub fn assert_encoders_agree<'a, E: Encode<'a>>(m: &E, what: &str) {
    let generic = VisitorPath(m);
    let (fast, slow): (&dyn Outgoing, &dyn Outgoing) = (m, &generic);
    let layout = fast.layout();
    assert_eq!(layout, slow.layout(), "{what}: layout");
    // `assert!(a == b)`: a failure names the case without printing whole encodings.
    assert!(fast.to_vec() == slow.to_vec(), "{what}: to_vec");
    let written = head(fast, &layout, 0xff);
    assert!(
        written == head(fast, &layout, 0x00),
        "{what}: a byte of the segment is not written"
    );
    assert!(written == head(slow, &layout, 0xff), "{what}: write_head");
    let list = listed(fast);
    assert_eq!(list, listed(slow), "{what}: for_each_zero_copy");
    assert_eq!(list.len(), layout.zero_copy_count, "{what}: zero-copy count");
    let (g, glist) = gathered(fast, &layout);
    assert!(g == written, "{what}: write_head_gather bytes");
    if written.is_ok() {
        assert_eq!(glist, list, "{what}: write_head_gather listing");
    }
    assert!(
        gathered(slow, &layout) == (g, glist),
        "{what}: write_head_gather (generic)"
    );
    let mut bufs = (Vec::new(), Vec::new());
    let rf = fast.zero_copy_bufs(&mut bufs.0);
    let rs = slow.zero_copy_bufs(&mut bufs.1);
    assert_eq!(rf, rs, "{what}: zero_copy_bufs result");
    let addr = |v: &Vec<ferry_buf::SharedBuf>| {
        v.iter()
            .map(|b| (b.as_ptr() as usize, b.len()))
            .collect::<Vec<_>>()
    };
    assert_eq!(addr(&bufs.0), addr(&bufs.1), "{what}: zero_copy_bufs");
    for (base, first, fail_at) in [
        (0, layout.head_len as u64 + 100, None),
        (4096, 1 << 20, None),
        (64, 8, Some(0)),
        (64, 8, Some(1)),
        (u64::from(u32::MAX) - 16, 0, None),
    ] {
        assert!(
            region(fast, &layout, base, first, fail_at) == region(slow, &layout, base, first, fail_at),
            "{what}: write_head_in at {base}, values from {first}, failing at {fail_at:?}"
        );
    }
}
