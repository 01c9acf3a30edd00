//! Why a TLS connection failed, named.

use std::io;

use rustls::{AlertDescription, CertificateError};

use crate::TransportError;

/// Why a TLS handshake or connection failed. Each cause is named whether this side found it
/// (a certificate it checked) or the peer did and said so in its alert.
///
/// It reaches callers inside [`TransportError::Io`] (op `"tls"`); [`TlsError::of`] finds it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate chain does not lead to a trusted root.
    #[error("certificate issued by an unknown CA")]
    UnknownCa,
    /// The certificate has expired.
    #[error("certificate expired")]
    Expired,
    /// The certificate is not valid yet.
    #[error("certificate not valid yet")]
    NotYetValid,
    /// The server's certificate does not name the host the client asked for (SNI).
    #[error("certificate not valid for the name asked for")]
    NameMismatch,
    /// The server requires a client certificate and the client sent none.
    #[error("no client certificate, and the server requires one")]
    NoClientCert,
    /// The peer does not speak TLS (its first bytes are not a TLS record).
    #[error("the peer does not speak TLS")]
    NotTls,
    /// The peer closed the connection before the handshake finished.
    #[error("the peer closed the connection during the TLS handshake")]
    ClosedInHandshake,
    /// The handshake did not finish within the configured timeout.
    #[error("the TLS handshake did not finish within {0:?}")]
    HandshakeTimeout(std::time::Duration),
    /// Any other certificate problem (bad encoding, signature, revoked, ...).
    #[error("bad certificate: {0}")]
    BadCertificate(String),
    /// Any other TLS failure, as rustls names it.
    #[error("{0}")]
    Other(String),
}

impl TlsError {
    /// The TLS error inside `e`, if it is one.
    pub fn of(e: &TransportError) -> Option<&TlsError> {
        match e {
            TransportError::Io { op: "tls", source } => source.get_ref()?.downcast_ref::<TlsError>(),
            _ => None,
        }
    }

    /// Wraps it in a [`TransportError`] (`Io` with op `"tls"`).
    pub fn into_transport(self) -> TransportError {
        TransportError::Io {
            op: "tls",
            source: io::Error::new(io::ErrorKind::InvalidData, self),
        }
    }

    /// Names what rustls reported. `handshaking`: whether the handshake was in progress (a
    /// malformed first record then means the peer does not speak TLS). Public for servers that
    /// drive rustls through another crate (the gateway's tokio-rustls), so their logs name
    /// causes as ferry-net's do.
    pub fn from_rustls(e: &rustls::Error, handshaking: bool) -> TlsError {
        use rustls::Error as E;
        match e {
            E::InvalidCertificate(c) => match c {
                CertificateError::UnknownIssuer => TlsError::UnknownCa,
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => TlsError::Expired,
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    TlsError::NotYetValid
                }
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                    TlsError::NameMismatch
                }
                other => TlsError::BadCertificate(format!("{other:?}")),
            },
            E::NoCertificatesPresented => TlsError::NoClientCert,
            E::AlertReceived(alert) => match alert {
                AlertDescription::UnknownCA => TlsError::UnknownCa,
                AlertDescription::CertificateExpired => TlsError::Expired,
                AlertDescription::CertificateRequired => TlsError::NoClientCert,
                other => TlsError::Other(format!("the peer sent alert {other:?}")),
            },
            E::InvalidMessage(_) if handshaking => TlsError::NotTls,
            other => TlsError::Other(other.to_string()),
        }
    }
}
