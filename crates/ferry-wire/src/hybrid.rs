//! Hybrid field values (the Cornflakes paper's `CFPtr`): copy small data, reference large data.
//!
//! The copy-or-reference decision is made once, when a field is set (paper, section 3.2.1):
//! a value of at least [`Context::threshold`] bytes that lies in the context's pool becomes a
//! zero-copy reference to that pool memory; anything else is copied into the header segment
//! when the message is serialized.
//!
//! A reference to *borrowed* pool memory takes no refcount at all: the borrow (`'a`) already
//! keeps the buffer alive and unchanged for as long as the message can see it, so setting and
//! serializing such a field costs no atomic operation. Only a send that must outlive the
//! borrow (a zero-copy send waiting for its completion) takes counted references, with
//! [`HybridBytes::to_shared`] or `Outgoing::zero_copy_bufs`.

use core::fmt;

use ferry_buf::{Pool, SharedBuf};

/// A per-message bump arena for values that must be copied out of transient memory; freed all at once.
pub type Arena = bumpalo::Bump;

/// The default zero-copy threshold, in bytes, until calibration gives a per-transport value.
pub const DEFAULT_THRESHOLD: usize = 512;

/// What a message needs to decide copy versus reference: the pool and the threshold.
#[derive(Debug, Clone)]
pub struct Context {
    pool: Option<Pool>,
    threshold: usize,
}

impl Context {
    /// Zero-copy for pool-resident values of at least [`DEFAULT_THRESHOLD`] bytes.
    pub fn new(pool: Pool) -> Self {
        Context {
            pool: Some(pool),
            threshold: DEFAULT_THRESHOLD,
        }
    }

    /// The context that always copies and has no pool (static, so it can be lent to any message).
    pub fn copy_only() -> &'static Context {
        static COPY_ONLY: Context = Context {
            pool: None,
            threshold: usize::MAX,
        };
        &COPY_ONLY
    }

    /// Sets the threshold: `0` references whenever possible, `usize::MAX` always copies.
    pub fn with_threshold(mut self, threshold: usize) -> Self {
        self.threshold = threshold;
        self
    }

    /// The zero-copy threshold in bytes.
    #[inline]
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// The pool, if any.
    pub fn pool(&self) -> Option<&Pool> {
        self.pool.as_ref()
    }

    /// The pool, if `data` should be sent by reference (long enough and pool-resident).
    #[inline]
    fn lender(&self, data: &[u8]) -> Option<&Pool> {
        if data.is_empty() || data.len() < self.threshold {
            return None;
        }
        self.pool.as_ref().filter(|p| p.is_shared(data))
    }

    /// A counted reference to `data` when it should be sent by reference.
    fn reference(&self, data: &[u8]) -> Option<SharedBuf> {
        self.lender(data)?.recover(data)
    }
}

#[derive(Clone)]
enum Repr<'a> {
    /// Borrowed bytes: sent by reference when `lender` names the pool they lie in (the borrow
    /// keeps them alive), else copied at serialization. One variant for both, so that the
    /// encoders' common case is one compare.
    Slice {
        data: &'a [u8],
        lender: Option<&'a Pool>,
    },
    Owned(Vec<u8>),
    Shared {
        buf: SharedBuf,
        zero_copy: bool,
    },
}

/// A `bytes` field value: copied when serialized, or referenced by a gather entry.
#[derive(Clone)]
pub struct HybridBytes<'a>(Repr<'a>);

impl<'a> HybridBytes<'a> {
    /// The empty value.
    pub const EMPTY: HybridBytes<'static> = HybridBytes(Repr::Slice {
        data: &[],
        lender: None,
    });

    /// From any slice: a zero-copy reference when it is long enough and lies in the pool
    /// (an O(1) lookup, no refcount: the borrow keeps it alive), otherwise borrowed and copied
    /// once, at serialization.
    #[inline]
    pub fn new(data: &'a [u8], ctx: &'a Context) -> Self {
        HybridBytes(Repr::Slice {
            data,
            lender: ctx.lender(data),
        })
    }

    /// From transient data: a zero-copy reference when eligible, else copied now into `arena`.
    pub fn copy_in(data: &[u8], arena: &'a Arena, ctx: &Context) -> Self {
        match ctx.reference(data) {
            Some(buf) => HybridBytes(Repr::Shared { buf, zero_copy: true }),
            None => HybridBytes(Repr::Slice {
                data: arena.alloc_slice_copy(data),
                lender: None,
            }),
        }
    }

    /// From a shared buffer, with no lookup: referenced when at least the threshold, else copied at serialization.
    #[inline]
    pub fn from_shared(buf: SharedBuf, ctx: &Context) -> Self {
        // Empty values never become gather entries.
        // Empty values never become gather entries, and only memory of the context's own pool
        // (the one a transport registered) may.
        let zero_copy = !buf.is_empty()
            && buf.len() >= ctx.threshold
            && ctx.pool.as_ref().is_some_and(|p| p.contains(&buf));
        HybridBytes(Repr::Shared { buf, zero_copy })
    }

    /// From bytes of a received message: a reference when at least the threshold long, either
    /// borrowed (the received buffer is in the context's pool) or counted (a sub-buffer of
    /// `owner`); otherwise borrowed and copied at serialization.
    pub fn received(data: &'a [u8], owner: Option<&'a SharedBuf>, ctx: &'a Context) -> Self {
        let value = HybridBytes::new(data, ctx);
        if value.is_zero_copy() || data.len() < ctx.threshold || ctx.pool.is_none() {
            return value;
        }
        match owner.and_then(|o| o.slice_ref(data)) {
            Some(buf) => HybridBytes::from_shared(buf, ctx),
            None => value,
        }
    }

    /// From owned data; always copied at serialization (heap memory cannot be referenced safely by a send).
    pub fn from_vec(data: Vec<u8>) -> Self {
        HybridBytes(Repr::Owned(data))
    }

    /// Whether this value is sent by reference.
    #[inline]
    pub fn is_zero_copy(&self) -> bool {
        self.parts().1
    }

    /// A counted reference to a zero-copy value's memory (refcount + 1), for a send that must
    /// hold it beyond this value's lifetime; `None` for copied values.
    pub fn to_shared(&self) -> Option<SharedBuf> {
        match &self.0 {
            Repr::Shared { buf, zero_copy: true } => Some(buf.clone()),
            // A borrowed shared slot stays shared while borrowed, so this cannot fail.
            Repr::Slice {
                data,
                lender: Some(pool),
            } => pool.recover(data),
            _ => None,
        }
    }

    /// The bytes and whether they are sent by reference (what an encoder needs of each value).
    #[inline]
    pub fn parts(&self) -> (&[u8], bool) {
        // The common case, a borrowed value, is one compare; the owning forms are out of line,
        // so that the encoders' loops carry no jump table.
        match &self.0 {
            Repr::Slice { data, lender } => (data, lender.is_some()),
            _ => self.owned_parts(),
        }
    }

    #[cold]
    #[inline(never)]
    fn owned_parts(&self) -> (&[u8], bool) {
        match &self.0 {
            Repr::Slice { data, lender } => (data, lender.is_some()),
            Repr::Owned(v) => (v, false),
            Repr::Shared { buf, zero_copy } => (buf, *zero_copy),
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        self.parts().0
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the value is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for HybridBytes<'_> {
    fn default() -> Self {
        HybridBytes::EMPTY
    }
}

impl PartialEq for HybridBytes<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for HybridBytes<'_> {}

impl PartialOrd for HybridBytes<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HybridBytes<'_> {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl fmt::Debug for HybridBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.is_zero_copy() { "ref" } else { "copy" };
        write!(f, "HybridBytes({how}, {} B)", self.len())
    }
}

/// A `string` field value: [`HybridBytes`] that hold UTF-8.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct HybridStr<'a>(HybridBytes<'a>);

impl<'a> HybridStr<'a> {
    /// From a string slice; see [`HybridBytes::new`].
    pub fn new(s: &'a str, ctx: &'a Context) -> Self {
        HybridStr(HybridBytes::new(s.as_bytes(), ctx))
    }

    /// From transient text; see [`HybridBytes::copy_in`].
    pub fn copy_in(s: &str, arena: &'a Arena, ctx: &Context) -> Self {
        HybridStr(HybridBytes::copy_in(s.as_bytes(), arena, ctx))
    }

    /// From owned text.
    pub fn from_string(s: String) -> Self {
        HybridStr(HybridBytes::from_vec(s.into_bytes()))
    }

    /// From a shared buffer holding UTF-8; fails if it is not UTF-8.
    pub fn from_shared(buf: SharedBuf, ctx: &Context) -> Result<Self, core::str::Utf8Error> {
        core::str::from_utf8(&buf)?;
        Ok(HybridStr(HybridBytes::from_shared(buf, ctx)))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Every constructor checks or is given UTF-8, so this never fails; fall back to ""
        // rather than panic.
        core::str::from_utf8(self.0.as_slice()).unwrap_or_default()
    }

    /// The underlying bytes value.
    pub fn as_bytes(&self) -> &HybridBytes<'a> {
        &self.0
    }
}

impl fmt::Debug for HybridStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.0.is_zero_copy() { "ref" } else { "copy" };
        write!(f, "HybridStr({how}, {:?})", self.as_str())
    }
}

/// Values that serialize as a `bytes` field.
pub trait AsHybrid<'a> {
    /// The bytes value.
    fn as_hybrid(&self) -> &HybridBytes<'a>;
}

impl<'a> AsHybrid<'a> for HybridBytes<'a> {
    fn as_hybrid(&self) -> &HybridBytes<'a> {
        self
    }
}

impl<'a> AsHybrid<'a> for HybridStr<'a> {
    fn as_hybrid(&self) -> &HybridBytes<'a> {
        &self.0
    }
}

/// Anything a `bytes` setter accepts; the conversion applies the context's rule once.
pub trait IntoHybrid<'a> {
    /// Converts, deciding copy or reference.
    fn into_hybrid(self, ctx: &'a Context) -> HybridBytes<'a>;
}

impl<'a> IntoHybrid<'a> for HybridBytes<'a> {
    fn into_hybrid(self, _: &'a Context) -> HybridBytes<'a> {
        self
    }
}
impl<'a> IntoHybrid<'a> for &'a [u8] {
    #[inline]
    fn into_hybrid(self, ctx: &'a Context) -> HybridBytes<'a> {
        HybridBytes::new(self, ctx)
    }
}
impl<'a, const N: usize> IntoHybrid<'a> for &'a [u8; N] {
    #[inline]
    fn into_hybrid(self, ctx: &'a Context) -> HybridBytes<'a> {
        HybridBytes::new(self, ctx)
    }
}
impl<'a> IntoHybrid<'a> for &'a str {
    #[inline]
    fn into_hybrid(self, ctx: &'a Context) -> HybridBytes<'a> {
        HybridBytes::new(self.as_bytes(), ctx)
    }
}
impl<'a> IntoHybrid<'a> for SharedBuf {
    #[inline]
    fn into_hybrid(self, ctx: &'a Context) -> HybridBytes<'a> {
        HybridBytes::from_shared(self, ctx)
    }
}
impl<'a> IntoHybrid<'a> for Vec<u8> {
    fn into_hybrid(self, _: &'a Context) -> HybridBytes<'a> {
        HybridBytes::from_vec(self)
    }
}

/// Anything a `string` setter accepts.
pub trait IntoHybridStr<'a> {
    /// Converts, deciding copy or reference.
    fn into_hybrid_str(self, ctx: &'a Context) -> HybridStr<'a>;
}

impl<'a> IntoHybridStr<'a> for HybridStr<'a> {
    fn into_hybrid_str(self, _: &'a Context) -> HybridStr<'a> {
        self
    }
}
impl<'a> IntoHybridStr<'a> for &'a str {
    fn into_hybrid_str(self, ctx: &'a Context) -> HybridStr<'a> {
        HybridStr::new(self, ctx)
    }
}
impl<'a> IntoHybridStr<'a> for String {
    fn into_hybrid_str(self, _: &'a Context) -> HybridStr<'a> {
        HybridStr::from_string(self)
    }
}
