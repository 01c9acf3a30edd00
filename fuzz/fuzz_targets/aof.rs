//! Fuzz target `aof`: untrusted bytes through ferry-redis's AOF readers, as `ferry redis`
//! reads an AOF directory at start or on `DEBUG LOADAOF`: the manifest parser and the command
//! decoder.
//!
//! Nothing may panic. A manifest that parses and names a file survives a round trip (formatted
//! as Redis writes it and parsed again, the same files). The decoder's commands lie within the input, in
//! order, each starting with `*`; a torn ending's `valid_up_to` is where the last whole command
//! ended, and the input cut there reads whole, to the same commands.
#![no_main]

use ferry_redis::aof::manifest::{MAX_LEN, MAX_LINE};
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
    // The round trip holds for a manifest that names a file (one of comments only parses, as
    // in Redis, to no files, and formats as nothing, which is refused as empty) and formats
    // within the limits (a name of bytes that need quoting formats longer than it was read).
    if let Ok(m) = Manifest::parse(data)
        && (m.base.is_some() || !m.history.is_empty() || !m.incr.is_empty())
    {
        let text = m.format();
        if text.len() <= MAX_LEN && text.split(|&b| b == b'\n').all(|line| line.len() <= MAX_LINE) {
            assert_eq!(Manifest::parse(&text), Ok(m), "the manifest round trip");
        }
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
