//! What the programs of the discovery run (registrar, ld-client; the lookup discovery service is
//! `leasehold-server --discovery-port`) share: the clock, how announcements travel
//! (multicast on loopback when the machine allows it, unicast to a port otherwise), unicast
//! discovery over TCP, and a small HTTP client on hyper.
//!
//! - **Announcements** are the core's announcement datagram ([`Announcement::encode`]), sent by
//!   each registrar every interval over UDP: to the multicast group (IPv4, interface
//!   127.0.0.1, TTL 0 so that nothing leaves the machine) if a self-test shows multicast
//!   works on loopback, else to the lookup discovery service's UDP port on 127.0.0.1.
//! - **Unicast discovery** of a locator `host:port`: a TCP connection to it; the registrar
//!   writes its announcement datagram and closes. Refused or silent: the probe failed.
//! - **HTTP**: every message is one POST whose body is a wire message of the core, JSON or
//!   binary by `Content-Type` (`application/json`, `application/octet-stream`).
#![deny(missing_docs)]

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use leasehold::discovery::wire::ANNOUNCEMENT_MAX_BYTES;
use leasehold::discovery::{Announcement, Locator};
use leasehold::{Encoding, Millis};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The multicast group announcements go to when multicast works on loopback (an
/// organisation-local address, never routed off the machine with TTL 0).
pub const GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 76, 72);

/// The header a client names its event listener in when it registers: the URL the service
/// POSTs events to, in the encoding of the register request.
pub const LISTENER_HEADER: &str = "leasehold-listener";

/// The host's clock: milliseconds since the Unix epoch.
pub fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

/// The content type of each encoding.
pub fn content_type(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Json => "application/json",
        Encoding::Binary => "application/octet-stream",
    }
}

/// The encoding a `Content-Type` names (JSON for `application/json`, else binary).
pub fn encoding_of(content_type: &str) -> Encoding {
    if content_type.trim().starts_with("application/json") {
        Encoding::Json
    } else {
        Encoding::Binary
    }
}

/// How announcements travel on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// To the multicast group [`GROUP`] at this port, on the loopback interface.
    Multicast(u16),
    /// To 127.0.0.1 at this port (the lookup discovery service's UDP port).
    Unicast(u16),
}

impl Mode {
    /// Where announcements are sent.
    pub fn target(&self) -> SocketAddr {
        match *self {
            Mode::Multicast(p) => SocketAddrV4::new(GROUP, p).into(),
            Mode::Unicast(p) => SocketAddrV4::new(Ipv4Addr::LOCALHOST, p).into(),
        }
    }

    /// A line saying which it is.
    pub fn describe(&self) -> String {
        match self {
            Mode::Multicast(p) => format!("multicast {GROUP}:{p} on lo (TTL 0)"),
            Mode::Unicast(p) => format!("unicast to 127.0.0.1:{p}"),
        }
    }
}

/// A UDP socket that sends multicast on loopback only (interface 127.0.0.1, TTL 0, loop on).
pub fn multicast_sender() -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_multicast_if_v4(&Ipv4Addr::LOCALHOST)?;
    s.set_multicast_ttl_v4(0)?;
    s.set_multicast_loop_v4(true)?;
    s.bind(&SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0).into())?;
    Ok(s.into())
}

/// A UDP socket that receives the group's datagrams at `port` on loopback.
pub fn multicast_receiver(port: u16) -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.bind(&SocketAddrV4::new(GROUP, port).into())?;
    s.join_multicast_v4(&GROUP, &Ipv4Addr::LOCALHOST)?;
    Ok(s.into())
}

/// Whether multicast works on loopback here: a datagram sent to the group comes back within
/// 300 ms. `Err` says why not.
pub fn multicast_self_test() -> Result<(), String> {
    let rx = multicast_receiver(0).map_err(|e| format!("cannot join {GROUP} on lo: {e}"))?;
    let port = rx.local_addr().map_err(|e| e.to_string())?.port();
    let tx = multicast_sender().map_err(|e| format!("cannot send multicast on lo: {e}"))?;
    let probe = b"leasehold multicast self-test";
    tx.send_to(probe, SocketAddrV4::new(GROUP, port))
        .map_err(|e| format!("sending to {GROUP} on lo: {e}"))?;
    rx.set_read_timeout(Some(Duration::from_millis(300))).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    match rx.recv_from(&mut buf) {
        Ok((n, _)) if &buf[..n] == probe => Ok(()),
        Ok(_) => Err("another datagram came back".into()),
        Err(e) => Err(format!("nothing came back in 300 ms ({e})")),
    }
}

/// Chooses how announcements travel: `wanted` is `auto`, `multicast` or `unicast`; `auto` runs
/// [`multicast_self_test`]. Returns the mode and, for a fallback, why.
pub fn choose_mode(wanted: &str, port: u16) -> Result<(Mode, Option<String>), String> {
    match wanted {
        "multicast" => Ok((Mode::Multicast(port), None)),
        "unicast" => Ok((Mode::Unicast(port), None)),
        "auto" => match multicast_self_test() {
            Ok(()) => Ok((Mode::Multicast(port), None)),
            Err(why) => Ok((Mode::Unicast(port), Some(why))),
        },
        other => Err(format!("--announce must be auto, multicast or unicast, got {other:?}")),
    }
}

/// Unicast discovery of `locator`: connects, reads the registrar's announcement datagram.
pub async fn unicast_probe(locator: &Locator, timeout: Duration) -> io::Result<Announcement> {
    let work = async {
        let mut s = tokio::net::TcpStream::connect((locator.host(), locator.port())).await?;
        let mut buf = Vec::with_capacity(256);
        (&mut s).take(ANNOUNCEMENT_MAX_BYTES as u64 + 1).read_to_end(&mut buf).await?;
        let _ = s.shutdown().await;
        Announcement::decode(&buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no answer in time"))?
}

/// A small HTTP/1.1 client for POSTing wire messages.
#[derive(Clone)]
pub struct Http {
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
}

impl Default for Http {
    fn default() -> Self {
        Http::new()
    }
}

impl Http {
    /// A client with pooled connections.
    pub fn new() -> Http {
        Http { client: Client::builder(TokioExecutor::new()).build_http() }
    }

    /// POSTs `body` to `url` with the content type of `encoding` (and `headers`); returns the
    /// status and the body, or an error (transport failure, or no answer within `timeout`).
    pub async fn post(
        &self,
        url: &str,
        encoding: Encoding,
        body: Vec<u8>,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> io::Result<(u16, Vec<u8>)> {
        let mut req = hyper::Request::post(url).header("content-type", content_type(encoding));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(Bytes::from(body))).map_err(io::Error::other)?;
        let work = async {
            let resp = self.client.request(req).await.map_err(io::Error::other)?;
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.map_err(io::Error::other)?.to_bytes();
            Ok::<_, io::Error>((status, body.to_vec()))
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no answer in time"))?
    }
}

/// The value of `--name value` style arguments: a small parser shared by the programs.
pub struct Args {
    pairs: Vec<(String, String)>,
}

impl Args {
    /// Reads `--flag value` pairs from the command line; `-h`/`--help` prints `usage`.
    pub fn parse(usage: &str) -> Result<Args, String> {
        let mut pairs = Vec::new();
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            if flag == "-h" || flag == "--help" {
                print!("{usage}");
                std::process::exit(0);
            }
            let Some(name) = flag.strip_prefix("--") else {
                return Err(format!("unexpected argument {flag:?} (see --help)"));
            };
            let value = it.next().ok_or_else(|| format!("{flag} needs a value (see --help)"))?;
            pairs.push((name.to_string(), value));
        }
        Ok(Args { pairs })
    }

    /// The value of `--name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The value of `--name`, or `default`.
    pub fn or(&self, name: &str, default: &str) -> String {
        self.get(name).unwrap_or(default).to_string()
    }

    /// `--name` as a number, or `default`.
    pub fn num(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("--{name} wants a whole number, got {v:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold::discovery::RegistrarId;

    #[tokio::test]
    async fn unicast_discovery_reads_the_registrars_announcement() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        let a = Announcement {
            registrar: RegistrarId(7),
            groups: ["lab".to_string()].into(),
            locator: Locator::new("127.0.0.1", port).unwrap(),
            sequence: 9,
            ttl: 1000,
        };
        let bytes = a.encode().unwrap();
        std::thread::spawn(move || {
            let (mut c, _) = tcp.accept().unwrap();
            std::io::Write::write_all(&mut c, &bytes).unwrap();
        });
        let got = unicast_probe(&a.locator, Duration::from_secs(5)).await.unwrap();
        assert_eq!(got, a);
        // Nobody listening any more: the probe fails, it does not hang.
        let e = unicast_probe(&a.locator, Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::TimedOut));
    }

    #[test]
    fn modes_say_where_announcements_go() {
        let (m, why) = choose_mode("unicast", 4160).unwrap();
        assert_eq!((m, why), (Mode::Unicast(4160), None));
        assert_eq!(m.target(), "127.0.0.1:4160".parse().unwrap());
        assert_eq!(Mode::Multicast(4160).target(), "239.255.76.72:4160".parse().unwrap());
        assert!(choose_mode("broadcast", 1).is_err());
        // auto decides by the self-test, and says why when it falls back.
        let (m, why) = choose_mode("auto", 4160).unwrap();
        assert_eq!(matches!(m, Mode::Unicast(_)), why.is_some());
    }
}
