//! Connection configuration and the send modes.

use std::fmt;
use std::str::FromStr;

/// How a connection hands frames to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Outgoing every message, zero-copy fields included, into a contiguous staging buffer,
    /// then `writev` it: two copies (user space, then kernel). The baseline.
    Copy,
    /// One copy: the header segments go to staging, zero-copy fields are posted as further
    /// gather entries of one `sendmsg`; the kernel copies them once.
    Gather,
    /// [`Mode::Gather`] with `MSG_ZEROCOPY`: buffers are held until the kernel's completion on
    /// the error queue.
    ZeroCopy,
    /// io_uring `SENDMSG_ZC` (or `SEND_ZC` from a registered buffer): held until the
    /// notification CQE.
    Uring,
    /// Per message: copy small values, gather large ones; zero-copy only when the kernel
    /// reports that it does not copy anyway. See [`crate::auto`].
    Auto,
}

impl Mode {
    /// Every mode, in the order benchmarks report them.
    pub const ALL: [Mode; 5] = [Mode::Copy, Mode::Gather, Mode::ZeroCopy, Mode::Uring, Mode::Auto];

    /// Lower-case name, as parsed by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            Mode::Copy => "copy",
            Mode::Gather => "gather",
            Mode::ZeroCopy => "zerocopy",
            Mode::Uring => "uring",
            Mode::Auto => "auto",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mode {s:?} (copy, gather, zerocopy, uring, auto)"))
    }
}

/// Per-connection settings. Every limit is explicit.
#[derive(Debug, Clone)]
pub struct Config {
    /// How frames reach the kernel. If the kernel lacks the feature, the connection falls back
    /// (uring → zerocopy → gather) and logs the reason once.
    pub mode: Mode,
    /// Largest payload accepted or sent. A frame that straddles reads is received into one pool
    /// buffer, so this must leave room for the 16-byte header in the pool's largest buffer; the
    /// default, 8 MiB − 16, fits the default pool.
    pub max_frame_len: usize,
    /// Flush when this many bytes are queued (default 256 KiB).
    pub batch_bytes: usize,
    /// Flush when this many frames are queued (default 64).
    pub batch_frames: usize,
    /// Size of each receive buffer (default 256 KiB). A frame that does not fit gets a buffer of
    /// its own.
    pub read_buf: usize,
    /// Length (header included) from which a received frame is *large* (default 16 KiB): once
    /// one has arrived, reads stop at the end of the next frame's header, and each frame's
    /// payload is read straight into a pool buffer of its exact size, so that no large frame is
    /// cut by a read and copied; when the last large frames had one length, each read also
    /// carries buffers of that length for the frames after it (several frames per read, see
    /// [`FrameReader`](crate::FrameReader)); after [`EXACT_SMALL_RUN`](crate::EXACT_SMALL_RUN)
    /// small frames in a row, whole read buffers are read again. A frame too long for
    /// `read_buf` is always large; `usize::MAX`: only those.
    pub exact_read_min: usize,
    /// Zero-copy bytes the kernel may hold before `send` waits for completions (default 16 MiB).
    pub max_in_flight: usize,
    /// Bytes that received frames in progress (their header read, their payload not all
    /// arrived) may hold, over every connection made with clones of this configuration: a
    /// server's (default 256 MiB, see [`FrameBudget`](crate::FrameBudget)). A frame that would
    /// pass it fails its connection with [`FrameError::OverBudget`](crate::FrameError).
    pub frame_budget: crate::FrameBudget,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            mode: Mode::Gather,
            max_frame_len: (8 << 20) - crate::frame::HEADER_LEN,
            batch_bytes: 256 << 10,
            batch_frames: 64,
            read_buf: 256 << 10,
            exact_read_min: 16 << 10,
            max_in_flight: 16 << 20,
            frame_budget: crate::FrameBudget::default(),
        }
    }
}

impl Config {
    /// The default configuration with `mode`.
    pub fn with_mode(mode: Mode) -> Config {
        Config {
            mode,
            ..Config::default()
        }
    }
}
