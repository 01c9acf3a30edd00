//! Subcommands of container commands (`CLIENT`, `COMMAND`, `CONFIG`, `OBJECT`, `FUNCTION`):
//! each container has a table of [`Sub`]commands with Redis's arities
//! (`ERR wrong number of arguments for 'client|setname' command`), flags and ACL categories
//! (what `COMMAND INFO` and `COMMAND DOCS` report for them). The containers' tables live with
//! their handlers; [`table::subcommands`](super::table::subcommands) finds them by name.

use super::{Args, CommandSpec, Ctx, Handler, c_str, clip_bytes, quoted, wrong_arity};
use crate::resp::ReplyBuf;

/// One subcommand of a container command (`CLIENT`, `COMMAND`, `CONFIG`).
#[derive(Debug, Clone, Copy)]
pub struct Sub {
    /// Full lower-case name, `container|sub`.
    pub name: &'static str,
    /// Redis's arity, counting the container's name and the subcommand's.
    pub arity: i32,
    /// Redis's flags.
    pub flags: &'static [&'static str],
    /// ACL categories, with their `@`.
    pub acl: &'static [&'static str],
    /// Command tips (`nondeterministic_output`, ...).
    pub tips: &'static [&'static str],
    /// `COMMAND DOCS` group.
    pub group: &'static str,
    /// `COMMAND DOCS` summary.
    pub summary: &'static str,
    /// The Redis version that added it.
    pub since: &'static str,
    /// `COMMAND DOCS` complexity.
    pub complexity: &'static str,
    /// The handler (it sees the container's arguments: the subcommand is `args.get(1)`).
    pub handler: Handler,
}

impl Sub {
    /// The subcommand's own name, after the `|`.
    pub fn short_name(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(_, s)| s)
    }

    /// Whether `argc` arguments (container and subcommand included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let n = self.arity.unsigned_abs() as usize;
        if self.arity >= 0 { argc == n } else { argc >= n }
    }
}

pub(crate) const CONN_SUB: &[&str] = &["noscript", "loading", "stale"];
pub(crate) const ADMIN_SUB: &[&str] = &["admin", "noscript", "loading", "stale"];
pub(crate) const HELP_SUB: &[&str] = &["loading", "stale"];
pub(crate) const ACL_CONN: &[&str] = &["@slow", "@connection"];
pub(crate) const ACL_ADMIN: &[&str] = &["@admin", "@slow", "@dangerous"];
pub(crate) const ACL_ADMIN_CONN: &[&str] = &["@admin", "@slow", "@dangerous", "@connection"];

#[allow(clippy::too_many_arguments)]
pub(crate) const fn sub(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    acl: &'static [&'static str],
    tips: &'static [&'static str],
    group: &'static str,
    summary: &'static str,
    since: &'static str,
    complexity: &'static str,
    handler: Handler,
) -> Sub {
    Sub {
        name,
        arity,
        flags,
        acl,
        tips,
        group,
        summary,
        since,
        complexity,
        handler,
    }
}

/// The subcommand `args.get(1)` of the container command `container` (lower case), or the
/// error Redis gives for it: `ERR unknown subcommand 'x'. Try CLIENT HELP.` or the
/// subcommand's arity error. `None` when `container` has no subcommands or none is given.
fn resolve(container: &str, subs: &'static [Sub], args: &Args<'_>) -> Option<Result<&'static Sub, Vec<u8>>> {
    if subs.is_empty() || args.len() < 2 {
        return None;
    }
    let name = args.get(1);
    Some(
        match subs
            .iter()
            .find(|s| s.short_name().as_bytes().eq_ignore_ascii_case(name))
        {
            None => Err(quoted(
                "ERR unknown subcommand '",
                clip_bytes(c_str(name), 128),
                &format!("'. Try {} HELP.", container.to_ascii_uppercase()),
            )),
            Some(s) if !s.arity_ok(args.len()) => Err(wrong_arity(s.name).into_bytes()),
            Some(s) => Ok(s),
        },
    )
}

/// For a container command (`CLIENT`, `COMMAND`, `CONFIG`): the error for an unknown
/// subcommand or a subcommand's wrong argument count, if any. Redis 7.0 gives these before
/// it checks authentication (so may [`execute`](super::execute)); the handlers check again.
pub fn subcommand_error(spec: &CommandSpec, subs: &'static [Sub], args: &Args<'_>) -> Option<Vec<u8>> {
    resolve(spec.name, subs, args)?.err()
}

/// The name Redis reports for the command `args` runs (`CLIENT LIST`'s `cmd=`): the
/// subcommand's full name (`client|list`) for a container, else the command's.
pub fn full_name(spec: &'static CommandSpec, subs: &'static [Sub], args: &Args<'_>) -> &'static str {
    match resolve(spec.name, subs, args) {
        Some(Ok(sub)) => sub.name,
        _ => spec.name,
    }
}

/// Runs the subcommand `args.get(1)` of `container` (lower case).
pub(crate) fn dispatch(
    container: &str,
    subs: &'static [Sub],
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    out: &mut ReplyBuf,
) {
    match resolve(container, subs, args) {
        Some(Ok(sub)) => (sub.handler)(ctx, args, out),
        Some(Err(e)) => out.error(&e),
        // Unreachable: containers have subcommands, and their arity requires one.
        None => out.error(wrong_arity(container)),
    }
}

/// A `HELP` reply: Redis's header line, the lines, and the `HELP` entry, as status replies.
pub(crate) fn help(out: &mut ReplyBuf, container: &str, lines: &[&str]) {
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for line in lines {
        out.simple(line);
    }
    out.simple("HELP");
    out.simple("    Prints this help.");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::table;

    #[test]
    fn subcommand_errors_for_execute() {
        fn check(name: &[u8], words: &[&[u8]]) -> Option<Vec<u8>> {
            let mut base = Vec::new();
            let mut ranges = Vec::new();
            for w in words {
                ranges.push(base.len()..base.len() + w.len());
                base.extend_from_slice(w);
            }
            let spec = table::lookup(name).unwrap();
            subcommand_error(
                spec,
                table::subcommands(spec.name),
                &Args::new(&base, &ranges, None),
            )
        }
        assert_eq!(check(b"client", &[b"CLIENT", b"ID"]), None);
        assert_eq!(
            check(b"client", &[b"CLIENT", b"nope"]),
            Some(b"ERR unknown subcommand 'nope'. Try CLIENT HELP.".to_vec())
        );
        assert_eq!(
            check(b"config", &[b"config", b"get"]),
            Some(wrong_arity("config|get").into_bytes())
        );
        assert_eq!(check(b"command", &[b"COMMAND"]), None);
        assert_eq!(check(b"get", &[b"GET", b"a"]), None);
    }
}
