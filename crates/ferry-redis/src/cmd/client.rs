//! `CLIENT` and its subcommands ([`CLIENT_SUBS`]).
//!
//! Where this differs from Redis, and why:
//! - `CLIENT` has `ID`, `GETNAME`, `SETNAME`, `INFO`, `LIST`, `HELP`; the rest (`KILL`,
//!   `PAUSE`, `TRACKING`, `NO-EVICT`, ...) are unknown subcommands. A handler sees only its
//!   own client, so `CLIENT LIST` lists the caller alone. Its line has the fields Ferry knows
//!   (`id addr laddr name age idle flags db sub psub ssub multi cmd user redir resp`), not the
//!   buffer and memory fields (`fd qbuf omem tot-mem ...`) it would have to invent.

use std::fmt::Write as _;

use super::strings::parse_i64;
use super::subcommand::{ACL_ADMIN_CONN, ACL_CONN, ADMIN_SUB, CONN_SUB, HELP_SUB, Sub, dispatch, help, sub};
use super::{Args, Ctx, NOT_INTEGER, ReplyMode, SYNTAX, blocking, quoted};
use crate::resp::{Proto, ReplyBuf};

/// `CLIENT`'s subcommands.
#[rustfmt::skip]
pub static CLIENT_SUBS: &[Sub] = &[
    sub("client|getname", 2, CONN_SUB, ACL_CONN, &[], "connection", "Get the current connection name", "2.6.9", "O(1)", client_getname),
    sub("client|help", 2, HELP_SUB, ACL_CONN, &[], "connection", "Show helpful text about the different subcommands", "5.0.0", "O(1)", client_help),
    sub("client|id", 2, CONN_SUB, ACL_CONN, &[], "connection", "Returns the client ID for the current connection", "5.0.0", "O(1)", client_id_cmd),
    sub("client|info", 2, CONN_SUB, ACL_CONN, &["nondeterministic_output"], "connection", "Returns information about the current client connection.", "6.2.0", "O(1)", client_info),
    sub("client|list", -2, ADMIN_SUB, ACL_ADMIN_CONN, &["nondeterministic_output"], "connection", "Get the list of client connections", "2.4.0", "O(N) where N is the number of client connections", client_list),
    sub("client|reply", 3, CONN_SUB, ACL_CONN, &[], "connection", "Instruct the server whether to reply to commands", "3.2.0", "O(1)", client_reply),
    sub("client|setname", 3, CONN_SUB, ACL_CONN, &[], "connection", "Set the current connection name", "2.6.9", "O(1)", client_setname),
    sub("client|unblock", -3, ADMIN_SUB, ACL_ADMIN_CONN, &[], "connection", "Unblock a client blocked in a blocking command from a different connection", "5.0.0", "O(log N) where N is the number of client connections", client_unblock),
];

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
    client_line(ctx, "client|info", &mut line);
    out.verbatim("txt", line.as_bytes());
}

/// `CLIENT LIST [TYPE type | ID id ...]`: the caller's line, when it passes the filter.
fn client_list(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let listed = if args.len() == 2 {
        true
    } else if args.len() == 4 && args.get(2).eq_ignore_ascii_case(b"TYPE") {
        let kind = args.get(3).to_ascii_lowercase();
        let subscribed = ctx.client.subs.is_subscribed();
        match kind.as_slice() {
            b"normal" => !subscribed,
            b"pubsub" => subscribed,
            b"master" | b"replica" | b"slave" => false,
            _ => {
                return out.error(quoted("ERR Unknown client type '", args.get(3), "'"));
            }
        }
    } else if args.len() > 3 && args.get(2).eq_ignore_ascii_case(b"ID") {
        let mut found = false;
        for id in args.iter_from(3) {
            match parse_i64(id) {
                None => return out.error("ERR Invalid client ID"),
                Some(id) => found |= id == client_id(ctx),
            }
        }
        found
    } else {
        return out.error(SYNTAX);
    };
    let mut text = String::new();
    if listed {
        client_line(ctx, "client|list", &mut text);
    }
    out.verbatim("txt", text.as_bytes());
}

/// One `CLIENT LIST` line for the caller (ending in `\n`), `cmd` being the command running.
fn client_line(ctx: &Ctx<'_>, cmd: &str, s: &mut String) {
    let c = &*ctx.client;
    let name = c.name.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let age = ctx.now_ms.saturating_sub(c.created_ms) / 1000;
    let resp = match c.proto {
        Proto::Resp2 => 2,
        Proto::Resp3 => 3,
    };
    let db = c.db;
    let multi = c.multi.as_ref().map_or(-1, |m| m.len() as i64);
    let (sub, psub, ssub) = c.subs.counts();
    // Redis's letters: `x` in a transaction, `P` subscribed, `N` neither.
    let mut flags = String::new();
    if c.multi.is_some() {
        flags.push('x');
    }
    if c.subs.is_subscribed() {
        flags.push('P');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let _ = writeln!(
        s,
        "id={} addr={} laddr={} name={name} age={age} idle=0 flags={flags} db={db} sub={sub} psub={psub} \
         ssub={ssub} multi={multi} cmd={cmd} user=default redir=-1 resp={resp}",
        c.id, c.addr, c.local_addr
    );
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
                "id=7 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 name=app age=5 idle=0 flags=N \
                 db=0 sub=0 psub=0 ssub=0 multi=-1 cmd={cmd} user=default redir=-1 resp={resp}\n"
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
            reply.starts_with("*17\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")
        );
        assert!(reply.ends_with("+HELP\r\n+    Prints this help.\r\n"));
        assert_eq!(reply.matches("\r\n+").count(), 17);
    }
}
