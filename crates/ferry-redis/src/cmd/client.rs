//! `CLIENT` and its subcommands ([`CLIENT_SUBS`]), and the server's [`Directory`] of
//! clients that `CLIENT LIST` and `CLIENT KILL` read.
//!
//! A handler sees only its own client, so each event loop lists its clients in the
//! [`Directory`] ([`list`]) as it last saw them: when one connects, and after each batch of its
//! requests. `CLIENT KILL` picks clients there and sends each loop a [`Mail::Kill`] for
//! its own (woken as for pub/sub); the caller, when it picks itself, is closed after the reply.
//!
//! Where this differs from Redis, and why:
//! - `CLIENT` has `ID`, `GETNAME`, `SETNAME`, `INFO`, `LIST`, `KILL`, `REPLY`, `UNBLOCK`,
//!   `HELP`; the rest (`PAUSE`, `TRACKING`, `NO-EVICT`, ...) are unknown subcommands.
//! - `CLIENT LIST` prints every field Redis 7.0 prints. These are approximations: another
//!   client's line is as of the end of its last batch of requests (so `idle` counts from
//!   then); `qbuf` is the bytes read and not yet parsed (the caller's: from the running
//!   command's start, as Redis counts); `qbuf-free` and `rbs`/`rbp` are the read buffer's room
//!   and size (0 between reads: Ferry returns an idle client's buffer to the pool);
//!   `argv-mem`, `multi-mem`, `obl`, `oll` and `omem` are 0 (arguments stay in the read
//!   buffer; a batch's replies go to the socket as one gather list, and what the socket has not
//!   taken yet waits in ferry-net's sender, which does not count it); `tot-mem` is the read
//!   buffer; `events` is always `r`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::PoisonError;

use super::pubsub::{Home, Mail, Subscriber};
use super::strings::parse_i64;
use super::subcommand::{ACL_ADMIN_CONN, ACL_CONN, ADMIN_SUB, CONN_SUB, HELP_SUB, Sub, dispatch, help, sub};
use super::{Args, Client, Ctx, NOT_INTEGER, ReplyMode, SYNTAX, ServerInfo, blocking, quoted};
use crate::resp::{Proto, ReplyBuf};

/// `CLIENT`'s subcommands.
#[rustfmt::skip]
pub static CLIENT_SUBS: &[Sub] = &[
    sub("client|getname", 2, CONN_SUB, ACL_CONN, &[], "connection", "Get the current connection name", "2.6.9", "O(1)", client_getname),
    sub("client|help", 2, HELP_SUB, ACL_CONN, &[], "connection", "Show helpful text about the different subcommands", "5.0.0", "O(1)", client_help),
    sub("client|id", 2, CONN_SUB, ACL_CONN, &[], "connection", "Returns the client ID for the current connection", "5.0.0", "O(1)", client_id_cmd),
    sub("client|info", 2, CONN_SUB, ACL_CONN, &["nondeterministic_output"], "connection", "Returns information about the current client connection.", "6.2.0", "O(1)", client_info),
    sub("client|kill", -3, ADMIN_SUB, ACL_ADMIN_CONN, &[], "connection", "Kill the connection of a client", "2.4.0", "O(N) where N is the number of client connections", client_kill),
    sub("client|list", -2, ADMIN_SUB, ACL_ADMIN_CONN, &["nondeterministic_output"], "connection", "Get the list of client connections", "2.4.0", "O(N) where N is the number of client connections", client_list),
    sub("client|reply", 3, CONN_SUB, ACL_CONN, &[], "connection", "Instruct the server whether to reply to commands", "3.2.0", "O(1)", client_reply),
    sub("client|setname", 3, CONN_SUB, ACL_CONN, &[], "connection", "Set the current connection name", "2.6.9", "O(1)", client_setname),
    sub("client|unblock", -3, ADMIN_SUB, ACL_ADMIN_CONN, &[], "connection", "Unblock a client blocked in a blocking command from a different connection", "5.0.0", "O(log N) where N is the number of client connections", client_unblock),
];

/// What a loop knows of a client's buffers, for its [`Directory`] entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct Buffers {
    /// The socket's descriptor.
    pub fd: i32,
    /// Bytes read and not yet parsed.
    pub qbuf: usize,
    /// Room left in the read buffer.
    pub qbuf_free: usize,
}

/// A client as `CLIENT LIST` prints it and `CLIENT KILL` filters it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// `CLIENT ID`.
    pub id: u64,
    /// Its loop and slot (where a kill is sent).
    pub home: Home,
    /// Its address.
    pub addr: SocketAddr,
    /// Ours.
    pub laddr: SocketAddr,
    /// `CLIENT SETNAME`.
    pub name: String,
    /// When it connected, and when its loop last served it (unix ms).
    pub created_ms: u64,
    /// See `created_ms`.
    pub last_ms: u64,
    /// Redis's flag letters.
    pub flags: Flags,
    /// Its kind for `TYPE`: `normal`, `pubsub` or `slave`.
    pub kind: &'static str,
    /// Selected database.
    pub db: usize,
    /// Channels, patterns, shard channels.
    pub subs: (usize, usize, usize),
    /// Queued commands in its transaction, or -1.
    pub multi: i64,
    /// Its buffers.
    pub buffers: Buffers,
    /// The last command it ran.
    pub cmd: &'static str,
    /// 2 or 3.
    pub resp: u8,
}

impl Listed {
    /// `c` as its loop sees it at `now_ms`, with its buffers.
    pub fn of(c: &Client, buffers: Buffers, now_ms: u64) -> Listed {
        let mut listed = Listed {
            id: c.id,
            home: c.home,
            addr: c.addr,
            laddr: c.local_addr,
            name: name_of(c),
            created_ms: c.created_ms,
            last_ms: now_ms,
            flags: Flags::default(),
            kind: "normal",
            db: 0,
            subs: (0, 0, 0),
            multi: -1,
            buffers,
            cmd: c.last_cmd,
            resp: 2,
        };
        listed.refresh(c, buffers, now_ms);
        listed
    }

    /// Brings the entry up to `c` as its loop sees it at `now_ms`: what changes from one batch
    /// to the next, without allocating (the name is copied only when it changed).
    fn refresh(&mut self, c: &Client, buffers: Buffers, now_ms: u64) {
        if self.name.as_bytes() != c.name.as_deref().unwrap_or_default() {
            self.name = name_of(c);
        }
        self.last_ms = now_ms;
        self.flags = Flags::of(c);
        self.kind = if c.replica {
            "slave"
        } else if c.subs.is_subscribed() {
            "pubsub"
        } else {
            "normal"
        };
        self.db = c.db;
        self.subs = c.subs.counts();
        self.multi = c.multi.as_ref().map_or(-1, |m| m.len() as i64);
        self.buffers = buffers;
        self.cmd = c.last_cmd;
        self.resp = match c.proto {
            Proto::Resp2 => 2,
            Proto::Resp3 => 3,
        };
    }

    /// Its `CLIENT LIST` line at `now_ms`, ending in `\n`.
    fn line(&self, now_ms: u64, s: &mut String) {
        let b = &self.buffers;
        let rbs = b.qbuf + b.qbuf_free;
        let _ = writeln!(
            s,
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} \
             multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs={rbs} rbp={rbs} obl=0 oll=0 omem=0 \
             tot-mem={rbs} events=r cmd={} user=default redir=-1 resp={}",
            self.id,
            self.addr,
            self.laddr,
            b.fd,
            self.name,
            now_ms.saturating_sub(self.created_ms) / 1000,
            now_ms.saturating_sub(self.last_ms) / 1000,
            self.flags,
            self.db,
            self.subs.0,
            self.subs.1,
            self.subs.2,
            self.multi,
            b.qbuf,
            b.qbuf_free,
            self.cmd,
            self.resp
        );
    }
}

/// `CLIENT SETNAME`'s name (names are `!`..=`~` bytes).
fn name_of(c: &Client) -> String {
    c.name
        .as_deref()
        .map(String::from_utf8_lossy)
        .unwrap_or_default()
        .into_owned()
}

/// Redis's flag letters of a client (`S` replica, `P` subscribed, `x` in `MULTI`, `b` blocked,
/// `c` closing after its reply; `N` none), kept without allocating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    letters: [u8; 5],
    len: u8,
}

impl Flags {
    fn of(c: &Client) -> Flags {
        let mut f = Flags::default();
        for (on, letter) in [
            (c.replica, b'S'),
            (c.subs.is_subscribed(), b'P'),
            (c.multi.is_some(), b'x'),
            (c.block.is_some(), b'b'),
            (c.close_after_reply, b'c'),
        ] {
            if on {
                f.letters[f.len as usize] = letter;
                f.len += 1;
            }
        }
        if f.len == 0 {
            f.letters[0] = b'N';
            f.len = 1;
        }
        f
    }
}

impl std::fmt::Display for Flags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // ASCII letters only.
        f.write_str(std::str::from_utf8(&self.letters[..self.len as usize]).unwrap_or("N"))
    }
}

/// Every connected client, by id.
#[derive(Debug, Default)]
pub struct Directory {
    clients: BTreeMap<u64, Listed>,
}

fn directory(server: &ServerInfo) -> std::sync::MutexGuard<'_, Directory> {
    server.clients.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Lists (or refreshes) client `c` in the server's [`Directory`].
pub fn list(server: &ServerInfo, c: &Client, buffers: Buffers, now_ms: u64) {
    let mut dir = directory(server);
    match dir.clients.get_mut(&c.id) {
        Some(listed) => listed.refresh(c, buffers, now_ms),
        None => {
            dir.clients.insert(c.id, Listed::of(c, buffers, now_ms));
        }
    }
}

/// Takes client `id` off the list (it disconnected).
pub fn unlist(server: &ServerInfo, id: u64) {
    directory(server).clients.remove(&id);
}

/// The caller as it is now: its query buffer holds the running command (as Redis's does),
/// the rest as its loop last listed it.
fn me(ctx: &Ctx<'_>) -> Listed {
    let mut buffers = directory(ctx.server)
        .clients
        .get(&ctx.client.id)
        .map(|l| l.buffers)
        .unwrap_or_default();
    let room = buffers.qbuf + buffers.qbuf_free;
    buffers.qbuf = ctx.client.query_bytes;
    buffers.qbuf_free = room.saturating_sub(buffers.qbuf);
    Listed::of(ctx.client, buffers, ctx.now_ms)
}

/// Every client, the caller as it is now, by id.
fn everyone(ctx: &Ctx<'_>) -> Vec<Listed> {
    let me = me(ctx);
    let mut all: Vec<Listed> = directory(ctx.server)
        .clients
        .values()
        .filter(|l| l.id != me.id)
        .cloned()
        .collect();
    let at = all.partition_point(|l| l.id < me.id);
    all.insert(at, me);
    all
}

/// A client name with a byte outside `!`..=`~`.
pub const BAD_CLIENT_NAME: &str = "ERR Client names cannot contain spaces, newlines or special characters.";

/// The client's id as a RESP integer.
pub(crate) fn client_id(ctx: &Ctx<'_>) -> i64 {
    i64::try_from(ctx.client.id).unwrap_or(i64::MAX)
}

/// Sets (or, for an empty name, clears) the client's name; Redis's rule: bytes `!` to `~`.
pub(crate) fn set_client_name(ctx: &mut Ctx<'_>, name: &[u8]) -> Result<(), &'static str> {
    if name.is_empty() {
        ctx.client.name = None;
        return Ok(());
    }
    if !name.iter().all(|b| (b'!'..=b'~').contains(b)) {
        return Err(BAD_CLIENT_NAME);
    }
    ctx.client.name = Some(name.to_vec());
    Ok(())
}

/// `CLIENT subcommand ...`: see [`CLIENT_SUBS`].
pub fn client(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    dispatch("client", CLIENT_SUBS, ctx, args, out);
}

/// `CLIENT REPLY ON|OFF|SKIP`: `ON` answers `OK`; `OFF` and `SKIP` (the next command's
/// reply) are not answered. [`execute`](super::execute) drops the replies; pub/sub messages and
/// notifications still go out, as in Redis.
fn client_reply(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mode = args.get(2);
    if mode.eq_ignore_ascii_case(b"on") {
        ctx.client.reply = ReplyMode::On;
        out.ok();
    } else if mode.eq_ignore_ascii_case(b"off") {
        ctx.client.reply = ReplyMode::Off;
    } else if mode.eq_ignore_ascii_case(b"skip") {
        if ctx.client.reply != ReplyMode::Off {
            ctx.client.reply = ReplyMode::SkipNext;
        }
    } else {
        out.error(SYNTAX);
    }
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: 1 if client `id` waited in a blocking command (it
/// gets the timeout reply, or an `UNBLOCKED` error), 0 otherwise ([`blocking::unblock`]).
fn client_unblock(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let Some(id) = parse_i64(args.get(2)) else {
        return out.error(NOT_INTEGER);
    };
    let error = match args.len() {
        3 => false,
        4 if args.get(3).eq_ignore_ascii_case(b"timeout") => false,
        4 if args.get(3).eq_ignore_ascii_case(b"error") => true,
        4 => return out.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
        _ => return out.error(SYNTAX),
    };
    let done =
        u64::try_from(id).is_ok_and(|id| blocking::unblock(ctx.server, id, error, &mut ctx.client.wake));
    out.integer(i64::from(done));
}

/// `CLIENT ID`.
fn client_id_cmd(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.integer(client_id(ctx));
}

/// `CLIENT GETNAME`: the name, or null.
fn client_getname(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    match &ctx.client.name {
        Some(name) => out.bulk(name),
        None => out.null(),
    }
}

/// `CLIENT SETNAME name`.
fn client_setname(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    match set_client_name(ctx, args.get(2)) {
        Ok(()) => out.ok(),
        Err(e) => out.error(e),
    }
}

/// `CLIENT INFO`: the caller's `CLIENT LIST` line.
fn client_info(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    let mut line = String::new();
    me(ctx).line(ctx.now_ms, &mut line);
    out.verbatim("txt", line.as_bytes());
}

/// A `TYPE` argument as the kind [`Listed::kind`] names (`replica` and `slave` are one;
/// `master` matches none: Ferry follows no master).
fn client_kind(word: &[u8]) -> Result<&'static str, Vec<u8>> {
    match word.to_ascii_lowercase().as_slice() {
        b"normal" => Ok("normal"),
        b"pubsub" => Ok("pubsub"),
        b"replica" | b"slave" => Ok("slave"),
        b"master" => Ok("master"),
        _ => Err(quoted("ERR Unknown client type '", word, "'")),
    }
}

/// `CLIENT LIST [TYPE type | ID id ...]`: a line per client, in id order.
fn client_list(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let keep: Box<dyn Fn(&Listed) -> bool> = if args.len() == 2 {
        Box::new(|_| true)
    } else if args.len() == 4 && args.get(2).eq_ignore_ascii_case(b"TYPE") {
        match client_kind(args.get(3)) {
            Ok(kind) => Box::new(move |l| l.kind == kind),
            Err(e) => return out.error(e),
        }
    } else if args.len() > 3 && args.get(2).eq_ignore_ascii_case(b"ID") {
        let mut ids = Vec::new();
        for id in args.iter_from(3) {
            match parse_i64(id).and_then(|id| u64::try_from(id).ok()) {
                None => return out.error("ERR Invalid client ID"),
                Some(id) => ids.push(id),
            }
        }
        Box::new(move |l| ids.contains(&l.id))
    } else {
        return out.error(SYNTAX);
    };
    let mut text = String::new();
    for l in everyone(ctx).iter().filter(|l| keep(l)) {
        l.line(ctx.now_ms, &mut text);
    }
    out.verbatim("txt", text.as_bytes());
}

/// What `CLIENT KILL`'s filters pick.
#[derive(Debug, Default)]
struct KillFilter {
    id: Option<u64>,
    kind: Option<&'static str>,
    addr: Option<String>,
    laddr: Option<String>,
    max_age_s: Option<u64>,
    skip_me: bool,
}

impl KillFilter {
    fn picks(&self, l: &Listed, me: u64, now_ms: u64) -> bool {
        self.id.is_none_or(|id| l.id == id)
            && self.kind.is_none_or(|k| l.kind == k)
            && self.addr.as_ref().is_none_or(|a| l.addr.to_string() == *a)
            && self.laddr.as_ref().is_none_or(|a| l.laddr.to_string() == *a)
            && self
                .max_age_s
                .is_none_or(|age| now_ms.saturating_sub(l.created_ms) / 1000 >= age)
            && !(self.skip_me && l.id == me)
    }
}

/// Parses `CLIENT KILL`'s filter form (`ID`, `TYPE`, `USER`, `ADDR`, `LADDR`, `SKIPME`,
/// `MAXAGE` and a value each), Redis's errors.
fn kill_filter(args: &Args<'_>) -> Result<KillFilter, Vec<u8>> {
    let mut f = KillFilter {
        skip_me: true,
        ..KillFilter::default()
    };
    if args.len() % 2 != 0 {
        return Err(SYNTAX.into());
    }
    for i in (2..args.len()).step_by(2) {
        let value = args.get(i + 1);
        let text = || String::from_utf8_lossy(value).into_owned();
        match args.get(i).to_ascii_lowercase().as_slice() {
            b"id" => match parse_i64(value).filter(|&id| id > 0) {
                Some(id) => f.id = Some(id as u64),
                None => return Err(b"ERR client-id should be greater than 0".to_vec()),
            },
            b"type" => f.kind = Some(client_kind(value)?),
            b"user" if value == b"default" => {}
            b"user" => return Err(quoted("ERR No such user '", value, "'")),
            b"addr" => f.addr = Some(text()),
            b"laddr" => f.laddr = Some(text()),
            b"skipme" if value.eq_ignore_ascii_case(b"yes") => f.skip_me = true,
            b"skipme" if value.eq_ignore_ascii_case(b"no") => f.skip_me = false,
            b"maxage" => match parse_i64(value) {
                Some(age) => f.max_age_s = Some(u64::try_from(age).unwrap_or(0)),
                None => return Err(NOT_INTEGER.into()),
            },
            _ => return Err(SYNTAX.into()),
        }
    }
    Ok(f)
}

/// `CLIENT KILL addr:port` (`OK`, or an error if no client has that address) or `CLIENT KILL
/// filter value ...` (how many clients it closed). Other loops' clients get a
/// [`Mail::Kill`]; the caller, if picked, is closed after this reply.
fn client_kill(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let old_form = args.len() == 3;
    let filter = if old_form {
        KillFilter {
            addr: Some(String::from_utf8_lossy(args.get(2)).into_owned()),
            ..KillFilter::default()
        }
    } else {
        match kill_filter(args) {
            Ok(f) => f,
            Err(e) => return out.error(e),
        }
    };
    let (me, now) = (ctx.client.id, ctx.now_ms);
    let picked: Vec<Listed> = everyone(ctx)
        .into_iter()
        .filter(|l| filter.picks(l, me, now))
        .collect();
    let mut registry = ctx.server.pubsub.lock().unwrap_or_else(PoisonError::into_inner);
    for l in &picked {
        if l.id == me {
            ctx.client.close_after_reply = true;
        } else {
            registry.post(
                Mail::Kill(Subscriber {
                    home: l.home,
                    id: l.id,
                }),
                &mut ctx.client.wake,
            );
        }
    }
    drop(registry);
    match (old_form, picked.len()) {
        (true, 0) => out.error("ERR No such client"),
        (true, _) => out.ok(),
        (false, n) => out.integer(n as i64),
    }
}

/// `CLIENT HELP`.
fn client_help(_ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    help(
        out,
        "CLIENT",
        &[
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "    * ID <client-id>",
            "      Kill connections by client id.",
            "    * MAXAGE <maxage>",
            "      Kill connections older than the specified age.",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "    * ID <id> [<id> ...]",
            "      Return clients with the given ids.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::{OK, bulk, err, server_harness};
    use crate::cmd::wrong_arity;

    #[test]
    fn client_subcommands() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("CLIENT ID"), ":7\r\n");
        assert_eq!(h.cmd("CLIENT GETNAME"), "$-1\r\n");
        assert_eq!(h.cmd("client setname conn-1"), OK);
        assert_eq!(h.cmd("CLIENT GETNAME"), bulk("conn-1"));
        for bad in [&b"a b"[..], b"a\nb", "é".as_bytes(), b"\x7f"] {
            assert_eq!(
                h.run(&[b"CLIENT", b"SETNAME", bad]),
                err(BAD_CLIENT_NAME).as_bytes()
            );
        }
        assert_eq!(h.cmd("CLIENT GETNAME"), bulk("conn-1"));
        assert_eq!(h.run(&[b"CLIENT", b"SETNAME", b""]), OK.as_bytes());
        assert_eq!(h.cmd("CLIENT GETNAME"), "$-1\r\n");

        assert_eq!(
            h.cmd("CLIENT"),
            err("ERR wrong number of arguments for 'client' command")
        );
        for (line, full) in [
            ("CLIENT ID x", "client|id"),
            ("CLIENT GETNAME x", "client|getname"),
            ("CLIENT SETNAME", "client|setname"),
            ("CLIENT SETNAME a b", "client|setname"),
            ("client help x", "client|help"),
            ("CLIENT INFO x", "client|info"),
        ] {
            assert_eq!(h.cmd(line), err(&wrong_arity(full)), "{line}");
        }
        assert_eq!(
            h.cmd("CLIENT FOO"),
            err("ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
        );
        // Redis 7.2's SETINFO is not in 7.0.
        assert_eq!(
            h.cmd("CLIENT SETINFO lib-name x"),
            err("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.")
        );
    }

    #[test]
    fn client_info_and_list() {
        let mut h = server_harness(None);
        h.cmd("CLIENT SETNAME app");
        let line = |cmd: &str, resp: u8| {
            format!(
                "id=7 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 fd=0 name=app age=5 idle=0 flags=N \
                 db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 \
                 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={cmd} user=default redir=-1 resp={resp}\n"
            )
        };
        assert_eq!(h.cmd("CLIENT INFO"), bulk(&line("client|info", 2)));
        assert_eq!(h.cmd("CLIENT LIST"), bulk(&line("client|list", 2)));
        assert_eq!(h.cmd("CLIENT LIST TYPE normal"), bulk(&line("client|list", 2)));
        assert_eq!(h.cmd("CLIENT LIST TYPE pubsub"), bulk(""));
        assert_eq!(h.cmd("CLIENT LIST ID 1 7"), bulk(&line("client|list", 2)));
        assert_eq!(h.cmd("CLIENT LIST ID 1 2"), bulk(""));
        assert_eq!(h.cmd("CLIENT LIST ID x"), err("ERR Invalid client ID"));
        assert_eq!(h.cmd("CLIENT LIST TYPE x"), err("ERR Unknown client type 'x'"));
        assert_eq!(h.cmd("CLIENT LIST ID"), err(SYNTAX));
        assert_eq!(h.cmd("CLIENT LIST x"), err(SYNTAX));
        h.cmd("HELLO 3");
        let text = line("client|info", 3);
        assert_eq!(
            h.cmd("CLIENT INFO"),
            format!("={}\r\ntxt:{text}\r\n", text.len() + 4)
        );
    }

    #[test]
    fn client_help_is_status_lines() {
        let mut h = server_harness(None);
        let reply = h.cmd("CLIENT HELP");
        assert!(
            reply.starts_with("*35\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")
        );
        assert!(reply.ends_with("+HELP\r\n+    Prints this help.\r\n"));
        assert_eq!(reply.matches("\r\n+").count(), 35);
    }
}
