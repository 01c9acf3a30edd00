//! Random picks with a count: `HRANDFIELD`, `SRANDMEMBER` and `ZRANDMEMBER`, one
//! implementation over a [`FieldTable`] with Redis 7.0's arguments and replies.
//!
//! Without a count: one random name (null if there is no such key). With one: an array of
//! `count` distinct names (all of them if fewer), or for a negative count `|count|` picks with
//! repeats; with `WITHVALUES`/`WITHSCORES`, each name's value, flat in RESP2 and as
//! `[name, value]` pairs in RESP3. A huge repeating pick stops once the reply is over the
//! output buffer limit (the server then drops the client, as Redis does).

use super::strings::parse_i64;
use super::{Args, Ctx, NOT_INTEGER, SYNTAX, read_typed};
use crate::db::Value;
use crate::fields::{FieldTable, Payload, Pick};
use crate::resp::{Proto, ReplyBuf};

/// The reply to a count of `i64::MIN` (whose negation overflows).
pub const COUNT_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// The reply to a count beyond half the `i64` range with values asked for.
pub const OUT_OF_RANGE: &str = "ERR value is out of range";

/// One of the three commands: where its table is, and how it writes a value.
pub struct RandomPick<V: 'static> {
    /// The option that asks for values (`withvalues`, `withscores`); `None` for
    /// `SRANDMEMBER`, which has none.
    pub with_word: Option<&'static [u8]>,
    /// The table in a stored value of the command's type.
    pub table: fn(&Value) -> Option<&FieldTable<V>>,
    /// Writes a value (`WITHVALUES`, `WITHSCORES`).
    pub write_value: fn(&mut ReplyBuf, &V),
}

impl<V: Payload + 'static> RandomPick<V> {
    /// Parses the arguments after the key: `None` for no count, else the count and whether
    /// values were asked for; the error reply otherwise, in Redis's order.
    fn parse(&self, args: &Args<'_>) -> Result<Option<(i64, bool)>, &'static str> {
        if self.with_word.is_none() && args.len() > 3 {
            return Err(SYNTAX);
        }
        if args.len() == 2 {
            return Ok(None);
        }
        let count = match parse_i64(args.get(2)) {
            None => return Err(NOT_INTEGER),
            Some(i64::MIN) => return Err(COUNT_RANGE),
            Some(n) => n,
        };
        let with = match (args.len(), self.with_word) {
            (3, _) => false,
            (4, Some(word)) if args.get(3).eq_ignore_ascii_case(word) => true,
            _ => return Err(SYNTAX),
        };
        if with && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
            return Err(OUT_OF_RANGE);
        }
        Ok(Some((count, with)))
    }

    /// Runs the command.
    pub fn run(&self, ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
        let parsed = match self.parse(args) {
            Ok(parsed) => parsed,
            Err(e) => return out.error(e),
        };
        let mut rng = ctx.db.rng();
        let limit = ctx.server.config.output_buffer_limit;
        let Some((count, with)) = parsed else {
            if let Some(t) = read_typed(ctx, args.get(1), out, ReplyBuf::null, self.table) {
                t.pick(Pick::Repeating(1), &mut rng, |(name, _)| {
                    out.bulk_buf(name);
                    true
                });
            }
            return;
        };
        let Some(t) = read_typed(ctx, args.get(1), out, |out| out.array(0), self.table) else {
            return;
        };
        if count == 0 {
            return out.array(0);
        }
        let pick = Pick::of(count);
        let n = pick.count(t.len());
        let pairs = with && out.proto() == Proto::Resp3;
        out.array(if with && !pairs { n * 2 } else { n });
        t.pick(pick, &mut rng, |(name, v)| {
            if pairs {
                out.array(2);
            }
            out.bulk_buf(name);
            if with {
                (self.write_value)(out, v);
            }
            out.len() <= limit
        });
    }
}
