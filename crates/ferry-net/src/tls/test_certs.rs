//! Certificates for tests, made at run time with rcgen: a CA, and leaves it signs (feature
//! `test-certs`; never for production).

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, date_time_ymd};

/// A test CA.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
#[derive(Debug, Clone)]
pub struct TestCert {
    /// The certificate (PEM).
    pub cert: String,
    /// Its private key (PEM).
    pub key: String,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new self-signed CA whose common name is `name`.
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key pair");
        TestCa {
            issuer: CertifiedIssuer::self_signed(params, key).expect("self-signed CA"),
        }
    }

    /// The CA certificate (PEM): the roots a peer trusts.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `sans` (DNS names or IP addresses) with common name `cn`.
    pub fn leaf(&self, cn: &str, sans: &[&str]) -> TestCert {
        self.leaf_with(cn, sans, |_| {})
    }

    /// A certificate that expired (valid 2000-01-01 to 2001-01-01).
    pub fn expired_leaf(&self, cn: &str, sans: &[&str]) -> TestCert {
        self.leaf_with(cn, sans, |p| {
            p.not_before = date_time_ymd(2000, 1, 1);
            p.not_after = date_time_ymd(2001, 1, 1);
        })
    }

    fn leaf_with(&self, cn: &str, sans: &[&str], edit: impl FnOnce(&mut CertificateParams)) -> TestCert {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).expect("valid names");
        params.distinguished_name.push(DnType::CommonName, cn);
        edit(&mut params);
        let key = KeyPair::generate().expect("key pair");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        TestCert {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}
