//! Scratch directories for tests (shared-memory rendezvous sockets, files), removed on drop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the system's temporary directory, unique to this process and call,
/// removed with everything in it when dropped.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory whose name carries `tag`.
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ferry-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    /// `shm:///<dir>/<name>.sock`: a shared-memory address inside it.
    pub fn shm(&self, name: &str) -> String {
        format!("shm://{}/{name}.sock", self.0.display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
