//! What each side of a TLS connection is configured with: certificates and keys from PEM,
//! roots, SNI, client certificates, and the handshake timeout.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::TransportError;

/// The default bound on a handshake: a peer that connects and says nothing holds its slot
/// this long at most.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn config_error(what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Config(format!("TLS {what}: {e}"))
}

fn read_file(path: &Path) -> Result<Vec<u8>, TransportError> {
    std::fs::read(path).map_err(|e| config_error(&format!("reading {}", path.display()), e))
}

fn certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, TransportError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| config_error(what, e))?;
    if certs.is_empty() {
        return Err(config_error(what, "no CERTIFICATE in the PEM"));
    }
    Ok(certs)
}

fn key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, TransportError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| config_error("private key", e))
}

fn roots(pem: &[u8]) -> Result<Arc<RootCertStore>, TransportError> {
    let mut store = RootCertStore::empty();
    for cert in certs(pem, "CA certificates")? {
        store.add(cert).map_err(|e| config_error("CA certificate", e))?;
    }
    Ok(Arc::new(store))
}

/// Whether a server asks its clients for certificates (mTLS).
#[derive(Debug, Clone, Default)]
pub enum ClientAuth {
    /// No client certificates (the default).
    #[default]
    None,
    /// A certificate from a CA among these roots (PEM) is required.
    Required(Vec<u8>),
    /// A certificate is checked against these roots (PEM) if the client sends one.
    Optional(Vec<u8>),
}

/// A server's TLS settings: what `tls://` listeners hand each accepted connection.
#[derive(Debug, Clone)]
pub struct TlsServer {
    /// The rustls configuration (ring provider, TLS 1.3 and 1.2).
    pub config: Arc<ServerConfig>,
    /// How long a handshake may take before the connection is closed
    /// ([`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub handshake_timeout: Duration,
}

impl TlsServer {
    /// A certificate chain and its key, PEM (the leaf first), with client certificates as
    /// `auth` says.
    pub fn from_pem(chain: &[u8], key_pem: &[u8], auth: ClientAuth) -> Result<TlsServer, TransportError> {
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| config_error("protocol versions", e))?;
        let builder = match auth {
            ClientAuth::None => builder.with_no_client_auth(),
            ClientAuth::Required(ca) => builder.with_client_cert_verifier(
                WebPkiClientVerifier::builder_with_provider(roots(&ca)?, provider())
                    .build()
                    .map_err(|e| config_error("client verifier", e))?,
            ),
            ClientAuth::Optional(ca) => builder.with_client_cert_verifier(
                WebPkiClientVerifier::builder_with_provider(roots(&ca)?, provider())
                    .allow_unauthenticated()
                    .build()
                    .map_err(|e| config_error("client verifier", e))?,
            ),
        };
        let config = builder
            .with_single_cert(certs(chain, "certificate chain")?, key(key_pem)?)
            .map_err(|e| config_error("certificate and key", e))?;
        Ok(TlsServer {
            config: Arc::new(config),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        })
    }

    /// [`from_pem`](Self::from_pem) with the PEM read from files.
    pub fn from_pem_files(chain: &Path, key: &Path, auth: ClientAuth) -> Result<TlsServer, TransportError> {
        TlsServer::from_pem(&read_file(chain)?, &read_file(key)?, auth)
    }
}

/// A client's TLS settings.
#[derive(Debug, Clone)]
pub struct TlsClient {
    /// The rustls configuration (ring provider, the roots, the client certificate if any).
    pub config: Arc<ClientConfig>,
    /// The name the server's certificate must carry (SNI); `None`: the host of the address.
    pub server_name: Option<String>,
    /// How long connecting may wait for the handshake ([`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub handshake_timeout: Duration,
}

impl TlsClient {
    /// Trusts the CA certificates in `roots_pem`; `client` is a certificate chain and key
    /// (PEM) for servers that require one (mTLS).
    pub fn from_pem(roots_pem: &[u8], client: Option<(&[u8], &[u8])>) -> Result<TlsClient, TransportError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| config_error("protocol versions", e))?
            .with_root_certificates(roots(roots_pem)?);
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((chain, key_pem)) => builder
                .with_client_auth_cert(certs(chain, "client certificate chain")?, key(key_pem)?)
                .map_err(|e| config_error("client certificate and key", e))?,
        };
        Ok(TlsClient {
            config: Arc::new(config),
            server_name: None,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        })
    }

    /// [`from_pem`](Self::from_pem) with the PEM read from files.
    pub fn from_pem_files(roots: &Path, client: Option<(&Path, &Path)>) -> Result<TlsClient, TransportError> {
        let client = match client {
            Some((chain, key)) => Some((read_file(chain)?, read_file(key)?)),
            None => None,
        };
        TlsClient::from_pem(&read_file(roots)?, client.as_ref().map(|(c, k)| (&c[..], &k[..])))
    }

    /// The SNI name to send when connecting to `host` (an address's host part, brackets of an
    /// IPv6 literal removed).
    pub fn name_for<'a>(&'a self, host: &'a str) -> &'a str {
        match &self.server_name {
            Some(name) => name,
            None => host.trim_start_matches('[').trim_end_matches(']'),
        }
    }
}
