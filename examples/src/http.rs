//! A deliberately small HTTP/1.1 carrier for leasehold's wire protocol, on std only.
//!
//! The server answers `POST /lease` (body: one request message, JSON or binary by
//! `Content-Type`) with one reply message, calling a handler the host supplies. The client
//! posts one message and returns the reply body. Enough for loopback demos and tests; a real
//! service would put the same three lines of glue into its web framework of choice.
//!
//! The client of a `leasehold-server` cluster (failover, owner hints, time-outs) is the
//! `leasehold-client` crate.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use leasehold::Encoding;

/// Largest body accepted, matching the core's default message limit.
pub const MAX_BODY: usize = 1 << 20;

/// The content type of each encoding.
pub fn content_type(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Json => "application/json",
        Encoding::Binary => "application/octet-stream",
    }
}

fn encoding_of(content_type: &str) -> Encoding {
    if content_type.trim().starts_with("application/json") {
        Encoding::Json
    } else {
        Encoding::Binary
    }
}

/// One parsed HTTP message: its first line, headers we care about, and body.
struct Message {
    first_line: String,
    content_type: String,
    body: Vec<u8>,
}

fn read_message(stream: &mut BufReader<TcpStream>) -> io::Result<Message> {
    let mut first_line = String::new();
    if stream.read_line(&mut first_line)? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    let mut content_length = 0usize;
    let mut content_type = String::new();
    loop {
        let mut line = String::new();
        if stream.read_line(&mut line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated headers"));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => {
                    content_length = value.trim().parse().map_err(|_| {
                        io::Error::new(io::ErrorKind::InvalidData, "bad Content-Length")
                    })?
                }
                "content-type" => content_type = value.trim().to_string(),
                _ => {}
            }
        }
    }
    if content_length > MAX_BODY {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
    }
    let mut body = vec![0; content_length];
    stream.read_exact(&mut body)?;
    Ok(Message { first_line: first_line.trim_end().to_string(), content_type, body })
}

/// A running HTTP server; dropping it (or [`Server::stop`]) stops accepting.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `POST /lease` on 127.0.0.1 at an ephemeral port. `handler(body, encoding)` returns
    /// the reply body (in the same encoding). Connections are handled one at a time, keep-alive.
    pub fn start<F>(mut handler: F) -> io::Result<Server>
    where
        F: FnMut(&[u8], Encoding) -> Vec<u8> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut conns: Vec<BufReader<TcpStream>> = Vec::new();
            while !stop2.load(Ordering::Relaxed) {
                let mut idle = true;
                if let Ok((s, _)) = listener.accept() {
                    let _ = s.set_nonblocking(true);
                    let _ = s.set_nodelay(true);
                    conns.push(BufReader::new(s));
                    idle = false;
                }
                conns.retain_mut(|c| match serve_one(c, &mut handler) {
                    Ok(true) => {
                        idle = false;
                        true
                    }
                    Ok(false) => true,
                    Err(_) => false,
                });
                if idle {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        Ok(Server { addr, stop, thread: Some(thread) })
    }

    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the lease endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/lease", self.addr)
    }

    /// Stops the server and waits for its thread.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves one request if one is waiting. `Ok(false)` if nothing was there yet.
fn serve_one<F>(conn: &mut BufReader<TcpStream>, handler: &mut F) -> io::Result<bool>
where
    F: FnMut(&[u8], Encoding) -> Vec<u8>,
{
    if conn.buffer().is_empty() {
        let mut probe = [0u8; 1];
        match conn.get_ref().peek(&mut probe) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed")),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    conn.get_ref().set_nonblocking(false)?;
    conn.get_ref().set_read_timeout(Some(Duration::from_secs(5)))?;
    let result = read_message(conn);
    let out = match result {
        Ok(m) if m.first_line.starts_with("POST /lease ") => {
            let enc = encoding_of(&m.content_type);
            let reply = handler(&m.body, enc);
            response(200, "OK", content_type(enc), &reply)
        }
        Ok(_) => response(404, "Not Found", "text/plain", b"POST /lease only\n"),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            response(400, "Bad Request", "text/plain", e.to_string().as_bytes())
        }
        Err(e) => return Err(e),
    };
    conn.get_mut().write_all(&out)?;
    conn.get_ref().set_nonblocking(true)?;
    Ok(true)
}

fn response(code: u16, reason: &str, ctype: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A keep-alive HTTP client for one server.
pub struct Client {
    addr: SocketAddr,
    conn: Option<BufReader<TcpStream>>,
    timeout: Duration,
}

impl Client {
    /// A client of the server at `addr`; requests time out after `timeout`.
    pub fn new(addr: SocketAddr, timeout: Duration) -> Client {
        Client { addr, conn: None, timeout }
    }

    /// Changes how long a request may take (connect, send, read).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        if let Some(c) = &self.conn {
            let _ = c.get_ref().set_read_timeout(Some(timeout));
            let _ = c.get_ref().set_write_timeout(Some(timeout));
        }
    }

    /// Posts one message to `/lease` and returns the reply body. Any failure (refused, reset,
    /// time-out, non-200) is an error the caller reports to the core as an indefinite failure.
    pub fn post(&mut self, body: &[u8], encoding: Encoding) -> io::Result<Vec<u8>> {
        let r = self.try_post(body, encoding);
        if r.is_err() {
            self.conn = None;
        }
        r
    }

    /// Posts `body` to `path` (path and query) and returns the answer's status and body,
    /// whatever the status (for a bench that speaks to other servers too).
    pub fn post_to(
        &mut self,
        path: &str,
        body: &[u8],
        encoding: Encoding,
    ) -> io::Result<(u16, Vec<u8>)> {
        let r = self.exchange(path, body, encoding);
        if r.is_err() {
            self.conn = None;
        }
        let m = r?;
        let status = m.first_line.split_whitespace().nth(1).and_then(|s| s.parse().ok());
        Ok((status.unwrap_or(0), m.body))
    }

    fn try_post(&mut self, body: &[u8], encoding: Encoding) -> io::Result<Vec<u8>> {
        let m = self.exchange("/lease", body, encoding)?;
        if !m.first_line.starts_with("HTTP/1.1 200") {
            return Err(io::Error::other(format!("server answered {}", m.first_line)));
        }
        Ok(m.body)
    }

    fn exchange(&mut self, path: &str, body: &[u8], encoding: Encoding) -> io::Result<Message> {
        if self.conn.is_none() {
            let s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
            s.set_read_timeout(Some(self.timeout))?;
            s.set_write_timeout(Some(self.timeout))?;
            s.set_nodelay(true)?;
            self.conn = Some(BufReader::new(s));
        }
        let conn = self.conn.as_mut().expect("connected");
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            content_type(encoding),
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        conn.get_mut().write_all(&req)?;
        read_message(conn)
    }
}
