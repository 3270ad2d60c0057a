//! The accept loop: HTTP/1.1 over TCP or TLS, HTTP/2 over TLS when the client offers it (ALPN
//! `h2`), with every connection bounded.
//!
//! - at most `max_connections` at once (more wait in the kernel's backlog, not in memory);
//! - a request head must arrive whole within `header_timeout_ms` of its first byte (slowloris),
//!   and be at most `max_header_bytes` long (431 beyond);
//! - a TLS handshake must finish within `header_timeout_ms` too;
//! - a connection idle (no request in flight, nothing read or written) for `idle_timeout_ms`
//!   is closed, and so is one whose client stops reading its replies for that long.
//!
//! hyper's own `header_read_timeout` also runs between requests of a kept-alive connection,
//! which would cut every client's idle pool to the header time-out; so the head's clock here
//! starts at the head's first byte instead, kept by a small watchdog per connection.
//!
//! An HTTP/2 connection carries up to [`H2_STREAMS`] requests at once over one TLS session: the
//! Rust client's pool uses one such connection per server instead of one connection (and one TLS
//! session, each record sealed and opened alone) per request in flight. The same watchdog keeps
//! it: a connection that sends bytes but no complete request within the header time-out while
//! nothing is in flight is closed, and so is one idle for the idle time-out; a head is bounded
//! by `max_header_bytes` (the HTTP/2 header list size).
//!
//! Each request carries a [`ConnInfo`] extension: the peer's address and the identity its
//! client certificate names (mTLS).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify, Semaphore};
use tower_service::Service;

use crate::security::Security;
use crate::tls::Reloadable;

/// Most requests at once on one HTTP/2 connection.
pub const H2_STREAMS: u32 = 1024;

/// How one connection speaks HTTP.
#[derive(Clone)]
enum Http {
    One(hyper::server::conn::http1::Builder),
    Two(hyper::server::conn::http2::Builder<TokioExecutor>),
}

/// What the listener knows of a request's connection.
#[derive(Debug, Clone)]
pub struct ConnInfo {
    /// The peer's address.
    pub peer: SocketAddr,
    /// Whether the connection is TLS.
    pub tls: bool,
    /// The identity a verified client certificate names (mTLS), if any.
    pub cert_identity: Option<String>,
}

/// The limits of one listener.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Most connections.
    pub max_connections: usize,
    /// Head read time-out (and TLS handshake time-out).
    pub header_timeout: Duration,
    /// Idle time-out.
    pub idle_timeout: Duration,
    /// Most bytes of a head.
    pub max_header_bytes: usize,
}

impl ConnLimits {
    /// The limits the settings give.
    pub fn of(s: &Security) -> ConnLimits {
        ConnLimits {
            max_connections: s.max_connections,
            header_timeout: Duration::from_millis(s.header_timeout_ms),
            idle_timeout: Duration::from_millis(s.idle_timeout_ms),
            max_header_bytes: s.max_header_bytes,
        }
    }
}

/// Counters of the listeners (for `/metrics`).
#[derive(Debug, Default)]
pub struct ConnStats {
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Connections closed because a head took too long.
    pub header_timeouts: AtomicU64,
    /// Connections closed idle.
    pub idle_closed: AtomicU64,
    /// TLS handshakes that failed or took too long.
    pub tls_failed: AtomicU64,
}

impl ConnStats {
    /// Appends the counters to a `/metrics` text.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write;
        let rows: [(&str, &str, &str, &AtomicU64); 5] = [
            ("leasehold_connections_open", "gauge", "Client connections open now.", &self.open),
            ("leasehold_connections_total", "counter", "Connections accepted.", &self.accepted),
            (
                "leasehold_header_timeouts_total",
                "counter",
                "Connections closed because a request head did not arrive in time.",
                &self.header_timeouts,
            ),
            (
                "leasehold_idle_closed_total",
                "counter",
                "Connections closed after the idle time-out.",
                &self.idle_closed,
            ),
            (
                "leasehold_tls_handshake_failures_total",
                "counter",
                "TLS handshakes refused or timed out.",
                &self.tls_failed,
            ),
        ];
        for (name, kind, help, v) in rows {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {}", v.load(Relaxed));
        }
    }
}

/// One connection's activity, shared by its I/O wrapper, its service and its watchdog.
struct Activity {
    epoch: Instant,
    /// Last byte read or written, ms since `epoch`.
    last: AtomicU64,
    /// First byte of a request head not yet complete, ms since `epoch`, plus 1 (0: none).
    head_since: AtomicU64,
    /// Requests being answered.
    inflight: AtomicU32,
    wake: Notify,
}

impl Activity {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
}

/// The stream with its activity recorded.
struct Watched<T> {
    io: T,
    act: Arc<Activity>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let a = &self.act;
            let now = a.now();
            a.last.store(now, Relaxed);
            if a.inflight.load(Relaxed) == 0 && a.head_since.load(Relaxed) == 0 {
                a.head_since.store(now + 1, Relaxed);
                a.wake.notify_one();
            }
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.act.last.store(self.act.now(), Relaxed);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The TCP stream under TLS, written with `send` rather than `writev` when there is one
/// buffer to write. rustls hands its records over as a list of buffers (almost always one per
/// response), and `writev` on a socket costs more in the kernel than `send` (the VFS path,
/// the iovec copied in): about 0.5 µs per response on the bench machine (issue 22). Several
/// buffers still go out in one `writev`.
struct SendOne<T>(T);

impl<T: AsyncRead + Unpin> AsyncRead for SendOne<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for SendOne<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match leasehold_client::tls::single(bufs) {
            Some(None) => Poll::Ready(Ok(0)),
            Some(Some(one)) => Pin::new(&mut self.0).poll_write(cx, one),
            None => Pin::new(&mut self.0).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

enum Closed {
    HeadTimeout,
    Idle,
}

/// Returns when the connection should be closed.
async fn watchdog(act: Arc<Activity>, limits: ConnLimits) -> Closed {
    let head = limits.header_timeout.as_millis() as u64;
    let idle = limits.idle_timeout.as_millis() as u64;
    loop {
        let now = act.now();
        let hs = act.head_since.load(Relaxed);
        let wait = if hs > 0 {
            let since = hs - 1;
            if now >= since + head {
                return Closed::HeadTimeout;
            }
            since + head - now
        } else if act.inflight.load(Relaxed) == 0 {
            let last = act.last.load(Relaxed);
            if now >= last + idle {
                return Closed::Idle;
            }
            last + idle - now
        } else {
            idle
        };
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
            _ = act.wake.notified() => {}
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes; then lets open requests finish
/// (up to 10 s) and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    tls: Option<Arc<Reloadable>>,
    stats: Arc<ConnStats>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut h1 = hyper::server::conn::http1::Builder::new();
    h1.timer(TokioTimer::new()).max_buf_size(limits.max_header_bytes.max(8192)).max_headers(100);
    let mut h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    h2.timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX))
        .max_concurrent_streams(H2_STREAMS);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = &mut shutdown => break,
        };
        let (tcp, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        stats.accepted.fetch_add(1, Relaxed);
        let (router, h1, h2, tls, stats, mut stop) =
            (router.clone(), h1.clone(), h2.clone(), tls.clone(), stats.clone(), stop_rx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            stats.open.fetch_add(1, Relaxed);
            let act = Arc::new(Activity {
                epoch: Instant::now(),
                last: AtomicU64::new(0),
                head_since: AtomicU64::new(0),
                inflight: AtomicU32::new(0),
                wake: Notify::new(),
            });
            match tls {
                None => {
                    let info = ConnInfo { peer, tls: false, cert_identity: None };
                    let io = Watched { io: tcp, act: act.clone() };
                    one(io, info, act, router, Http::One(h1), limits, &stats, &mut stop).await;
                }
                Some(tls) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(tls.get());
                    let accept = acceptor.accept(SendOne(tcp));
                    match tokio::time::timeout(limits.header_timeout, accept).await {
                        Ok(Ok(stream)) => {
                            let cert_identity = stream
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .and_then(crate::tls::cert_identity);
                            let http = match stream.get_ref().1.alpn_protocol() {
                                Some(b"h2") => Http::Two(h2),
                                _ => Http::One(h1),
                            };
                            let info = ConnInfo { peer, tls: true, cert_identity };
                            let io = Watched { io: stream, act: act.clone() };
                            one(io, info, act, router, http, limits, &stats, &mut stop).await;
                        }
                        Ok(Err(e)) => {
                            stats.tls_failed.fetch_add(1, Relaxed);
                            tracing::debug!(%peer, error = %e, "TLS handshake refused");
                        }
                        Err(_) => {
                            stats.tls_failed.fetch_add(1, Relaxed);
                            tracing::debug!(%peer, "TLS handshake timed out");
                        }
                    }
                }
            }
            stats.open.fetch_sub(1, Relaxed);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection holds a permit until it ends.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(Duration::from_secs(10), permits.acquire_many(all)).await;
}

#[allow(clippy::too_many_arguments)]
async fn one<T>(
    io: Watched<T>,
    info: ConnInfo,
    act: Arc<Activity>,
    router: Router,
    http: Http,
    limits: ConnLimits,
    stats: &ConnStats,
    stop: &mut watch::Receiver<bool>,
) where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let act2 = act.clone();
    let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let mut req = req.map(axum::body::Body::new);
        req.extensions_mut().insert(info.clone());
        act2.head_since.store(0, Relaxed);
        act2.inflight.fetch_add(1, Relaxed);
        let act = act2.clone();
        let mut router = router.clone();
        async move {
            let r = router.call(req).await;
            act.inflight.fetch_sub(1, Relaxed);
            act.last.store(act.now(), Relaxed);
            act.wake.notify_one();
            r
        }
    });
    let io = TokioIo::new(io);
    match http {
        Http::One(b) => {
            let conn = b.serve_connection(io, svc);
            drive(conn, |c| c.graceful_shutdown(), act, limits, stats, stop).await
        }
        Http::Two(b) => {
            let conn = b.serve_connection(io, svc);
            drive(conn, |c| c.graceful_shutdown(), act, limits, stats, stop).await
        }
    }
}

/// Runs `conn` until it ends, its watchdog closes it, or the server stops (then `shutdown`
/// lets its open requests finish, up to 10 s).
async fn drive<C: Future>(
    conn: C,
    shutdown: impl FnOnce(Pin<&mut C>),
    act: Arc<Activity>,
    limits: ConnLimits,
    stats: &ConnStats,
    stop: &mut watch::Receiver<bool>,
) {
    let mut conn = std::pin::pin!(conn);
    if *stop.borrow() {
        return;
    }
    tokio::select! {
        _ = conn.as_mut() => {}
        why = watchdog(act, limits) => match why {
            Closed::HeadTimeout => {
                stats.header_timeouts.fetch_add(1, Relaxed);
            }
            Closed::Idle => {
                stats.idle_closed.fetch_add(1, Relaxed);
            }
        },
        _ = stop.changed() => {
            shutdown(conn.as_mut());
            let _ = tokio::time::timeout(Duration::from_secs(10), conn).await;
        }
    }
}
