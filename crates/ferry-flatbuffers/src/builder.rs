//! [`FlatBufferBuilder`]: the `flatbuffers` crate's builder, call for call and byte for byte,
//! over a chain of pool blocks instead of one `Vec` that doubles and copies.
//!
//! Every method follows the stock builder's algorithm (alignment from the end of the message,
//! the same padding, vtable layout and deduplication, string interning), so the concatenated
//! slices are the stock builder's `finished_data()` for the same calls. What differs is
//! underneath: space comes from [`Backward`], padding and vtables are zeroed explicitly (the
//! stock builder relies on its buffer being zeroed, which costs it a memset of the dirty part
//! on every `reset`), and written vtables and interned strings are found by their block and
//! position (O(1)), not by offset arithmetic on a buffer that may have moved.

use std::cmp::max;
use std::marker::PhantomData;

use ferry_buf::{Pool, SharedBuf};
use stock::{
    FILE_IDENTIFIER_LENGTH, FLATBUFFERS_MAX_BUFFER_SIZE, Push, PushAlignment, SIZE_SOFFSET, SIZE_UOFFSET,
    SIZE_VOFFSET, TableFinishedWIPOffset, TableUnfinishedWIPOffset, UOffsetT, VOffsetT, Vector, WIPOffset,
    field_index_to_field_offset,
};

use crate::backward::{Backward, Loc};
use crate::blocks::{Allocator, PoolAllocator};
use crate::contiguous::Copies;
use crate::default_pool::default_pool;
use crate::message::{Message, concat};
use crate::push::push_into;

#[derive(Clone, Copy, Debug)]
struct FieldLoc {
    off: UOffsetT,
    id: VOffsetT,
}

/// A vtable already written: where its bytes are (they never move) and its reverse offset.
#[derive(Clone, Copy, Debug)]
struct WrittenVtable {
    rev: UOffsetT,
    at: Loc,
    len: usize,
}

/// An interned string: its reverse offset (what `create_shared_string` returns), where its
/// bytes start, and their length.
#[derive(Clone, Copy, Debug)]
struct SharedString {
    rev: UOffsetT,
    at: Loc,
    len: usize,
}

/// What building the current message took from the allocator (blocks kept from the last
/// message by [`reset`](FlatBufferBuilder::reset) are not counted: they cost no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuildStats {
    /// Blocks taken from the allocator.
    pub allocations: usize,
    /// Their total size in bytes.
    pub allocated_bytes: usize,
    /// Bytes of the message.
    pub len: usize,
    /// Contiguous copies made of a message spanning several blocks, for
    /// [`finished_data`](FlatBufferBuilder::finished_data),
    /// [`unfinished_data`](FlatBufferBuilder::unfinished_data) or
    /// [`mut_finished_buffer`](FlatBufferBuilder::mut_finished_buffer).
    pub contiguous_copies: usize,
    /// Their total bytes.
    pub copied_bytes: usize,
}

/// A FlatBuffers builder that never copies what it has written: the drop-in for the stock
/// `flatbuffers::FlatBufferBuilder` that `flatc --rust` code builds with (see the crate docs).
///
/// Every public item of the stock builder (25.12.19) is here with its signature. The
/// differences a caller sees:
/// - [`new`](Self::new), [`with_capacity`](Self::with_capacity), [`from_vec`](Self::from_vec)
///   and `Default` take blocks from the process-wide [default pool](crate::default_pool);
///   [`with_pool`](Self::with_pool) and [`new_in`](Self::new_in) from the pool or
///   [`Allocator`] given. The stock `Allocator` (a `Vec`-like buffer that grows downwards)
///   cannot be plugged in: there is no one buffer here.
/// - The copy-free results are a [`Message`] of slices
///   ([`finished_message`](Self::finished_message), [`finished_slices`](Self::finished_slices)),
///   what Ferry's transports send. [`finished_data`](Self::finished_data) and
///   [`unfinished_data`](Self::unfinished_data) return one `&[u8]`: the block itself when the
///   message lies in one block (the usual case below the first block's size), else a
///   contiguous copy made once per message length and kept until the builder is next changed,
///   counted in [`stats`](Self::stats) (`contiguous_copies`).
/// - [`mut_finished_buffer`](Self::mut_finished_buffer) and [`collapse`](Self::collapse)
///   return a copy (index 0), and [`collapse_in`](Self::collapse_in) the allocator alone: the
///   stock builder's one buffer does not exist; writes through `mut_finished_buffer` show in
///   `finished_data` but not in the message sent.
/// - It is neither `Clone` nor `PartialEq`, as the stock builder is: blocks are not copied.
///
/// # Panics
/// As the stock builder: on misuse that its debug assertions catch (nesting), past the
/// format's 2 GiB, on a missing required field; and when the pool has no block left.
pub struct FlatBufferBuilder<'fbb, A: Allocator = PoolAllocator> {
    buf: Backward<A>,
    field_locs: Vec<FieldLoc>,
    written_vtables: Vec<WrittenVtable>,
    /// The vtable of the table being ended, laid out before it is looked up and written.
    vtable_scratch: Vec<u8>,
    strings_pool: Vec<SharedString>,
    finished_slices: Vec<SharedBuf>,
    finished_len: usize,
    nested: bool,
    finished: bool,
    min_align: usize,
    force_defaults: bool,
    /// Contiguous copies for the stock API's one-slice views.
    copies: Copies,
    /// Whether `finished_data` is the copy `mut_finished_buffer` gave (even of one slice).
    finished_copied: bool,
    _phantom: PhantomData<&'fbb ()>,
}

impl<'fbb> FlatBufferBuilder<'fbb, PoolAllocator> {
    /// A builder taking its blocks from the [default pool](crate::default_pool), the first
    /// [`PoolAllocator::FIRST_BLOCK`] bytes.
    pub fn new() -> Self {
        Self::with_pool(default_pool())
    }

    /// [`with_capacity`](Self::with_capacity), as the stock crate still has it.
    #[deprecated(note = "replaced with `with_capacity`", since = "0.8.5")]
    pub fn new_with_capacity(size: usize) -> Self {
        Self::with_capacity(size)
    }

    /// A builder whose first block from the [default pool](crate::default_pool) holds `size`
    /// bytes (at least [`PoolAllocator::FIRST_BLOCK`], at most the pool's largest block).
    ///
    /// # Panics
    /// If `size` is above the format's 2 GiB (`FLATBUFFERS_MAX_BUFFER_SIZE`), as the stock
    /// builder does.
    pub fn with_capacity(size: usize) -> Self {
        assert!(
            size <= FLATBUFFERS_MAX_BUFFER_SIZE,
            "cannot initialize buffer bigger than 2 gigabytes"
        );
        let first = size.max(PoolAllocator::FIRST_BLOCK);
        Self::new_in(PoolAllocator::with_first_block(default_pool(), first))
    }

    /// The stock builder writes into `buffer`; this one cannot (its blocks are the pool's):
    /// [`with_capacity`](Self::with_capacity) of `buffer.len()`, `buffer` dropped.
    ///
    /// # Panics
    /// As [`with_capacity`](Self::with_capacity).
    pub fn from_vec(buffer: Vec<u8>) -> Self {
        Self::with_capacity(buffer.len())
    }

    /// A builder taking its blocks from `pool` ([`PoolAllocator`]'s growth rule).
    pub fn with_pool(pool: &Pool) -> Self {
        Self::new_in(PoolAllocator::new(pool))
    }

    /// Destroys the builder, returning the finished (or unfinished) message's bytes and the
    /// index they start at: a copy, starting at 0 (the stock builder returns its own buffer,
    /// with free room before the index).
    pub fn collapse(self) -> (Vec<u8>, usize) {
        (self.data_to_vec(), 0)
    }
}

impl Default for FlatBufferBuilder<'_, PoolAllocator> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'fbb, A: Allocator> FlatBufferBuilder<'fbb, A> {
    /// A builder taking its blocks from `allocator`.
    pub fn new_in(allocator: A) -> Self {
        FlatBufferBuilder {
            buf: Backward::new(allocator),
            field_locs: Vec::new(),
            written_vtables: Vec::new(),
            vtable_scratch: Vec::new(),
            strings_pool: Vec::new(),
            finished_slices: Vec::new(),
            finished_len: 0,
            nested: false,
            finished: false,
            min_align: 0,
            force_defaults: false,
            copies: Copies::default(),
            finished_copied: false,
            _phantom: PhantomData,
        }
    }

    /// The allocator blocks come from.
    pub fn allocator(&self) -> &A {
        self.buf.allocator()
    }

    /// Destroys the builder, returning its allocator and 0. The stock builder's allocator
    /// holds the message from that index; here the message's blocks go back to the pool (take
    /// [`finished_message`](Self::finished_message) first to keep it).
    pub fn collapse_in(self) -> (A, usize) {
        let FlatBufferBuilder { buf, .. } = self;
        (buf.into_allocator(), 0)
    }

    /// Starts a new message; nothing is zeroed. The last message's blocks that nothing holds
    /// any more (no [`Message`], no queued send) are kept for the next one, as the stock
    /// builder keeps its `Vec`; the others return to the pool when their holders let go.
    /// Dropping the builder returns the kept blocks.
    pub fn reset(&mut self) {
        self.buf.clear(&mut self.finished_slices);
        self.finished_len = 0;
        self.written_vtables.clear();
        self.strings_pool.clear();
        self.field_locs.clear();
        self.nested = false;
        self.finished = false;
        self.min_align = 0;
        self.copies.clear();
        self.finished_copied = false;
    }

    /// What building the current (or just finished) message took.
    pub fn stats(&self) -> BuildStats {
        let (contiguous_copies, copied_bytes) = self.copies.made();
        BuildStats {
            contiguous_copies,
            copied_bytes,
            allocations: self.buf.allocations(),
            allocated_bytes: self.buf.allocated_bytes(),
            len: if self.finished {
                self.finished_len
            } else {
                self.buf.used()
            },
        }
    }

    /// Pushes a value in front of everything written: scalars, structs, offsets.
    #[inline]
    pub fn push<P: Push>(&mut self, x: P) -> WIPOffset<P::Output> {
        self.push_at(x).0
    }

    /// [`push`](Self::push), also returning where the value's bytes are.
    #[inline(always)]
    fn push_at<P: Push>(&mut self, x: P) -> (WIPOffset<P::Output>, Loc) {
        let pad = self.padding(P::size(), P::alignment());
        self.push_at_padded(pad, &x)
    }

    /// Writes `pad` bytes of zero padding, then `x`, in front.
    #[inline(always)]
    fn push_at_padded<P: Push>(&mut self, pad: usize, x: &P) -> (WIPOffset<P::Output>, Loc) {
        let sz = P::size();
        if sz > self.buf.max_block() {
            return self.push_larger_than_a_block(pad, x);
        }
        let written_len = self.buf.used() + pad;
        let at = self.buf.make_space_padded(pad, sz);
        push_into(x, self.buf.slice_mut(at, sz), written_len);
        (WIPOffset::new(self.buf.used() as UOffsetT), at)
    }

    /// [`push_at_padded`](Self::push_at_padded) of an item larger than any block (only with a
    /// tiny block cap): written aside, then spread over blocks like any long data. Out of line,
    /// so that the usual path stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn push_larger_than_a_block<P: Push>(&mut self, pad: usize, x: &P) -> (WIPOffset<P::Output>, Loc) {
        if pad > 0 {
            self.buf.zeroed(pad);
        }
        let written_len = self.buf.used();
        let mut aside = vec![0; P::size()];
        push_into(x, &mut aside, written_len);
        self.buf.push_bytes(&aside);
        let rev = self.buf.used();
        (WIPOffset::new(rev as UOffsetT), self.buf.locate(rev))
    }

    /// Pushes a field of the table being built, unless it equals its default (and defaults
    /// are not forced).
    #[inline]
    pub fn push_slot<X: Push + PartialEq>(&mut self, slotoff: VOffsetT, x: X, default: X) {
        self.assert_nested("push_slot");
        if x != default || self.force_defaults {
            self.push_slot_always(slotoff, x);
        }
    }

    /// Pushes a field of the table being built.
    #[inline]
    pub fn push_slot_always<X: Push>(&mut self, slotoff: VOffsetT, x: X) {
        self.assert_nested("push_slot_always");
        let off = self.push(x);
        self.field_locs.push(FieldLoc {
            id: slotoff,
            off: off.value(),
        });
    }

    /// How many distinct vtables the message has so far (deduplication at work).
    #[inline]
    pub fn num_written_vtables(&self) -> usize {
        self.written_vtables.len()
    }

    /// Starts a table.
    #[inline]
    pub fn start_table(&mut self) -> WIPOffset<TableUnfinishedWIPOffset> {
        self.assert_not_nested("start_table can not be called when a table or vector is under construction");
        self.nested = true;
        WIPOffset::new(self.buf.used() as UOffsetT)
    }

    /// Ends a table: writes its vtable, or points it at an identical one already written.
    #[inline]
    pub fn end_table(
        &mut self,
        off: WIPOffset<TableUnfinishedWIPOffset>,
    ) -> WIPOffset<TableFinishedWIPOffset> {
        self.assert_nested("end_table");
        let o = self.write_vtable(off);
        self.nested = false;
        self.field_locs.clear();
        WIPOffset::new(o)
    }

    /// Starts a vector of `num_items` elements, to be pushed last first with
    /// [`push`](Self::push).
    #[inline]
    pub fn start_vector<T: Push>(&mut self, num_items: usize) {
        self.assert_not_nested("start_vector can not be called when a table or vector is under construction");
        self.nested = true;
        self.align(num_items * T::size(), T::alignment().max_of(SIZE_UOFFSET));
    }

    /// Ends a vector of `num_elems` pushed elements.
    #[inline]
    pub fn end_vector<T: Push>(&mut self, num_elems: usize) -> WIPOffset<Vector<'fbb, T>> {
        self.assert_nested("end_vector");
        self.nested = false;
        let o = self.push::<UOffsetT>(num_elems as UOffsetT);
        WIPOffset::new(o.value())
    }

    /// A string written once per message: a second call with the same bytes returns the
    /// first one's offset.
    #[inline]
    pub fn create_shared_string<'a: 'b, 'b>(&'a mut self, s: &'b str) -> WIPOffset<&'fbb str> {
        self.assert_not_nested(
            "create_shared_string can not be called when a table or vector is under construction",
        );
        let buf = &self.buf;
        let found = self
            .strings_pool
            .binary_search_by(|old| buf.compare(old.at, old.len, s.as_bytes()));
        match found {
            Ok(index) => WIPOffset::new(self.strings_pool[index].rev),
            Err(index) => {
                let (rev, at) = self.byte_string(s.as_bytes());
                self.strings_pool.insert(
                    index,
                    SharedString {
                        rev,
                        at,
                        len: s.len(),
                    },
                );
                WIPOffset::new(rev)
            }
        }
    }

    /// A UTF-8 string (a zero-terminated byte vector).
    #[inline]
    pub fn create_string<'a: 'b, 'b>(&'a mut self, s: &'b str) -> WIPOffset<&'fbb str> {
        self.assert_not_nested(
            "create_string can not be called when a table or vector is under construction",
        );
        WIPOffset::new(self.byte_string(s.as_bytes()).0)
    }

    /// A zero-terminated byte vector.
    #[inline]
    pub fn create_byte_string(&mut self, data: &[u8]) -> WIPOffset<&'fbb [u8]> {
        self.assert_not_nested(
            "create_byte_string can not be called when a table or vector is under construction",
        );
        WIPOffset::new(self.byte_string(data).0)
    }

    /// Writes `len`, `data`, a zero, and returns the reverse offset and where `data` starts.
    /// The stock builder pushes the three separately; after its alignment no padding can fall
    /// between them, so one reservation (when it fits a block) lays out the same bytes.
    fn byte_string(&mut self, data: &[u8]) -> (UOffsetT, Loc) {
        let pad = self.padding(data.len() + 1, PushAlignment::new(SIZE_UOFFSET));
        let len = data.len() as UOffsetT;
        let total = SIZE_UOFFSET + data.len() + 1;
        if total <= self.buf.max_block() {
            let at = self.buf.make_space_padded(pad, total);
            let out = self.buf.slice_mut(at, total);
            out[..SIZE_UOFFSET].copy_from_slice(&len.to_le_bytes());
            out[SIZE_UOFFSET..total - 1].copy_from_slice(data);
            out[total - 1] = 0;
            let data_at = Loc {
                block: at.block,
                pos: at.pos + SIZE_UOFFSET,
            };
            return (self.buf.used() as UOffsetT, data_at);
        }
        if pad > 0 {
            self.buf.zeroed(pad);
        }
        self.buf.push_bytes(&[0]);
        self.buf.push_bytes(data);
        let data_rev = self.buf.used();
        self.buf.push_bytes(&len.to_le_bytes());
        (self.buf.used() as UOffsetT, self.buf.locate(data_rev))
    }

    /// A vector of `items`.
    #[inline]
    pub fn create_vector<'a: 'b, 'b, T: Push + 'b>(
        &'a mut self,
        items: &'b [T],
    ) -> WIPOffset<Vector<'fbb, T::Output>> {
        let elem_size = T::size();
        let slice_size = items.len() * elem_size;
        let pad = self.padding(slice_size, T::alignment().max_of(SIZE_UOFFSET));
        if slice_size <= self.buf.max_block() {
            let at = self.buf.make_space_padded(pad, slice_size);
            let mut written_len = self.buf.used();
            let out = self.buf.slice_mut(at, slice_size);
            for (item, out) in items.iter().zip(out.chunks_exact_mut(elem_size.max(1))) {
                written_len -= elem_size;
                push_into(item, out, written_len);
            }
        } else {
            // Larger than any block: element by element, last first (the same bytes; the
            // alignment above already holds for every element).
            if pad > 0 {
                self.buf.zeroed(pad);
            }
            for item in items.iter().rev() {
                self.push_at_padded(0, item);
            }
        }
        WIPOffset::new(self.push::<UOffsetT>(items.len() as UOffsetT).value())
    }

    /// A vector of the items an iterator yields.
    #[inline]
    pub fn create_vector_from_iter<T: Push>(
        &mut self,
        items: impl ExactSizeIterator<Item = T> + DoubleEndedIterator,
    ) -> WIPOffset<Vector<'fbb, T::Output>> {
        let elem_size = T::size();
        self.align(items.len() * elem_size, T::alignment().max_of(SIZE_UOFFSET));
        let mut actual = 0;
        for item in items.rev() {
            self.push(item);
            actual += 1;
        }
        WIPOffset::new(self.push::<UOffsetT>(actual).value())
    }

    /// Whether fields equal to their default are written anyway.
    #[inline]
    pub fn force_defaults(&mut self, force_defaults: bool) {
        self.force_defaults = force_defaults;
    }

    /// Panics if the table just ended lacks the field at `slot_byte_loc` (generated code calls
    /// it for `(required)` fields).
    #[inline]
    pub fn required(
        &self,
        tab_revloc: WIPOffset<TableFinishedWIPOffset>,
        slot_byte_loc: VOffsetT,
        assert_msg_name: &'static str,
    ) {
        let table = tab_revloc.value() as usize;
        let soffset = i32::from_le_bytes(self.buf.read::<SIZE_SOFFSET>(table)) as i64;
        // The vtable is `soffset` bytes before the table: at a higher reverse offset.
        let vtable = (table as i64 + soffset) as usize;
        let vt_len = u16::from_le_bytes(self.buf.read::<SIZE_VOFFSET>(vtable));
        let o = if slot_byte_loc < vt_len {
            u16::from_le_bytes(self.buf.read::<SIZE_VOFFSET>(vtable - slot_byte_loc as usize))
        } else {
            0
        };
        assert!(o != 0, "missing required field {assert_msg_name}");
    }

    /// Finishes the message with a size prefix (and an optional file identifier).
    #[inline]
    pub fn finish_size_prefixed<T>(&mut self, root: WIPOffset<T>, file_identifier: Option<&str>) {
        self.finish_with_opts(root, file_identifier, true);
    }

    /// Finishes the message (with an optional file identifier).
    #[inline]
    pub fn finish<T>(&mut self, root: WIPOffset<T>, file_identifier: Option<&str>) {
        self.finish_with_opts(root, file_identifier, false);
    }

    /// Finishes the message, with no file identifier.
    #[inline]
    pub fn finish_minimal<T>(&mut self, root: WIPOffset<T>) {
        self.finish_with_opts(root, None, false);
    }

    /// The bytes written so far, finished or not, in one slice: the block when they lie in
    /// one, else a copy (see the type's docs).
    pub fn unfinished_data(&self) -> &[u8] {
        if self.finished {
            return self.finished_data();
        }
        match self.buf.contiguous() {
            Some(bytes) => bytes,
            None => self.copies.get_or_make(self.buf.used(), || self.buf.to_vec()),
        }
    }

    /// The finished message in one slice: the block when it lies in one, else a copy made
    /// once and kept until [`reset`](Self::reset) (see the type's docs). A transport sends
    /// [`finished_message`](Self::finished_message) without either.
    ///
    /// # Panics
    /// If the message is not finished.
    pub fn finished_data(&self) -> &[u8] {
        self.assert_finished("finished_bytes cannot be called when the buffer is not yet finished");
        match self.finished_slices.as_slice() {
            [one] if !self.finished_copied => one,
            _ => self.copies.get_or_make(self.finished_len, || self.data_to_vec()),
        }
    }

    /// The finished message in one writable slice, and where it starts in it (0): always a
    /// copy, made once per message (the blocks of a finished message may be held by a
    /// [`Message`] already, so they are not written). Writes show in
    /// [`finished_data`](Self::finished_data), not in [`finished_message`](Self::finished_message).
    ///
    /// # Panics
    /// If the message is not finished.
    pub fn mut_finished_buffer(&mut self) -> (&mut [u8], usize) {
        self.assert_finished("mut_finished_buffer cannot be called when the buffer is not yet finished");
        self.copies.get_or_make(self.finished_len, || self.data_to_vec());
        self.finished_copied = true;
        let copy = self.copies.last_mut().expect("made above");
        (copy, 0)
    }

    /// The bytes written so far (the finished message once finished), copied into one `Vec`.
    fn data_to_vec(&self) -> Vec<u8> {
        if self.finished {
            concat(&self.finished_slices)
        } else {
            self.buf.to_vec()
        }
    }

    /// The finished message's slices, first byte first: what a gather send posts.
    ///
    /// # Panics
    /// If the message is not finished.
    pub fn finished_slices(&self) -> &[SharedBuf] {
        assert!(self.finished, "finished_slices: the message is not finished");
        &self.finished_slices
    }

    /// The finished message (it holds its blocks: it outlives `reset` and the builder).
    ///
    /// # Panics
    /// If the message is not finished.
    pub fn finished_message(&self) -> Message {
        Message::new(self.finished_slices().to_vec())
    }

    fn write_vtable(&mut self, table_tail_revloc: WIPOffset<TableUnfinishedWIPOffset>) -> UOffsetT {
        // The table starts with the offset to its vtable, written last.
        let (object, object_at) = self.push_at::<UOffsetT>(0xF0F0_F0F0);
        let object_revloc_to_vtable = object.value();

        let vtable_byte_len = vtable_byte_len(&self.field_locs);
        let table_object_size = object_revloc_to_vtable - table_tail_revloc.value();
        debug_assert!(table_object_size < 0x10000);
        // Laid out aside, then looked up, then written only if new: a vtable can be longer
        // than a block (a table with many fields, small blocks), so it is not always one slice
        // of the buffer. The stock builder writes every vtable and takes a duplicate back: the
        // same bytes.
        let vt = &mut self.vtable_scratch;
        vt.clear();
        vt.resize(vtable_byte_len, 0);
        vt[..2].copy_from_slice(&(vtable_byte_len as VOffsetT).to_le_bytes());
        vt[2..4].copy_from_slice(&(table_object_size as VOffsetT).to_le_bytes());
        for fl in &self.field_locs {
            let pos = (object_revloc_to_vtable - fl.off) as VOffsetT;
            let i = fl.id as usize;
            vt[i..i + 2].copy_from_slice(&pos.to_le_bytes());
        }
        let buf = &self.buf;
        let new_vt = &self.vtable_scratch[..];
        // As the stock builder orders them (new against old): only equality matters.
        let found = self
            .written_vtables
            .binary_search_by(|old| buf.compare(old.at, old.len, new_vt).reverse());
        let final_vtable_revpos = match found {
            Ok(i) => self.written_vtables[i].rev,
            Err(i) => {
                let at = if vtable_byte_len <= self.buf.max_block() {
                    let at = self.buf.make_space(vtable_byte_len);
                    self.buf
                        .slice_mut(at, vtable_byte_len)
                        .copy_from_slice(&self.vtable_scratch);
                    at
                } else {
                    self.buf.push_bytes(&self.vtable_scratch);
                    self.buf.locate(self.buf.used())
                };
                let rev = self.buf.used() as UOffsetT;
                self.written_vtables.insert(
                    i,
                    WrittenVtable {
                        rev,
                        at,
                        len: vtable_byte_len,
                    },
                );
                rev
            }
        };
        let soffset = final_vtable_revpos as i32 - object_revloc_to_vtable as i32;
        self.buf
            .slice_mut(object_at, SIZE_SOFFSET)
            .copy_from_slice(&soffset.to_le_bytes());
        self.field_locs.clear();
        object_revloc_to_vtable
    }

    fn finish_with_opts<T>(
        &mut self,
        root: WIPOffset<T>,
        file_identifier: Option<&str>,
        size_prefixed: bool,
    ) {
        self.assert_not_finished("buffer cannot be finished when it is already finished");
        self.assert_not_nested("buffer cannot be finished when a table or vector is under construction");
        self.written_vtables.clear();
        let to_align = SIZE_UOFFSET
            + if size_prefixed { SIZE_UOFFSET } else { 0 }
            + if file_identifier.is_some() {
                FILE_IDENTIFIER_LENGTH
            } else {
                0
            };
        self.align(to_align, PushAlignment::new(self.min_align));
        if let Some(ident) = file_identifier {
            assert_eq!(
                ident.len(),
                FILE_IDENTIFIER_LENGTH,
                "a file identifier is {FILE_IDENTIFIER_LENGTH} bytes"
            );
            self.buf.push_bytes(ident.as_bytes());
        }
        self.push(root);
        if size_prefixed {
            let sz = self.buf.used() as UOffsetT;
            self.push::<UOffsetT>(sz);
        }
        self.finished_len = self.buf.used();
        self.buf.freeze(&mut self.finished_slices);
        self.finished = true;
    }

    /// Zero padding so that `len` bytes pushed next end aligned to `alignment` (from the end).
    #[inline]
    fn align(&mut self, len: usize, alignment: PushAlignment) {
        let pad = self.padding(len, alignment);
        if pad > 0 {
            // Padding before nothing: the one-store zeroing of the usual case.
            self.buf.make_space_padded(pad, 0);
        }
    }

    /// The padding that makes `len` bytes pushed next end aligned to `alignment` (from the
    /// end), the alignment tracked for `finish`.
    #[inline(always)]
    fn padding(&mut self, len: usize, alignment: PushAlignment) -> usize {
        self.track_min_align(alignment.value());
        padding_bytes(self.buf.used() + len, alignment.value())
    }

    #[inline]
    fn track_min_align(&mut self, alignment: usize) {
        self.min_align = max(self.min_align, alignment);
    }

    #[inline]
    fn assert_nested(&self, fn_name: &'static str) {
        debug_assert!(
            self.nested,
            "incorrect FlatBufferBuilder usage: {fn_name} must be called while in a nested state"
        );
    }

    #[inline]
    fn assert_not_nested(&self, msg: &'static str) {
        debug_assert!(!self.nested, "{msg}");
    }

    #[inline]
    fn assert_finished(&self, msg: &'static str) {
        assert!(self.finished, "{msg}");
    }

    #[inline]
    fn assert_not_finished(&self, msg: &'static str) {
        assert!(!self.finished, "{msg}");
    }
}

/// The vtable's length for these fields: the header, and up to the highest slot used.
#[inline]
fn vtable_byte_len(field_locs: &[FieldLoc]) -> usize {
    match field_locs.iter().map(|fl| fl.id).max() {
        None => field_index_to_field_offset(0) as usize,
        Some(mv) => mv as usize + SIZE_VOFFSET,
    }
}

/// Bytes of padding that make `buf_size` a multiple of `scalar_size` (a power of two).
fn padding_bytes(buf_size: usize, scalar_size: usize) -> usize {
    (!buf_size).wrapping_add(1) & scalar_size.wrapping_sub(1)
}

impl<A: Allocator> std::fmt::Debug for FlatBufferBuilder<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatBufferBuilder")
            .field("used", &self.buf.used())
            .field("blocks", &self.buf.allocations())
            .field("nested", &self.nested)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use ferry_buf::{Pool, PoolConfig};

    use super::*;

    fn build(fbb: &mut FlatBufferBuilder<'_>, text: &str) {
        let s = fbb.create_string(text);
        let start = fbb.start_table();
        fbb.push_slot_always(4, s);
        let root = fbb.end_table(start);
        fbb.finish(root, None);
    }

    /// `reset` keeps the last message's blocks when nothing holds them, and only then.
    #[test]
    fn reset_reuses_the_blocks_nothing_holds() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let mut fbb =
            FlatBufferBuilder::new_in(PoolAllocator::with_first_block(&pool, 64).max_block_size(64));
        let text = "x".repeat(500);
        build(&mut fbb, &text);
        let first = fbb.stats();
        assert!(first.allocations > 1, "{first:?}");
        let bytes = fbb.finished_message().to_vec();

        // Nothing holds the message: the same blocks serve the next one, no allocation.
        fbb.reset();
        assert_eq!(pool.stats().buffers_outstanding(), first.allocations);
        build(&mut fbb, &text);
        assert_eq!(fbb.stats().allocations, 0);
        assert_eq!(fbb.finished_message().to_vec(), bytes);

        // A held message keeps its blocks: new ones are taken, and it stays intact.
        let held = fbb.finished_message();
        fbb.reset();
        build(&mut fbb, &"y".repeat(500));
        assert_eq!(fbb.stats().allocations, first.allocations);
        assert_eq!(held.to_vec(), bytes);

        drop((held, fbb));
        assert_eq!(pool.stats().buffers_outstanding(), 0);
    }
}
