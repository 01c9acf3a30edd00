//! `ferry bench redis --tls`: a CA and a server certificate for 127.0.0.1, made for the run
//! (rcgen, through ferry-net's test certificates) in a temporary directory that goes with it,
//! and the options that put both servers and redis-benchmark on TLS.

use std::fs;
use std::path::PathBuf;

use ferry_net::tls::test_certs::TestCa;
use tempfile::TempDir;

use crate::BoxError;

/// The run's certificate files.
#[derive(Debug)]
pub struct TlsFiles {
    /// Holds the files; removed when the run ends.
    _dir: TempDir,
    /// The CA certificate redis-benchmark trusts.
    ca: PathBuf,
    /// The servers' certificate (SAN 127.0.0.1) and key.
    cert: PathBuf,
    key: PathBuf,
}

impl TlsFiles {
    /// Makes the CA and the servers' certificate.
    pub fn new() -> Result<TlsFiles, BoxError> {
        let dir = tempfile::Builder::new()
            .prefix("ferry-bench-redis-tls")
            .tempdir()?;
        let ca = TestCa::new("ferry bench redis CA");
        let leaf = ca.leaf("ferry bench redis", &["127.0.0.1", "localhost"]);
        let write = |name: &str, pem: &str| -> Result<PathBuf, BoxError> {
            let path = dir.path().join(name);
            fs::write(&path, pem).map_err(|e| format!("writing {}: {e}", path.display()))?;
            Ok(path)
        };
        Ok(TlsFiles {
            ca: write("ca.pem", &ca.pem())?,
            cert: write("server.pem", &leaf.cert)?,
            key: write("server.key", &leaf.key)?,
            _dir: dir,
        })
    }

    /// The servers' options, redis-server's own (which `ferry redis` takes too): a TLS port
    /// (`{tls_port}`, filled in at start) beside the plain one, and no client certificates.
    pub fn server_args(&self) -> Vec<String> {
        let path = |p: &PathBuf| p.display().to_string();
        vec![
            "--tls-port".into(),
            "{tls_port}".into(),
            "--tls-cert-file".into(),
            path(&self.cert),
            "--tls-key-file".into(),
            path(&self.key),
            "--tls-ca-cert-file".into(),
            path(&self.ca),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
    }

    /// redis-benchmark's options to connect over TLS.
    pub fn client_args(&self) -> Vec<String> {
        vec!["--tls".into(), "--cacert".into(), self.ca.display().to_string()]
    }
}
