//! TLS with rustls (ring): the client listener's configuration (reloaded on SIGHUP: new
//! connections get the new certificate, open ones keep theirs), client certificates (mTLS)
//! and the identity they name, and the client side towards other servers and PostgreSQL.

use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::security::{ClientAuth, Security};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM file.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", path.display()));
    }
    Ok(certs)
}

/// The private key of a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A root store of the CA certificates of a PEM file.
pub fn load_roots(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for c in load_certs(path)? {
        roots.add(c).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(roots)
}

/// The client listener's configuration from the files the settings name.
pub fn server_config(s: &Security) -> Result<Option<Arc<ServerConfig>>, String> {
    let Some((cert, key)) = &s.tls else { return Ok(None) };
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &s.client_ca {
        None => builder.with_no_client_auth(),
        Some((ca, mode)) => {
            let v =
                WebPkiClientVerifier::builder_with_provider(Arc::new(load_roots(ca)?), provider());
            let v = match mode {
                ClientAuth::Required => v,
                ClientAuth::Optional => v.allow_unauthenticated(),
            };
            builder
                .with_client_cert_verifier(v.build().map_err(|e| format!("{}: {e}", ca.display()))?)
        }
    };
    let mut config = builder
        .with_single_cert(load_certs(cert)?, load_key(key)?)
        .map_err(|e| format!("{} / {}: {e}", cert.display(), key.display()))?;
    // HTTP/2 first when the client offers it (one connection for all its requests in flight;
    // see the listener), else HTTP/1.1.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// The client listener's TLS configuration, swapped whole on reload.
pub struct Reloadable {
    current: RwLock<Arc<ServerConfig>>,
}

impl Reloadable {
    /// Holds `config`.
    pub fn new(config: Arc<ServerConfig>) -> Reloadable {
        Reloadable { current: RwLock::new(config) }
    }

    /// The configuration new connections get.
    pub fn get(&self) -> Arc<ServerConfig> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Re-reads the files; on an error the old configuration stays.
    pub fn reload(&self, s: &Security) -> Result<(), String> {
        if let Some(c) = server_config(s)? {
            *self.current.write().unwrap_or_else(|p| p.into_inner()) = c;
        }
        Ok(())
    }
}

/// The identity a verified client certificate names: its first DNS subject alternative name.
pub fn cert_identity(cert: &CertificateDer<'_>) -> Option<String> {
    let ee = webpki::EndEntityCert::try_from(cert).ok()?;
    let name = ee.valid_dns_names().next().map(str::to_string);
    name
}

/// The client side of TLS towards the other servers (forwarding): their certificates chain to
/// `peer_ca` and name the host they are reached at; this server presents its peer
/// certificate when it has one.
pub fn peer_client_config(s: &Security) -> Result<Option<Arc<ClientConfig>>, String> {
    let Some(ca) = &s.peer_ca else { return Ok(None) };
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(load_roots(ca)?);
    let config = match &s.peer_identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(load_certs(cert)?, load_key(key)?)
            .map_err(|e| format!("{}: {e}", cert.display()))?,
        None => builder.with_no_client_auth(),
    };
    // ALPN is left to hyper-rustls, which sets it from the schemes it enables.
    Ok(Some(Arc::new(config)))
}

/// The client side of TLS towards PostgreSQL: verified against `ca` (host name included), or
/// (`ca` `None`, sslmode=require) encrypted without checking who answers.
pub fn store_client_config(ca: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match ca {
        Some(ca) => builder.with_root_certificates(load_roots(ca)?).with_no_client_auth(),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert(provider())))
            .with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// `sslmode=require`: any certificate (the signature of the handshake is still checked, so
/// the channel is encrypted to whoever holds the key; only a passive listener is kept out).
#[derive(Debug)]
struct AnyCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// TLS to PostgreSQL as libpq's URL parameters say it: `sslmode` (`disable`, `prefer`,
/// `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file of CA certificates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgTlsMode {
    /// The mode (`disable` when the URL names none: plain TCP, as before TLS existed here).
    pub mode: String,
    /// The CA file.
    pub root_cert: Option<std::path::PathBuf>,
}

/// Splits the TLS parameters tokio-postgres does not read (`sslrootcert`, and the `verify-*`
/// modes) off a `postgres://` URL: the URL left, and the mode.
pub fn pg_url_tls(url: &str) -> Result<(String, PgTlsMode), String> {
    let mut mode = PgTlsMode { mode: "disable".into(), root_cert: None };
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_string(), mode)) };
    let mut kept = Vec::new();
    for kv in query.split('&') {
        match kv.split_once('=') {
            Some(("sslmode", v)) => mode.mode = v.to_string(),
            Some(("sslrootcert", v)) => {
                mode.root_cert = Some(std::path::PathBuf::from(percent_decode(v)))
            }
            _ => kept.push(kv),
        }
    }
    match (mode.mode.as_str(), &mode.root_cert) {
        ("disable" | "prefer" | "require", _) => {}
        ("verify-ca" | "verify-full", Some(_)) => {}
        ("verify-ca" | "verify-full", None) => {
            return Err(format!("sslmode={} needs sslrootcert=<CA file> in the URL", mode.mode))
        }
        (m, _) => {
            return Err(format!(
                "sslmode={m:?}: use disable, prefer, require, verify-ca or verify-full"
            ))
        }
    }
    let url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    Ok((url, mode))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(x) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A rustls connector for tokio-postgres.
#[derive(Clone)]
pub struct PgTls {
    config: Arc<ClientConfig>,
}

impl PgTls {
    /// For `mode`: verified against its CA (host name included) for `verify-ca` and
    /// `verify-full` (and for `require` with a CA, as libpq does), else unverified.
    pub fn new(mode: &PgTlsMode) -> Result<PgTls, String> {
        let ca = match mode.mode.as_str() {
            "verify-ca" | "verify-full" | "require" => mode.root_cert.as_deref(),
            _ => None,
        };
        Ok(PgTls { config: store_client_config(ca)? })
    }
}

impl tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket> for PgTls {
    type Stream = PgTlsStream;
    type TlsConnect = PgTlsConnect;
    type Error = std::io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> std::io::Result<PgTlsConnect> {
        let name = ServerName::try_from(domain.to_string())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        Ok(PgTlsConnect { config: self.config.clone(), name })
    }
}

/// One connection's TLS handshake with PostgreSQL.
pub struct PgTlsConnect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl tokio_postgres::tls::TlsConnect<tokio_postgres::Socket> for PgTlsConnect {
    type Stream = PgTlsStream;
    type Error = std::io::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<PgTlsStream>> + Send>>;

    fn connect(self, stream: tokio_postgres::Socket) -> Self::Future {
        Box::pin(async move {
            let s =
                tokio_rustls::TlsConnector::from(self.config).connect(self.name, stream).await?;
            Ok(PgTlsStream(s))
        })
    }
}

/// A TLS stream to PostgreSQL.
pub struct PgTlsStream(tokio_rustls::client::TlsStream<tokio_postgres::Socket>);

impl tokio::io::AsyncRead for PgTlsStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for PgTlsStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl tokio_postgres::tls::TlsStream for PgTlsStream {
    fn channel_binding(&self) -> tokio_postgres::tls::ChannelBinding {
        tokio_postgres::tls::ChannelBinding::none()
    }
}

/// The connector servers forward with: `http://` owners over TCP, `https://` owners over TLS
/// checked against `--peer-ca` (and this server's `--peer-cert` presented).
pub type PeerConnector =
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// The forwarding connector of the settings. Without `--peer-ca`, an `https://` owner's
/// certificate cannot be checked, and forwarding to it fails (says so).
pub fn peer_connector(s: &Security) -> Result<PeerConnector, String> {
    let config = match peer_client_config(s)? {
        Some(c) => (*c).clone(),
        None => {
            // No CA given: trust nothing (an https:// owner is refused, not trusted blindly).
            ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(RootCertStore::empty())
                .with_no_client_auth()
        }
    };
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}
