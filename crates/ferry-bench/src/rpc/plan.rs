//! What `ferry bench rpc` runs: its options, the systems and transports, the payloads, and
//! the configurations of one repetition in the order they run.

use std::cmp::Reverse;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::stream::{self, StreamConfig};
use crate::harness::cli::Common;
use crate::harness::or_all;
use crate::harness::{Link, Named};
use crate::plot;

/// Defaults of the in-flight counts.
const IN_FLIGHT: [usize; 3] = [1, 16, 128];

/// tonic runs at the in-flight counts up to this (the 1 and 16).
const TONIC_MAX_IN_FLIGHT: usize = 16;

/// `--tls` runs at the in-flight counts up to this (the 1 and 16).
pub(super) const TLS_MAX_IN_FLIGHT: usize = 16;

/// Calls in flight at most (client window and server bound): the largest count of the sweep
/// must fit, with room for the control calls.
pub(super) const MAX_IN_FLIGHT: usize = 256;

/// Options of `ferry bench rpc`. `--quick`: one repetition of 40 ms per echo configuration,
/// streams of 16 MiB and ping-pongs of 2,000 round trips, every configuration, under 30 s.
/// `--plot`: p99 latency against calls/s for every system (Cornflakes Figure 2), per
/// transport and payload; the 64 B call against the ping-pong; p50 at one in flight against
/// payload; the streams' GB/s, and their ping-pong's p50 against the unary call's.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub(super) common: Common,
    /// Sections to run, comma-separated (default: echo,streams).
    #[arg(long, value_delimiter = ',')]
    pub(super) sections: Vec<Section>,
    /// Systems to run, comma-separated (default: all; the streams run those of ferry-hybrid
    /// and tonic named).
    #[arg(long, value_delimiter = ',')]
    systems: Vec<System>,
    /// Transports of the event-loop systems and of Ferry's streams, comma-separated (default:
    /// tcp,shm).
    #[arg(long, value_delimiter = ',')]
    transports: Vec<Transport>,
    /// Calls in flight, comma-separated (default 1,16,128; tonic runs those up to 16).
    #[arg(long, value_delimiter = ',')]
    in_flight: Vec<usize>,
    /// Repetitions, the configurations interleaved; every reported number is the median over
    /// them (default 7, or 1 with --quick).
    #[arg(long)]
    pub(super) reps: Option<usize>,
    /// Also run ferry-hybrid and raw over TLS (a CA and a certificate for 127.0.0.1 made for
    /// the run; rustls on both sides), 2 x 2 KiB at 1 and 16 in flight, each beside its
    /// plaintext run: TLS's cost in calls/s and server CPU per call.
    #[arg(long)]
    pub(super) tls: bool,
    /// Where client and server run: `loopback` (127.0.0.1), or `veth`: two network namespaces
    /// made for the run and joined by a veth pair (root), the client in one and the server in
    /// the other. veth carries tcp and udp only (the default there), and the event-loop systems
    /// (not tonic, the ping-pong or the streams).
    #[arg(long, value_enum, default_value_t = Net::Loopback)]
    pub(super) net: Net,
    /// With `--net veth`: drop this percentage of packets between the two hosts, at random
    /// (nftables in a bridge between them; this kernel has no netem).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=50))]
    pub(super) loss: Option<u8>,
    /// CPU of the client thread.
    #[arg(long, default_value_t = 0)]
    pub(super) client_cpu: usize,
    /// CPU of the server loop (the client's when only one is available).
    #[arg(long, default_value_t = 1)]
    pub(super) server_cpu: usize,
}

/// Where a run's client and server are (`--net`).
#[derive(ValueEnum, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Net {
    /// One host: 127.0.0.1.
    Loopback,
    /// Two network namespaces joined by a veth pair.
    Veth,
}

impl Net {
    /// The transports that run when `--transports` names none.
    fn default_transports(self) -> &'static [Transport] {
        match self {
            Net::Loopback => &Transport::DEFAULT,
            Net::Veth => &[Transport::Tcp, Transport::Udp],
        }
    }
}

/// Refuses what `--net` and `--loss` cannot run: shared memory, tonic, the ping-pong or the
/// streams across veth (none of them crosses a network here), or loss on loopback.
pub(super) fn check(args: &Args) -> Result<(), String> {
    if args.net == Net::Loopback {
        return match args.loss {
            Some(_) => Err("--loss needs --net veth (loopback cannot drop packets)".into()),
            None => Ok(()),
        };
    }
    let refused = |what: &str| {
        Err(format!(
            "--net veth runs tcp and udp between the event-loop systems; {what} does not cross a network here"
        ))
    };
    if args.transports.contains(&Transport::Shm) {
        return refused("shm");
    }
    if let Some(s) = args.systems.iter().find(|s| !s.on_loop()) {
        return refused(&s.name());
    }
    if args.sections.contains(&Section::Streams) {
        return refused("the streams section");
    }
    Ok(())
}

/// A part of the benchmark.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The echo calls (the event-loop systems, tonic, the ping-pong).
    Echo,
    /// Download, upload and ping-pong streams: Ferry's tokio driver and tonic.
    Streams,
}

/// What answers the echo (in table order). Its name on the command line and in the records
/// is the kebab-case of the variant (`ferry-hybrid`).
#[derive(ValueEnum, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum System {
    /// A raw method that sends the request's bytes back: no serialization.
    Raw,
    /// Ferry with an infinite zero-copy threshold on both sides.
    FerryCopy,
    /// Ferry with the default threshold, values in the session's pool.
    FerryHybrid,
    /// prost (decode, re-encode).
    Prost,
    /// FlatBuffers (verify, rebuild).
    Flatbuf,
    /// Cap'n Proto (read, rebuild).
    Capnp,
    /// tonic: gRPC over HTTP/2 on TCP (2 x 2 KiB only).
    Tonic,
    /// The raw shared-memory ping-pong of `ferry bench shm`: the floor.
    PingPong,
}

impl System {
    /// Whether the Ferry server loop serves it (all but tonic and the ping-pong).
    pub(super) fn on_loop(self) -> bool {
        !matches!(self, System::Tonic | System::PingPong)
    }

    /// The systems the Ferry server loop serves, in table order.
    pub(super) fn on_loops() -> impl Iterator<Item = System> {
        System::value_variants().iter().copied().filter(|s| s.on_loop())
    }
}

/// What carries the calls (tonic: HTTP/2 over TCP; the ping-pong: two cache lines).
pub use crate::harness::Transport;

/// The fields of every request: `count` values of `len` bytes, no key. In the records: `fields`
/// and `field_len`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    /// Values per request.
    #[serde(rename = "fields")]
    pub count: usize,
    /// Bytes per value.
    #[serde(rename = "field_len")]
    pub len: usize,
}

/// Cornflakes Figure 2: a list of two 2048-byte elements (`workloads.md`, "YCSB-C": 2 x 2048).
pub(super) const ECHO: Fields = Fields { count: 2, len: 2048 };
/// Cornflakes Figure 9: 1024-byte requests.
pub(super) const ONE_KIB: Fields = Fields { count: 1, len: 1024 };
/// The small call compared with the ping-pong.
pub(super) const SMALL: Fields = Fields { count: 1, len: 64 };
/// What the ping-pong moves: its 8-byte sequence number.
const SEQ: Fields = Fields { count: 1, len: 8 };

impl Fields {
    pub(super) fn bytes(self) -> usize {
        self.count * self.len
    }

    pub(super) fn label(self) -> String {
        match self.count {
            1 => plot::bytes_label(self.len as f64),
            n => format!("{n} x {}", plot::bytes_label(self.len as f64)),
        }
    }
}

/// One configuration.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// What answers the echo.
    pub system: System,
    /// What carries the calls.
    pub transport: Transport,
    /// What each request carries.
    #[serde(flatten)]
    pub fields: Fields,
    /// Calls outstanding.
    pub in_flight: usize,
    /// Plaintext or TLS (TCP only). Written only for TLS (`"link": "tls"`): a plaintext
    /// record has the fields it had before `--tls` existed.
    #[serde(default, skip_serializing_if = "Link::is_plain")]
    pub link: Link,
}

impl Point {
    pub(super) fn label(&self) -> String {
        format!(
            "{} {}{} {}, {} in flight",
            self.system.name(),
            self.transport.name(),
            self.link.suffix(),
            self.fields.label(),
            self.in_flight
        )
    }

    /// Where it goes in the table: the echo variants by payload, transport, system and
    /// in-flight count, then the 64 B call, tonic and the ping-pong.
    pub(super) fn display_key(&self) -> (u8, Reverse<usize>, Transport, Link, System, usize) {
        let group = match self.system {
            System::Tonic => 2,
            System::PingPong => 3,
            _ if self.fields == SMALL => 1,
            _ => 0,
        };
        (
            group,
            Reverse(self.fields.bytes()),
            self.transport,
            self.link,
            self.system,
            self.in_flight,
        )
    }
}

/// The configurations, in the order one repetition runs them, so that what a target compares
/// runs close together in time (this machine changes speed between runs: see rpc.md): tonic,
/// then (the Ferry server up) every event-loop system one after another at each payload,
/// transport and in-flight count, the 64 B call last at 1 in flight, then the ping-pong.
pub(super) fn plan(args: &Args) -> Vec<Point> {
    if !or_all(&args.sections, Section::value_variants()).contains(&Section::Echo) {
        return Vec::new();
    }
    let systems = match args.net {
        Net::Loopback => or_all(&args.systems, System::value_variants()),
        Net::Veth => or_all(&args.systems, &System::on_loops().collect::<Vec<_>>()),
    };
    let transports = or_all(&args.transports, args.net.default_transports());
    let in_flight = crate::harness::sorted(
        or_all(&args.in_flight, &IN_FLIGHT)
            .into_iter()
            .map(|n| n.clamp(1, MAX_IN_FLIGHT / 2)),
    );
    let has = |s| systems.contains(&s);
    let p = |system, transport, fields, in_flight| Point {
        system,
        transport,
        fields,
        in_flight,
        link: Link::Plain,
    };
    let mut points = Vec::new();
    if has(System::Tonic) {
        points.extend(
            in_flight
                .iter()
                .filter(|&&n| n <= TONIC_MAX_IN_FLIGHT)
                .map(|&n| p(System::Tonic, Transport::Tcp, ECHO, n)),
        );
    }
    for fields in [ECHO, ONE_KIB] {
        for &t in &transports {
            for &n in &in_flight {
                points.extend(System::on_loops().filter(|&s| has(s)).map(|s| p(s, t, fields, n)));
                // TLS right after the same configurations in plaintext.
                if args.tls && (t, fields) == (Transport::Tcp, ECHO) && n <= TLS_MAX_IN_FLIGHT {
                    let tls = [System::Raw, System::FerryHybrid].into_iter().filter(|&s| has(s));
                    points.extend(tls.map(|s| Point {
                        link: Link::Tls,
                        ..p(s, t, fields, n)
                    }));
                }
            }
        }
    }
    // The datagram transport's comparison (issue 33): the 64 B echo over TCP and UDP, when
    // UDP is chosen.
    if transports.contains(&Transport::Udp) {
        for &t in transports.iter().filter(|&&t| t != Transport::Shm) {
            for &n in &in_flight {
                let small = [System::Raw, System::FerryHybrid].into_iter().filter(|&s| has(s));
                points.extend(small.map(|s| p(s, t, SMALL, n)));
            }
        }
    }
    if has(System::FerryHybrid) && transports.contains(&Transport::Shm) {
        points.extend(
            in_flight
                .iter()
                .rev()
                .map(|&n| p(System::FerryHybrid, Transport::Shm, SMALL, n)),
        );
    }
    if has(System::PingPong) {
        points.push(p(System::PingPong, Transport::Shm, SEQ, 1));
    }
    points
}

/// The streaming section's configurations of one repetition ([`stream::plan`]), if it is
/// chosen.
pub(super) fn stream_plan(args: &Args) -> Vec<StreamConfig> {
    if args.net == Net::Veth || !or_all(&args.sections, Section::value_variants()).contains(&Section::Streams)
    {
        return Vec::new();
    }
    stream::plan(
        &or_all(&args.systems, System::value_variants()),
        &or_all(&args.transports, &Transport::DEFAULT),
        args.common.quick,
        args.common.count,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        crate::harness::cli::parse("rpc", extra)
    }

    #[test]
    fn the_plan_covers_every_system_transport_payload_and_count() {
        let points = plan(&args(&[]));
        // 6 loop systems x 2 transports x 2 payloads x 3 counts, the 64 B call at 3 counts,
        // tonic at 1 and 16, the ping-pong.
        assert_eq!(points.len(), 72 + 3 + 2 + 1);
        // tonic first, the event-loop systems together, the ping-pong last, right after the
        // 64 B call at 1 in flight.
        let on_loop: Vec<bool> = points.iter().map(|p| p.system.on_loop()).collect();
        assert_eq!(on_loop.iter().filter(|&&b| b).count(), 75);
        let first = on_loop.iter().position(|&b| b).unwrap();
        assert!(on_loop[first..first + 75].iter().all(|&b| b));
        assert!(points[..first].iter().all(|p| p.system == System::Tonic));
        let last = &points[points.len() - 2..];
        assert_eq!((last[0].fields, last[0].in_flight), (SMALL, 1));
        assert_eq!(last[1].system, System::PingPong);
        let tonic: Vec<usize> = points
            .iter()
            .filter(|p| p.system == System::Tonic)
            .map(|p| p.in_flight)
            .collect();
        assert_eq!(tonic, [1, 16]);
        let only = plan(&args(&[
            "--systems",
            "raw,ping-pong",
            "--transports",
            "tcp",
            "--in-flight",
            "4",
        ]));
        assert_eq!(only.len(), 2 + 1);
    }

    /// UDP runs only when named, and brings the 64 B echo over TCP and UDP (issue 33's
    /// comparison) for raw and ferry-hybrid.
    #[test]
    fn udp_runs_when_named_with_the_64_byte_echo_over_tcp_and_udp() {
        assert!(plan(&args(&[])).iter().all(|p| p.transport != Transport::Udp));
        let points = plan(&args(&[
            "--systems",
            "raw,ferry-hybrid",
            "--transports",
            "tcp,udp",
            "--in-flight",
            "1,128",
        ]));
        // 2 systems x 2 transports x (2 payloads + 64 B) x 2 counts.
        assert_eq!(points.len(), 2 * 2 * 3 * 2);
        let small: Vec<(System, Transport, usize)> = points
            .iter()
            .filter(|p| p.fields == SMALL)
            .map(|p| (p.system, p.transport, p.in_flight))
            .collect();
        assert_eq!(
            small,
            [
                (System::Raw, Transport::Tcp, 1),
                (System::FerryHybrid, Transport::Tcp, 1),
                (System::Raw, Transport::Tcp, 128),
                (System::FerryHybrid, Transport::Tcp, 128),
                (System::Raw, Transport::Udp, 1),
                (System::FerryHybrid, Transport::Udp, 1),
                (System::Raw, Transport::Udp, 128),
                (System::FerryHybrid, Transport::Udp, 128),
            ]
        );
    }

    /// `--net veth` runs the event-loop systems over TCP and UDP by default, no streams, and
    /// refuses what does not cross a network; `--loss` needs veth.
    #[test]
    fn veth_runs_tcp_and_udp_between_loop_systems_and_refuses_the_rest() {
        let veth = args(&["--net", "veth"]);
        check(&veth).expect("the defaults run on veth");
        let points = plan(&veth);
        assert!(
            points.iter().all(|p| p.system.on_loop()),
            "no tonic, no ping-pong"
        );
        let mut transports: Vec<Transport> = points.iter().map(|p| p.transport).collect();
        transports.dedup();
        assert_eq!(
            crate::harness::sorted(transports),
            [Transport::Tcp, Transport::Udp]
        );
        assert!(stream_plan(&veth).is_empty());
        for refused in [
            &["--net", "veth", "--transports", "tcp,shm"][..],
            &["--net", "veth", "--systems", "raw,tonic"],
            &["--net", "veth", "--systems", "ping-pong"],
            &["--net", "veth", "--sections", "echo,streams"],
            &["--loss", "1"],
        ] {
            assert!(check(&args(refused)).is_err(), "{refused:?} must be refused");
        }
        check(&args(&["--net", "veth", "--loss", "1"])).expect("loss on veth");
    }

    #[test]
    fn sections_choose_the_echo_the_streams_or_both() {
        use crate::rpc::stream::Shape::{Download, PingPong, Upload};
        let all = args(&[]);
        assert_eq!(plan(&all).len(), 78);
        let streams = stream_plan(&all);
        // Download, upload, ping-pong at 64 B and 4 KiB: each with tonic, then Ferry over TCP
        // and shared memory, one after another.
        let carriers: Vec<(System, Transport)> = streams.iter().map(|c| (c.system, c.transport)).collect();
        let each = [
            (System::Tonic, Transport::Tcp),
            (System::FerryHybrid, Transport::Tcp),
            (System::FerryHybrid, Transport::Shm),
        ];
        assert_eq!(carriers, each.repeat(4));
        let points: Vec<_> = streams
            .iter()
            .step_by(3)
            .map(|c| (c.point.shape, c.point.size, c.point.count))
            .collect();
        assert_eq!(
            points,
            [
                (Download, 65_536, 4096),
                (Upload, 65_536, 4096),
                (PingPong, 64, 20_000),
                (PingPong, 4096, 20_000)
            ]
        );
        assert!(plan(&args(&["--sections", "streams"])).is_empty());
        assert!(stream_plan(&args(&["--sections", "echo"])).is_empty());
        let quick = stream_plan(&args(&[
            "--quick",
            "--systems",
            "ferry-hybrid",
            "--transports",
            "shm",
        ]));
        let quick: Vec<_> = quick
            .iter()
            .map(|c| (c.system, c.transport, c.point.count))
            .collect();
        let shm = |count| (System::FerryHybrid, Transport::Shm, count);
        assert_eq!(quick, [shm(256), shm(256), shm(2000), shm(2000)]);
        let counted = stream_plan(&args(&["--count", "10", "--systems", "tonic"]));
        assert_eq!(counted.len(), 4);
        assert!(counted.iter().all(|c| c.point.count == 10));
    }

    #[test]
    fn names_are_the_records_and_the_command_lines() {
        for &s in System::value_variants() {
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.name(), "{s:?}");
            assert_eq!(System::from_str(&s.name(), false), Ok(s));
        }
        assert_eq!(System::PingPong.name(), "ping-pong");
        assert_eq!(serde_json::to_value(Transport::Shm).unwrap(), "shm");
    }

    #[test]
    fn the_table_order_is_echo_variants_then_the_small_call_tonic_and_the_ping_pong() {
        let p = |system, transport, fields, in_flight| Point {
            system,
            transport,
            fields,
            in_flight,
            link: Link::Plain,
        };
        let mut points = vec![
            p(System::PingPong, Transport::Shm, SEQ, 1),
            p(System::Tonic, Transport::Tcp, ECHO, 1),
            p(System::FerryHybrid, Transport::Shm, SMALL, 1),
            p(System::Raw, Transport::Shm, ONE_KIB, 1),
            p(System::Prost, Transport::Tcp, ECHO, 16),
            p(System::Raw, Transport::Tcp, ECHO, 16),
            p(System::Raw, Transport::Tcp, ECHO, 1),
        ];
        let expected: Vec<Point> = points.iter().rev().copied().collect();
        points.sort_by_key(Point::display_key);
        assert_eq!(points, expected);
    }
}
