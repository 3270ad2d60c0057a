//! Test certificates: a CA and the leaves it signs, written as PEM files into a directory.

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

/// A CA (common name `name`) whose certificate is written to `dir/NAME.pem`.
pub fn ca(dir: &Path, name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    let cert = p.self_signed(&key).unwrap();
    std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
    (cert, key)
}

/// A certificate for `sans` signed by `ca`, written to `dir/NAME.pem` with its key in
/// `dir/NAME.key`.
pub fn leaf(dir: &Path, name: &str, sans: &[&str], ca: &(rcgen::Certificate, KeyPair)) {
    let key = KeyPair::generate().unwrap();
    let p = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = p.signed_by(&key, &ca.0, &ca.1).unwrap();
    std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}
