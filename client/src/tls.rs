//! `https://` servers: a [`Cluster`] over TLS (rustls), checked against a CA bundle, with an
//! optional client certificate (mTLS). A token goes in [`ClusterConfig::bearer_token`].
//! A client with many requests in flight should offer HTTP/2 ([`TlsOptions::http2`]): one
//! connection then carries them all.
//!
//! ```no_run
//! # async fn f() -> Result<(), leasehold_client::ClientError> {
//! use leasehold_client::{Cluster, ClusterConfig, TlsOptions};
//! let config = ClusterConfig::new(["https://lease-1.internal:7420"]).bearer_token("lh_...")?;
//! let tls = TlsOptions::new().ca_file("/etc/leasehold/ca.pem");
//! let cluster = Cluster::with_tls(config, &tls)?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

use crate::cluster::{Cluster, ClusterConfig};
use crate::error::ClientError;

/// The connector of a [`Cluster`] made by [`Cluster::with_tls`]: `https://` over rustls,
/// `http://` over TCP.
pub type HttpsConnector = hyper_rustls::HttpsConnector<TcpConnector>;

/// The TCP connector under [`HttpsConnector`]: hyper's [`HttpConnector`], its streams
/// written with `send` rather than `writev` when there is one buffer to write (see
/// [`TcpConnection`]).
#[derive(Debug, Clone)]
pub struct TcpConnector(HttpConnector);

impl tower_service::Service<Uri> for TcpConnector {
    type Response = TcpConnection;
    type Error = <HttpConnector as tower_service::Service<Uri>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<TcpConnection, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connect = self.0.call(uri);
        Box::pin(async move { connect.await.map(TcpConnection) })
    }
}

/// A TCP stream of [`TcpConnector`]. rustls hands its records over as a list of buffers
/// (almost always one per request), and `writev` on a socket costs more in the kernel than
/// `send` (the VFS path, the iovec copied in); so one buffer goes out with `send`, several
/// still in one `writev`.
#[derive(Debug)]
pub struct TcpConnection(TokioIo<tokio::net::TcpStream>);

impl Connection for TcpConnection {
    fn connected(&self) -> Connected {
        self.0.connected()
    }
}

impl hyper::rt::Read for TcpConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for TcpConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match single(bufs) {
            Some(None) => Poll::Ready(Ok(0)),
            Some(Some(one)) => Pin::new(&mut self.0).poll_write(cx, one),
            None => Pin::new(&mut self.0).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// The one non-empty buffer of a vectored write (`Some(None)`: none at all), or `None` when
/// there are several. A socket written with `send` for one buffer costs less in the kernel
/// than `writev` (issue 22): the TLS streams of the client and the server's listener write
/// through this.
pub fn single<'a>(bufs: &'a [io::IoSlice<'a>]) -> Option<Option<&'a [u8]>> {
    let mut full = bufs.iter().filter(|b| !b.is_empty());
    match (full.next(), full.next()) {
        (first, None) => Some(first.map(|b| &**b)),
        _ => None,
    }
}

/// Where the system keeps its CA bundle (Debian's `ca-certificates`), used when no CA file
/// is given.
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// TLS settings of a client.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// CA certificates (PEM) the servers' certificates must chain to; the system's bundle
    /// when `None`.
    pub ca_file: Option<PathBuf>,
    /// A client certificate chain and its key (PEM), for servers that ask for one (mTLS).
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Offer HTTP/2 as well as HTTP/1.1 (ALPN). A server that takes it carries every request
    /// in flight on one connection, one TLS session, instead of one connection and one session
    /// per request in flight: cheaper for both sides with many requests in flight (at 256 it
    /// costs less CPU per request than plain HTTP/1.1; see the book's server benchmarks), but
    /// each request takes more hops between tasks, so with one or a few in flight HTTP/1.1 (the
    /// default) answers sooner.
    pub http2: bool,
}

impl TlsOptions {
    /// The system's CAs, no client certificate.
    pub fn new() -> TlsOptions {
        TlsOptions::default()
    }

    /// Trusts the CA certificates of this PEM file (and no others).
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> TlsOptions {
        self.ca_file = Some(path.into());
        self
    }

    /// Presents this certificate chain and key (PEM files).
    pub fn client_cert(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsOptions {
        self.client_cert = Some((cert.into(), key.into()));
        self
    }

    /// Offers HTTP/2 too (see [`TlsOptions::http2`]): for clients with many requests in flight.
    pub fn http2(mut self) -> TlsOptions {
        self.http2 = true;
        self
    }

    /// The rustls configuration these settings give.
    pub fn client_config(&self) -> Result<ClientConfig, ClientError> {
        let ca = self.ca_file.as_deref().unwrap_or(Path::new(SYSTEM_CA_BUNDLE));
        let mut roots = RootCertStore::empty();
        for c in certs(ca)? {
            roots.add(c).map_err(|e| ClientError::Config(format!("{}: {e}", ca.display())))?;
        }
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| ClientError::Config(e.to_string()))?
                .with_root_certificates(roots);
        match &self.client_cert {
            None => Ok(builder.with_no_client_auth()),
            Some((cert, key)) => {
                let k = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| ClientError::Config(format!("{}: {e}", key.display())))?;
                builder
                    .with_client_auth_cert(certs(cert)?, k)
                    .map_err(|e| ClientError::Config(format!("{}: {e}", cert.display())))
            }
        }
    }
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let v = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ClientError::Config(format!("{}: {e}", path.display())))?;
    if v.is_empty() {
        return Err(ClientError::Config(format!("{}: no certificate in it", path.display())));
    }
    Ok(v)
}

impl Cluster<HttpsConnector> {
    /// A client of the servers in `config` over TLS for `https://` URLs (plain TCP for
    /// `http://` ones).
    pub fn with_tls(
        config: ClusterConfig,
        tls: &TlsOptions,
    ) -> Result<Cluster<HttpsConnector>, ClientError> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(config.attempt_timeout));
        let builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.client_config()?)
            .https_or_http()
            .enable_http1();
        let connector = if tls.http2 {
            builder.enable_http2().wrap_connector(TcpConnector(http))
        } else {
            builder.wrap_connector(TcpConnector(http))
        };
        Cluster::with_connector(config, connector)
    }
}
