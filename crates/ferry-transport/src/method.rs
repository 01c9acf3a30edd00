//! Method ids: the frame kind of an RPC method, derived from its name.

/// The frame kind that carries calls of the RPC method `path`, written as gRPC writes it:
/// `/package.Service/Method` (e.g. `/ferry.test.Echo/Say`).
///
/// The id is the 32-bit FNV-1a hash of the path's UTF-8 bytes (offset basis `0x811c9dc5`,
/// prime `0x01000193`), folded to 16 bits as `(h >> 16) ^ (h & 0xffff)`. It depends on the name
/// alone, so reordering, adding or removing methods in a `.proto` file changes no other
/// method's id, and another implementation computes the same id from the name. `ferry-build`
/// refuses a build in which two methods of the compiled services share an id.
pub const fn method_id(path: &str) -> u16 {
    let bytes = path.as_bytes();
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    ((h >> 16) ^ (h & 0xffff)) as u16
}

#[cfg(test)]
mod tests {
    use super::method_id;

    /// Values computed outside this crate (a separate FNV-1a implementation), so a change of
    /// the algorithm, the fold or the path form fails here.
    #[test]
    fn known_paths_have_fixed_ids() {
        assert_eq!(method_id("/ferry.golden.kv.KvStore/Get"), 33740);
        assert_eq!(method_id("/ferry.golden.kv.KvStore/Put"), 20114);
        assert_eq!(method_id(""), 7385);
    }

    #[test]
    fn usable_in_constants() {
        const GET: u16 = method_id("/ferry.golden.kv.KvStore/Get");
        assert_eq!(GET, 33740);
    }
}
