//! Run-time probes for the kernel features the send modes need, and the fallback rule.

use std::net::TcpListener;
use std::os::fd::AsFd;
use std::sync::{Mutex, OnceLock};

use io_uring::{IoUring, Probe, opcode};

use crate::Mode;
use crate::sys::socket;

/// What this kernel offers. Each field is `Ok` or the reason it is unavailable.
#[derive(Debug, Clone)]
pub struct Features {
    /// `SO_ZEROCOPY` / `MSG_ZEROCOPY` on TCP sockets.
    pub so_zerocopy: Result<(), String>,
    /// An io_uring instance can be created.
    pub io_uring: Result<(), String>,
    /// io_uring `SEND_ZC` and `SENDMSG_ZC`.
    pub send_zc: Result<(), String>,
}

/// The kernel's features, probed once per process.
pub fn features() -> &'static Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    FEATURES.get_or_init(|| {
        let so_zerocopy = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("no TCP socket to probe with: {e}"))
            .and_then(|l| {
                socket::enable_zerocopy(l.as_fd()).map_err(|e| format!("setsockopt(SO_ZEROCOPY): {e}"))
            });
        let ring = IoUring::new(2).map_err(|e| format!("io_uring_setup: {e}"));
        let io_uring = ring.as_ref().map(|_| ()).map_err(Clone::clone);
        let send_zc = ring.and_then(|ring| {
            let mut probe = Probe::new();
            ring.submitter()
                .register_probe(&mut probe)
                .map_err(|e| format!("IORING_REGISTER_PROBE: {e}"))?;
            if probe.is_supported(opcode::SendZc::CODE) && probe.is_supported(opcode::SendMsgZc::CODE) {
                Ok(())
            } else {
                Err("the kernel lacks IORING_OP_SEND_ZC / SENDMSG_ZC".to_owned())
            }
        });
        Features {
            so_zerocopy,
            io_uring,
            send_zc,
        }
    })
}

/// The mode a connection asked for `mode` actually uses: uring falls back to zerocopy, and
/// zerocopy to gather, when the kernel lacks the feature. Each fallback is logged once per
/// process, to standard error.
pub fn effective_mode(mode: Mode) -> Mode {
    let f = features();
    let (fallback, reason) = match (mode, &f.send_zc, &f.so_zerocopy) {
        (Mode::Uring, Err(why), Ok(())) => (Mode::ZeroCopy, why),
        (Mode::Uring | Mode::ZeroCopy, _, Err(why)) if mode == Mode::ZeroCopy || f.send_zc.is_err() => {
            (Mode::Gather, why)
        }
        _ => return mode,
    };
    static LOGGED: Mutex<Vec<Mode>> = Mutex::new(Vec::new());
    let mut logged = LOGGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !logged.contains(&mode) {
        logged.push(mode);
        eprintln!("ferry-net: {mode} mode unavailable ({reason}); using {fallback}");
    }
    fallback
}
