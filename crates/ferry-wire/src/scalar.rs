//! Fixed-width scalars: how each Rust scalar type sits in an entry and in a packed list.

mod sealed {
    pub trait Sealed {}
}

/// A protobuf scalar as Ferry stores it.
///
/// In an entry every scalar takes 8 bytes: signed 32-bit values are sign-extended and unsigned
/// ones zero-extended, so `int32` may later become `int64` (as protobuf allows). In a packed
/// list each element takes [`Scalar::WIDTH`] bytes. `int32`, `sint32` and `sfixed32` are all
/// `i32` here: zigzag and varint encodings do not exist in a fixed-width format. Enums are `i32`.
pub trait Scalar: sealed::Sealed + Copy + Default + PartialEq + core::fmt::Debug + 'static {
    /// Bytes per element in a packed list.
    const WIDTH: usize;
    /// The 8-byte entry value.
    fn to_entry(self) -> u64;
    /// Reads the value back from an entry.
    fn from_entry(entry: u64) -> Self;
    /// Writes `WIDTH` little-endian bytes; `out.len() == WIDTH`.
    fn write_packed(self, out: &mut [u8]);
    /// Reads from `WIDTH` little-endian bytes; `bytes.len() == WIDTH`.
    fn read_packed(bytes: &[u8]) -> Self;
}

macro_rules! int_scalar {
    ($t:ty, $width:expr, $to:expr, $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const WIDTH: usize = $width;
            #[inline]
            fn to_entry(self) -> u64 {
                $to(self)
            }
            #[inline]
            fn from_entry(entry: u64) -> Self {
                $from(entry)
            }
            #[inline]
            fn write_packed(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read_packed(bytes: &[u8]) -> Self {
                let mut raw = [0u8; $width];
                raw.copy_from_slice(bytes);
                <$t>::from_le_bytes(raw)
            }
        }
    };
}

int_scalar!(u32, 4, |v: u32| v as u64, |e: u64| e as u32);
int_scalar!(i32, 4, |v: i32| v as i64 as u64, |e: u64| e as u32 as i32);
int_scalar!(u64, 8, |v: u64| v, |e: u64| e);
int_scalar!(i64, 8, |v: i64| v as u64, |e: u64| e as i64);
int_scalar!(f32, 4, |v: f32| v.to_bits() as u64, |e: u64| f32::from_bits(
    e as u32
));
int_scalar!(f64, 8, |v: f64| v.to_bits(), f64::from_bits);

impl sealed::Sealed for bool {}
impl Scalar for bool {
    const WIDTH: usize = 1;
    #[inline]
    fn to_entry(self) -> u64 {
        self as u64
    }
    #[inline]
    fn from_entry(entry: u64) -> Self {
        entry != 0
    }
    #[inline]
    fn write_packed(self, out: &mut [u8]) {
        out[0] = self as u8;
    }
    #[inline]
    fn read_packed(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_extend_as_documented() {
        assert_eq!((-1i32).to_entry(), u64::MAX);
        assert_eq!(i64::from_entry((-1i32).to_entry()), -1);
        assert_eq!(i32::from_entry((-5i32).to_entry()), -5);
        assert_eq!(u32::MAX.to_entry(), 0xffff_ffff);
        assert_eq!(1.5f32.to_entry(), 0x3fc0_0000);
        assert_eq!(true.to_entry(), 1);
        assert!(bool::from_entry(2));
    }

    #[test]
    fn packed_round_trip() {
        let mut b = [0u8; 8];
        (-2i64).write_packed(&mut b);
        assert_eq!(b, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(i64::read_packed(&b), -2);
        let mut b = [0u8; 4];
        0x0102_0304u32.write_packed(&mut b);
        assert_eq!(b, [4, 3, 2, 1]);
        assert_eq!(u32::read_packed(&b), 0x0102_0304);
    }
}
