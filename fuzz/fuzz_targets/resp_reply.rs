//! Fuzz target `resp_reply`: a server's reply bytes through ferry-redis's client-side reply
//! parser (`resp::client::parse_reply`), as the tests and `ferry bench redis` read replies
//! from `ferry redis` and redis-server.
//!
//! Replies are taken off the front of the stream until one is incomplete or malformed. Nothing
//! may panic; a parsed reply must take at least one byte and no more than there are; it must be
//! decided by its own bytes (parsed again from exactly those bytes it is the same reply, of the
//! same length); and any strict prefix of it must be incomplete (`Ok(None)`), never an error or
//! another reply: replies arrive in pieces.
#![no_main]

use ferry_redis::resp::client::parse_reply;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some((reply, used))) = parse_reply(rest) {
        assert!(used >= 1 && used <= rest.len(), "took {used} of {} bytes", rest.len());
        let own = &rest[..used];
        let again = parse_reply(own).expect("a reply's own bytes parse again");
        assert!(again.as_ref().is_some_and(|(r, n)| *r == reply && *n == used), "not decided by its own bytes");
        for cut in [used - 1, used / 2, 1.min(used - 1)] {
            assert!(
                matches!(parse_reply(&own[..cut]), Ok(None)),
                "a prefix of {cut} of a {used}-byte reply is not incomplete"
            );
        }
        rest = &rest[used..];
    }
});
