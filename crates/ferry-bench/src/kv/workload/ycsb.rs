//! The YCSB-C workload: read-only, Zipf 0.99, values of N buffers of S bytes (the threshold
//! study's shape).

use rand::Rng as _;

use super::dist::{Popularity, Stream, rng};
use super::keyspace::{fill, make_key};
use super::{Object, Requests, Workload, WorkloadSpec};

/// Zipf coefficient (`workloads.md` line 44).
pub const ZIPF_ALPHA: f64 = 0.99;
/// Keys Cornflakes used (`workloads.md` line 44).
pub const DEFAULT_KEYS: u32 = 1_000_000;
/// Default buffers per value: 4 of [`DEFAULT_SIZE`], Cornflakes' "YCSB 1024x4" (Table 5).
pub const DEFAULT_BUFFERS: u32 = 4;
/// Default buffer size, bytes.
pub const DEFAULT_SIZE: u32 = 1024;

/// How a request reads its N buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum YcsbRead {
    /// Each key holds N buffers, read with one [`Op::GetList`] (Cornflakes' linked lists and
    /// Redis `lrange`); [`Op::Get`] when N is 1.
    List,
    /// Each key holds one buffer, and a request reads N keys with one [`Op::GetM`] (Redis
    /// `mget`); the N keys are drawn independently, so a popular key may repeat.
    Multi,
}

/// YCSB-C (`workloads.md` lines 43-46, "YCSB-C"; Cornflakes §5 and §6.1.4, Figure 5, Tables 3
/// and 5).
///
/// - Keys: `keys` (default 1 million) of 30 or 31 bytes (`user`, a 10-digit index, seeded
///   filler), line 44. When `keys x (N x S + 31)` exceeds the memory budget (default 1 GiB)
///   the key count is reduced to fit and [`Workload::notes`] says so: at the default 4 x 1024 B
///   that is about 260,000 keys.
/// - Values: N buffers of S bytes, constant, so N and S can be swept (line 46).
/// - Requests: reads only; Zipf 0.99 (line 44) over the keys, ranks scattered over key indices
///   by a seeded permutation (as YCSB's scrambled Zipfian). [`Op::Get`] when N is 1, else
///   [`Op::GetList`]; or, with [`YcsbRead::Multi`], one [`Op::GetM`] of N single-buffer keys.
///
/// Built from `spec`'s `keys` (default [`DEFAULT_KEYS`]), `ycsb_buffers`, `ycsb_size`,
/// `ycsb_read`, `zipf` (default [`ZIPF_ALPHA`]) and `memory_budget`, and `seed`.
pub fn build(spec: &WorkloadSpec, seed: u64) -> Result<Workload, String> {
    let (buffers, size, read) = (spec.ycsb_buffers, spec.ycsb_size, spec.ycsb_read);
    if buffers == 0 || size == 0 {
        return Err(format!(
            "ycsb: values need N >= 1 buffers of S >= 1 bytes, found {buffers} x {size}"
        ));
    }
    let parts = match read {
        YcsbRead::List => vec![size; buffers as usize],
        YcsbRead::Multi => vec![size],
    };
    let mut orng = rng(seed, Stream::Objects);
    let (objects, note) = fill(
        "ycsb",
        spec.keys.unwrap_or(DEFAULT_KEYS),
        spec.memory_budget,
        |index| {
            let len = if orng.random::<bool>() { 31 } else { 30 };
            Object {
                key: make_key("user", index, len, &mut orng),
                parts: parts.clone(),
            }
        },
    )?;
    let popularity = Popularity::zipf(objects.len() as u32, spec.zipf.unwrap_or(ZIPF_ALPHA), seed)?;
    let (name, requests) = match read {
        YcsbRead::List => (format!("ycsb-{buffers}x{size}"), Requests::Reads(popularity)),
        YcsbRead::Multi => (
            format!("ycsb-mget{buffers}x{size}"),
            Requests::MultiGets(popularity, buffers),
        ),
    };
    Ok(Workload {
        name,
        objects,
        notes: note.into_iter().collect(),
        requests,
        rng: rng(seed, Stream::Ops),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, Op};
    use super::*;

    #[test]
    fn keys_and_values_have_the_configured_shape() {
        let w = build(
            &WorkloadSpec {
                keys: Some(10_000),
                ..WorkloadSpec::new(Kind::Ycsb)
            },
            1,
        )
        .unwrap();
        assert_eq!(w.name(), "ycsb-4x1024");
        assert_eq!(w.objects().len(), 10_000);
        assert!(w.notes().is_empty());
        assert!(
            w.objects()
                .iter()
                .all(|o| (30..=31).contains(&o.key.len()) && o.parts == [1024; 4])
        );
        assert!(
            w.objects().iter().any(|o| o.key.len() == 30) && w.objects().iter().any(|o| o.key.len() == 31)
        );
    }

    #[test]
    fn memory_budget_reduces_the_key_count() {
        let w = build(&WorkloadSpec::new(Kind::Ycsb), 1).unwrap();
        let per_key_max = 4 * 1024 + 31;
        assert!(w.objects().len() >= (1u64 << 30) as usize / per_key_max);
        assert!(w.objects().len() < 1_000_000);
        assert!(
            w.notes()[0].contains("key count reduced from 1000000"),
            "{:?}",
            w.notes()
        );
        let total: u64 = w
            .objects()
            .iter()
            .map(|o| o.key.len() as u64 + o.value_len())
            .sum();
        assert!(total <= 1 << 30);
    }

    #[test]
    fn ops_by_read_mode() {
        let one = WorkloadSpec {
            keys: Some(1_000),
            ycsb_buffers: 1,
            ycsb_size: 4096,
            ..WorkloadSpec::new(Kind::Ycsb)
        };
        let mut w = build(&one, 2).unwrap();
        assert!((0..1_000).all(|_| matches!(w.next_op(), Op::Get(i) if i < 1_000)));
        let mut w = build(
            &WorkloadSpec {
                ycsb_buffers: 2,
                ycsb_size: 2048,
                ..one.clone()
            },
            2,
        )
        .unwrap();
        assert!((0..1_000).all(|_| matches!(w.next_op(), Op::GetList(i) if i < 1_000)));
        let mut w = build(
            &WorkloadSpec {
                ycsb_buffers: 2,
                ycsb_size: 2048,
                ycsb_read: YcsbRead::Multi,
                ..one
            },
            2,
        )
        .unwrap();
        assert_eq!(w.name(), "ycsb-mget2x2048");
        assert!(w.objects().iter().all(|o| o.parts == [2048]));
        for _ in 0..1_000 {
            match w.next_op() {
                Op::GetM(keys) => assert!(keys.len() == 2 && keys.iter().all(|&i| i < 1_000)),
                op => panic!("mget issued {op:?}"),
            }
        }
        assert!(
            build(
                &WorkloadSpec {
                    ycsb_buffers: 0,
                    ..WorkloadSpec::new(Kind::Ycsb)
                },
                1
            )
            .is_err()
        );
    }
}
