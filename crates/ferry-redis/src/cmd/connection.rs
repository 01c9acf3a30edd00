//! Connection commands: `PING`, `ECHO`, `HELLO`, `AUTH`, `QUIT`.
//!
//! Replies and error messages are Redis 7.0.15's, checked against the real server in both
//! protocols, so that `redis-cli` (which reads `COMMAND DOCS` at start), `redis-benchmark`
//! (`CONFIG GET save`, `appendonly`) and client libraries (`HELLO 3`, `CLIENT SETNAME`,
//! `COMMAND`, `INFO`) work unchanged.
//!
//! Where this differs from Redis, and why:
//! - One user, `default`, whose password is `requirepass`
//!   ([`Config::password`](crate::Config::password)): `AUTH user pass` and `HELLO .. AUTH`
//!   accept no other name. With no password set, `AUTH pass` is refused as Redis refuses it,
//!   while `AUTH default <anything>` succeeds (Redis's `nopass` default user).

use super::client::{client_id, set_client_name};
use super::strings::parse_i64;
use super::{Args, Ctx, SYNTAX, quoted, wrong_arity};
use crate::resp::{Proto, ReplyBuf};

/// The Redis version this server answers as (`HELLO`, `INFO server`).
pub const REDIS_VERSION: &str = "7.0.15";

/// The reply to a wrong user name or password.
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
/// `AUTH <password>` when no password is set.
pub const AUTH_NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured \
     for the default user. Are you sure your configuration is correct?";
/// `HELLO` without `AUTH` from a client that has not authenticated.
pub const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already \
     authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate \
     the client and select the RESP protocol version at the same time";
/// `HELLO` with a protocol version other than 2 or 3.
pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
/// A client name with a byte outside `!`..=`~`.
pub const BAD_CLIENT_NAME: &str = "ERR Client names cannot contain spaces, newlines or special characters.";

/// `PING [message]`: `+PONG`, or the message as a bulk string; from a RESP2 client in
/// pub/sub mode, the array `pong message` (an empty message without one), as Redis answers.
pub fn ping(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    if out.proto() == Proto::Resp2 && ctx.client.subs.is_subscribed() && args.len() <= 2 {
        out.array(2);
        out.bulk(b"pong");
        return out.bulk(if args.len() == 2 { args.get(1) } else { b"" });
    }
    match args.len() {
        1 => out.simple("PONG"),
        2 => out.bulk(args.get(1)),
        _ => out.error(wrong_arity("ping")),
    }
}

/// `ECHO message`: the message as a bulk string.
pub fn echo(_ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    out.bulk(args.get(1));
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`: authenticates, names the client and
/// switches its protocol, then describes the server in a map written in the new protocol.
///
/// Checks run in Redis's order, and nothing changes unless every earlier step passed: the
/// version (`ERR Protocol version is not an integer or out of range`, `NOPROTO`), the options
/// (`ERR Syntax error in HELLO option '..'`), the credentials (`WRONGPASS`; success
/// authenticates even if a later step fails), authentication ([`HELLO_NOAUTH`]), the name.
pub fn hello(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let mut proto = None;
    if args.len() >= 2 {
        proto = match parse_i64(args.get(1)) {
            None => return out.error("ERR Protocol version is not an integer or out of range"),
            Some(2) => Some(Proto::Resp2),
            Some(3) => Some(Proto::Resp3),
            Some(_) => return out.error(NOPROTO),
        };
    }
    let mut credentials = None;
    let mut name = None;
    let mut j = 2;
    while j < args.len() {
        let opt = args.get(j);
        let more = args.len() - 1 - j;
        if opt.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            credentials = Some((args.get(j + 1), args.get(j + 2)));
            j += 3;
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            name = Some(args.get(j + 1));
            j += 2;
        } else {
            return out.error(quoted("ERR Syntax error in HELLO option '", opt, "'"));
        }
    }
    if let Some((user, pass)) = credentials {
        if !credentials_ok(ctx.server.config.password.as_deref(), Some(user), pass) {
            return out.error(WRONGPASS);
        }
        ctx.client.authenticated = true;
    }
    if !ctx.client.authenticated {
        return out.error(HELLO_NOAUTH);
    }
    if let Some(name) = name {
        if let Err(e) = set_client_name(ctx, name) {
            return out.error(e);
        }
    }
    if let Some(proto) = proto {
        ctx.client.proto = proto;
        out.set_proto(proto);
    }
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.integer(match ctx.client.proto {
        Proto::Resp2 => 2,
        Proto::Resp3 => 3,
    });
    out.bulk(b"id");
    out.integer(client_id(ctx));
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}

/// `AUTH [username] password`: authenticates the client as `default`.
pub fn auth(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let password = ctx.server.config.password.as_deref();
    let (user, pass) = match args.len() {
        2 if password.is_none() => return out.error(AUTH_NO_PASSWORD),
        2 => (None, args.get(1)),
        3 => (Some(args.get(1)), args.get(2)),
        _ => return out.error(SYNTAX),
    };
    if credentials_ok(password, user, pass) {
        ctx.client.authenticated = true;
        out.ok();
    } else {
        // As in Redis, a failed attempt leaves an authenticated client authenticated.
        out.error(WRONGPASS);
    }
}

/// Whether `user` (`default` when absent) and `pass` are the default user's credentials; any
/// password is when none is set (Redis's `nopass`). The comparison takes the same time
/// wherever the first difference is.
fn credentials_ok(password: Option<&str>, user: Option<&[u8]>, pass: &[u8]) -> bool {
    if user.is_some_and(|u| u != b"default") {
        return false;
    }
    let Some(password) = password else {
        return true;
    };
    let want = password.as_bytes();
    let mut diff = u8::from(want.len() != pass.len());
    for i in 0..want.len().max(pass.len()) {
        diff |= want.get(i).copied().unwrap_or(0) ^ pass.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// `QUIT`: `+OK`, then the connection closes once the reply is written. Arguments are
/// ignored, as in Redis.
pub fn quit(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    ctx.client.close_after_reply = true;
    out.ok();
}

/// `RESET`: the connection as it was when it connected (Redis's `resetCommand`): no
/// transaction or watched keys, database 0, RESP2, no name, every subscription gone (without
/// notifications), replies on, authenticated only when no password is set. `+RESET`.
pub fn reset(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    ctx.client.multi = None;
    super::multi::unwatch_all(ctx);
    ctx.server
        .pubsub
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .forget(ctx.client);
    let c = &mut *ctx.client;
    c.db = 0;
    c.proto = Proto::Resp2;
    c.name = None;
    c.reply = super::ReplyMode::On;
    c.authenticated = ctx.server.config.password.is_none();
    out.set_proto(Proto::Resp2);
    out.simple("RESET");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::{OK, bulk, err, server_harness};

    /// The HELLO map, as Redis 7.0.15 writes it for client 7.
    fn hello_reply(proto: u8) -> String {
        let head = if proto == 3 { "%7" } else { "*14" };
        format!(
            "{head}\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n\
             $5\r\nproto\r\n:{proto}\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n\
             $4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
        )
    }

    #[test]
    fn ping_and_echo() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("PING"), "+PONG\r\n");
        assert_eq!(h.cmd("ping hi"), bulk("hi"));
        assert_eq!(
            h.cmd("PING a b"),
            err("ERR wrong number of arguments for 'ping' command")
        );
        assert_eq!(h.cmd("ECHO hello"), bulk("hello"));
        assert_eq!(h.run(&[b"ECHO", b""]), b"$0\r\n\r\n");
        assert_eq!(
            h.cmd("ECHO"),
            err("ERR wrong number of arguments for 'echo' command")
        );
    }

    #[test]
    fn hello_switches_protocol_and_replies_in_the_new_one() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("HELLO"), hello_reply(2));
        assert_eq!(h.cmd("HELLO 3"), hello_reply(3));
        assert_eq!(h.client.proto, Proto::Resp3);
        // Later replies are RESP3 too (the null of GETNAME).
        assert_eq!(h.cmd("CLIENT GETNAME"), "_\r\n");
        assert_eq!(h.cmd("HELLO"), hello_reply(3));
        assert_eq!(h.cmd("hello 2"), hello_reply(2));
        assert_eq!(h.client.proto, Proto::Resp2);
        assert_eq!(h.cmd("CLIENT GETNAME"), "$-1\r\n");
    }

    #[test]
    fn hello_errors_change_nothing() {
        let mut h = server_harness(None);
        let not_int = err("ERR Protocol version is not an integer or out of range");
        for v in ["x", "03", "+3", "3.0", "99999999999999999999"] {
            assert_eq!(h.cmd(&format!("HELLO {v}")), not_int, "HELLO {v}");
        }
        for v in ["1", "4", "-1", "0"] {
            assert_eq!(h.cmd(&format!("HELLO {v}")), err(NOPROTO), "HELLO {v}");
        }
        // The version is checked before the options.
        assert_eq!(h.cmd("HELLO 4 FOO"), err(NOPROTO));
        assert_eq!(
            h.cmd("HELLO 3 FOO"),
            err("ERR Syntax error in HELLO option 'FOO'")
        );
        assert_eq!(
            h.cmd("HELLO 3 AUTH default"),
            err("ERR Syntax error in HELLO option 'AUTH'")
        );
        assert_eq!(
            h.cmd("HELLO 3 SETNAME"),
            err("ERR Syntax error in HELLO option 'SETNAME'")
        );
        assert_eq!(h.cmd("HELLO 3 AUTH bob x"), err(WRONGPASS));
        // A bad name fails before the protocol switches.
        assert_eq!(
            h.run(&[b"HELLO", b"3", b"SETNAME", b"a b"]),
            err(BAD_CLIENT_NAME).as_bytes()
        );
        assert_eq!(h.client.proto, Proto::Resp2);
        assert_eq!(h.client.name, None);
    }

    #[test]
    fn errors_quote_arguments_as_sent() {
        let mut h = server_harness(None);
        assert_eq!(
            h.run(&[b"HELLO", b"3", b"\xff"]),
            b"-ERR Syntax error in HELLO option '\xff'\r\n"
        );
        assert_eq!(
            h.run(&[b"CONFIG", b"SET", b"\xfe", b"1"]),
            b"-ERR Unknown option or number of arguments for CONFIG SET - '\xfe'\r\n"
        );
        assert_eq!(
            h.run(&[b"CLIENT", b"LIST", b"TYPE", b"\xfd"]),
            b"-ERR Unknown client type '\xfd'\r\n"
        );
    }

    #[test]
    fn hello_setname_and_nopass_auth() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("HELLO 2 setname x SETNAME y"), hello_reply(2));
        assert_eq!(h.cmd("CLIENT GETNAME"), bulk("y"));
        // No password set: the default user takes any password, as Redis's `nopass`.
        assert_eq!(h.cmd("HELLO 3 AUTH default whatever"), hello_reply(3));
    }

    #[test]
    fn hello_with_a_password() {
        let mut h = server_harness(Some("secret"));
        assert_eq!(h.cmd("PING"), err(crate::cmd::NOAUTH));
        assert_eq!(h.cmd("HELLO"), err(HELLO_NOAUTH));
        assert_eq!(h.cmd("HELLO 3"), err(HELLO_NOAUTH));
        assert_eq!(
            h.cmd("HELLO x"),
            err("ERR Protocol version is not an integer or out of range")
        );
        assert_eq!(h.cmd("HELLO 3 AUTH default wrong"), err(WRONGPASS));
        assert_eq!(h.cmd("HELLO 3 AUTH bob secret"), err(WRONGPASS));
        assert!(!h.client.authenticated);
        // Authenticated, even though the name then fails.
        assert_eq!(
            h.run(&[b"HELLO", b"3", b"AUTH", b"default", b"secret", b"SETNAME", b"a b"]),
            err(BAD_CLIENT_NAME).as_bytes()
        );
        assert!(h.client.authenticated);
        assert_eq!(h.client.proto, Proto::Resp2);
        assert_eq!(h.cmd("PING"), "+PONG\r\n");

        let mut h = server_harness(Some("secret"));
        assert_eq!(h.cmd("HELLO 3 AUTH default secret SETNAME app"), hello_reply(3));
        assert!(h.client.authenticated);
        assert_eq!(h.client.name.as_deref(), Some(&b"app"[..]));
    }

    #[test]
    fn auth_without_a_password() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("AUTH x"), err(AUTH_NO_PASSWORD));
        assert_eq!(h.cmd("AUTH default x"), OK);
        assert_eq!(h.cmd("AUTH bob x"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH a b c"), err(SYNTAX));
        assert_eq!(
            h.cmd("AUTH"),
            err("ERR wrong number of arguments for 'auth' command")
        );
    }

    #[test]
    fn auth_with_a_password() {
        let mut h = server_harness(Some("secret"));
        assert_eq!(h.cmd("AUTH wrong"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH secre"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH secrets"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH default wrong"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH Default secret"), err(WRONGPASS));
        assert_eq!(h.cmd("AUTH a b c"), err(SYNTAX));
        assert!(!h.client.authenticated);
        assert_eq!(h.cmd("CLIENT ID"), err(crate::cmd::NOAUTH));
        assert_eq!(h.cmd("AUTH secret"), OK);
        assert!(h.client.authenticated);
        assert_eq!(h.cmd("CLIENT ID"), ":7\r\n");
        // A failed attempt does not log an authenticated client out.
        assert_eq!(h.cmd("AUTH nope"), err(WRONGPASS));
        assert!(h.client.authenticated);
        let mut h = server_harness(Some("secret"));
        assert_eq!(h.cmd("AUTH default secret"), OK);
        assert!(h.client.authenticated);
    }

    #[test]
    fn reset_returns_the_connection_to_its_start() {
        let mut h = server_harness(Some("pw"));
        h.cmd("AUTH pw");
        h.cmd("HELLO 3");
        h.cmd("CLIENT SETNAME n");
        h.cmd("SELECT 2");
        h.cmd("SUBSCRIBE a");
        h.cmd("MULTI");
        assert_eq!(h.cmd("RESET"), "+RESET\r\n");
        assert!(h.client.multi.is_none() && !h.client.subs.is_subscribed());
        assert_eq!(
            (h.client.db, h.client.proto, &h.client.name),
            (0, Proto::Resp2, &None)
        );
        assert_eq!(h.cmd("GET k"), err(crate::cmd::NOAUTH));
        assert_eq!(h.cmd("PUBSUB NUMSUB a"), err(crate::cmd::NOAUTH));
    }

    #[test]
    fn quit_closes_after_the_reply() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("QUIT x"), OK);
        assert!(h.client.close_after_reply);
    }

    /// The long messages, byte for byte as redis-server 7.0.15 sends them.
    #[test]
    fn messages_match_redis() {
        assert_eq!(
            AUTH_NO_PASSWORD,
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?"
        );
        assert_eq!(
            HELLO_NOAUTH,
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
             the RESP protocol version at the same time"
        );
        assert_eq!(
            AUTH_NO_PASSWORD.len() + HELLO_NOAUTH.len(),
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?".len()
                + "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".len()
        );
    }

    #[test]
    fn credentials_compare() {
        assert!(credentials_ok(None, None, b"anything"));
        assert!(credentials_ok(None, Some(b"default"), b""));
        assert!(!credentials_ok(None, Some(b"bob"), b""));
        assert!(credentials_ok(Some("pw"), None, b"pw"));
        assert!(!credentials_ok(Some("pw"), None, b"p"));
        assert!(!credentials_ok(Some("pw"), None, b"pw\0"));
        assert!(!credentials_ok(Some(""), None, b"\0"));
        assert!(credentials_ok(Some(""), None, b""));
    }
}
