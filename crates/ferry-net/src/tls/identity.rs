//! The peer's identity: its certificate's subject and subject alternative names.

use std::net::IpAddr;

use x509_parser::extensions::GeneralName;

/// Who the peer is, by the certificate it presented (and this side verified): on a server
/// with client certificates (mTLS), the client; on a client, the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    /// The subject's distinguished name, RFC 4514 style (`CN=client-a, O=Example`).
    pub subject: String,
    /// Subject alternative names: `DNS:name`, `IP:addr`, `URI:uri`, `email:addr`.
    pub sans: Vec<String>,
    /// The end-entity certificate, DER.
    pub der: Vec<u8>,
}

impl PeerIdentity {
    /// Reads the subject and SANs of a DER certificate. `None` if it does not parse (a
    /// certificate the verifier accepted parses).
    pub fn from_der(der: &[u8]) -> Option<PeerIdentity> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let mut sans = Vec::new();
        if let Ok(Some(ext)) = cert.subject_alternative_name() {
            for name in &ext.value.general_names {
                match name {
                    GeneralName::DNSName(n) => sans.push(format!("DNS:{n}")),
                    GeneralName::URI(u) => sans.push(format!("URI:{u}")),
                    GeneralName::RFC822Name(m) => sans.push(format!("email:{m}")),
                    GeneralName::IPAddress(b) => {
                        let ip = match b.len() {
                            4 => <[u8; 4]>::try_from(*b).ok().map(IpAddr::from),
                            16 => <[u8; 16]>::try_from(*b).ok().map(IpAddr::from),
                            _ => None,
                        };
                        if let Some(ip) = ip {
                            sans.push(format!("IP:{ip}"));
                        }
                    }
                    _ => {}
                }
            }
        }
        Some(PeerIdentity {
            subject: cert.subject().to_string(),
            sans,
            der: der.to_vec(),
        })
    }
}

impl std::fmt::Display for PeerIdentity {
    /// `subject [san, san]`: `CN=client-a [DNS:client-a.example, IP:10.0.0.7]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}]", self.subject, self.sans.join(", "))
    }
}
