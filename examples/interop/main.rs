//! The Rust side of the four-runtime interop test (`scripts/test-interop.sh`).
//!
//! `interop landlord ID` serves a landlord over loopback HTTP (the `http` module of the
//! examples) and takes commands on stdin; `interop holder ...` reads a lease in DURATION form,
//! renews it over HTTP and writes it back out. The line protocol both speak is described in
//! `examples/interop/README.md`; every runtime's programs speak the same one.

use std::io::{self, BufRead, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::policy::Bounded;
use leasehold::{
    Cookie, Encoding, Landlord, LandlordConfig, LandlordId, Lease, Millis, Reply, ReplyBody,
    Request, RequestBody,
};
use leasehold_examples::http::{Client, Server};

/// Epoch milliseconds on the system clock: the one clock every runtime of the test shares.
fn now_ms() -> Millis {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as Millis).unwrap_or(0)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return Err(format!("odd-length hex: {text:?}"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(text.get(i..i + 2).unwrap_or("?"), 16)
                .map_err(|_| format!("bad hex: {text:?}"))
        })
        .collect()
}

fn seed() -> [u8; 32] {
    // Cookies must be unguessable; mix the clock and the process id (a test landlord only).
    let mut s = [0u8; 32];
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    s[..16].copy_from_slice(&t.to_le_bytes());
    s[16..20].copy_from_slice(&std::process::id().to_le_bytes());
    s
}

fn landlord(args: &[String]) -> Result<(), String> {
    let id: u64 = args.first().and_then(|a| a.parse().ok()).ok_or("usage: interop landlord ID")?;
    let policy = Bounded::new(60_000, 30_000).map_err(|e| e.to_string())?;
    let ll: Arc<Mutex<Landlord>> =
        Arc::new(Mutex::new(Landlord::new(LandlordConfig::new(LandlordId(id), seed()), policy)));
    let served = ll.clone();
    let server = Server::start(move |body, enc| {
        let mut ll = served.lock().expect("landlord lock");
        ll.handle_bytes(body, enc, now_ms())
    })
    .map_err(|e| format!("cannot serve: {e}"))?;
    let mut out = io::stdout().lock();
    writeln!(out, "url {}", server.url()).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    for line in io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["grant", duration] => {
                let d: i64 = duration.parse().map_err(|_| format!("bad duration {duration}"))?;
                let mut ll = ll.lock().expect("landlord lock");
                let now = now_ms();
                match ll.grant(b"interop".to_vec(), d, now) {
                    Ok(g) => {
                        let lease = ll.lease(g.cookie, now).ok_or("granted lease not found")?;
                        format!(
                            "granted {} {} {} {} {}",
                            g.cookie,
                            g.expiration,
                            now,
                            lease.to_json(now),
                            to_hex(&lease.to_bytes(now))
                        )
                    }
                    Err(e) => format!("error {e}"),
                }
            }
            ["query", cookie] => {
                let c: Cookie = cookie.parse().map_err(|_| format!("bad cookie {cookie}"))?;
                match ll.lock().expect("landlord lock").get(c, now_ms()) {
                    Some((exp, _)) => format!("expiration {exp}"),
                    None => "expiration none".to_string(),
                }
            }
            _ => format!("error unknown command {line:?}"),
        };
        writeln!(out, "{answer}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn holder(args: &[String]) -> Result<(), String> {
    let [url, json_path, hex_path, renew, encoding] = args else {
        return Err("usage: interop holder URL LEASE.json LEASE.hex RENEW_MS json|binary".into());
    };
    let renew: i64 = renew.parse().map_err(|_| format!("bad renewal duration {renew}"))?;
    let encoding = match encoding.as_str() {
        "json" => Encoding::Json,
        "binary" => Encoding::Binary,
        e => return Err(format!("encoding must be json or binary, got {e}")),
    };
    let addr: SocketAddr = url
        .strip_prefix("http://")
        .and_then(|u| u.split('/').next())
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("not an http://IP:PORT/... URL: {url}"))?;
    let json = std::fs::read_to_string(json_path).map_err(|e| format!("{json_path}: {e}"))?;
    let hex = std::fs::read_to_string(hex_path).map_err(|e| format!("{hex_path}: {e}"))?;
    let (json, bytes) = (json.trim(), from_hex(&hex)?);

    // Read both forms at one `now`, and write them back at that same `now`.
    let now = now_ms();
    let from_json = Lease::from_json(json, now).map_err(|e| e.to_string())?;
    let from_bytes = Lease::from_bytes(&bytes, now).map_err(|e| e.to_string())?;
    let mut out = io::stdout().lock();
    let mut say = |k: &str, v: String| writeln!(out, "{k} {v}").map_err(|e| e.to_string());
    say("runtime", "rust".into())?;
    say("read_now", now.to_string())?;
    say("read_json", from_json.expiration().to_string())?;
    say("read_hex", from_bytes.expiration().to_string())?;
    say("reser_json", from_json.to_json(now))?;
    say("reser_hex", to_hex(&from_bytes.to_bytes(now)))?;

    // Renew over HTTP; the new expiration counts from when the request was sent.
    let mut client = Client::new(addr, Duration::from_secs(5));
    let request =
        Request { id: 1, body: RequestBody::Renew { cookie: from_json.cookie(), duration: renew } };
    let sent_at = now_ms();
    let body = client.post(&request.encode(encoding), encoding).map_err(|e| e.to_string())?;
    let received_at = now_ms();
    let reply = Reply::decode(&body, encoding, &Default::default()).map_err(|e| e.to_string())?;
    let granted = match reply.body {
        ReplyBody::Renewed { duration } => duration,
        ReplyBody::Error(e) => return Err(format!("renewal refused: {}", e.to_error())),
        other => return Err(format!("unexpected reply {other:?}")),
    };
    let renewed = Lease::from_grant(from_json.landlord(), from_json.cookie(), sent_at, granted);
    say("sent_at", sent_at.to_string())?;
    say("rtt", (received_at - sent_at).to_string())?;
    say("granted", granted.to_string())?;
    say("renewed", renewed.expiration().to_string())?;
    let now = now_ms();
    say("write_now", now.to_string())?;
    say("json", renewed.to_json(now))?;
    say("hex", to_hex(&renewed.to_bytes(now)))?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("landlord") => landlord(&args[1..]),
        Some("holder") => holder(&args[1..]),
        _ => Err("usage: interop landlord ID | interop holder URL LEASE.json LEASE.hex RENEW_MS json|binary".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("interop (rust): {e}");
            ExitCode::FAILURE
        }
    }
}
