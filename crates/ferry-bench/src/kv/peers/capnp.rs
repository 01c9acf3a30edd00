//! Cap'n Proto 0.27 (`schema/kv.capnp`), with reused scratch segments.
//!
//! Server: the request is read in place (`read_message_from_flat_slice_no_alloc`, after one
//! copy into a reused word buffer if it is not 8-byte aligned, as capnp's stream reader would);
//! each key's UTF-8 is checked when it is read. The response is built in a scratch segment
//! reused across calls (only the words a message used are re-zeroed when its builder drops):
//! each value read from the store is copied into a `Data` element, then the segment list is
//! written (`write_message`: segment table and segments) into a pool buffer of exactly
//! `compute_serialized_size_in_words`: two copies of each value. Cornflakes handed Cap'n
//! Proto's segment list to its stack, which copied it into DMA-able memory; the pool buffer is
//! ours.
//!
//! The scratch segment grows to fit the largest message (its size is known before building:
//! the values are in hand), so a message is one segment and never touches the heap. The
//! allocator borrows its segment for its whole life, so segments are allocated once and never
//! freed: a codec that drops, or outgrows its segment, puts it on a process-wide spare list
//! that the next codec takes from. The memory held is what the codecs alive at once needed
//! (powers of two from 64 KiB to 16 MiB; past that, capnp's heap segments), however many
//! codecs a benchmark makes and drops.
//!
//! Client: the request is built in its own scratch segment and framed into a reused vector;
//! the response is read in place like the server's requests.

use std::sync::{Mutex, MutexGuard, PoisonError};

use capnp::Word;
use capnp::message::{Builder, ReaderOptions, ScratchSpaceHeapAllocator};
use capnp::serialize;
use ferry_buf::{Pool, SharedBuf};
use ferry_kv::Store;
use ferry_rpc::{Code, Status};

use super::{KvCodec, KvRequest, Op, execute, invalid, key_str, response_buf};
use crate::BenchError;
use crate::generated::kv_capnp::{request, response};
use crate::systems::Input;
use crate::systems::capnp::words;

const SYSTEM: &str = "capnp";

/// The smallest scratch segment, in words (64 KiB).
const MIN_SCRATCH_WORDS: usize = 8 << 10;
/// The largest scratch segment, in words (16 MiB): beyond it, capnp's heap segments.
const MAX_SCRATCH_WORDS: usize = 2 << 20;

/// Scratch segments no codec holds, with their sizes in words (see the module docs).
static SPARE: Mutex<Vec<(usize, ScratchSpaceHeapAllocator<'static>)>> = Mutex::new(Vec::new());

fn spare() -> MutexGuard<'static, Vec<(usize, ScratchSpaceHeapAllocator<'static>)>> {
    // The list is consistent between calls (single pushes and removals).
    SPARE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A first segment reused across messages, taken on first use and grown (never shrunk) to fit
/// the largest message.
#[derive(Default)]
struct Scratch {
    allocator: Option<ScratchSpaceHeapAllocator<'static>>,
    words: usize,
}

impl Scratch {
    /// The allocator, with a first segment of at least `words` (up to the largest).
    fn fit(&mut self, words: usize) -> &mut ScratchSpaceHeapAllocator<'static> {
        let want = words
            .clamp(MIN_SCRATCH_WORDS, MAX_SCRATCH_WORDS)
            .next_power_of_two();
        let allocator = match self.allocator.take() {
            Some(kept) if want <= self.words => kept,
            outgrown => {
                let mut spare = spare();
                spare.extend(outgrown.map(|a| (self.words, a)));
                let fits = (spare.iter().enumerate())
                    .filter(|(_, (n, _))| *n >= want)
                    .min_by_key(|(_, (n, _))| *n)
                    .map(|(i, _)| i);
                let (words, allocator) = match fits {
                    Some(i) => spare.swap_remove(i),
                    None => {
                        // Never freed: it goes back to the spare list instead.
                        let segment: &'static mut [Word] =
                            Box::leak(Word::allocate_zeroed_vec(want).into_boxed_slice());
                        (
                            want,
                            ScratchSpaceHeapAllocator::new(Word::words_to_bytes_mut(segment)),
                        )
                    }
                };
                self.words = words;
                allocator
            }
        };
        self.allocator.insert(allocator)
    }

    /// Puts the segment on the spare list. Between messages it is all zeroes again (the
    /// allocator re-zeroes what a message used when its builder drops).
    fn release(&mut self) {
        if let Some(allocator) = self.allocator.take() {
            spare().push((self.words, allocator));
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.release();
    }
}

/// Words a message takes: `fixed` (pointers and struct sections) plus a list pointer per
/// element of `blobs` (their byte lengths, text with its NUL) and the blobs rounded to words.
fn words_of(fixed: usize, blobs: impl Iterator<Item = usize>) -> usize {
    blobs.fold(fixed, |n, len| n + 1 + len.div_ceil(8))
}

/// Both sides of the store with Cap'n Proto (see the module docs).
#[derive(Default)]
pub struct CapnpKv {
    /// Client: builds requests.
    client: Scratch,
    /// Client: the framed request.
    out: Vec<u8>,
    /// Server: builds responses.
    server: Scratch,
    /// Where input that is not word-aligned is copied before it is read.
    aligned: Vec<Word>,
    /// Server: the values found, as counted references.
    found: Vec<SharedBuf>,
}

fn op_to(op: Op) -> request::Op {
    match op {
        Op::Get => request::Op::Get,
        Op::GetList => request::Op::GetList,
        Op::GetM => request::Op::GetM,
        Op::Put => request::Op::Put,
    }
}

/// A list length, which capnp holds in a `u32`.
fn list_len(n: usize) -> Result<u32, BenchError> {
    u32::try_from(n).map_err(|_| BenchError::TooManyFields {
        system: SYSTEM,
        fields: n,
    })
}

impl KvCodec for CapnpKv {
    fn encode_request(&mut self, req: &KvRequest<'_>) -> Result<&[u8], BenchError> {
        let (keys, values) = (req.keys(), req.values());
        // Root pointer, then the struct: one data word (the op), two pointers.
        let words = words_of(
            4,
            keys.iter()
                .map(|k| k.len() + 1)
                .chain(values.iter().map(|v| v.len())),
        );
        let mut message = Builder::new(self.client.fit(words));
        let mut root = message.init_root::<request::Builder<'_>>();
        root.set_op(op_to(req.op()));
        let mut list = root.reborrow().init_keys(list_len(keys.len())?);
        for (i, key) in (0..).zip(keys) {
            list.set(i, key_str(SYSTEM, key)?);
        }
        let mut list = root.init_values(list_len(values.len())?);
        for (i, v) in (0..).zip(values) {
            list.set(i, v);
        }
        self.out.clear();
        serialize::write_message(&mut self.out, &message)?;
        Ok(&self.out)
    }

    fn read_response(&mut self, input: Input<'_>, value: &mut dyn FnMut(&[u8])) -> Result<(), BenchError> {
        let mut bytes = words(input.bytes, &mut self.aligned);
        let message = serialize::read_message_from_flat_slice_no_alloc(&mut bytes, ReaderOptions::new())?;
        let root = message.get_root::<response::Reader<'_>>()?;
        for v in root.get_values()?.iter() {
            value(v?);
        }
        Ok(())
    }

    fn serve(&mut self, input: Input<'_>, store: &Store, pool: &Pool) -> Result<SharedBuf, Status> {
        let CapnpKv {
            server,
            aligned,
            found,
            ..
        } = self;
        let bad = |e: capnp::Error| invalid(SYSTEM, e);
        let mut bytes = words(input.bytes, aligned);
        let message = serialize::read_message_from_flat_slice_no_alloc(&mut bytes, ReaderOptions::new())
            .map_err(bad)?;
        let root = message.get_root::<request::Reader<'_>>().map_err(bad)?;
        let op = root
            .get_op()
            .map_err(|capnp::NotInSchema(n)| invalid(SYSTEM, format_args!("unknown op {n}")))?;
        let keys = root.get_keys().map_err(bad)?.iter().map(|k| {
            k.map_err(bad)?
                .to_str()
                .map_err(|e| invalid(SYSTEM, format_args!("a key is not UTF-8: {e}")))
        });
        let values = root.get_values().map_err(bad)?.iter().map(|v| v.map_err(bad));
        execute(
            SYSTEM,
            store,
            Op::numbered(SYSTEM, u16::from(op))?,
            keys,
            values,
            found,
        )?;

        // Root pointer and the struct's one pointer, then the list.
        let words = words_of(2, found.iter().map(|b| b.len()));
        let len = 8 * (words + 1);
        if len > pool.max_class() {
            // Not built (nor the scratch grown): it would not fit a pool buffer.
            found.clear();
            return Err(Status::new(
                Code::ResourceExhausted,
                format!(
                    "{SYSTEM}: a response of {len} bytes is larger than a pool buffer ({})",
                    pool.max_class()
                ),
            ));
        }
        let mut message = Builder::new(server.fit(words));
        let root = message.init_root::<response::Builder<'_>>();
        // At most the store's limit of buffers per value or keys per request.
        let mut list = root.init_values(found.len() as u32);
        for (i, buf) in (0..).zip(found.drain(..)) {
            list.set(i, &buf);
        }
        let len = 8 * serialize::compute_serialized_size_in_words(&message);
        let mut buf = response_buf(SYSTEM, pool, len)?;
        let mut out = &mut buf.capacity_mut()[..len];
        serialize::write_message(&mut out, &message)
            .map_err(|e| Status::new(Code::Internal, format!("{SYSTEM}: writing the response: {e}")))?;
        buf.set_len(len);
        Ok(buf.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::peers::tests::store;

    #[test]
    fn a_response_is_one_segment_whatever_its_size() {
        let store = store(false);
        let mut codec = CapnpKv::default();
        for len in [0, 100, 70_000, 1 << 20] {
            let value = vec![3u8; len];
            store.put(b"k", &[&value, b"tail"]).expect("put");
            let request = codec.encode_request(&KvRequest::GetList(b"k")).unwrap().to_vec();
            let response = codec.serve(Input::bytes(&request), &store, store.pool()).unwrap();
            // The segment table: the count of segments minus one, then each one's words.
            assert_eq!(response[..4], [0; 4], "{len} B: more than one segment");
            let mut got = Vec::new();
            codec
                .read_response(Input::bytes(&response), &mut |v| got.push(v.to_vec()))
                .unwrap();
            assert_eq!(got, [value, b"tail".to_vec()], "{len} B");
        }
        assert!(codec.server.words >= (1 << 20) / 8, "the scratch grew to fit");
    }
}
