//! Fuzz target `resp`: a client's request bytes through ferry-redis's RESP parser, command by
//! command, as the server consumes its read buffer.
//!
//! The first byte chooses the limits (small ones, so that every limit is reached) and whether
//! the client has authenticated; the rest is the stream. Commands are taken off its front until
//! one is incomplete or malformed. Nothing may panic; every range must lie in the bytes the
//! command took (or in the scratch, for an unquoted inline command) and within the limits; each
//! command or skip must take at least one byte and no more than there are; and a command must be
//! decided by its own bytes: cut it short and the parser must wait for it (with a `need` no
//! larger than the command) or find a line too long, never see another command.
#![no_main]

use ferry_redis::resp::parse::{parse_command, parse_command_unauthenticated};
use ferry_redis::resp::{ParseLimits, Parsed, ProtocolError};
use libfuzzer_sys::fuzz_target;

type ParseFn =
    fn(&[u8], &ParseLimits, &mut Vec<std::ops::Range<usize>>, &mut Vec<u8>) -> Result<Parsed, ProtocolError>;

fuzz_target!(|data: &[u8]| {
    let Some((&config, mut rest)) = data.split_first() else {
        return;
    };
    let limits = ParseLimits {
        max_inline_len: [4, 16, 64, 64 << 10][usize::from(config & 3)],
        max_bulk_len: [0, 8, 64, 1 << 20][usize::from((config >> 2) & 3)],
        max_args: [1, 3, 8, 1024][usize::from((config >> 4) & 3)],
    };
    let parse: ParseFn = if config & 0x40 != 0 {
        parse_command_unauthenticated
    } else {
        parse_command
    };
    let (mut args, mut scratch) = (Vec::new(), Vec::new());
    let (mut cut_args, mut cut_scratch) = (Vec::new(), Vec::new());
    loop {
        let (consumed, used_scratch) = match parse(rest, &limits, &mut args, &mut scratch) {
            Ok(Parsed::Command {
                consumed,
                inline_scratch,
            }) => {
                assert!(
                    consumed > 0 && consumed <= rest.len(),
                    "consumed {consumed} of {}",
                    rest.len()
                );
                assert!(
                    !args.is_empty() && args.len() <= limits.max_args,
                    "{} arguments",
                    args.len()
                );
                let base = if inline_scratch { scratch.len() } else { consumed };
                for r in &args {
                    assert!(r.start <= r.end && r.end <= base, "range {r:?} outside 0..{base}");
                    if rest[0] == b'*' {
                        assert!(
                            r.len() <= limits.max_bulk_len,
                            "bulk of {} over the limit",
                            r.len()
                        );
                    }
                }
                (consumed, inline_scratch)
            }
            Ok(Parsed::Skip { consumed }) => {
                assert!(
                    consumed > 0 && consumed <= rest.len(),
                    "skipped {consumed} of {}",
                    rest.len()
                );
                assert!(args.is_empty());
                (consumed, false)
            }
            Ok(Parsed::Incomplete { need }) => {
                assert!(need > rest.len(), "need {need} with {} bytes there", rest.len());
                assert!(args.is_empty());
                return;
            }
            Err(e) => {
                assert!(e.offset <= rest.len(), "error at {} of {}", e.offset, rest.len());
                assert!(e.to_string().starts_with("Protocol error: "));
                return;
            }
        };
        // The same command, cut short: never a command, nor bytes to skip.
        let cut = usize::from(rest[consumed - 1]) % consumed;
        match parse(&rest[..cut], &limits, &mut cut_args, &mut cut_scratch) {
            Ok(Parsed::Incomplete { need }) => {
                assert!(
                    need > cut && need <= consumed,
                    "need {need}: cut at {cut} of {consumed}"
                )
            }
            Err(e) => assert!(
                [
                    ProtocolError::TOO_BIG_INLINE,
                    ProtocolError::TOO_BIG_MBULK_COUNT,
                    ProtocolError::TOO_BIG_BULK_COUNT
                ]
                .contains(&e.what),
                "a cut command failed: {e}"
            ),
            Ok(other) => panic!("a command cut at {cut} of {consumed} gave {other:?}"),
        }
        // And followed by anything else, the very same command.
        let whole_args = args.clone();
        let parsed = parse(&rest[..consumed], &limits, &mut cut_args, &mut cut_scratch);
        assert!(
            matches!(parsed, Ok(Parsed::Command { consumed: c, .. } | Parsed::Skip { consumed: c }) if c == consumed)
        );
        assert_eq!(
            cut_args, whole_args,
            "a command's arguments depend on its bytes alone"
        );
        if used_scratch {
            assert_eq!(cut_scratch, scratch);
        }
        rest = &rest[consumed..];
    }
});
