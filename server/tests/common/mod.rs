//! Shared by the integration tests: the real `leasehold-server` binary (its logs captured),
//! plain HTTP on loopback, and a throw-away PostgreSQL cluster started, restarted and killed
//! by the test itself (Debian's binaries; as the `leasehold` user when the test runs as root,
//! since PostgreSQL refuses root).
#![allow(dead_code)]

pub mod pki;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasehold::{Encoding, LandlordId, Limits, Reply, ReplyBody, Request, RequestBody};

pub const BIN: &str = env!("CARGO_BIN_EXE_leasehold-server");

/// A running `leasehold-server`.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub logs: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts the binary with `args` (plus `--listen 127.0.0.1:0`), through `sh` so that
    /// `SIGXFSZ` is ignored (a file size limit then gives `EFBIG`, as a full disk gives
    /// `ENOSPC`, instead of killing the process).
    pub fn start(args: &[&str]) -> Server {
        Server::start_at("127.0.0.1:0", args)
    }

    /// Like [`Server::start`], on the file store in `dir` (`--data`).
    pub fn start_in(dir: &Path, args: &[&str]) -> Server {
        let data = dir.to_str().expect("a UTF-8 path");
        Server::start(&[&["--data", data], args].concat())
    }

    /// Like [`Server::start`], listening at `listen`.
    pub fn start_at(listen: &str, args: &[&str]) -> Server {
        Server::start_with(listen, args, &[])
    }

    /// Like [`Server::start_at`], with these environment variables (e.g. libfaketime's).
    pub fn start_with(listen: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; exec \"$0\" \"$@\"")
            .arg(BIN)
            .args(["--listen", listen])
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start leasehold-server");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let l = logs.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                l.lock().unwrap().push(line);
            }
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = out.read_to_string(&mut sink);
        });
        let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
        let addr = url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .parse()
            .unwrap_or_else(|_| panic!("no address in {line:?}; logs: {:?}", logs.lock().unwrap()));
        Server { child, addr, logs }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL: no shutdown, no final write.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait (a clean shutdown).
    pub fn stop(mut self) {
        signal(self.pid(), "TERM");
        let _ = self.child.wait();
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        get(self.addr, path)
    }

    /// `/readyz` as JSON.
    pub fn ready(&self) -> (u16, serde_json::Value) {
        let (status, body) = self.get("/readyz");
        (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")))
    }

    /// Waits until `/readyz` is 200; panics with the last answer and the logs if it is not
    /// within `limit`. Returns how long it took.
    pub fn wait_ready(&self, limit: Duration) -> Duration {
        let t0 = Instant::now();
        loop {
            let (status, body) = self.get("/readyz");
            if status == 200 {
                return t0.elapsed();
            }
            if t0.elapsed() > limit {
                panic!("not ready after {limit:?}: {body}\nlogs:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `f` holds for `/readyz`'s JSON.
    pub fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        f: impl Fn(u16, &serde_json::Value) -> bool,
    ) {
        let t0 = Instant::now();
        loop {
            let (status, v) = self.ready();
            if f(status, &v) {
                return;
            }
            if t0.elapsed() > limit {
                panic!("{what}: not after {limit:?}: {status} {v}\nlogs:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The sum of a metric's samples whose labels contain every one of `labels`.
    pub fn metric(&self, name: &str, labels: &[&str]) -> f64 {
        let (_, text) = self.get("/metrics");
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .filter(|l| labels.iter().all(|x| l.contains(x)))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    }

    /// The sum of all of a metric's samples, as a whole number (counters and gauges).
    pub fn metric_total(&self, name: &str) -> u64 {
        self.metric(name, &[]) as u64
    }

    pub fn log_text(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }

    pub fn logged(&self, needle: &str) -> bool {
        self.logs.lock().unwrap().iter().any(|l| l.contains(needle))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- logs of {} ---\n{}", self.addr, self.log_text());
        }
        signal(self.child.id(), "CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a signal (`TERM`, `STOP`, `CONT`, ...) with `kill`.
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

/// A raw HTTP/1.1 exchange (no keep-alive): the answer's status, headers (lower-case names)
/// and body.
pub fn raw(
    addr: SocketAddr,
    method: &str,
    target: &str,
    ctype: &str,
    body: &[u8],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    // A server may answer (413) before it has read the whole body, and close.
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, out[split + 4..].to_vec())
}

/// A plain HTTP GET (no keep-alive); (status, body). Status 0 if nobody answers.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return (0, String::new());
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    if write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").is_err() {
        return (0, String::new());
    }
    let mut out = String::new();
    if s.read_to_string(&mut out).is_err() {
        return (0, out);
    }
    let status = out.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|x| x.1.to_string()).unwrap_or_default();
    (status, body)
}

/// An HTTP answer: status, headers (lower-case names), body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn reply(&self) -> Reply {
        assert!(self.status < 500, "{}: {}", self.status, String::from_utf8_lossy(&self.body));
        Reply::decode(&self.body, Encoding::Json, &Limits::default()).unwrap()
    }
}

/// POSTs one JSON message to `/lease[?landlord=]` (no keep-alive).
pub fn post(
    addr: SocketAddr,
    landlord: Option<u64>,
    req: &Request,
    timeout: Duration,
) -> std::io::Result<Answer> {
    let body = req.encode(Encoding::Json);
    let path = match landlord {
        Some(l) => format!("/lease?landlord={}", leasehold::LandlordId(l)),
        None => "/lease".into(),
    };
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    s.write_all(&body)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(out.len());
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let body = out.get(split + 4..).unwrap_or_default().to_vec();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Answer { status, headers, body })
}

/// Grants `resource` for `ms`; (landlord, cookie), or the answer if it was not granted.
pub fn grant(
    addr: SocketAddr,
    id: u64,
    resource: &str,
    ms: i64,
) -> Result<(u64, leasehold::Cookie), String> {
    let req = leasehold::holder::grant_request(id, resource.as_bytes().to_vec(), ms);
    let a = post(addr, None, &req, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    // A wire reply comes with any status (404 unknown lease, 409 denied, ...); a 5xx has none.
    if a.status >= 500 {
        return Err(format!("{}: {}", a.status, String::from_utf8_lossy(&a.body)));
    }
    match a.reply() {
        Reply { landlord, body: ReplyBody::Granted { cookie, .. }, .. } => Ok((landlord.0, cookie)),
        r => Err(format!("{r:?}")),
    }
}

/// Like [`grant`], retrying a 503 (a shard handed over between servers) for up to 10 s, as a
/// holder does.
pub fn grant_retry(addr: SocketAddr, id: u64, resource: &str, ms: i64) -> (u64, leasehold::Cookie) {
    let t0 = Instant::now();
    loop {
        match grant(addr, id, resource, ms) {
            Ok(g) => return g,
            Err(e) if e.starts_with("503") && t0.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("grant of {resource}: {e}"),
        }
    }
}

/// Waits until the servers of a cluster have shared the shards out (each serves what its
/// `/readyz` counts, summing to `shards`) and every one is ready.
pub fn settled(servers: &[&Server], shards: usize, limit: Duration) {
    let ok = eventually(limit, || {
        let mut served = 0;
        for s in servers {
            let (st, r) = s.ready();
            if st != 200 {
                return false;
            }
            served +=
                r["shards"].as_array().unwrap().iter().filter(|x| x["state"] == "served").count();
        }
        let fair = shards.div_ceil(servers.len());
        served == shards
            && servers.iter().all(|s| {
                let (_, r) = s.ready();
                r["shards"].as_array().unwrap().iter().filter(|x| x["state"] == "served").count()
                    <= fair
            })
    });
    assert!(ok, "the servers did not settle within {limit:?}");
}

/// Renews a lease; the reply's body, or the HTTP failure.
pub fn renew(
    addr: SocketAddr,
    landlord: u64,
    cookie: leasehold::Cookie,
    ms: i64,
) -> Result<ReplyBody, String> {
    let req = Request { id: 7, body: RequestBody::Renew { cookie, duration: ms } };
    let a = post(addr, Some(landlord), &req, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    // A wire reply comes with any status (404 unknown lease, 409 denied, ...); a 5xx has none.
    if a.status >= 500 {
        return Err(format!("{}: {}", a.status, String::from_utf8_lossy(&a.body)));
    }
    let r = a.reply();
    assert_eq!(r.landlord, LandlordId(landlord));
    Ok(r.body)
}

pub fn is_unknown(b: &ReplyBody) -> bool {
    matches!(b, ReplyBody::Error(e) if e.error_code() == Some(leasehold::ErrorCode::UnknownLease))
}

/// Runs `leasehold-server` with `args` to completion: (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Adds a token to the tokens file `file` (`token add --file FILE ARGS...`) and returns it.
pub fn add_token(file: &str, args: &[&str]) -> String {
    let mut a = vec!["token", "add", "--file", file];
    a.extend_from_slice(args);
    let (code, out, err) = run(&a);
    assert_eq!(code, 0, "{err}");
    out.trim().to_string()
}

/// A free TCP port on loopback (free when asked).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Sets the file size limit of process `pid` (soft; hard stays unlimited): `Some(1)` makes
/// every write that grows a file fail with `EFBIG`, as a full disk does with `ENOSPC`.
pub fn limit_file_size(pid: u32, bytes: Option<u64>) {
    let soft = bytes.map_or("unlimited".to_string(), |b| b.to_string());
    let ok = Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--fsize={soft}:unlimited"))
        .status()
        .expect("prlimit (util-linux)");
    assert!(ok.success());
}

/// Polls `f` until it holds or `limit` passes; returns whether it held.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// libfaketime's preload library (Debian's `faketime`: scripts/test-rust.sh installs it).
pub fn libfaketime() -> String {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/faketime/libfaketimeMT.so.1",
    ];
    candidates.iter().find(|p| Path::new(p).exists()).map(|p| p.to_string()).expect(
        "libfaketime is not installed: scripts/test-rust.sh installs Debian's faketime before the tests",
    )
}

/// A throw-away PostgreSQL cluster on loopback.
pub struct Pg {
    _dir: tempfile::TempDir,
    pub data: PathBuf,
    pub port: u16,
    bin: PathBuf,
    as_user: Vec<String>,
}

fn pg_bin() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p): &(u32, PathBuf)| p.join("postgres").exists())
        .collect();
    versions.sort();
    versions.pop().map(|v| v.1).expect(
        "PostgreSQL is not installed (/usr/lib/postgresql/*/bin): scripts/test-rust.sh installs \
         Debian's postgresql before the tests",
    )
}

impl Pg {
    /// Starts a new cluster (fsync on) with a database `leasehold_test`.
    pub fn start() -> Pg {
        let pg = Pg::init();
        pg.start_again();
        pg.psql("postgres", "CREATE DATABASE leasehold_test");
        pg
    }

    fn init() -> Pg {
        let bin = pg_bin();
        let dir = tempfile::Builder::new().prefix("leasehold-pg-").tempdir().unwrap();
        let as_user = as_pg_user(dir.path());
        let data = dir.path().join("data");
        let out = Command::new(&as_user[0])
            .args(&as_user[1..])
            .arg(bin.join("initdb"))
            .args(["-A", "trust", "-U", "leasehold", "-D"])
            .arg(&data)
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        Pg { _dir: dir, data, port: free_port(), bin, as_user }
    }

    /// A streaming standby of `primary` (pg_basebackup -R), started; `synchronous` makes the
    /// primary wait for it on every commit.
    pub fn standby_of(primary: &Pg, synchronous: bool) -> Pg {
        let dir = tempfile::Builder::new().prefix("leasehold-pg-").tempdir().unwrap();
        let as_user = as_pg_user(dir.path());
        let data = dir.path().join("data");
        let out = Command::new(&as_user[0])
            .args(&as_user[1..])
            .arg(primary.bin.join("pg_basebackup"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &primary.port.to_string(),
                "-U",
                "leasehold",
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(out.status.success(), "pg_basebackup: {}", String::from_utf8_lossy(&out.stderr));
        let pg = Pg { _dir: dir, data, port: free_port(), bin: primary.bin.clone(), as_user };
        pg.start_again();
        if synchronous {
            primary.psql("postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'");
            primary.psql("postgres", "SELECT pg_reload_conf()");
            assert!(
                eventually(Duration::from_secs(20), || primary.psql(
                    "postgres",
                    "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"
                ) == "1"),
                "the standby never became synchronous"
            );
        }
        pg
    }

    pub fn url(&self) -> String {
        format!("postgres://leasehold@127.0.0.1:{}/leasehold_test", self.port)
    }

    fn ctl(&self, args: &[&str]) -> bool {
        Command::new(&self.as_user[0])
            .args(&self.as_user[1..])
            .arg(self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    }

    fn opts(&self) -> String {
        format!(
            "-h 127.0.0.1 -p {} -k {} -c max_connections=100",
            self.port,
            self.data.parent().unwrap().display()
        )
    }

    /// Starts it (again), waiting until it accepts connections.
    pub fn start_again(&self) {
        let log = self.data.parent().unwrap().join("pg.log");
        let ok =
            self.ctl(&["-w", "-t", "60", "-l", log.to_str().unwrap(), "-o", &self.opts(), "start"]);
        assert!(ok, "pg_ctl start failed: {}", std::fs::read_to_string(&log).unwrap_or_default());
    }

    /// `pg_ctl restart -m fast`.
    pub fn restart_fast(&self) {
        let log = self.data.parent().unwrap().join("pg.log");
        assert!(self.ctl(&[
            "-w",
            "-m",
            "fast",
            "-l",
            log.to_str().unwrap(),
            "-o",
            &self.opts(),
            "restart"
        ]));
    }

    /// SIGKILL of the postmaster (its children notice and exit).
    pub fn kill9(&self) {
        let pid = std::fs::read_to_string(self.data.join("postmaster.pid")).unwrap();
        let pid: u32 = pid.lines().next().unwrap().trim().parse().unwrap();
        signal(pid, "KILL");
        // Wait until nothing listens on the port any more.
        assert!(eventually(Duration::from_secs(20), || TcpStream::connect((
            "127.0.0.1",
            self.port
        ))
        .is_err()));
        // The backends exit once they notice their postmaster is gone.
        std::thread::sleep(Duration::from_millis(500));
    }

    /// `pg_ctl promote` (a standby becomes a primary).
    pub fn promote(&self) {
        assert!(self.ctl(&["-w", "promote"]));
    }

    pub fn stop_immediate(&self) {
        self.ctl(&["-m", "immediate", "stop"]);
    }

    /// Runs SQL in `db`; the output of `psql -qAt`.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "leasehold",
                "-d",
                db,
                "-qAtc",
                sql,
            ])
            .env("PGOPTIONS", "-c client_min_messages=warning")
            .output()
            .unwrap();
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// SQL in the test database.
    pub fn sql(&self, sql: &str) -> String {
        self.psql("leasehold_test", sql)
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.stop_immediate();
    }
}

/// How to run PostgreSQL's programs: as `leasehold` (created if needed) when we are root,
/// which PostgreSQL refuses; `dir` is handed to that user.
fn as_pg_user(dir: &Path) -> Vec<String> {
    let root = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false);
    if !root {
        return vec!["env".into()];
    }
    let exists = Command::new("id")
        .arg("leasehold")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    if !exists {
        let _ = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "leasehold"])
            .status();
    }
    let ok = Command::new("chown").arg("leasehold").arg(dir).status().unwrap().success();
    assert!(ok, "chown {}", dir.display());
    vec!["runuser".into(), "-u".into(), "leasehold".into(), "--".into()]
}

/// POSTs `body` to `path` as `content_type` with `headers`, no keep-alive; (status, body), or
/// why it failed.
pub fn post_raw(
    addr: SocketAddr,
    path: &str,
    body: &[u8],
    content_type: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, Vec<u8>), String> {
    let e = |e: std::io::Error| e.to_string();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(e)?;
    s.set_read_timeout(Some(Duration::from_secs(10))).map_err(e)?;
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .map_err(e)?;
    s.write_all(body).map_err(e)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(e)?;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(out.len());
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let status = head.split_whitespace().nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
    Ok((status, out.get(split + 4..).unwrap_or_default().to_vec()))
}

/// `/renewal`, or `/renewal?landlord=` the set's landlord.
pub fn renewal_path(service: Option<LandlordId>) -> String {
    match service {
        Some(l) => format!("/renewal?landlord={l}"),
        None => "/renewal".to_string(),
    }
}

/// Reads a set reply (panics with the status and body if it is none).
pub fn set_reply(status: u16, bytes: &[u8]) -> leasehold::service::wire::SetReply {
    leasehold::service::wire::SetReply::from_json(bytes, &Limits::default())
        .unwrap_or_else(|e| panic!("{status}: {e}: {}", String::from_utf8_lossy(bytes)))
}

/// One set operation at `addr` as JSON (the set of landlord `service`, if given).
pub fn set_op(
    addr: SocketAddr,
    service: Option<LandlordId>,
    body: leasehold::service::wire::SetRequestBody,
) -> (u16, leasehold::service::wire::SetReply) {
    let msg = leasehold::service::wire::SetRequest { id: 1, body }.to_json();
    let (status, bytes) =
        post_raw(addr, &renewal_path(service), &msg, "application/json", &[]).unwrap();
    (status, set_reply(status, &bytes))
}

/// A plain HTTP/1.1 listener on loopback: each request's body goes to `take`, which says what
/// to answer (status, JSON body); one request per connection. Its URL ends in `/events`.
pub fn http_listener(mut take: impl FnMut(Vec<u8>) -> (u16, Vec<u8>) + Send + 'static) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/events", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut r = BufReader::new(c.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            if r.read_exact(&mut body).is_err() {
                continue;
            }
            let (status, reply) = take(body);
            let _ = write!(
                c,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                reply.len()
            );
            let _ = c.write_all(&reply);
        }
    });
    url
}

/// Events a renewal service POSTed, with when each came.
pub type SetEvents = Arc<Mutex<Vec<(Instant, leasehold::service::wire::SetEventMessage)>>>;

/// A listener for a renewal set's events: every event that decodes, answered 200.
pub fn set_listener() -> (String, SetEvents) {
    let got: SetEvents = Arc::default();
    let g = got.clone();
    let url = http_listener(move |body| {
        let l = Limits::default();
        if let Ok(m) = leasehold::service::wire::SetEventMessage::from_json(&body, &l) {
            g.lock().unwrap().push((Instant::now(), m));
        }
        (200, Vec::new())
    });
    (url, got)
}

/// The events taken so far, without their times.
pub fn set_events(events: &SetEvents) -> Vec<leasehold::service::wire::SetEventMessage> {
    events.lock().unwrap().iter().map(|(_, m)| m.clone()).collect()
}

/// A listener for a discovery registration's events: answers each with "received" and hands
/// it to the test (400 for a body that is no event).
pub fn discovery_listener(
) -> (String, std::sync::mpsc::Receiver<leasehold::discovery::RemoteDiscoveryEvent>) {
    use leasehold::discovery::wire::{EventReply, EventReplyBody};
    let (tx, rx) = std::sync::mpsc::channel();
    let url = http_listener(move |body| {
        let l = Limits::default();
        let Ok(e) = leasehold::discovery::RemoteDiscoveryEvent::decode(&body, Encoding::Json, &l)
        else {
            return (400, Vec::new());
        };
        let (event_id, sequence) = (e.event_id, e.sequence);
        let _ = tx.send(e);
        let reply = EventReply { event_id, sequence, body: EventReplyBody::Received };
        (200, reply.encode(Encoding::Json))
    });
    (url, rx)
}
