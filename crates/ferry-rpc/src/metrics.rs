//! The RPC server's metrics ([`Metrics`]): calls by method and status code, their latency,
//! calls in progress, open sessions, the buffer pools' occupancy and the event loops' turns,
//! encoded in the text format Prometheus scrapes. No I/O here:
//! [`MetricsEndpoint`](crate::MetricsEndpoint) serves the text.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_buf::{Pool, PoolStats};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::Code;
use crate::conn::TransportKind;

/// Status codes: gRPC's 0 ..= 16, counted in an array indexed by the code's number.
const CODES: usize = 17;
const _: () = assert!(Code::from_u8(CODES as u8 - 1).is_some() && Code::from_u8(CODES as u8).is_none());

/// Finite latency buckets: upper bounds `FIRST_BOUND_NANOS << i` for `i` in `0..BUCKETS`
/// (1 µs to 1.048576 s); one more bucket, `+Inf`, follows.
const BUCKETS: usize = 21;
/// The first bucket's upper bound: 1 µs.
const FIRST_BOUND_NANOS: u64 = 1_000;

const _: () = assert!(TransportKind::Tcp as usize == 0 && TransportKind::Shm as usize == 1);

/// The `method` label of calls to an id the server does not know.
const UNKNOWN_METHOD: &str = "unknown";

/// One server's metrics, shared by its event loops (`Arc<Metrics>`). Every update is an atomic
/// add, with no lock on the hot path; [`Metrics::encode`] renders them all in the OpenMetrics
/// text format (as `prometheus-client` encodes it) for a scrape.
///
/// # Series
///
/// | metric | type | labels |
/// |---|---|---|
/// | `ferry_rpc_requests_total` | counter | `method` (the gRPC path, or `unknown`), `code` (`OK`, `NOT_FOUND`, ...) |
/// | `ferry_rpc_request_duration_seconds` | histogram: bounds 1 µs · 2^i, i = 0..=20 (1 µs to 1.05 s), and `+Inf` | `method` |
/// | `ferry_rpc_in_flight` | gauge | |
/// | `ferry_rpc_sessions` | gauge | `transport` (`tcp`, `shm`) |
/// | `ferry_rpc_connections` | gauge: open connections, shared-memory setups included (what [`ConnLimits::max_connections`](crate::ConnLimits::max_connections) counts) | |
/// | `ferry_rpc_connections_closed_total` | counter: connections the server closed of its own accord | `reason` (`limit`, `handshake_timeout`, `handshake_failed`, `idle`) |
/// | `ferry_pool_buffers_outstanding` | gauge | `pool` |
/// | `ferry_pool_bytes_outstanding` | gauge | `pool` |
/// | `ferry_pool_mapped_bytes` | gauge | `pool` |
/// | `ferry_dgram_packets_sent_total`, `ferry_dgram_packets_received_total` | counter: the served datagram sessions' packets (received: dropped ones included) | `transport` (`udp`, `xdp`) |
/// | `ferry_dgram_retransmits_total`, `ferry_dgram_timeouts_total` | counter: data packets sent again, retransmission timeouts | `transport` |
/// | `ferry_dgram_credits_stalled_total` | counter: times a session had packets to send and no credit left | `transport` |
/// | `ferry_dgram_drops_total` | counter: packets dropped | `transport`, `reason` ([`ferry_dgram::Drops::by_reason`]) |
/// | `ferry_dgram_syscalls_total` | counter: the drivers' syscalls | `transport` |
/// | `ferry_dgram_rtt_seconds` | gauge: the smoothed RTT, averaged over the open sessions that have one | `transport` |
/// | `ferry_dgram_umem_frames_in_use` | gauge: UMEM frames in use, for a driver that has a UMEM | `transport` |
///
/// The `ferry_dgram_*` series appear with a transport's first served session; their counters
/// include closed sessions. Each event loop publishes its UDP sessions' sums (from
/// [`Conn::datagram_stats`](crate::Conn::datagram_stats)) at most every 100 ms, so a scrape
/// sees them that late at most. AF_XDP sessions share their listener's endpoint (one socket
/// per interface queue): its counters (all its sessions together, and the handshakes and
/// garbage it refused) are read at each scrape, and they appear with the listener.
///
/// A method's `OK` count and its histogram are there from the first scrape; its other codes
/// appear with their first call (17 mostly-zero series per method would drown the ones that
/// matter). `method="unknown"` counts calls to ids the server does not know; it appears with
/// the first such call.
///
/// A call's latency, as an event loop records it: a foreground unary call's is its turn's,
/// from the turn's start (after its poll) to its end, recorded there with the one clock
/// reading the turn takes after its work; a background call's runs from its dispatch to its
/// answer's arrival, a stream's from its open to its end. A foreground call is therefore
/// counted after its answer went out (as grpc-go's stats end after the status is written):
/// a scrape taken the moment a client has its answer may not count that call yet.
///
/// # Cost on the hot path
///
/// Everything is resolved at construction: [`Metrics::method`] is a binary search over the
/// method ids (no hashing, no label strings), and [`MethodMetrics::record`] is three relaxed
/// atomic adds: the counter at the code's number, the latency bucket found by integer
/// arithmetic, and the latency sum. Gauges are one atomic add. Only [`Metrics::add_pool`] and
/// a scrape take a lock. The latency histogram is this crate's own (an array of atomic buckets
/// that encodes itself through `prometheus-client`'s encoder) because `prometheus-client`'s
/// `Histogram` takes a mutex on every observation.
///
/// A scrape reads each number atomically, not all of them at one instant, as
/// [`PoolStats`] does: under load a histogram's `_sum` may be from a moment apart from its
/// buckets (its `_count` is always the sum of its buckets).
///
/// ```
/// use std::time::Duration;
/// use ferry_rpc::{Code, Metrics, TransportKind};
///
/// let say = ferry_transport::method_id("/ferry.test.Echo/Say");
/// let metrics = Metrics::new(&[("/ferry.test.Echo/Say", say)]);
///
/// metrics.sessions(TransportKind::Tcp).inc();
/// metrics.in_flight().inc();
/// metrics.method(say).record(Code::Ok, Duration::from_micros(3));
/// metrics.in_flight().dec();
///
/// let text = metrics.encode();
/// assert!(text.contains(r#"ferry_rpc_requests_total{method="/ferry.test.Echo/Say",code="OK"} 1"#));
/// assert!(text.ends_with("# EOF\n"));
/// ```
pub struct Metrics {
    table: Arc<Table>,
    in_flight: Gauge,
    /// Indexed by `TransportKind as usize`.
    sessions: [Gauge; TransportKind::ALL.len()],
    connections: Gauge,
    /// Indexed by `Closed as usize`.
    closed: [Counter; Closed::ALL.len()],
    pools: Arc<PoolCollector>,
    loops: Arc<LoopCollector>,
    datagrams: Arc<DatagramCollector>,
    /// Built in [`Metrics::new`] and never changed after: a scrape needs no lock on it.
    registry: Registry,
    /// The application's own families ([`Metrics::extend`]), encoded after the server's.
    extra: Mutex<Vec<Registry>>,
}

impl Metrics {
    /// Metrics for these methods: their gRPC paths (like `"/ferry.test.Echo/Say"`) and method
    /// ids ([`ferry_transport::method_id`]).
    ///
    /// A method listed twice (same path, same id) is counted once.
    ///
    /// # Panics
    ///
    /// If two different paths share an id: the server could not tell their calls apart either.
    pub fn new(methods: &[(&str, u16)]) -> Metrics {
        let table = Arc::new(Table::new(methods));
        let mut registry = Registry::default();

        registry.register(
            "ferry_rpc_requests",
            "Calls handled, by method and status code",
            Requests(table.clone()),
        );
        registry.register_with_unit(
            "ferry_rpc_request_duration",
            "Time from a call's request to its answer, by method",
            Unit::Seconds,
            Durations(table.clone()),
        );

        let in_flight = Gauge::default();
        registry.register(
            "ferry_rpc_in_flight",
            "Calls being handled now",
            in_flight.clone(),
        );

        let sessions = TransportKind::ALL.map(|_| Gauge::default());
        registry.register(
            "ferry_rpc_sessions",
            "Open sessions, by transport",
            Sessions(sessions.clone()),
        );

        let connections = Gauge::default();
        registry.register(
            "ferry_rpc_connections",
            "Open connections, shared-memory setups included",
            connections.clone(),
        );
        let closed = Closed::ALL.map(|_| Counter::default());
        registry.register(
            "ferry_rpc_connections_closed",
            "Connections the server closed of its own accord, by reason",
            ClosedFamily(closed.clone()),
        );

        let pools = Arc::new(PoolCollector::default());
        registry.register_collector(Box::new(pools.clone()));
        let loops = Arc::new(LoopCollector::default());
        registry.register_collector(Box::new(loops.clone()));
        let datagrams = Arc::new(DatagramCollector::default());
        registry.register_collector(Box::new(datagrams.clone()));

        Metrics {
            table,
            in_flight,
            sessions,
            connections,
            closed,
            pools,
            loops,
            datagrams,
            registry,
            extra: Mutex::new(Vec::new()),
        }
    }

    /// The metrics of method `id`, resolved at construction: no label lookup per call. Calls
    /// to an id that [`Metrics::new`] was not given are counted under `method="unknown"`.
    pub fn method(&self, id: u16) -> &MethodMetrics {
        self.table.method(id)
    }

    /// Where method `id`'s metrics are, for [`method_at`](Self::method_at); `None` for an id
    /// [`Metrics::new`] was not given.
    pub(crate) fn method_index(&self, id: u16) -> Option<usize> {
        self.table.index(id)
    }

    /// The metrics at `index`, from [`method_index`](Self::method_index): no search per call.
    pub(crate) fn method_at(&self, index: usize) -> &MethodMetrics {
        &self.table.methods[index]
    }

    /// Calls being handled now (gauge `ferry_rpc_in_flight`): `inc()` when a call starts,
    /// `dec()` when it ends.
    pub fn in_flight(&self) -> &Gauge {
        &self.in_flight
    }

    /// Open sessions on `transport` (gauge `ferry_rpc_sessions{transport}`): `inc()` when a
    /// session opens, `dec()` when it closes.
    pub fn sessions(&self, transport: TransportKind) -> &Gauge {
        &self.sessions[transport as usize]
    }

    /// Open connections, shared-memory setups included (gauge `ferry_rpc_connections`):
    /// what [`admit`](Self::admit) counts.
    pub fn connections(&self) -> i64 {
        self.connections.get()
    }

    /// Takes a place for one more connection if fewer than `max` are open: the place is
    /// the [`Admitted`] returned, given back when it is dropped (with its session); `None` at
    /// the limit (the caller closes the peer and counts it, [`Closed::Limit`]). Shared by the
    /// loops of a server: the count is one atomic add, so it never passes `max`.
    pub fn admit(&self, max: usize) -> Option<Admitted> {
        let before = self.connections.inc();
        if usize::try_from(before).is_ok_and(|n| n < max) {
            return Some(Admitted(self.connections.clone()));
        }
        self.connections.dec();
        None
    }

    /// Counts a connection the server closed of its own accord
    /// (`ferry_rpc_connections_closed_total{reason}`).
    pub fn closed(&self, reason: Closed) {
        self.closed[reason as usize].inc();
    }

    /// How many connections were closed for `reason` so far.
    pub fn closed_count(&self, reason: Closed) -> u64 {
        self.closed[reason as usize].get()
    }

    /// Adds a pool whose statistics are read at each scrape (gauges
    /// `ferry_pool_buffers_outstanding`, `ferry_pool_bytes_outstanding` and
    /// `ferry_pool_mapped_bytes`, labelled `pool=name`). The metrics hold this handle, and so
    /// the pool's memory, until they are dropped. A pool added under a name already used
    /// replaces the earlier one.
    pub fn add_pool(&self, name: &str, pool: Pool) {
        self.pools.add(name, pool);
    }

    /// Bytes outstanding in the pools added with [`add_pool`](Self::add_pool), summed (what
    /// the `ferry_pool_bytes_outstanding` gauges hold).
    pub fn pool_bytes(&self) -> u64 {
        let pools = self.pools.pools.lock().unwrap_or_else(PoisonError::into_inner);
        pools
            .iter()
            .map(|(_, p)| p.stats().bytes_outstanding() as u64)
            .sum()
    }

    /// Adds an event loop's counters, summed over the loops at each scrape: counters
    /// `ferry_rpc_loop_work_turns_total` (turns that did work) and
    /// `ferry_rpc_loop_sessions_visited_total` (sessions those turns looked at). Their ratio is
    /// the sessions a turn costs; idle sessions must not raise it.
    pub fn add_loop(&self) -> Arc<LoopCounters> {
        let counters = Arc::new(LoopCounters::default());
        self.loops
            .loops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(counters.clone());
        counters
    }

    /// Adds an endpoint whose sessions share it (an AF_XDP listener's): `stats` is read at
    /// each scrape and added to `kind`'s `ferry_dgram_*` series, once for all its sessions
    /// (their connections report none, [`Conn::datagram_stats`](crate::Conn::datagram_stats)).
    pub(crate) fn add_datagram_endpoint(&self, kind: TransportKind, stats: EndpointStats) {
        self.datagrams
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((kind, stats));
    }

    /// Adds an event loop's datagram sessions: what the loop publishes there
    /// ([`DatagramCounters::publish`]) is summed over the loops at each scrape into the
    /// `ferry_dgram_*` series.
    pub(crate) fn add_datagram_loop(&self) -> Arc<DatagramCounters> {
        let counters = Arc::new(DatagramCounters::default());
        self.datagrams
            .loops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(counters.clone());
        counters
    }

    /// Adds an application's own families (a service's state, say), encoded after the
    /// server's at each scrape, on the same endpoint. Their names must not be the server's.
    pub fn extend(&self, registry: Registry) {
        self.extra
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(registry);
    }

    /// The exposition: every series in the OpenMetrics text format, ending with `# EOF`.
    pub fn encode(&self) -> String {
        use prometheus_client::encoding::text::{encode_eof, encode_registry};
        let mut text = String::new();
        let extra = self.extra.lock().unwrap_or_else(PoisonError::into_inner);
        // Writing to a String cannot fail, and no metric here fails of its own.
        let encoded = std::iter::once(&self.registry)
            .chain(extra.iter())
            .try_for_each(|r| encode_registry(&mut text, r))
            .and_then(|()| encode_eof(&mut text));
        debug_assert!(encoded.is_ok(), "encoding the metrics failed");
        text
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field("methods", &self.table.methods.len())
            .field("in_flight", &self.in_flight.get())
            .finish_non_exhaustive()
    }
}

/// A connection's place under [`ConnLimits::max_connections`](crate::ConnLimits::max_connections)
/// ([`Metrics::admit`]): given back when dropped.
#[derive(Debug)]
pub struct Admitted(Gauge);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Why the server closed a connection of its own accord (the `reason` label of
/// `ferry_rpc_connections_closed_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Closed {
    /// Accepted over [`ConnLimits::max_connections`](crate::ConnLimits::max_connections) and
    /// closed at once.
    Limit,
    /// Its TLS or shared-memory handshake did not complete in its time.
    HandshakeTimeout,
    /// Its handshake failed (a TLS alert, a bad or partial shared-memory setup message, the
    /// peer closing).
    HandshakeFailed,
    /// Idle past [`ConnLimits::idle_timeout`](crate::ConnLimits::idle_timeout).
    Idle,
}

impl Closed {
    /// Every reason, each at the index `reason as usize`.
    pub const ALL: [Closed; 4] = [
        Closed::Limit,
        Closed::HandshakeTimeout,
        Closed::HandshakeFailed,
        Closed::Idle,
    ];

    /// The `reason` label.
    pub const fn label(self) -> &'static str {
        match self {
            Closed::Limit => "limit",
            Closed::HandshakeTimeout => "handshake_timeout",
            Closed::HandshakeFailed => "handshake_failed",
            Closed::Idle => "idle",
        }
    }
}

/// `ferry_rpc_connections_closed_total`: one counter per reason, in the order of
/// [`Closed::ALL`].
#[derive(Debug)]
struct ClosedFamily([Counter; Closed::ALL.len()]);

impl EncodeMetric for ClosedFamily {
    fn encode(&self, mut encoder: MetricEncoder) -> fmt::Result {
        for (reason, counter) in Closed::ALL.iter().zip(&self.0) {
            encoder
                .encode_family(&[("reason", reason.label())])?
                .encode_counter::<NoLabelSet, _, u64>(&counter.get(), None)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }
}

/// One method's counters and latency histogram (see [`Metrics::method`]).
pub struct MethodMetrics {
    /// The `method` label.
    path: Box<str>,
    /// Calls ended, indexed by the code's number.
    requests: [AtomicU64; CODES],
    latency: Latency,
}

impl MethodMetrics {
    fn new(path: &str) -> MethodMetrics {
        MethodMetrics {
            path: path.into(),
            requests: [const { AtomicU64::new(0) }; CODES],
            latency: Latency::default(),
        }
    }

    /// A call ended with `code` after `latency`: one more in
    /// `ferry_rpc_requests_total{method,code}` and in the bucket of `latency` of
    /// `ferry_rpc_request_duration_seconds{method}`. Three atomic adds.
    pub fn record(&self, code: Code, latency: Duration) {
        self.requests[code as usize].fetch_add(1, Relaxed);
        self.latency.observe(latency);
    }
}

impl fmt::Debug for MethodMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MethodMetrics")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The methods' metrics, shared by [`Metrics`] and the registry's encoders.
struct Table {
    /// In the order given to [`Metrics::new`].
    methods: Box<[MethodMetrics]>,
    /// `(id, index into methods)`, sorted by id.
    index: Box<[(u16, usize)]>,
    unknown: MethodMetrics,
}

impl Table {
    fn new(list: &[(&str, u16)]) -> Table {
        let mut methods = Vec::with_capacity(list.len());
        let mut index = BTreeMap::new();
        for &(path, id) in list {
            match index.entry(id) {
                Entry::Vacant(entry) => {
                    entry.insert(methods.len());
                    methods.push(MethodMetrics::new(path));
                }
                Entry::Occupied(entry) => {
                    let known: &MethodMetrics = &methods[*entry.get()];
                    assert!(
                        &*known.path == path,
                        "methods {:?} and {path:?} share the id {id}",
                        known.path
                    );
                }
            }
        }
        Table {
            methods: methods.into(),
            index: index.into_iter().collect(),
            unknown: MethodMetrics::new(UNKNOWN_METHOD),
        }
    }

    fn method(&self, id: u16) -> &MethodMetrics {
        self.index(id)
            .and_then(|at| self.methods.get(at))
            .unwrap_or(&self.unknown)
    }

    fn index(&self, id: u16) -> Option<usize> {
        let at = self.index.binary_search_by_key(&id, |&(id, _)| id).ok()?;
        Some(self.index[at].1)
    }

    /// Every method, then `unknown`: the order of the exposition.
    fn all(&self) -> impl Iterator<Item = &MethodMetrics> {
        self.methods.iter().chain([&self.unknown])
    }

    /// The methods in the exposition: every method, then `unknown` once it has had a call.
    fn exposed(&self) -> impl Iterator<Item = &MethodMetrics> {
        let unknown_called = self.unknown.requests.iter().any(|n| n.load(Relaxed) != 0);
        self.methods.iter().chain(unknown_called.then_some(&self.unknown))
    }
}

/// A latency histogram of atomic buckets.
struct Latency {
    /// Observations per bucket (not cumulative); the last is `+Inf`.
    buckets: [AtomicU64; BUCKETS + 1],
    /// Sum of the observations in nanoseconds (wraps after 584 years of latency).
    sum_nanos: AtomicU64,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency {
            buckets: [const { AtomicU64::new(0) }; BUCKETS + 1],
            sum_nanos: AtomicU64::new(0),
        }
    }
}

impl Latency {
    fn observe(&self, latency: Duration) {
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[bucket(nanos)].fetch_add(1, Relaxed);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }

    /// `(sum in seconds, count, (upper bound in seconds, observations) per bucket)`.
    fn snapshot(&self) -> (f64, u64, [(f64, u64); BUCKETS + 1]) {
        let mut buckets = [(f64::INFINITY, 0); BUCKETS + 1];
        let mut count = 0;
        for (i, (out, n)) in buckets.iter_mut().zip(&self.buckets).enumerate() {
            let n = n.load(Relaxed);
            count += n;
            *out = (upper_bound(i), n);
        }
        let sum = self.sum_nanos.load(Relaxed) as f64 / 1e9;
        (sum, count, buckets)
    }
}

/// The bucket of a latency of `nanos`: the first `i` with `nanos <= FIRST_BOUND_NANOS << i`,
/// or `BUCKETS` (`+Inf`). Integer arithmetic, so a latency on a bound is in that bound's bucket.
fn bucket(nanos: u64) -> usize {
    // nanos <= 1000 · 2^i  <=>  ceil(nanos / 1000) <= 2^i  <=>  i >= ceil(log2(ceil(nanos / 1000)))
    let units = nanos.div_ceil(FIRST_BOUND_NANOS);
    if units <= 1 {
        return 0;
    }
    let ceil_log2 = (u64::BITS - (units - 1).leading_zeros()) as usize;
    ceil_log2.min(BUCKETS)
}

/// The upper bound of bucket `i` in seconds (`+Inf` for the last).
fn upper_bound(i: usize) -> f64 {
    if i < BUCKETS {
        (FIRST_BOUND_NANOS << i) as f64 / 1e9
    } else {
        f64::INFINITY
    }
}

/// `ferry_rpc_requests_total`: a method's `OK` count always, its other codes once non-zero.
#[derive(Debug)]
struct Requests(Arc<Table>);

impl EncodeMetric for Requests {
    fn encode(&self, mut encoder: MetricEncoder) -> fmt::Result {
        for method in self.0.exposed() {
            for code in (0..CODES as u8).filter_map(Code::from_u8) {
                let count = method.requests[code as usize].load(Relaxed);
                if count == 0 && code != Code::Ok {
                    continue;
                }
                let labels = [("method", &*method.path), ("code", code.name())];
                encoder
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }
}

/// `ferry_rpc_request_duration_seconds`: one histogram per method.
#[derive(Debug)]
struct Durations(Arc<Table>);

impl EncodeMetric for Durations {
    fn encode(&self, mut encoder: MetricEncoder) -> fmt::Result {
        for method in self.0.exposed() {
            let (sum, count, buckets) = method.latency.snapshot();
            encoder
                .encode_family(&[("method", &*method.path)])?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// `ferry_rpc_sessions`: one gauge per transport, in the order of [`TransportKind::ALL`].
#[derive(Debug)]
struct Sessions([Gauge; TransportKind::ALL.len()]);

impl EncodeMetric for Sessions {
    fn encode(&self, mut encoder: MetricEncoder) -> fmt::Result {
        for (kind, gauge) in TransportKind::ALL.iter().zip(&self.0) {
            encoder
                .encode_family(&[("transport", kind.label())])?
                .encode_gauge(&gauge.get())?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.all().map(|m| &m.path)).finish()
    }
}

/// One of the pool gauges: how to describe it and which number of [`PoolStats`] it shows.
struct PoolGauge {
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    value: fn(&PoolStats) -> usize,
}

/// One event loop's counters ([`Metrics::add_loop`]): written by that loop alone, so each add
/// is uncontended.
#[derive(Debug, Default)]
pub struct LoopCounters {
    work_turns: AtomicU64,
    visited: AtomicU64,
}

impl LoopCounters {
    /// Counts a turn that did work and the sessions it looked at.
    pub fn add(&self, visited: usize) {
        self.work_turns.fetch_add(1, Relaxed);
        self.visited.fetch_add(visited as u64, Relaxed);
    }
}

#[derive(Debug, Default)]
struct LoopCollector {
    loops: Mutex<Vec<Arc<LoopCounters>>>,
}

impl Collector for LoopCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let (turns, visited) = {
            let loops = self.loops.lock().unwrap_or_else(PoisonError::into_inner);
            if loops.is_empty() {
                return Ok(());
            }
            loops.iter().fold((0, 0), |(t, v), c| {
                (t + c.work_turns.load(Relaxed), v + c.visited.load(Relaxed))
            })
        };
        for (name, help, value) in [
            (
                "ferry_rpc_loop_work_turns",
                "Event-loop turns that did work",
                turns,
            ),
            (
                "ferry_rpc_loop_sessions_visited",
                "Sessions the event loops' working turns looked at",
                visited,
            ),
        ] {
            let counter: Counter = Counter::default();
            counter.inc_by(value);
            let metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            counter.encode(metric)?;
        }
        Ok(())
    }
}

/// Drop reasons: [`Drops::by_reason`](ferry_dgram::Drops::by_reason)'s length.
const DROP_REASONS: usize = 11;

/// Datagram sessions' counters summed, for one transport ([`DatagramCounters::publish`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DatagramSum {
    /// Whether any session was added (its series are then encoded).
    seen: bool,
    packets_sent: u64,
    packets_received: u64,
    retransmits: u64,
    timeouts: u64,
    credits_stalled: u64,
    syscalls: u64,
    drops: [u64; DROP_REASONS],
    /// Smoothed RTTs of open sessions, summed, and how many.
    rtt_sum: Duration,
    rtt_sessions: u32,
    umem_frames_in_use: Option<u64>,
}

impl DatagramSum {
    /// Adds a session's counters; with `open`, its gauges (RTT, UMEM frames) too.
    pub(crate) fn add(&mut self, stats: &ferry_dgram::DriverStats, open: bool) {
        let e = &stats.endpoint;
        self.seen = true;
        self.packets_sent += e.packets_sent;
        self.packets_received += e.packets_received;
        self.retransmits += e.retransmits;
        self.timeouts += e.timeouts;
        self.credits_stalled += e.credits_stalled;
        self.syscalls += stats.syscalls;
        for (sum, (_, n)) in self.drops.iter_mut().zip(e.drops.by_reason()) {
            *sum += n;
        }
        if !open {
            return;
        }
        if let Some(rtt) = e.rtt {
            self.rtt_sum += rtt;
            self.rtt_sessions += 1;
        }
        if let Some(frames) = stats.umem_frames_in_use {
            *self.umem_frames_in_use.get_or_insert(0) += frames;
        }
    }

    /// The counters of both, and the gauges of both.
    fn merge(&mut self, other: &DatagramSum) {
        self.seen |= other.seen;
        self.packets_sent += other.packets_sent;
        self.packets_received += other.packets_received;
        self.retransmits += other.retransmits;
        self.timeouts += other.timeouts;
        self.credits_stalled += other.credits_stalled;
        self.syscalls += other.syscalls;
        for (a, b) in self.drops.iter_mut().zip(other.drops) {
            *a += b;
        }
        self.rtt_sum += other.rtt_sum;
        self.rtt_sessions += other.rtt_sessions;
        if let Some(frames) = other.umem_frames_in_use {
            *self.umem_frames_in_use.get_or_insert(0) += frames;
        }
    }
}

/// One event loop's datagram sessions ([`Metrics::add_datagram_loop`]), by transport: the
/// loop publishes its sums now and then, a scrape reads them.
#[derive(Debug, Default)]
pub(crate) struct DatagramCounters {
    sums: Mutex<[DatagramSum; TransportKind::ALL.len()]>,
}

impl DatagramCounters {
    /// Replaces the loop's sums, indexed by `TransportKind as usize`: its closed sessions'
    /// counters plus its open sessions' counters and gauges.
    pub(crate) fn publish(&self, sums: [DatagramSum; TransportKind::ALL.len()]) {
        *self.sums.lock().unwrap_or_else(PoisonError::into_inner) = sums;
    }
}

/// A `ferry_dgram_*` counter: its name, its help, and which sum it shows.
type DatagramCounter = (&'static str, &'static str, fn(&DatagramSum) -> u64);

/// A shared endpoint's statistics, read at each scrape ([`Metrics::add_datagram_endpoint`]).
pub(crate) type EndpointStats = Box<dyn Fn() -> ferry_dgram::DriverStats + Send + Sync>;

#[derive(Default)]
struct DatagramCollector {
    loops: Mutex<Vec<Arc<DatagramCounters>>>,
    endpoints: Mutex<Vec<(TransportKind, EndpointStats)>>,
}

impl fmt::Debug for DatagramCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatagramCollector").finish_non_exhaustive()
    }
}

impl Collector for DatagramCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let mut sums = [DatagramSum::default(); TransportKind::ALL.len()];
        for counters in self.loops.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let published = *counters.sums.lock().unwrap_or_else(PoisonError::into_inner);
            for (sum, p) in sums.iter_mut().zip(&published) {
                sum.merge(p);
            }
        }
        for (kind, stats) in self
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            sums[*kind as usize].add(&stats(), true);
        }
        let kinds: Vec<(&str, DatagramSum)> = TransportKind::ALL
            .iter()
            .zip(sums)
            .filter(|(_, s)| s.seen)
            .map(|(k, s)| (k.label(), s))
            .collect();
        if kinds.is_empty() {
            return Ok(());
        }
        let counters: [DatagramCounter; 6] = [
            ("ferry_dgram_packets_sent", "Datagram packets sent", |s| {
                s.packets_sent
            }),
            (
                "ferry_dgram_packets_received",
                "Datagram packets received, dropped ones included",
                |s| s.packets_received,
            ),
            ("ferry_dgram_retransmits", "Data packets sent again", |s| {
                s.retransmits
            }),
            ("ferry_dgram_timeouts", "Retransmission timeouts", |s| s.timeouts),
            (
                "ferry_dgram_credits_stalled",
                "Times a session had packets to send and no credit left",
                |s| s.credits_stalled,
            ),
            ("ferry_dgram_syscalls", "Datagram drivers' syscalls", |s| {
                s.syscalls
            }),
        ];
        for (name, help, value) in counters {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (kind, sum) in &kinds {
                metric
                    .encode_family(&[("transport", *kind)])?
                    .encode_counter::<NoLabelSet, _, u64>(&value(sum), None)?;
            }
        }
        let mut metric = encoder.encode_descriptor(
            "ferry_dgram_drops",
            "Datagram packets dropped, by reason",
            None,
            MetricType::Counter,
        )?;
        for (kind, sum) in &kinds {
            let reasons = ferry_dgram::Drops::default().by_reason();
            for ((reason, _), n) in reasons.iter().zip(sum.drops) {
                metric
                    .encode_family(&[("transport", *kind), ("reason", *reason)])?
                    .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
        }
        let rtts: Vec<_> = kinds
            .iter()
            .filter(|(_, s)| s.rtt_sessions > 0)
            .map(|(k, s)| (*k, (s.rtt_sum / s.rtt_sessions).as_secs_f64()))
            .collect();
        if !rtts.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "ferry_dgram_rtt",
                "Smoothed RTT, averaged over the open datagram sessions that have one",
                Some(&Unit::Seconds),
                MetricType::Gauge,
            )?;
            for (kind, rtt) in rtts {
                metric.encode_family(&[("transport", kind)])?.encode_gauge(&rtt)?;
            }
        }
        let umem: Vec<_> = kinds
            .iter()
            .filter_map(|(k, s)| Some((*k, s.umem_frames_in_use?)))
            .collect();
        if !umem.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "ferry_dgram_umem_frames_in_use",
                "UMEM frames in use",
                None,
                MetricType::Gauge,
            )?;
            for (kind, frames) in umem {
                metric
                    .encode_family(&[("transport", kind)])?
                    .encode_gauge(&frames)?;
            }
        }
        Ok(())
    }
}

/// The pools, read when a scrape encodes them.
#[derive(Debug, Default)]
struct PoolCollector {
    /// `(name, pool)`, in the order added.
    pools: Mutex<Vec<(String, Pool)>>,
}

impl PoolCollector {
    fn add(&self, name: &str, pool: Pool) {
        // A panic elsewhere while holding the lock leaves the list consistent: use it.
        let mut pools = self.pools.lock().unwrap_or_else(PoisonError::into_inner);
        match pools.iter_mut().find(|(n, _)| n == name) {
            Some((_, old)) => *old = pool,
            None => pools.push((name.to_owned(), pool)),
        }
    }
}

impl Collector for PoolCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let stats: Vec<_> = {
            let pools = self.pools.lock().unwrap_or_else(PoisonError::into_inner);
            pools
                .iter()
                .map(|(name, pool)| (name.clone(), pool.stats()))
                .collect()
        };
        if stats.is_empty() {
            return Ok(());
        }
        let gauges = [
            PoolGauge {
                name: "ferry_pool_buffers_outstanding",
                help: "Buffers handed out by the pool and not yet returned.",
                unit: None,
                value: PoolStats::buffers_outstanding,
            },
            PoolGauge {
                name: "ferry_pool_bytes_outstanding",
                help: "Capacity bytes of the buffers handed out and not yet returned.",
                unit: None,
                value: PoolStats::bytes_outstanding,
            },
            PoolGauge {
                // The encoder appends the unit: ferry_pool_mapped_bytes.
                name: "ferry_pool_mapped",
                help: "Bytes of the pool's mapped regions.",
                unit: Some(Unit::Bytes),
                value: |s| s.mapped_bytes,
            },
        ];
        for gauge in &gauges {
            let mut metric =
                encoder.encode_descriptor(gauge.name, gauge.help, gauge.unit.as_ref(), MetricType::Gauge)?;
            for (pool, stats) in &stats {
                metric
                    .encode_family(&[("pool", pool.as_str())])?
                    .encode_gauge(&(gauge.value)(stats))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_buf::PoolConfig;
    use proptest::prelude::*;

    const SAY: (&str, u16) = ("/ferry.test.Echo/Say", 7);
    const SHOUT: (&str, u16) = ("/ferry.test.Echo/Shout", 3);

    #[test]
    fn extended_families_follow_the_servers_before_one_eof() {
        let metrics = Metrics::new(&[SAY]);
        let mut app = Registry::default();
        let applied = Counter::<u64>::default();
        app.register("app_applied", "Applied", applied.clone());
        metrics.extend(app);
        applied.inc_by(5);
        let text = metrics.encode();
        assert_eq!(sample(&text, "app_applied_total").as_deref(), Some("5"));
        assert!(text.find("ferry_rpc_in_flight").unwrap() < text.find("app_applied").unwrap());
        assert_eq!(text.matches("# EOF").count(), 1);
        assert!(text.ends_with("# EOF\n"));
    }

    /// The sample of `series` (name and labels as written), if the text has it.
    fn sample(text: &str, series: &str) -> Option<String> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map(str::to_owned)
    }

    #[test]
    fn buckets_by_integer_bounds() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 0);
        for i in 0..BUCKETS {
            let bound = FIRST_BOUND_NANOS << i;
            assert_eq!(bucket(bound), i, "on the bound of {i}");
            assert_eq!(bucket(bound + 1), i + 1, "just above the bound of {i}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS);
        assert_eq!(upper_bound(0), 1e-6);
        assert_eq!(upper_bound(BUCKETS - 1), 1.048576);
        assert_eq!(upper_bound(BUCKETS), f64::INFINITY);
    }

    proptest! {
        #[test]
        fn bucket_is_the_first_bound_not_below(nanos in any::<u64>(), small in 0u64..5_000_000) {
            for n in [nanos, small] {
                let naive = (0..BUCKETS).find(|&i| n <= FIRST_BOUND_NANOS << i).unwrap_or(BUCKETS);
                prop_assert_eq!(bucket(n), naive);
            }
        }
    }

    #[test]
    fn code_names_are_grpcs() {
        let names: Vec<_> = (0..CODES as u8)
            .filter_map(Code::from_u8)
            .map(Code::name)
            .collect();
        assert_eq!(
            names,
            [
                "OK",
                "CANCELLED",
                "UNKNOWN",
                "INVALID_ARGUMENT",
                "DEADLINE_EXCEEDED",
                "NOT_FOUND",
                "ALREADY_EXISTS",
                "PERMISSION_DENIED",
                "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION",
                "ABORTED",
                "OUT_OF_RANGE",
                "UNIMPLEMENTED",
                "INTERNAL",
                "UNAVAILABLE",
                "DATA_LOSS",
                "UNAUTHENTICATED"
            ]
        );
    }

    #[test]
    fn counts_and_buckets_by_method_and_code() {
        let metrics = Metrics::new(&[SAY, SHOUT]);
        let say = metrics.method(SAY.1);
        say.record(Code::Ok, Duration::from_nanos(500));
        say.record(Code::Ok, Duration::from_nanos(3_000));
        say.record(Code::NotFound, Duration::from_secs(2));
        metrics
            .method(SHOUT.1)
            .record(Code::DeadlineExceeded, Duration::from_millis(1));
        let text = metrics.encode();

        let say = r#"method="/ferry.test.Echo/Say""#;
        let shout = r#"method="/ferry.test.Echo/Shout""#;
        let requests = |labels: &str| sample(&text, &format!("ferry_rpc_requests_total{{{labels}}}"));
        assert_eq!(requests(&format!(r#"{say},code="OK""#)).as_deref(), Some("2"));
        assert_eq!(
            requests(&format!(r#"{say},code="NOT_FOUND""#)).as_deref(),
            Some("1")
        );
        assert_eq!(
            requests(&format!(r#"{say},code="CANCELLED""#)),
            None,
            "zero, not OK: absent"
        );
        assert_eq!(requests(&format!(r#"{shout},code="OK""#)).as_deref(), Some("0"));
        assert_eq!(
            requests(&format!(r#"{shout},code="DEADLINE_EXCEEDED""#)).as_deref(),
            Some("1")
        );
        assert!(text.contains("# TYPE ferry_rpc_requests counter\n"));

        let duration = |suffix: &str, labels: &str| {
            sample(
                &text,
                &format!("ferry_rpc_request_duration_seconds_{suffix}{{{labels}}}"),
            )
        };
        // 500 ns <= 1 µs; 3 µs <= 4 µs; 2 s only in +Inf. Buckets are cumulative.
        for (le, n) in [
            ("0.000001", "1"),
            ("0.000002", "1"),
            ("0.000004", "2"),
            ("1.048576", "2"),
            ("+Inf", "3"),
        ] {
            assert_eq!(
                duration("bucket", &format!(r#"le="{le}",{say}"#)).as_deref(),
                Some(n),
                "bucket le={le}"
            );
        }
        assert_eq!(duration("count", say).as_deref(), Some("3"));
        assert_eq!(duration("sum", say).as_deref(), Some("2.0000035"));
        assert_eq!(duration("count", shout).as_deref(), Some("1"));
        assert_eq!(
            duration("bucket", &format!(r#"le="0.001024",{shout}"#)).as_deref(),
            Some("1")
        );
        assert_eq!(
            duration("bucket", &format!(r#"le="0.000512",{shout}"#)).as_deref(),
            Some("0")
        );
        assert!(text.contains("# TYPE ferry_rpc_request_duration_seconds histogram\n"));
        assert!(text.contains("# UNIT ferry_rpc_request_duration_seconds seconds\n"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn unknown_ids_are_counted_as_unknown() {
        let metrics = Metrics::new(&[SAY]);
        let unknown = metrics.method(SAY.1 + 1);
        assert!(std::ptr::eq(unknown, metrics.method(0)));
        assert!(!std::ptr::eq(unknown, metrics.method(SAY.1)));
        unknown.record(Code::Unimplemented, Duration::from_micros(2));
        let text = metrics.encode();
        assert_eq!(
            sample(
                &text,
                r#"ferry_rpc_requests_total{method="unknown",code="UNIMPLEMENTED"}"#
            )
            .as_deref(),
            Some("1")
        );
        assert_eq!(
            sample(
                &text,
                r#"ferry_rpc_requests_total{method="/ferry.test.Echo/Say",code="UNIMPLEMENTED"}"#
            ),
            None
        );
        assert_eq!(
            sample(
                &text,
                r#"ferry_rpc_request_duration_seconds_count{method="unknown"}"#
            )
            .as_deref(),
            Some("1")
        );
    }

    #[test]
    fn unknown_appears_with_its_first_call() {
        let metrics = Metrics::new(&[SAY]);
        assert!(!metrics.encode().contains(r#"method="unknown""#));
        metrics.method(0).record(Code::Unimplemented, Duration::ZERO);
        let text = metrics.encode();
        assert_eq!(
            sample(&text, r#"ferry_rpc_requests_total{method="unknown",code="OK"}"#).as_deref(),
            Some("0")
        );
        assert_eq!(
            sample(
                &text,
                r#"ferry_rpc_request_duration_seconds_bucket{le="0.000001",method="unknown"}"#
            )
            .as_deref(),
            Some("1")
        );
    }

    #[test]
    fn no_methods_at_all() {
        let metrics = Metrics::new(&[]);
        metrics.method(SAY.1).record(Code::Ok, Duration::ZERO);
        let text = metrics.encode();
        assert_eq!(
            sample(&text, r#"ferry_rpc_requests_total{method="unknown",code="OK"}"#).as_deref(),
            Some("1")
        );
    }

    #[test]
    fn a_method_listed_twice_is_counted_once() {
        let metrics = Metrics::new(&[SAY, SHOUT, SAY]);
        metrics.method(SAY.1).record(Code::Ok, Duration::ZERO);
        let text = metrics.encode();
        let series = r#"ferry_rpc_requests_total{method="/ferry.test.Echo/Say",code="OK"} 1"#;
        assert_eq!(text.matches(series).count(), 1);
    }

    #[test]
    #[should_panic(expected = "share the id 7")]
    fn two_paths_with_one_id_are_refused() {
        Metrics::new(&[SAY, ("/ferry.test.Echo/Other", SAY.1)]);
    }

    #[test]
    fn gauges_in_flight_sessions_and_connections() {
        let metrics = Metrics::new(&[SAY]);
        metrics.in_flight().inc();
        metrics.in_flight().inc();
        metrics.in_flight().dec();
        metrics.sessions(TransportKind::Shm).inc();
        let admitted = metrics.admit(1).expect("room for one");
        assert!(metrics.admit(1).is_none(), "the second is over the limit");
        metrics.closed(Closed::Limit);
        let text = metrics.encode();
        assert_eq!(sample(&text, "ferry_rpc_connections").as_deref(), Some("1"));
        assert_eq!(
            sample(&text, r#"ferry_rpc_connections_closed_total{reason="limit"}"#).as_deref(),
            Some("1")
        );
        drop(admitted);
        assert_eq!(metrics.connections(), 0, "a dropped place is given back");
        assert_eq!(sample(&text, "ferry_rpc_in_flight").as_deref(), Some("1"));
        assert_eq!(
            sample(&text, r#"ferry_rpc_sessions{transport="shm"}"#).as_deref(),
            Some("1")
        );
        assert_eq!(
            sample(&text, r#"ferry_rpc_sessions{transport="tcp"}"#).as_deref(),
            Some("0")
        );
    }

    #[test]
    fn pool_stats_are_read_at_each_scrape() {
        let pool = Pool::new(PoolConfig {
            region_size: 64 << 10,
            max_bytes: 1 << 20,
            ..PoolConfig::default()
        })
        .expect("pool");
        let metrics = Metrics::new(&[SAY]);
        assert!(
            !metrics.encode().contains("ferry_pool"),
            "no pool, no pool series"
        );
        metrics.add_pool("rx", pool.clone());

        let buffer = pool.alloc(1000).expect("buffer");
        let text = metrics.encode();
        assert_eq!(
            sample(&text, r#"ferry_pool_buffers_outstanding{pool="rx"}"#).as_deref(),
            Some("1")
        );
        assert_eq!(
            sample(&text, r#"ferry_pool_bytes_outstanding{pool="rx"}"#).as_deref(),
            Some("1024")
        );
        assert_eq!(
            sample(&text, r#"ferry_pool_mapped_bytes{pool="rx"}"#).as_deref(),
            Some("65536")
        );
        assert!(text.contains("# TYPE ferry_pool_mapped_bytes gauge\n"));

        drop(buffer);
        let text = metrics.encode();
        assert_eq!(
            sample(&text, r#"ferry_pool_buffers_outstanding{pool="rx"}"#).as_deref(),
            Some("0")
        );
        assert_eq!(
            sample(&text, r#"ferry_pool_bytes_outstanding{pool="rx"}"#).as_deref(),
            Some("0")
        );
        assert_eq!(
            sample(&text, r#"ferry_pool_mapped_bytes{pool="rx"}"#).as_deref(),
            Some("65536")
        );
    }

    #[test]
    fn a_pool_added_again_under_its_name_replaces_it() {
        let config = PoolConfig {
            region_size: 64 << 10,
            max_bytes: 1 << 20,
            ..PoolConfig::default()
        };
        let (a, b) = (
            Pool::new(config.clone()).expect("pool"),
            Pool::new(config).expect("pool"),
        );
        let metrics = Metrics::new(&[]);
        metrics.add_pool("tx", a);
        metrics.add_pool("tx", b.clone());
        let _held = b.alloc(10).expect("buffer");
        let text = metrics.encode();
        assert_eq!(text.matches("ferry_pool_buffers_outstanding{").count(), 1);
        assert_eq!(
            sample(&text, r#"ferry_pool_buffers_outstanding{pool="tx"}"#).as_deref(),
            Some("1")
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let metrics = Metrics::new(&[("/a\"b\\c\nd", 1)]);
        let text = metrics.encode();
        assert!(text.contains(r#"ferry_rpc_requests_total{method="/a\"b\\c\nd",code="OK"} 0"#));
    }

    #[test]
    fn records_from_many_threads_all_count() {
        const THREADS: u64 = 4;
        const CALLS: u64 = 10_000;
        let metrics = Arc::new(Metrics::new(&[SAY]));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let metrics = metrics.clone();
                std::thread::spawn(move || {
                    for i in 0..CALLS {
                        metrics.method(SAY.1).record(Code::Ok, Duration::from_nanos(i));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("recording thread");
        }
        let text = metrics.encode();
        let total = (THREADS * CALLS).to_string();
        assert_eq!(
            sample(
                &text,
                r#"ferry_rpc_requests_total{method="/ferry.test.Echo/Say",code="OK"}"#
            ),
            Some(total.clone())
        );
        assert_eq!(
            sample(
                &text,
                r#"ferry_rpc_request_duration_seconds_bucket{le="+Inf",method="/ferry.test.Echo/Say"}"#
            ),
            Some(total)
        );
    }

    #[test]
    fn metrics_are_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Metrics>();
        send_sync::<MethodMetrics>();
    }
}
