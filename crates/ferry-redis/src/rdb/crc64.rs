//! Redis's CRC-64 (Jones polynomial `0xad93d23594c935a9`, reflected, initial value 0, no final
//! xor): the checksum after an RDB file's `EOF` opcode, over every byte before it.

/// The reflected form of the Jones polynomial.
const POLY: u64 = 0x95ac_9329_ac4b_c9b5;

/// One table entry per byte value, made at compile time.
static TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// Continues the checksum `crc` (0 to start) over `bytes`.
pub fn crc64(mut crc: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::crc64;

    /// The check values of Redis's `crc64Test` (src/crc64.c).
    #[test]
    fn matches_redis_check_values() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        let lorem = b"This is a test of the emergency broadcast system.";
        assert_eq!(crc64(0, lorem), crc64(crc64(0, &lorem[..10]), &lorem[10..]));
    }
}
