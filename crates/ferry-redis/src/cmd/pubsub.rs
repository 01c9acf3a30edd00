//! Pub/sub: `SUBSCRIBE`, `PSUBSCRIBE`, `SSUBSCRIBE`, their `UN` forms, `PUBLISH`, `SPUBLISH`
//! and `PUBSUB`, as Redis 7.0's `pubsub.c` answers them.
//!
//! The [`Registry`] is server-wide (every loop's clients subscribe in it): channel and pattern
//! to [`Subscriber`]s, and one mailbox per event loop. `PUBLISH` makes one [`Published`]
//! message (the payload a pool buffer), puts a [`Delivery`] that shares it in the mailbox of
//! each subscriber's loop, and names those loops in the publisher's [`Client::wake`]; the
//! server wakes them and each writes its deliveries into its clients' replies
//! ([`Delivery::write`]). A payload at or above the zero-copy threshold goes out by reference:
//! every subscriber's reply points at the same bytes.
//!
//! A client's own subscriptions are [`Subscriptions`], in [`Client::subs`]. While it has any,
//! a RESP2 client may only run [`allowed_when_subscribed`] commands (RESP3 clients run
//! anything: messages arrive as push replies between their replies), and its replies are
//! bounded by the `pubsub` class of `client-output-buffer-limit` ([`OutputLimit`]).
//!
//! Shard channels (`SSUBSCRIBE`, `SPUBLISH`) are a second namespace without patterns, as in
//! a Redis that is not a cluster.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError};

use ferry_buf::SharedBuf;

use super::keys::glob_match;
use super::subcommand::{HELP_SUB, Sub, dispatch, help, sub};
use super::{Args, Client, Ctx, OOM, clip_bytes, quoted};
use crate::resp::ReplyBuf;

/// Where the server holds a client: its event loop and its slot there. Deliveries and
/// wake-ups are addressed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Home {
    /// The event loop that serves the client.
    pub loop_index: usize,
    /// The client's slot in that loop (reused after it leaves: [`Subscriber::id`] tells).
    pub slot: usize,
}

/// A subscribed client: where it is, and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscriber {
    /// Its loop and slot.
    pub home: Home,
    /// Its `CLIENT ID` (a slot whose client left holds another id, or none).
    pub id: u64,
}

/// One published message, shared by every delivery of it.
#[derive(Debug)]
pub struct Published {
    /// `SPUBLISH` (a shard channel's `smessage`) or `PUBLISH` (`message`).
    pub shard: bool,
    /// The channel.
    pub channel: SharedBuf,
    /// The payload.
    pub payload: SharedBuf,
}

/// A message for one subscriber: what was published, and the pattern it matched
/// (`pmessage`), if it came through one.
#[derive(Debug)]
pub struct Delivery {
    /// Who it is for.
    pub to: Subscriber,
    /// The message.
    pub message: Arc<Published>,
    /// The pattern it matched.
    pub pattern: Option<Arc<[u8]>>,
}

impl Delivery {
    /// Writes the message as Redis sends it: `message channel payload` or `pmessage pattern
    /// channel payload`, an array in RESP2, a push in RESP3 (`out`'s protocol).
    pub fn write(&self, out: &mut ReplyBuf) {
        let m = &*self.message;
        match &self.pattern {
            Some(p) => {
                out.push(4);
                out.bulk(b"pmessage");
                out.bulk(p);
            }
            None => {
                out.push(3);
                out.bulk(if m.shard { b"smessage" } else { b"message" });
            }
        }
        out.bulk_buf(&m.channel);
        out.bulk_buf(&m.payload);
    }
}

/// What one loop hands another for a client it serves.
#[derive(Debug)]
pub enum Mail {
    /// A published message.
    Message(Delivery),
    /// A blocked client's reply (it was served, or `CLIENT UNBLOCK`ed): it waits no more.
    Unblocked {
        /// The client.
        to: Subscriber,
        /// Its reply.
        reply: ReplyBuf,
    },
    /// `CLIENT KILL`: close the client's connection.
    Kill(Subscriber),
}

impl Mail {
    /// Who it is for.
    pub fn to(&self) -> Subscriber {
        match self {
            Mail::Message(d) => d.to,
            Mail::Unblocked { to, .. } | Mail::Kill(to) => *to,
        }
    }
}

/// One class of `client-output-buffer-limit`: a client is disconnected when its unsent
/// replies pass `hard` bytes, or stay above `soft` bytes for `soft_seconds` (0: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    /// Bytes; 0: none.
    pub hard: usize,
    /// Bytes; 0: none.
    pub soft: usize,
    /// How long a client may stay above `soft`.
    pub soft_seconds: u64,
}

impl OutputLimit {
    /// Redis 7.0's default for the `pubsub` class: `32mb 8mb 60`.
    pub const PUBSUB_DEFAULT: OutputLimit = OutputLimit {
        hard: 32 << 20,
        soft: 8 << 20,
        soft_seconds: 60,
    };

    /// Whether a client holding `len` unsent bytes at `now_ms` is over the limit; `over_soft`
    /// is when it went above `soft` (kept across calls, cleared when it is below again), as
    /// Redis's `checkClientOutputBufferLimits`.
    pub fn exceeded(&self, len: usize, now_ms: u64, over_soft: &mut Option<u64>) -> bool {
        if self.hard != 0 && len >= self.hard {
            return true;
        }
        if self.soft == 0 || len < self.soft {
            *over_soft = None;
            return false;
        }
        let since = *over_soft.get_or_insert(now_ms);
        now_ms.saturating_sub(since) / 1000 >= self.soft_seconds
    }
}

/// A client's subscriptions. Channels are listed in byte order (an `UNSUBSCRIBE` without
/// arguments goes through them so), patterns in the order they were subscribed, as Redis
/// keeps them.
#[derive(Debug, Clone, Default)]
pub struct Subscriptions {
    channels: BTreeSet<Vec<u8>>,
    shard: BTreeSet<Vec<u8>>,
    patterns: Vec<Arc<[u8]>>,
}

impl Subscriptions {
    /// Channels and patterns (what `SUBSCRIBE`'s replies count).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Shard channels (what `SSUBSCRIBE`'s replies count).
    pub fn shard_count(&self) -> usize {
        self.shard.len()
    }

    /// Channels, patterns and shard channels: any puts the client in pub/sub mode.
    pub fn is_subscribed(&self) -> bool {
        self.count() + self.shard.len() > 0
    }

    /// `CLIENT LIST`'s `sub`, `psub` and `ssub`.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.channels.len(), self.patterns.len(), self.shard.len())
    }
}

/// Every subscription of the server, and the deliveries waiting for each loop.
#[derive(Debug)]
pub struct Registry {
    channels: HashMap<Vec<u8>, Vec<Subscriber>>,
    shard: HashMap<Vec<u8>, Vec<Subscriber>>,
    /// Patterns in the order they were first subscribed, each with its subscribers.
    patterns: Vec<(Arc<[u8]>, Vec<Subscriber>)>,
    mailboxes: Vec<Vec<Mail>>,
    /// The `pubsub` class of `client-output-buffer-limit`.
    pub limit: OutputLimit,
}

impl Registry {
    /// No subscriptions, and a mailbox for each of `loops` event loops.
    pub fn new(loops: usize) -> Registry {
        Registry {
            channels: HashMap::new(),
            shard: HashMap::new(),
            patterns: Vec::new(),
            mailboxes: (0..loops.max(1)).map(|_| Vec::new()).collect(),
            limit: OutputLimit::PUBSUB_DEFAULT,
        }
    }

    /// The deliveries waiting for loop `loop_index`, in publish order, moved into `into`
    /// (cleared first).
    pub fn take_mail(&mut self, loop_index: usize, into: &mut Vec<Mail>) {
        into.clear();
        if let Some(m) = self.mailboxes.get_mut(loop_index) {
            std::mem::swap(m, into);
        }
    }

    /// Sends `message` to its channel's subscribers, then (not for a shard channel) to every
    /// pattern's that matches, in that order; returns how many deliveries it made (a client
    /// subscribed twice counts twice, as in Redis). Each loop that got mail is added to
    /// `wake` (once).
    pub fn publish(&mut self, message: Published, wake: &mut Vec<usize>) -> usize {
        let message = Arc::new(message);
        let mut sent = Vec::new();
        let table = if message.shard {
            &self.shard
        } else {
            &self.channels
        };
        if let Some(subs) = table.get(&message.channel[..]) {
            sent.extend(subs.iter().map(|&to| Delivery {
                to,
                message: message.clone(),
                pattern: None,
            }));
        }
        if !message.shard {
            for (pattern, subs) in &self.patterns {
                if glob_match(pattern, &message.channel) {
                    sent.extend(subs.iter().map(|&to| Delivery {
                        to,
                        message: message.clone(),
                        pattern: Some(pattern.clone()),
                    }));
                }
            }
        }
        let n = sent.len();
        for d in sent {
            self.post(Mail::Message(d), wake);
        }
        n
    }

    /// Puts `mail` in its client's loop's mailbox; adds that loop to `wake` (once).
    pub fn post(&mut self, mail: Mail, wake: &mut Vec<usize>) {
        let l = mail.to().home.loop_index.min(self.mailboxes.len() - 1);
        if !wake.contains(&l) {
            wake.push(l);
        }
        self.mailboxes[l].push(mail);
    }

    /// Removes every subscription of `client` (it disconnected).
    pub fn forget(&mut self, client: &mut Client) {
        let me = subscriber(client);
        let subs = std::mem::take(&mut client.subs);
        for c in &subs.channels {
            remove_from(&mut self.channels, c, me);
        }
        for c in &subs.shard {
            remove_from(&mut self.shard, c, me);
        }
        for p in &subs.patterns {
            self.remove_pattern(p, me);
        }
    }

    /// Active channels (with a subscriber) matching `pattern` (all without one).
    fn channel_names(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<&[u8]> {
        let table = if shard { &self.shard } else { &self.channels };
        table
            .keys()
            .map(Vec::as_slice)
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c)))
            .collect()
    }

    fn remove_pattern(&mut self, pattern: &[u8], me: Subscriber) {
        if let Some(i) = self.patterns.iter().position(|(p, _)| **p == *pattern) {
            let subs = &mut self.patterns[i].1;
            subs.retain(|s| *s != me);
            if subs.is_empty() {
                self.patterns.remove(i);
            }
        }
    }
}

/// Takes `me` off `channel`'s list, and the channel out of `table` when it was the last.
fn remove_from(table: &mut HashMap<Vec<u8>, Vec<Subscriber>>, channel: &[u8], me: Subscriber) {
    if let Some(subs) = table.get_mut(channel) {
        subs.retain(|s| *s != me);
        if subs.is_empty() {
            table.remove(channel);
        }
    }
}

fn subscriber(client: &Client) -> Subscriber {
    Subscriber {
        home: client.home,
        id: client.id,
    }
}

/// The commands a RESP2 client with subscriptions may run (Redis's `processCommand`).
pub fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "ping"
            | "subscribe"
            | "ssubscribe"
            | "unsubscribe"
            | "sunsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "quit"
            | "reset"
    )
}

/// Whether the command's replies are pub/sub notifications, which `CLIENT REPLY OFF` does not
/// silence.
pub fn is_notifying(name: &str) -> bool {
    matches!(
        name,
        "subscribe" | "ssubscribe" | "unsubscribe" | "sunsubscribe" | "psubscribe" | "punsubscribe"
    )
}

/// The error for any other command in that state.
pub fn not_allowed_when_subscribed(name: &str) -> String {
    format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET \
         are allowed in this context"
    )
}

/// Which of a client's sets a command works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Channel,
    Shard,
    Pattern,
}

impl Kind {
    fn verb(self, subscribe: bool) -> &'static [u8] {
        match (self, subscribe) {
            (Kind::Channel, true) => b"subscribe",
            (Kind::Channel, false) => b"unsubscribe",
            (Kind::Shard, true) => b"ssubscribe",
            (Kind::Shard, false) => b"sunsubscribe",
            (Kind::Pattern, true) => b"psubscribe",
            (Kind::Pattern, false) => b"punsubscribe",
        }
    }

    /// The count a reply about this kind carries.
    fn count(self, subs: &Subscriptions) -> usize {
        match self {
            Kind::Shard => subs.shard_count(),
            Kind::Channel | Kind::Pattern => subs.count(),
        }
    }
}

/// `[p|s]subscribe name count`: one notification, in the client's protocol.
fn notify(out: &mut ReplyBuf, kind: Kind, subscribe: bool, name: Option<&[u8]>, subs: &Subscriptions) {
    out.push(3);
    out.bulk(kind.verb(subscribe));
    match name {
        Some(n) => out.bulk(n),
        None => out.null(),
    }
    out.integer(kind.count(subs) as i64);
}

/// `SUBSCRIBE channel [channel ...]`: one notification per channel.
pub fn subscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    subscribe_kind(ctx, args, out, Kind::Channel)
}

/// `SSUBSCRIBE shardchannel [shardchannel ...]`.
pub fn ssubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    subscribe_kind(ctx, args, out, Kind::Shard)
}

/// `PSUBSCRIBE pattern [pattern ...]`: Redis's glob patterns (as `KEYS`).
pub fn psubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    subscribe_kind(ctx, args, out, Kind::Pattern)
}

/// `UNSUBSCRIBE [channel ...]`: the channels named, or every one; a notification each (one
/// with a null name when there was nothing to leave).
pub fn unsubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    unsubscribe_kind(ctx, args, out, Kind::Channel)
}

/// `SUNSUBSCRIBE [shardchannel ...]`.
pub fn sunsubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    unsubscribe_kind(ctx, args, out, Kind::Shard)
}

/// `PUNSUBSCRIBE [pattern ...]`.
pub fn punsubscribe(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    unsubscribe_kind(ctx, args, out, Kind::Pattern)
}

fn subscribe_kind(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, kind: Kind) {
    let me = subscriber(ctx.client);
    let mut reg = ctx.server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    let subs = &mut ctx.client.subs;
    for name in args.iter_from(1) {
        let added = match kind {
            Kind::Channel => subs.channels.insert(name.to_vec()),
            Kind::Shard => subs.shard.insert(name.to_vec()),
            Kind::Pattern if subs.patterns.iter().any(|p| **p == *name) => false,
            Kind::Pattern => {
                let shared = match reg.patterns.iter().find(|(p, _)| **p == *name) {
                    Some((p, _)) => p.clone(),
                    None => Arc::from(name),
                };
                subs.patterns.push(shared);
                true
            }
        };
        if added {
            match kind {
                Kind::Channel => reg.channels.entry(name.to_vec()).or_default().push(me),
                Kind::Shard => reg.shard.entry(name.to_vec()).or_default().push(me),
                Kind::Pattern => match reg.patterns.iter_mut().find(|(p, _)| **p == *name) {
                    Some((_, list)) => list.push(me),
                    None => reg.patterns.push((Arc::from(name), vec![me])),
                },
            }
        }
        notify(out, kind, true, Some(name), subs);
    }
}

fn unsubscribe_kind(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, kind: Kind) {
    let me = subscriber(ctx.client);
    let mut reg = ctx.server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    let subs = &mut ctx.client.subs;
    let names: Vec<Vec<u8>> = if args.len() > 1 {
        args.iter_from(1).map(<[u8]>::to_vec).collect()
    } else {
        match kind {
            Kind::Channel => subs.channels.iter().cloned().collect(),
            Kind::Shard => subs.shard.iter().cloned().collect(),
            Kind::Pattern => subs.patterns.iter().map(|p| p.to_vec()).collect(),
        }
    };
    if names.is_empty() {
        return notify(out, kind, false, None, subs);
    }
    for name in &names {
        let removed = match kind {
            Kind::Channel => subs.channels.remove(name),
            Kind::Shard => subs.shard.remove(name),
            Kind::Pattern => {
                let before = subs.patterns.len();
                subs.patterns.retain(|p| **p != **name);
                before != subs.patterns.len()
            }
        };
        if removed {
            match kind {
                Kind::Channel => remove_from(&mut reg.channels, name, me),
                Kind::Shard => remove_from(&mut reg.shard, name, me),
                Kind::Pattern => reg.remove_pattern(name, me),
            }
        }
        notify(out, kind, false, Some(name), subs);
    }
}

/// `PUBLISH channel message`: the number of deliveries.
pub fn publish(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    publish_to(ctx, args, out, false)
}

/// `SPUBLISH shardchannel message`.
pub fn spublish(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    publish_to(ctx, args, out, true)
}

fn publish_to(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, shard: bool) {
    let (pool, keep) = (ctx.db.pool(), ctx.db.keep_in_place_min());
    // The payload stays in the read buffer when it is large, as a SET value does.
    let (Ok(channel), Ok(payload)) = (pool.copy_from(args.get(1)), args.value(2, pool, keep)) else {
        return out.error(OOM);
    };
    let message = Published {
        shard,
        channel,
        payload,
    };
    let mut reg = ctx.server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    let n = reg.publish(message, &mut ctx.client.wake);
    out.integer(n as i64);
}

/// `PUBSUB`'s subcommands.
#[rustfmt::skip]
pub static PUBSUB_SUBS: &[Sub] = &[
    sub("pubsub|channels", -2, PUBSUB_SUB, ACL_PUBSUB, &[], "pubsub", "List active channels", "2.8.0", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)", pubsub_channels),
    sub("pubsub|help", 2, HELP_SUB, &["@slow"], &[], "pubsub", "Show helpful text about the different subcommands", "6.2.0", "O(1)", pubsub_help),
    sub("pubsub|numpat", 2, PUBSUB_SUB, ACL_PUBSUB, &[], "pubsub", "Get the count of unique patterns pattern subscriptions", "2.8.0", "O(1)", pubsub_numpat),
    sub("pubsub|numsub", -2, PUBSUB_SUB, ACL_PUBSUB, &[], "pubsub", "Get the count of subscribers for channels", "2.8.0", "O(N) for the NUMSUB subcommand, where N is the number of requested channels", pubsub_numsub),
    sub("pubsub|shardchannels", -2, PUBSUB_SUB, ACL_PUBSUB, &[], "pubsub", "List active shard channels", "7.0.0", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).", pubsub_shardchannels),
    sub("pubsub|shardnumsub", -2, PUBSUB_SUB, ACL_PUBSUB, &[], "pubsub", "Get the count of subscribers for shard channels", "7.0.0", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", pubsub_shardnumsub),
];

const PUBSUB_SUB: &[&str] = &["pubsub", "loading", "stale"];
const ACL_PUBSUB: &[&str] = &["@pubsub", "@slow"];

/// `PUBSUB subcommand ...`: see [`PUBSUB_SUBS`].
pub fn pubsub(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    dispatch("pubsub", PUBSUB_SUBS, ctx, args, out);
}

fn pubsub_channels(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    list_channels(ctx, args, out, false)
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    list_channels(ctx, args, out, true)
}

/// `PUBSUB [SHARD]CHANNELS [pattern]`.
fn list_channels(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, shard: bool) {
    if args.len() > 3 {
        return out.error(quoted(
            "ERR unknown subcommand or wrong number of arguments for '",
            clip_bytes(args.get(1), 128),
            "'. Try PUBSUB HELP.",
        ));
    }
    let reg = ctx.server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    let names = reg.channel_names(shard, (args.len() == 3).then(|| args.get(2)));
    out.array(names.len());
    for n in names {
        out.bulk(n);
    }
}

fn pubsub_numsub(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    count_subscribers(ctx, args, out, false)
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    count_subscribers(ctx, args, out, true)
}

/// `PUBSUB [SHARD]NUMSUB [channel ...]`: each channel and its subscribers (patterns aside).
fn count_subscribers(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf, shard: bool) {
    let reg = ctx.server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    let table = if shard { &reg.shard } else { &reg.channels };
    out.array((args.len() - 2) * 2);
    for c in args.iter_from(2) {
        out.bulk(c);
        out.integer(table.get(c).map_or(0, Vec::len) as i64);
    }
}

/// `PUBSUB NUMPAT`: distinct patterns with a subscriber.
fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    let reg = ctx.server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    out.integer(reg.patterns.len() as i64);
}

/// `INFO stats`' `pubsub_channels`, `pubsub_patterns` and `pubsubshard_channels`.
pub fn info_counts(reg: &Registry) -> (usize, usize, usize) {
    (reg.channels.len(), reg.patterns.len(), reg.shard.len())
}

fn pubsub_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::{Harness, NULL, OK, bulk, bulks, err, int};
    use crate::cmd::{Client, ReplyMode};
    use crate::resp::Proto;

    /// `*3 verb name count`, as RESP2 writes a notification.
    fn note(verb: &str, name: &str, count: i64) -> String {
        format!("*3\r\n{}{}{}", bulk(verb), bulk(name), int(count))
    }

    /// The deliveries waiting for loop 0, as the bytes a RESP2 subscriber would get.
    fn mail(h: &Harness) -> Vec<(u64, String)> {
        let mut taken = Vec::new();
        h.server.pubsub.lock().unwrap().take_mail(0, &mut taken);
        taken
            .iter()
            .map(|m| {
                let Mail::Message(d) = m else { panic!("{m:?}") };
                let mut out = ReplyBuf::new(usize::MAX);
                d.write(&mut out);
                (d.to.id, String::from_utf8_lossy(out.parts().0).into_owned())
            })
            .collect()
    }

    /// Swaps in client `id` (its own subscriptions, home slot `id`).
    fn as_client(h: &mut Harness, id: u64) -> Client {
        let mut c = Client::new(id, h.client.addr, h.client.local_addr, 0, true);
        c.home.slot = id as usize;
        std::mem::replace(&mut h.client, c)
    }

    #[test]
    fn subscribe_publish_unsubscribe() {
        let mut h = Harness::new();
        let publisher = as_client(&mut h, 2);
        assert_eq!(
            h.cmd("SUBSCRIBE a b a"),
            [
                note("subscribe", "a", 1),
                note("subscribe", "b", 2),
                note("subscribe", "a", 2)
            ]
            .concat()
        );
        assert_eq!(h.cmd("PSUBSCRIBE a*"), note("psubscribe", "a*", 3));
        let subscriber = std::mem::replace(&mut h.client, publisher);
        assert_eq!(h.cmd("PUBLISH a hello"), int(2));
        assert_eq!(h.cmd("PUBLISH b x"), int(1));
        assert_eq!(h.cmd("PUBLISH c x"), int(0));
        assert_eq!(h.client.wake, vec![0], "the subscriber's loop, once");
        assert_eq!(
            mail(&h),
            vec![
                (
                    2,
                    format!("*3\r\n{}{}{}", bulk("message"), bulk("a"), bulk("hello"))
                ),
                (
                    2,
                    format!(
                        "*4\r\n{}{}{}{}",
                        bulk("pmessage"),
                        bulk("a*"),
                        bulk("a"),
                        bulk("hello")
                    )
                ),
                (2, format!("*3\r\n{}{}{}", bulk("message"), bulk("b"), bulk("x"))),
            ]
        );
        assert_eq!(
            h.cmd("PUBSUB NUMSUB a b c"),
            format!(
                "*6\r\n{}{}{}{}{}{}",
                bulk("a"),
                int(1),
                bulk("b"),
                int(1),
                bulk("c"),
                int(0)
            )
        );
        assert_eq!(h.cmd("PUBSUB NUMPAT"), int(1));
        assert_eq!(h.cmd("PUBSUB CHANNELS b*"), bulks(&["b"]));
        let publisher = std::mem::replace(&mut h.client, subscriber);
        // Every channel, in byte order, then nothing left: a null name.
        assert_eq!(
            h.cmd("UNSUBSCRIBE"),
            [note("unsubscribe", "a", 2), note("unsubscribe", "b", 1)].concat()
        );
        assert_eq!(
            h.cmd("UNSUBSCRIBE"),
            format!("*3\r\n{}{NULL}{}", bulk("unsubscribe"), int(1))
        );
        assert_eq!(
            h.cmd("PUNSUBSCRIBE x a*"),
            [note("punsubscribe", "x", 1), note("punsubscribe", "a*", 0)].concat()
        );
        h.client = publisher;
        assert_eq!(h.cmd("PUBLISH a hello"), int(0));
        assert_eq!(h.cmd("PUBSUB NUMPAT"), int(0));
        assert_eq!(h.cmd("PUBSUB CHANNELS"), "*0\r\n");
    }

    #[test]
    fn a_disconnected_subscriber_is_forgotten() {
        let mut h = Harness::new();
        h.cmd("SUBSCRIBE a");
        h.cmd("SSUBSCRIBE s");
        h.cmd("PSUBSCRIBE *");
        let mut gone = as_client(&mut h, 2);
        h.server.pubsub.lock().unwrap().forget(&mut gone);
        assert!(!gone.subs.is_subscribed());
        assert_eq!(h.cmd("PUBLISH a x"), int(0));
        assert_eq!(h.cmd("SPUBLISH s x"), int(0));
        assert_eq!(h.cmd("PUBSUB NUMPAT"), int(0));
        assert_eq!(h.cmd("PUBSUB SHARDCHANNELS"), "*0\r\n");
    }

    #[test]
    fn resp2_subscribed_mode_allows_only_pubsub_commands() {
        let mut h = Harness::new();
        h.cmd("SUBSCRIBE a");
        assert_eq!(
            h.cmd("GET k"),
            err(
                "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
            )
        );
        assert_eq!(h.cmd("PING"), format!("*2\r\n{}{}", bulk("pong"), bulk("")));
        assert_eq!(h.cmd("PING hi"), format!("*2\r\n{}{}", bulk("pong"), bulk("hi")));
        h.cmd("UNSUBSCRIBE a");
        assert_eq!(h.cmd("PING"), "+PONG\r\n");
        assert_eq!(h.cmd("GET k"), NULL);
    }

    #[test]
    fn resp3_pushes_and_runs_anything() {
        let mut h = Harness::new();
        h.client.proto = Proto::Resp3;
        assert_eq!(
            h.cmd("SUBSCRIBE a"),
            format!(">3\r\n{}{}{}", bulk("subscribe"), bulk("a"), int(1))
        );
        assert_eq!(h.cmd("GET k"), "_\r\n");
        assert_eq!(h.cmd("PING"), "+PONG\r\n");
        assert_eq!(
            h.cmd("UNSUBSCRIBE b"),
            format!(">3\r\n{}{}{}", bulk("unsubscribe"), bulk("b"), int(1))
        );
    }

    #[test]
    fn client_list_and_info_count_subscriptions() {
        let mut h = Harness::new();
        h.client.proto = Proto::Resp3;
        h.cmd("SUBSCRIBE a b");
        h.cmd("PSUBSCRIBE p*");
        let line = h.cmd("CLIENT LIST TYPE pubsub");
        assert!(line.contains(" flags=P db=0 sub=2 psub=1 ssub=0 "), "{line}");
        assert!(!h.cmd("CLIENT LIST TYPE normal").contains("id="));
        let stats = h.cmd("INFO stats");
        assert!(stats.contains("\r\npubsub_channels:2\r\npubsub_patterns:1\r\npubsubshard_channels:0\r\n"));
    }

    #[test]
    fn client_reply_off_silences_replies_but_not_notifications() {
        let mut h = Harness::new();
        assert_eq!(h.cmd("CLIENT REPLY OFF"), "");
        assert_eq!(h.client.reply, ReplyMode::Off);
        assert_eq!(h.cmd("SET k v"), "");
        assert_eq!(h.cmd("SUBSCRIBE a"), note("subscribe", "a", 1));
        h.cmd("UNSUBSCRIBE");
        assert_eq!(h.cmd("CLIENT REPLY ON"), OK);
        assert_eq!(h.cmd("CLIENT REPLY SKIP"), "");
        assert_eq!(h.cmd("GET k"), "");
        assert_eq!(h.cmd("GET k"), bulk("v"));
        assert_eq!(h.cmd("CLIENT REPLY MAYBE"), err("ERR syntax error"));
    }

    #[test]
    fn large_payloads_are_shared_not_copied() {
        let mut h = Harness::new();
        h.cmd("SUBSCRIBE a");
        as_client(&mut h, 2);
        h.cmd("SUBSCRIBE a");
        as_client(&mut h, 3);
        let payload = vec![b'x'; 4096];
        assert_eq!(h.run(&[b"PUBLISH", b"a", &payload]), int(2).into_bytes());
        let mut taken = Vec::new();
        h.server.pubsub.lock().unwrap().take_mail(0, &mut taken);
        let [Mail::Message(a), Mail::Message(b)] = &taken[..] else {
            panic!("{taken:?}")
        };
        assert!(std::ptr::eq(&a.message.payload[..], &b.message.payload[..]));
        let mut out = ReplyBuf::new(512);
        a.write(&mut out);
        assert_eq!(out.referenced_value_bytes(), 4096);
    }

    #[test]
    fn output_limit_hard_and_soft() {
        let limit = OutputLimit {
            hard: 100,
            soft: 10,
            soft_seconds: 2,
        };
        let mut since = None;
        assert!(!limit.exceeded(5, 0, &mut since));
        assert!(!limit.exceeded(20, 1_000, &mut since));
        assert_eq!(since, Some(1_000));
        assert!(!limit.exceeded(20, 2_999, &mut since));
        assert!(limit.exceeded(20, 3_000, &mut since));
        assert!(!limit.exceeded(5, 3_000, &mut since), "below soft again");
        assert_eq!(since, None);
        assert!(limit.exceeded(100, 0, &mut since));
        let none = OutputLimit {
            hard: 0,
            soft: 0,
            soft_seconds: 0,
        };
        assert!(!none.exceeded(usize::MAX, 0, &mut None));
    }

    #[test]
    fn config_sets_the_pubsub_output_limit() {
        let mut h = Harness::new();
        let set = |h: &mut Harness, v: &str| {
            let args: [&[u8]; 4] = [b"CONFIG", b"SET", b"client-output-buffer-limit", v.as_bytes()];
            String::from_utf8(h.run(&args)).unwrap()
        };
        assert_eq!(set(&mut h, "pubsub 1mb 0 0"), OK);
        let limit = h.server.pubsub.lock().unwrap().limit;
        assert_eq!(
            limit,
            OutputLimit {
                hard: 1 << 20,
                soft: 0,
                soft_seconds: 0
            }
        );
        assert!(
            h.cmd("CONFIG GET client-output-buffer-limit")
                .ends_with("pubsub 1048576 0 0\r\n")
        );
        for bad in ["pubsub 1mb 0", "normal 1 0 0", "other 1 0 0", "pubsub x 0 0"] {
            assert!(set(&mut h, bad).starts_with("-ERR CONFIG SET failed"), "{bad}");
        }
    }
}
