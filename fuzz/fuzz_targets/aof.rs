//! Fuzz target `aof`: untrusted bytes through ferry-redis's AOF readers, as `ferry redis`
//! reads an AOF directory at start or on `DEBUG LOADAOF`: the manifest parser and the command
//! decoder.
//!
//! Nothing may panic. A manifest that parses survives a round trip (formatted as Redis writes
//! it and parsed again, the same files). The decoder's commands lie within the input, in
//! order, each starting with `*`; a torn ending's `valid_up_to` is where the last whole command
//! ended, and the input cut there reads whole, to the same commands.
#![no_main]

use ferry_redis::aof::{Manifest, ReadError, read_commands, read::Ending};
use libfuzzer_sys::fuzz_target;

/// The longest bulk string the decoder accepts here.
const MAX_BULK: usize = 4096;

/// The commands' byte ranges and argument counts, and how the input ended.
fn commands(data: &[u8]) -> Result<(Vec<(std::ops::Range<usize>, usize)>, Ending), ReadError> {
    let mut seen = Vec::new();
    let ending = read_commands::<ReadError>(data, MAX_BULK, |args, at| {
        assert!(args.len() >= 1, "a command has a name");
        seen.push((at, args.len()));
        Ok(())
    })?;
    Ok((seen, ending))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::parse(data) {
        assert_eq!(Manifest::parse(&m.format()), Ok(m), "the manifest round trip");
    }
    let Ok((seen, ending)) = commands(data) else {
        return;
    };
    let mut end = 0;
    for (at, _) in &seen {
        assert!(at.start >= end && at.end <= data.len() && data[at.start] == b'*');
        end = at.end;
    }
    if let Ending::Torn { valid_up_to } = ending {
        assert!(valid_up_to >= end && valid_up_to <= data.len());
        let (again, ending) = commands(&data[..valid_up_to]).expect("the whole part reads again");
        assert_eq!(ending, Ending::Whole);
        assert_eq!(again, seen, "the same commands");
    }
});
