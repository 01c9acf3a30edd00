//! One interface over both builders, so that a test makes the very same calls on each:
//! [`Fbb`], implemented by the zFlatBuffers builder and by the stock one (the `Push`,
//! `WIPOffset` and `Vector` types are shared: ferry-flatbuffers re-exports the stock ones).
//! Also the block configurations ([`Blocks`]) and finish variants ([`Finish`]) the tests run
//! through, and the stock verifier's door ([`verified_root`]).

use ferry_buf::Pool;
use ferry_flatbuffers_tests::{IDENTIFIER, interop};
use ferry_testkit::Rng;
use flatbuffers::{
    PoolAllocator, Push, TableFinishedWIPOffset, TableUnfinishedWIPOffset, VOffsetT, Vector, WIPOffset,
};

/// The builder calls the tests make, with the stock builder's signatures.
pub trait Fbb<'fbb> {
    fn push<P: Push>(&mut self, x: P) -> WIPOffset<P::Output>;
    fn push_slot<X: Push + PartialEq>(&mut self, slot: VOffsetT, x: X, default: X);
    fn push_slot_always<X: Push>(&mut self, slot: VOffsetT, x: X);
    fn start_table(&mut self) -> WIPOffset<TableUnfinishedWIPOffset>;
    fn end_table(&mut self, start: WIPOffset<TableUnfinishedWIPOffset>) -> WIPOffset<TableFinishedWIPOffset>;
    fn start_vector<T: Push>(&mut self, len: usize);
    fn end_vector<T: Push>(&mut self, len: usize) -> WIPOffset<Vector<'fbb, T>>;
    fn create_string(&mut self, s: &str) -> WIPOffset<&'fbb str>;
    fn create_shared_string(&mut self, s: &str) -> WIPOffset<&'fbb str>;
    fn create_byte_string(&mut self, data: &[u8]) -> WIPOffset<&'fbb [u8]>;
    fn create_vector<T: Push>(&mut self, items: &[T]) -> WIPOffset<Vector<'fbb, T::Output>>;
    fn create_vector_from_iter<T: Push, I: ExactSizeIterator<Item = T> + DoubleEndedIterator>(
        &mut self,
        items: I,
    ) -> WIPOffset<Vector<'fbb, T::Output>>;
    fn force_defaults(&mut self, force: bool);
    fn num_written_vtables(&self) -> usize;
    fn required(&self, table: WIPOffset<TableFinishedWIPOffset>, slot: VOffsetT, name: &'static str);
    fn finish<T>(&mut self, root: WIPOffset<T>, identifier: Option<&str>);
    fn finish_size_prefixed<T>(&mut self, root: WIPOffset<T>, identifier: Option<&str>);
    fn finish_minimal<T>(&mut self, root: WIPOffset<T>);
    fn reset(&mut self);
    /// The finished message in one piece.
    fn finished_bytes(&self) -> Vec<u8>;
}

/// The trait's methods, each the builder's inherent method of the same name (inherent methods
/// win over trait methods in `self.name(..)`).
macro_rules! delegate {
    () => {
        fn push<P: Push>(&mut self, x: P) -> WIPOffset<P::Output> {
            self.push(x)
        }
        fn push_slot<X: Push + PartialEq>(&mut self, slot: VOffsetT, x: X, default: X) {
            self.push_slot(slot, x, default)
        }
        fn push_slot_always<X: Push>(&mut self, slot: VOffsetT, x: X) {
            self.push_slot_always(slot, x)
        }
        fn start_table(&mut self) -> WIPOffset<TableUnfinishedWIPOffset> {
            self.start_table()
        }
        fn end_table(
            &mut self,
            start: WIPOffset<TableUnfinishedWIPOffset>,
        ) -> WIPOffset<TableFinishedWIPOffset> {
            self.end_table(start)
        }
        fn start_vector<T: Push>(&mut self, len: usize) {
            self.start_vector::<T>(len)
        }
        fn end_vector<T: Push>(&mut self, len: usize) -> WIPOffset<Vector<'fbb, T>> {
            self.end_vector::<T>(len)
        }
        fn create_string(&mut self, s: &str) -> WIPOffset<&'fbb str> {
            self.create_string(s)
        }
        fn create_shared_string(&mut self, s: &str) -> WIPOffset<&'fbb str> {
            self.create_shared_string(s)
        }
        fn create_byte_string(&mut self, data: &[u8]) -> WIPOffset<&'fbb [u8]> {
            self.create_byte_string(data)
        }
        fn create_vector<T: Push>(&mut self, items: &[T]) -> WIPOffset<Vector<'fbb, T::Output>> {
            self.create_vector(items)
        }
        fn create_vector_from_iter<T: Push, I: ExactSizeIterator<Item = T> + DoubleEndedIterator>(
            &mut self,
            items: I,
        ) -> WIPOffset<Vector<'fbb, T::Output>> {
            self.create_vector_from_iter(items)
        }
        fn force_defaults(&mut self, force: bool) {
            self.force_defaults(force)
        }
        fn num_written_vtables(&self) -> usize {
            self.num_written_vtables()
        }
        fn required(&self, table: WIPOffset<TableFinishedWIPOffset>, slot: VOffsetT, name: &'static str) {
            self.required(table, slot, name)
        }
        fn finish<T>(&mut self, root: WIPOffset<T>, identifier: Option<&str>) {
            self.finish(root, identifier)
        }
        fn finish_size_prefixed<T>(&mut self, root: WIPOffset<T>, identifier: Option<&str>) {
            self.finish_size_prefixed(root, identifier)
        }
        fn finish_minimal<T>(&mut self, root: WIPOffset<T>) {
            self.finish_minimal(root)
        }
        fn reset(&mut self) {
            self.reset()
        }
    };
}

impl<'fbb, A: flatbuffers::Allocator> Fbb<'fbb> for flatbuffers::FlatBufferBuilder<'fbb, A> {
    delegate!();

    fn finished_bytes(&self) -> Vec<u8> {
        self.finished_message().to_vec()
    }
}

impl<'fbb> Fbb<'fbb> for stock::FlatBufferBuilder<'fbb> {
    delegate!();

    fn finished_bytes(&self) -> Vec<u8> {
        self.finished_data().to_vec()
    }
}

/// Where the zFlatBuffers builder's blocks come from, in a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocks {
    /// `PoolAllocator::new`: 2 KiB first, then as large as the message so far (a test pool's
    /// largest class, 1 MiB, caps them: every string and vector fits in one block).
    Default,
    /// 64-byte blocks only: a message of any size spans many; every item that fits a block
    /// is still written contiguously, and larger ones are split.
    Tiny,
    /// 256 bytes first, at most 4 KiB: strings and vectors up to ~100 KiB are larger than any
    /// block, so the builder writes them across blocks.
    Split,
    /// Blocks of at most this many bytes asked for, the first one too (a block is still the
    /// pool's 64-byte class at least, but no item longer than this is written in one piece):
    /// down to 1, where padding and every scalar are split across blocks.
    Max(usize),
}

impl Blocks {
    /// Every configuration.
    pub const ALL: [Blocks; 3] = [Blocks::Default, Blocks::Tiny, Blocks::Split];

    /// The allocator for this configuration.
    pub fn allocator(self, pool: &Pool) -> PoolAllocator {
        match self {
            Blocks::Default => PoolAllocator::new(pool),
            Blocks::Tiny => PoolAllocator::with_first_block(pool, 64).max_block_size(64),
            Blocks::Split => PoolAllocator::with_first_block(pool, 256).max_block_size(4096),
            Blocks::Max(n) => PoolAllocator::with_first_block(pool, n).max_block_size(n),
        }
    }

    /// A zFlatBuffers builder with this configuration's blocks.
    pub fn builder<'fbb>(self, pool: &Pool) -> flatbuffers::FlatBufferBuilder<'fbb> {
        flatbuffers::FlatBufferBuilder::new_in(self.allocator(pool))
    }
}

/// How a message is finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// `finish(root, None)`.
    Plain,
    /// `finish(root, Some(IDENTIFIER))`.
    Identified,
    /// `finish_size_prefixed(root, None)`.
    SizePrefixed,
    /// `finish_size_prefixed(root, Some(IDENTIFIER))`.
    SizePrefixedIdentified,
    /// `finish_minimal(root)`.
    Minimal,
}

impl Finish {
    /// Every variant.
    pub const ALL: [Finish; 5] = [
        Finish::Plain,
        Finish::Identified,
        Finish::SizePrefixed,
        Finish::SizePrefixedIdentified,
        Finish::Minimal,
    ];

    /// One of them.
    pub fn random(rng: &mut Rng) -> Finish {
        rng.pick(&Finish::ALL)
    }

    /// Whether the message starts with its size.
    pub fn size_prefixed(self) -> bool {
        matches!(self, Finish::SizePrefixed | Finish::SizePrefixedIdentified)
    }

    /// Whether the message carries the schema's file identifier.
    pub fn identified(self) -> bool {
        matches!(self, Finish::Identified | Finish::SizePrefixedIdentified)
    }

    /// Finishes `fbb`'s message at `root` this way.
    pub fn apply<'fbb, T>(self, fbb: &mut impl Fbb<'fbb>, root: WIPOffset<T>) {
        let id = self.identified().then_some(IDENTIFIER);
        match self {
            Finish::Plain | Finish::Identified => fbb.finish(root, id),
            Finish::SizePrefixed | Finish::SizePrefixedIdentified => fbb.finish_size_prefixed(root, id),
            Finish::Minimal => fbb.finish_minimal(root),
        }
    }
}

/// The message's root through the stock verifier (`stock::root` or
/// `stock::size_prefixed_root`, default options), with its identifier and size prefix
/// checked against how it was finished.
///
/// # Panics
/// When the verifier rejects the bytes, or the identifier or size prefix is wrong.
pub fn verified_root(bytes: &[u8], finish: Finish) -> interop::Root<'_> {
    let size_prefixed = finish.size_prefixed();
    if size_prefixed {
        let prefix = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        assert_eq!(prefix as usize, bytes.len() - 4, "size prefix");
    }
    assert_eq!(
        stock::buffer_has_identifier(bytes, IDENTIFIER, size_prefixed),
        finish.identified(),
        "file identifier present (finished {finish:?})"
    );
    let root = if size_prefixed {
        stock::size_prefixed_root::<interop::Root>(bytes)
    } else {
        stock::root::<interop::Root>(bytes)
    };
    root.unwrap_or_else(|e| panic!("the stock verifier rejects the message ({finish:?}): {e}"))
}

/// Asserts that the pool has as many buffers out as at `baseline` (call it once every
/// message and builder is dropped).
pub fn assert_pool_back(pool: &Pool, baseline: usize) {
    assert_eq!(
        pool.stats().buffers_outstanding(),
        baseline,
        "pool buffers outstanding after the test (every message and builder is dropped)"
    );
}
