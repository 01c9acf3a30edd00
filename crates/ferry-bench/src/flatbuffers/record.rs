//! The zFlatBuffers paper's Record (section VI-A, after cpp-serializers), and the one call
//! sequence that builds it on both builders.
//!
//! `table Record { ids:[long]; strings:[string]; }` (`record.fbs`). A source of `S` bytes is
//! split in half: `S/2` bytes of `i64` ids (`S/16` of them) and `S/2` bytes of strings of 64
//! bytes each (`S/128` strings). Serialized, that is 1,152 / 17,952 / 71,712 bytes for 1 / 16 /
//! 64 KiB, the sizes of the paper's Table II (checked in the tests below).
//!
//! [`build_record!`] is the call sequence of the `flatc --rust` code's `Record::create` (strings
//! added before ids, as flatc orders them), spelled once and expanded for the stock builder
//! ([`build_stock`]) and for ours ([`build_ours`]): flatc-generated builder code names the
//! runtime as `::flatbuffers`, so it cannot be compiled against both builders in one crate.
//! A test checks that the macro's bytes are the generated `Record::create`'s.

use ::flatbuffers::WIPOffset;

/// What the Record is built from: the application's data, allocated apart from any builder.
#[derive(Debug, Clone)]
pub struct Source {
    /// The source size in bytes.
    pub size: usize,
    /// The ids.
    pub ids: Vec<i64>,
    /// The strings.
    pub strings: Vec<String>,
}

/// Bytes of one string of the Record.
pub const STRING_LEN: usize = 64;

impl Source {
    /// The Record of a `size`-byte source (a multiple of 128): `size / 16` ids and
    /// `size / 128` strings of [`STRING_LEN`] bytes.
    pub fn new(size: usize) -> Source {
        assert!(
            size % 128 == 0 && size > 0,
            "a Record source is a positive multiple of 128 bytes"
        );
        let ids = (0..size / 16)
            .map(|i| (i as i64).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as i64))
            .collect();
        let strings = (0..size / 128).map(|i| format!("{i:0>STRING_LEN$}")).collect();
        Source { size, ids, strings }
    }

    /// Bytes of the serialized Record (built once with the stock builder).
    pub fn serialized_len(&self) -> usize {
        let mut fbb = ::flatbuffers::FlatBufferBuilder::new();
        build_stock(&mut fbb, self, &mut Offsets::new());
        fbb.finished_data().len()
    }

    /// What the server acknowledges: the number of ids and of strings, as a reader finds them.
    pub fn ack(&self) -> [u8; 8] {
        ack(self.ids.len(), self.strings.len())
    }
}

/// The ACK of a Record of `ids` ids and `strings` strings: both counts, little-endian `u32`s.
pub fn ack(ids: usize, strings: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&(ids as u32).to_le_bytes());
    out[4..].copy_from_slice(&(strings as u32).to_le_bytes());
    out
}

/// The scratch list of string offsets the application keeps across messages.
pub type Offsets = Vec<WIPOffset<&'static str>>;

/// Builds the Record of `$source` in the builder `$fbb` (`&mut`, either builder), with
/// `$offsets` (an [`Offsets`]) as scratch, and finishes it: the calls of flatc's
/// `Record::create` with the strings created first, as a cpp-serializers client does.
macro_rules! build_record {
    ($fbb:expr, $source:expr, $offsets:expr) => {{
        use $crate::generated::zflat_record_generated::zflat::Record;
        let fbb = $fbb;
        let source: &$crate::flatbuffers::record::Source = $source;
        let offsets: &mut $crate::flatbuffers::record::Offsets = $offsets;
        offsets.clear();
        for s in &source.strings {
            offsets.push(fbb.create_string(s));
        }
        let ids = fbb.create_vector(&source.ids);
        let strings = fbb.create_vector(offsets.as_slice());
        let start = fbb.start_table();
        fbb.push_slot_always(Record::VT_STRINGS, strings);
        fbb.push_slot_always(Record::VT_IDS, ids);
        let root = fbb.end_table(start);
        fbb.finish(root, None);
    }};
}

/// Builds the Record with the stock builder (any of its allocators).
#[inline]
pub fn build_stock<A: ::flatbuffers::Allocator>(
    fbb: &mut ::flatbuffers::FlatBufferBuilder<'static, A>,
    source: &Source,
    offsets: &mut Offsets,
) {
    build_record!(fbb, source, offsets);
}

/// Builds the Record with our builder (any of its block sources).
#[inline]
pub fn build_ours<A: ferry_flatbuffers::Allocator>(
    fbb: &mut ferry_flatbuffers::FlatBufferBuilder<'static, A>,
    source: &Source,
    offsets: &mut Offsets,
) {
    build_record!(fbb, source, offsets);
}

/// Reads a received Record with the stock verifier (`flatbuffers::root`: it is a peer's
/// bytes) and returns its ACK.
pub fn verify(bytes: &[u8]) -> Result<[u8; 8], ::flatbuffers::InvalidFlatbuffer> {
    use crate::generated::zflat_record_generated::zflat::Record;
    let record = ::flatbuffers::root::<Record<'_>>(bytes)?;
    Ok(ack(
        record.ids().map_or(0, |v| v.len()),
        record.strings().map_or(0, |v| v.len()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::zflat_record_generated::zflat::{Record, RecordArgs};
    use ferry_buf::{Pool, PoolConfig};

    fn stock_bytes(source: &Source) -> Vec<u8> {
        let mut fbb = ::flatbuffers::FlatBufferBuilder::new();
        build_stock(&mut fbb, source, &mut Offsets::new());
        fbb.finished_data().to_vec()
    }

    #[test]
    fn serialized_sizes_are_the_papers() {
        // Table II: 1,024 B -> 1,152 B; 16,384 B -> 17,952 B; 65,536 B -> 71,712 B.
        for (size, len) in [(1024, 1152), (16 << 10, 17_952), (64 << 10, 71_712)] {
            let source = Source::new(size);
            assert_eq!(source.ids.len() * 8, size / 2);
            assert_eq!(source.strings.len() * STRING_LEN, size / 2);
            assert!(source.strings.iter().all(|s| s.len() == STRING_LEN));
            assert_eq!(stock_bytes(&source).len(), len, "{size}-byte source");
        }
    }

    #[test]
    fn the_macro_builds_what_flatc_code_builds() {
        let source = Source::new(16 << 10);
        let mut fbb = ::flatbuffers::FlatBufferBuilder::new();
        let strings: Vec<_> = source.strings.iter().map(|s| fbb.create_string(s)).collect();
        let ids = fbb.create_vector(&source.ids);
        let strings = fbb.create_vector(&strings);
        let root = Record::create(
            &mut fbb,
            &RecordArgs {
                ids: Some(ids),
                strings: Some(strings),
            },
        );
        fbb.finish(root, None);
        assert_eq!(fbb.finished_data(), stock_bytes(&source).as_slice());
    }

    #[test]
    fn both_builders_write_the_same_bytes_and_the_verifier_reads_them() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let mut ours = ferry_flatbuffers::FlatBufferBuilder::with_pool(&pool);
        let mut offsets = Offsets::new();
        for size in [128, 1024, 16 << 10, 64 << 10, 128 << 10, 1 << 20] {
            let source = Source::new(size);
            ours.reset();
            build_ours(&mut ours, &source, &mut offsets);
            let bytes = ours.finished_message().to_vec();
            assert_eq!(bytes, stock_bytes(&source), "{size}-byte source");
            assert_eq!(verify(&bytes).unwrap(), source.ack());
            let record = ::flatbuffers::root::<Record<'_>>(&bytes).unwrap();
            let ids: Vec<i64> = record.ids().unwrap().iter().collect();
            assert_eq!(ids, source.ids);
            let last = record.strings().unwrap().iter().next_back().unwrap();
            assert_eq!(last, source.strings.last().unwrap());
        }
    }

    #[test]
    fn a_damaged_record_is_refused() {
        let mut bytes = stock_bytes(&Source::new(1024));
        // The root offset points past the end.
        bytes[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(verify(&bytes).is_err());
        assert!(verify(&[1, 2]).is_err());
    }
}
