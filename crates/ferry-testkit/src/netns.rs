//! Network namespaces a test creates and removes ([`Netns`]); [`VethPair`]: two hosts joined by
//! one link, lossy if asked; and [`Lan`]: nodes on one Ethernet segment, each in a namespace of
//! its own, whose switch a test can split into partitions and join again, for tests of servers
//! under network faults.
//!
//! Everything here runs `ip` (iproute2), and `nft` for packet loss, as root; a test that cannot create a namespace skips
//! with the reason ([`crate::tools::skip`]). Names carry the process id, so parallel tests and
//! runs do not collide, and everything is deleted on drop (a namespace's interfaces go with it).

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::process::{Command, Stdio};

use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

/// Runs `ip` with `args`: its stdout, or why it failed.
pub fn ip(args: &[&str]) -> Result<String, String> {
    run("ip", args)
}

/// Runs `program` with `args`: its stdout, or why it failed.
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!("`{program}` is not installed (Debian: apt-get install iproute2)")
            } else {
                format!("cannot run `{program}`: {e}")
            }
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A network namespace this test created; deleted (with its interfaces) when dropped.
#[derive(Debug)]
pub struct Netns {
    /// Its name (unique to this process).
    pub name: String,
}

impl Netns {
    /// Creates `ferrynet-<pid>-<tag>`.
    pub fn create(tag: &str) -> Result<Netns, String> {
        let name = format!("ferrynet-{}-{tag}", std::process::id());
        // A namespace of this name can only be left over from an earlier process with the same
        // pid that was killed before its guard ran.
        let _ = ip(&["netns", "del", &name]);
        ip(&["netns", "add", &name])?;
        Ok(Netns { name })
    }

    /// Runs `program args` inside the namespace.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["netns", "exec", &self.name, program];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// The launcher that runs a command inside the namespace: `ip netns exec NAME`.
    pub fn launcher(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name].map(str::to_owned).to_vec()
    }

    /// Moves the calling thread into the namespace: the sockets it opens from then on live
    /// there (and keep doing so wherever they are used). Call it on a thread of its own.
    pub fn enter(&self) -> Result<(), String> {
        let path = format!("/run/netns/{}", self.name);
        let file = File::open(&path).map_err(|e| format!("opening {path}: {e}"))?;
        move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))
            .map_err(|e| format!("entering network namespace {}: {e}", self.name))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("warning: could not delete network namespace {}: {e}", self.name);
        }
    }
}

/// Nodes on one segment: node `i` is namespace `ferrynet-<pid>-<tag>-i` with address
/// `10.77.0.(i+1)/24` on its interface `veth0`, whose peer `port<i>` sits in a switch
/// namespace. The switch holds one bridge per side of a partition: all ports start on `br0`;
/// [`Lan::partition`] moves them so that nodes reach only their own group, as a cut network
/// would (packets to the other side are dropped, connections stall rather than reset), and
/// [`Lan::heal`] puts them back.
#[derive(Debug)]
pub struct Lan {
    switch: Netns,
    nodes: Vec<Netns>,
}

impl Lan {
    /// `n` nodes (at most 250), all reaching each other.
    pub fn new(tag: &str, n: usize) -> Result<Lan, String> {
        if n == 0 || n > 250 {
            return Err(format!("a Lan has 1 to 250 nodes, not {n}"));
        }
        let switch = Netns::create(&format!("{tag}-sw"))?;
        let mut lan = Lan {
            switch,
            nodes: Vec::with_capacity(n),
        };
        lan.bridge(0)?;
        for i in 0..n {
            let node = Netns::create(&format!("{tag}-{i}"))?;
            let port = format!("port{i}");
            // Both ends are made straight in their namespaces, so the names cannot clash with
            // another test's.
            ip(&[
                "link",
                "add",
                "veth0",
                "netns",
                &node.name,
                "type",
                "veth",
                "peer",
                "name",
                &port,
                "netns",
                &lan.switch.name,
            ])?;
            node.exec(
                "ip",
                &["addr", "add", &format!("{}/24", Lan::addr(i)), "dev", "veth0"],
            )?;
            node.exec("ip", &["link", "set", "veth0", "up"])?;
            node.exec("ip", &["link", "set", "lo", "up"])?;
            lan.switch
                .exec("ip", &["link", "set", &port, "master", "br0", "up"])?;
            lan.nodes.push(node);
        }
        Ok(lan)
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether it has no nodes (never: [`Lan::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `i`'s namespace.
    pub fn node(&self, i: usize) -> &Netns {
        &self.nodes[i]
    }

    /// Node `i`'s address.
    pub fn addr(i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, 0, (i + 1) as u8)
    }

    /// Splits the segment: the nodes of each group reach each other and no one else; a node
    /// in no group reaches no one. `partition(&[&[0, 1], &[2, 3, 4]])` is a minority of two.
    pub fn partition(&self, groups: &[&[usize]]) -> Result<(), String> {
        for i in 0..self.nodes.len() {
            let port = format!("port{i}");
            match groups.iter().position(|g| g.contains(&i)) {
                Some(k) => {
                    self.bridge(k)?;
                    let bridge = format!("br{k}");
                    self.switch
                        .exec("ip", &["link", "set", &port, "master", &bridge])?;
                }
                None => {
                    self.switch.exec("ip", &["link", "set", &port, "nomaster"])?;
                }
            }
        }
        Ok(())
    }

    /// Joins every node again.
    pub fn heal(&self) -> Result<(), String> {
        let all: Vec<usize> = (0..self.nodes.len()).collect();
        self.partition(&[&all])
    }

    /// Drops `percent` of the packets node `i` receives, at random (nftables' `numgen random`,
    /// in the node's namespace; `nft`, Debian's nftables, must be installed). 0 stops dropping.
    /// This kernel has no netem qdisc, so loss is the one impairment short of a cut: delay and
    /// reordering are not available.
    pub fn set_loss(&self, i: usize, percent: u8) -> Result<(), String> {
        if percent > 100 {
            return Err(format!("a loss of {percent} %"));
        }
        let node = &self.nodes[i];
        // Replaced whole each time: deleting a table that is not there fails, and is fine.
        let _ = node.exec("nft", &["delete", "table", "inet", "ferry_loss"]);
        if percent == 0 {
            return Ok(());
        }
        // `numgen random mod 100` is 0 to 99: "< 100" is out of its range, so all is plain.
        let which = if percent == 100 {
            String::new()
        } else {
            format!("numgen random mod 100 < {percent} ")
        };
        let rules = format!(
            "add table inet ferry_loss; \
             add chain inet ferry_loss input {{ type filter hook input priority 0; policy accept; }}; \
             add rule inet ferry_loss input iifname \"veth0\" {which}drop"
        );
        node.exec("nft", &[&rules])?;
        Ok(())
    }

    /// Makes bridge `br<k>` in the switch, up, if it is not there yet.
    fn bridge(&self, k: usize) -> Result<(), String> {
        let name = format!("br{k}");
        if self.switch.exec("ip", &["link", "show", &name]).is_err() {
            self.switch
                .exec("ip", &["link", "add", &name, "type", "bridge"])?;
            self.switch.exec("ip", &["link", "set", &name, "up"])?;
        }
        Ok(())
    }
}

/// Two hosts joined by one link: namespaces `a` and `b`, each with one interface (`a_if`,
/// `b_if`, named with the process id) addressed `10.252.0.1/24` and `10.252.0.2/24`, with the
/// fixed MACs [`VethPair::A_MAC`] and [`VethPair::B_MAC`] and the MTU asked for. Without loss
/// the two interfaces are the ends of one veth pair (so XDP programs on them run in the
/// driver, native mode); with loss each is a veth to a bridge in a third namespace that drops
/// that percentage of what it forwards (nftables `numgen random` in the bridge's forward hook:
/// it runs after any XDP program on the hosts, and this kernel has no netem qdisc). All
/// deleted on drop.
#[derive(Debug)]
pub struct VethPair {
    /// The first host's namespace.
    pub a: Netns,
    /// The second host's namespace.
    pub b: Netns,
    /// The first host's interface.
    pub a_if: String,
    /// The second host's interface.
    pub b_if: String,
    /// The lossy bridge's namespace, if any: dropped after the hosts'.
    bridge: Option<Netns>,
}

impl VethPair {
    /// The first host's address.
    pub const A_IP: Ipv4Addr = Ipv4Addr::new(10, 252, 0, 1);
    /// The second host's address.
    pub const B_IP: Ipv4Addr = Ipv4Addr::new(10, 252, 0, 2);
    /// The first host's MAC (locally administered).
    pub const A_MAC: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 1];
    /// The second host's MAC.
    pub const B_MAC: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 2];

    /// Makes the two hosts (`tag`: a few letters unique within the process), with `loss`
    /// percent dropped between them if given, links of `mtu` bytes, addressed and up.
    pub fn new(tag: &str, loss: Option<u8>, mtu: u32) -> Result<VethPair, String> {
        if loss.is_some_and(|p| p > 100) {
            return Err(format!("a loss of {} %", loss.unwrap_or_default()));
        }
        let a = Netns::create(&format!("{tag}a"))?;
        let b = Netns::create(&format!("{tag}b"))?;
        let pid = std::process::id();
        let (a_if, b_if) = (format!("{tag}a{pid}"), format!("{tag}b{pid}"));
        let veth = |dev: &str, ns: &Netns, peer: &str, peer_ns: &Netns| {
            ip(&[
                "link",
                "add",
                dev,
                "netns",
                &ns.name,
                "type",
                "veth",
                "peer",
                "name",
                peer,
                "netns",
                &peer_ns.name,
            ])
        };
        let bridge = match loss {
            None => {
                veth(&a_if, &a, &b_if, &b)?;
                None
            }
            Some(percent) => {
                let bridge = Netns::create(&format!("{tag}x"))?;
                bridge.exec("ip", &["link", "add", "br0", "type", "bridge"])?;
                bridge.exec("ip", &["link", "set", "br0", "up"])?;
                for (ns, dev, port) in [(&a, &a_if, "pa"), (&b, &b_if, "pb")] {
                    veth(dev, ns, port, &bridge)?;
                    bridge.exec(
                        "ip",
                        &["link", "set", port, "master", "br0", "mtu", &mtu.to_string()],
                    )?;
                    bridge.exec("ip", &["link", "set", port, "up"])?;
                }
                let rules = format!(
                    "add table bridge ferry_loss; \
                     add chain bridge ferry_loss forward {{ type filter hook forward priority 0; policy accept; }}; \
                     add rule bridge ferry_loss forward numgen random mod 100 < {percent} counter drop"
                );
                bridge.exec("nft", &[&rules])?;
                Some(bridge)
            }
        };
        for (ns, dev, addr, mac) in [
            (&a, &a_if, Self::A_IP, Self::A_MAC),
            (&b, &b_if, Self::B_IP, Self::B_MAC),
        ] {
            let mac = mac.map(|b| format!("{b:02x}")).join(":");
            ns.exec(
                "ip",
                &["link", "set", dev, "address", &mac, "mtu", &mtu.to_string()],
            )?;
            ns.exec("ip", &["addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ns.exec("ip", &["link", "set", dev, "up"])?;
            ns.exec("ip", &["link", "set", "lo", "up"])?;
        }
        Ok(VethPair {
            a,
            b,
            a_if,
            b_if,
            bridge,
        })
    }

    /// How many packets the bridge has dropped (0 without loss).
    pub fn dropped(&self) -> Result<u64, String> {
        let Some(bridge) = &self.bridge else { return Ok(0) };
        let out = bridge.exec("nft", &["list", "table", "bridge", "ferry_loss"])?;
        out.split_whitespace()
            .skip_while(|w| *w != "packets")
            .nth(1)
            .ok_or_else(|| format!("no packet counter in the loss rule: {out}"))?
            .parse()
            .map_err(|e| format!("the loss rule's packet counter: {e}"))
    }
}
