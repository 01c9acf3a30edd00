//! `ferry kv`: a replicated key-value store (`ferry-kv`'s `raft` module): `serve` runs a node,
//! the other commands are its clients.
//!
//! Exit status: 0 on success; 1 for `get` of a key that is not there (and for usage errors);
//! 2 when the node or the cluster failed the call (the message says which node and why).

use std::io::{Read, Write};
use std::path::PathBuf;

use ferry_kv::raft::{self, Client, ClientError, NodeConfig, Sync};

use crate::schema::CliError;

/// `ferry kv` and its commands.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: KvCommand,
}

#[derive(clap::Subcommand, Debug)]
enum KvCommand {
    /// Run a node in the foreground until SIGINT or SIGTERM. Prints `serving on ADDR` once it
    /// serves.
    Serve(ServeArgs),
    /// Form a cluster of the members (send it to one of them, once).
    Init {
        #[command(flatten)]
        node: NodeAddr,
        /// `ID=ADDR,...` (default: the node's --peers).
        #[arg(long, default_value = "")]
        members: String,
    },
    /// Store VALUE (`-`: standard input) under KEY.
    Put {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
        value: String,
    },
    /// Print KEY's value, byte-exact, on standard output (exit 1 if there is none).
    Get {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
    },
    /// Delete KEY (exit 1 if it was not there).
    Delete {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
    },
    /// Append VALUE (`-`: standard input) to KEY's list; prints its new length.
    Append {
        #[command(flatten)]
        node: NodeAddr,
        key: String,
        value: String,
    },
    /// What the node knows of the cluster: leader, term, commit index, members.
    Status {
        #[command(flatten)]
        node: NodeAddr,
        /// One JSON object instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Add a node (started with `serve` first): a learner until it caught up, then a voter.
    AddNode {
        #[command(flatten)]
        node: NodeAddr,
        /// The new node's id.
        #[arg(long)]
        id: u64,
        /// The new node's address (its --listen).
        #[arg(long)]
        node_addr: String,
    },
    /// Remove a voter.
    RemoveNode {
        #[command(flatten)]
        node: NodeAddr,
        /// The node's id.
        #[arg(long)]
        id: u64,
    },
}

/// The node a client command talks to (any member: a follower redirects to the leader).
#[derive(clap::Args, Debug)]
struct NodeAddr {
    /// `tcp://HOST:PORT` or `shm://PATH`.
    #[arg(long)]
    addr: String,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// This node's id (from 1, unique in the cluster).
    #[arg(long)]
    id: u64,
    /// Where peers and clients reach it: `tcp://HOST:PORT` (port 0: any, printed) or `shm://PATH`.
    #[arg(long)]
    listen: String,
    /// The log, the vote and snapshots (one redb file). Unused with --sync none.
    #[arg(long)]
    data: PathBuf,
    /// The cluster's members, `ID=ADDR,...`, formed by `ferry kv init`. Without it the node is a
    /// cluster of one, formed at its first start.
    #[arg(long)]
    peers: Option<String>,
    /// always: fsync before a write is acknowledged; batch[:MICROS]: one fsync for the writes
    /// of a window (default 500 µs), each acknowledged after it; none: in memory only.
    #[arg(long, default_value = "always", value_parser = |s: &str| s.parse::<Sync>())]
    sync: Sync,
    /// A snapshot after this many log entries since the last one; the log before it is purged.
    #[arg(long, default_value_t = 5000)]
    snapshot_every: u64,
}

fn failed(e: ClientError) -> CliError {
    CliError::Input(e.to_string())
}

/// A value argument, or standard input for `-`.
fn value(arg: &str) -> Result<Vec<u8>, CliError> {
    if arg != "-" {
        return Ok(arg.as_bytes().to_vec());
    }
    let mut v = Vec::new();
    std::io::stdin()
        .read_to_end(&mut v)
        .map_err(|e| CliError::Input(format!("reading the value from stdin: {e}")))?;
    Ok(v)
}

fn client(node: &NodeAddr) -> Result<Client, CliError> {
    Client::connect(&node.addr).map_err(failed)
}

/// Runs `ferry kv`.
pub fn run(args: &Args) -> Result<(), CliError> {
    match &args.command {
        KvCommand::Serve(a) => {
            let config = NodeConfig {
                peers: a.peers.clone(),
                sync: a.sync,
                snapshot_every: a.snapshot_every,
                ..NodeConfig::new(a.id, a.listen.clone(), a.data.clone())
            };
            raft::run(config, |addr| {
                println!("ferry kv: node {} serving on {addr}", a.id);
                let _ = std::io::stdout().flush();
            })
            .map_err(|e| CliError::Usage(format!("kv serve: {e}")))
        }
        KvCommand::Init { node, members } => client(node)?.init(members).map_err(failed),
        KvCommand::Put { node, key, value: v } => client(node)?.put(key, &value(v)?).map_err(failed),
        KvCommand::Append { node, key, value: v } => {
            let n = client(node)?.append(key, &value(v)?).map_err(failed)?;
            println!("{n}");
            Ok(())
        }
        KvCommand::Get { node, key } => match client(node)?.get(key).map_err(failed)? {
            Some(v) => {
                let mut out = std::io::stdout().lock();
                out.write_all(&v)
                    .and_then(|()| out.flush())
                    .map_err(|e| CliError::Input(format!("writing the value: {e}")))
            }
            None => Err(CliError::Usage(format!("no key `{key}`"))),
        },
        KvCommand::Delete { node, key } => match client(node)?.delete(key).map_err(failed)? {
            true => Ok(()),
            false => Err(CliError::Usage(format!("no key `{key}`"))),
        },
        KvCommand::Status { node, json } => {
            let s = client(node)?.status().map_err(failed)?;
            if *json {
                println!("{}", s.to_json());
            } else {
                let leader = s
                    .leader
                    .map_or("none known".to_string(), |l| format!("{l} ({})", s.leader_addr));
                println!("node: {} ({})", s.id, s.state);
                println!("leader: {leader}");
                println!("term: {}", s.term);
                println!("commit index: {}", s.commit_index);
                println!("applied index: {}", s.applied_index);
                println!("members: {}", s.members);
                if !s.learners.is_empty() {
                    println!("learners: {}", s.learners);
                }
                println!("cluster: {:016x}", s.cluster);
            }
            Ok(())
        }
        KvCommand::AddNode { node, id, node_addr } => client(node)?.add_node(*id, node_addr).map_err(failed),
        KvCommand::RemoveNode { node, id } => client(node)?.remove_node(*id).map_err(failed),
    }
}
