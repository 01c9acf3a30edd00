//! Certificates for the `tls://` tests, made once per test binary: a CA, a server certificate
//! for `localhost` and `127.0.0.1`, and a client certificate (mTLS). The server checks client
//! certificates when they are sent (optional), so clients with and without one are served.

#![allow(dead_code)]

use std::sync::OnceLock;

use ferry_net::tls::test_certs::TestCa;
use ferry_rpc::{ClientAuth, ConnConfig, TlsClient, TlsServer};

/// The client certificate's identity as handlers see it (`PeerIdentity`'s `Display`).
pub const CLIENT_IDENTITY: &str = "CN=ferry-test-client [DNS:client.test]";

/// The test PKI's configurations.
pub struct Pki {
    pub ca: TestCa,
    pub server: TlsServer,
    /// With the client certificate.
    pub client: TlsClient,
    /// Without one.
    pub anonymous: TlsClient,
}

/// The PKI of this test binary.
pub fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let ca = TestCa::new("ferry-rpc test CA");
        let server = ca.leaf("ferry-test-server", &["localhost", "127.0.0.1"]);
        let client = ca.leaf("ferry-test-client", &["client.test"]);
        let roots = ca.pem();
        Pki {
            server: TlsServer::from_pem(
                server.cert.as_bytes(),
                server.key.as_bytes(),
                ClientAuth::Optional(roots.clone().into_bytes()),
            )
            .expect("server TLS"),
            client: TlsClient::from_pem(
                roots.as_bytes(),
                Some((client.cert.as_bytes(), client.key.as_bytes())),
            )
            .expect("client TLS"),
            anonymous: TlsClient::from_pem(roots.as_bytes(), None).expect("client TLS"),
            ca,
        }
    })
}

/// `config` with the test PKI's server and client (with certificate) settings where it has
/// none of its own.
pub fn with_tls(config: ConnConfig) -> ConnConfig {
    ConnConfig {
        tls_server: config.tls_server.or_else(|| Some(pki().server.clone())),
        tls_client: config.tls_client.or_else(|| Some(pki().client.clone())),
        ..config
    }
}
