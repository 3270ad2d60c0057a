//! Every `leasehold` command, run as a process against a real server (`leasehold_server::run`
//! on loopback with the embedded file store, in this test's process) and a real data
//! directory. The PostgreSQL store commands run against a real PostgreSQL in
//! `scripts/test-cli.sh`.

use std::path::Path;
use std::process::{Command, Output};

use leasehold_server::config::{Config, Flags};
use serde_json::Value;

struct Server {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(data: &Path, shards: u64) -> Server {
        Server::start_with(data, shards, Vec::new())
    }

    /// A server whose resources under `exclusive` prefixes are exclusive.
    fn start_with(data: &Path, shards: u64, exclusive: Vec<String>) -> Server {
        let flags = Flags {
            data: Some(data.to_path_buf()),
            shards: Some(shards),
            listen: Some("127.0.0.1:0".parse().unwrap()),
            exclusive_prefix: exclusive,
            ..Default::default()
        };
        Server::start_config(Config::load(flags).unwrap())
    }

    /// A server with these settings.
    fn start_config(config: Config) -> Server {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                leasehold_server::run(config, listener, async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        Server { url: format!("http://{addr}"), stop: Some(stop), thread: Some(thread) }
    }

    fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn leasehold(servers: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_SERVERS", servers)
        .args(args)
        .output()
        .unwrap()
}

/// Runs with `--output json`; the status code and the document.
fn json(servers: &str, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--output", "json"];
    all.extend_from_slice(args);
    let out = leasehold(servers, &all);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() || !out.stderr.is_empty(), "a failure says why on stderr");
    let v = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("{args:?}: {e}: {text} / {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().unwrap(), v)
}

fn ok(servers: &str, args: &[&str]) -> Value {
    let (code, v) = json(servers, args);
    assert_eq!(code, 0, "{args:?}: {v}");
    v
}

#[test]
fn every_lease_and_cluster_command_against_a_server() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut s = Server::start(&data, 4);
    let u = s.url.clone();
    // grant
    let g = ok(&u, &["lease", "grant", "printer-3", "--duration-ms", "60000"]);
    let (landlord, cookie) =
        (g["landlord"].as_str().unwrap().to_string(), g["cookie"].as_str().unwrap().to_string());
    assert_eq!(landlord.len(), 16);
    assert_eq!(g["duration_ms"], "60000");
    // renew (the landlord exactly as grant printed it)
    let r = ok(&u, &["lease", "renew", &landlord, &cookie, "--duration-ms", "45000"]);
    assert_eq!(r["duration_ms"], "45000");
    // a landlord in another form is a usage error, before anything is sent
    let (code, _) = json(&u, &["lease", "renew", "3", &cookie]);
    assert_eq!(code, 2);
    // get by cookie and by resource
    let one = ok(&u, &["lease", "get", &landlord, &cookie]);
    assert_eq!(one["resource_text"], "printer-3");
    let left: i64 = one["expires_in_ms"].as_str().unwrap().parse().unwrap();
    assert!(left > 40_000 && left <= 45_000, "{left}");
    let by = ok(&u, &["lease", "get", "--resource", "printer-3"]);
    assert_eq!(by["leases"][0]["cookie"], cookie.as_str());
    // list, paged and by prefix; --all walks every page
    let mut job_landlords = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..12 {
        let g = ok(&u, &["lease", "grant", &format!("job/{i}")]);
        *job_landlords.entry(g["landlord"].as_str().unwrap().to_string()).or_default() += 1;
    }
    let (busy, n) = job_landlords.iter().max_by_key(|x| x.1).map(|(l, n)| (l.clone(), *n)).unwrap();
    let page = ok(&u, &["lease", "list", &busy, "--prefix", "job/", "--limit", "1"]);
    assert_eq!(page["leases"].as_array().unwrap().len(), 1);
    if n > 1 {
        assert!(page["next"].is_string(), "{page}");
    }
    let all = ok(&u, &["lease", "list", &busy, "--prefix", "job/", "--limit", "1", "--all"]);
    assert_eq!(all["leases"].as_array().unwrap().len(), n);
    // the table form prints the same leases
    let out = leasehold(&u, &["lease", "list", &busy, "--prefix", "job/", "--all"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("LANDLORD"), "{table}");
    assert_eq!(table.lines().filter(|l| l.contains("job/")).count(), n);
    // cancel, then it is unknown (a definite answer: exit 1)
    ok(&u, &["lease", "cancel", &landlord, &cookie]);
    let (code, v) = json(&u, &["lease", "renew", &landlord, &cookie]);
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("unknown_lease"), "{v}");
    // revoke by cookie and by resource
    let g = ok(&u, &["lease", "grant", "scanner", "--duration-ms", "forever"]);
    let gone = ok(
        &u,
        &["lease", "revoke", g["landlord"].as_str().unwrap(), g["cookie"].as_str().unwrap()],
    );
    assert_eq!(gone["revoked"][0]["resource_text"], "scanner");
    ok(&u, &["lease", "grant", "scanner"]);
    ok(&u, &["lease", "grant", "scanner"]);
    let gone = ok(&u, &["lease", "revoke", "--resource", "scanner"]);
    assert_eq!(gone["revoked"].as_array().unwrap().len(), 2);
    let (code, _) = json(&u, &["lease", "revoke", "--resource", "scanner"]);
    assert_eq!(code, 1);
    // cluster status: every shard served here, with leases and journal lag
    let st = ok(&u, &["cluster", "status"]);
    let shards = st["servers"][0]["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 4, "{st}");
    let live: f64 = shards.iter().map(|x| x["live_leases"].as_f64().unwrap()).sum();
    assert_eq!(live, 12.0);
    // a server that is down: status says so; a lease command is an indefinite failure (3)
    let dead = "http://127.0.0.1:1";
    let st = ok(&format!("{u},{dead}"), &["cluster", "status"]);
    assert_eq!(st["servers"][1]["up"], false);
    let (code, _) = json(dead, &["lease", "grant", "x"]);
    assert_eq!(code, 3);
    // failover: a dead server first, then the live one
    ok(&format!("{dead},{u}"), &["lease", "grant", "failover"]);

    // Offline, on the same directory: inspect and dump beside the running server...
    let d = data.to_str().unwrap();
    let inspect = ok(&u, &["store", "inspect", "--data", d]);
    assert_eq!(inspect.as_array().unwrap().len(), 4);
    let dump = ok(&u, &["store", "dump", "--data", d]);
    assert_eq!(dump.as_array().unwrap().len(), 13, "{dump}");
    // ...compact is refused while the server holds the directories...
    let (code, v) = json(&u, &["store", "compact", "--data", d]);
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("stop it first"), "{v}");
    s.stop();
    // ...and works once it is stopped; verify then finds every lease again.
    let c = ok(&u, &["store", "compact", "--data", d]);
    assert_eq!(c.as_array().unwrap().len(), 4);
    let v = ok(&u, &["store", "verify", "--data", d]);
    let leases: u64 = v.as_array().unwrap().iter().map(|x| x["leases"].as_u64().unwrap()).sum();
    assert_eq!(leases, 13);
    assert!(v.as_array().unwrap().iter().all(|x| x["ok"] == true));
    // A damaged store is refused by verify (exit 1), as a server would refuse it.
    let shard = data.join("shard-1");
    std::fs::write(shard.join("snapshot"), b"not a snapshot").unwrap();
    let (code, v) = json(&u, &["store", "verify", "--data", d]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v[0]["ok"], false, "{v}");
    assert!(v[0]["error"].as_str().unwrap().contains("snapshot"), "{v}");
    assert_eq!(v[1]["ok"], true, "{v}");
    // completions
    let out = leasehold(&u, &["completions", "bash"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("leasehold"));
}

#[test]
fn lock_runs_a_command_with_its_token_and_refuses_what_is_not_exclusive() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_with(&tmp.path().join("data"), 2, vec!["locks/".into()]);
    let u = s.url.clone();
    // The command gets the token and the cookie; its exit status is the CLI's.
    let script = "echo $LEASEHOLD_FENCING_TOKEN ${#LEASEHOLD_LOCK_COOKIE}; exit 5";
    let out = leasehold(&u, &["lock", "locks/a", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let words: Vec<&str> = text.split_whitespace().collect();
    let first: u64 = words[0].parse().unwrap();
    assert_eq!(words[1], "32", "{text}");
    // Released when the command ended: the next holder gets it at once, with a greater token.
    let out = leasehold(&u, &["lock", "locks/a", "--wait-ms", "0", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(5));
    let second: u64 =
        String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().parse().unwrap();
    assert!(second > first, "{second} after {first}");
    // A resource outside the exclusive prefixes is no lock: refused (1), and it says why.
    let out = leasehold(&u, &["lock", "shared/a", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--exclusive-prefix"));
    // A command that cannot start: 127, as a shell says it, and the lock is released.
    let out = leasehold(&u, &["lock", "locks/b", "--", "/no/such/command"]);
    assert_eq!(out.status.code(), Some(127));
    let out = leasehold(&u, &["lock", "locks/b", "--wait-ms", "0", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // TLS settings that cannot work are usage errors, before anything is sent.
    let out = leasehold(&u, &["--key", "/etc/hostname", "lease", "grant", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--key needs --cert"));
    let out = leasehold("https://127.0.0.1:1", &["--cacert", "/no/ca.pem", "lease", "grant", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/ca.pem: cannot read it"));
}

/// A server with `renewal` renewal-service shards after its landlords.
fn start_renewal(data: &Path, shards: u64, renewal: u64) -> Server {
    let flags = Flags {
        data: Some(data.to_path_buf()),
        shards: Some(shards),
        renewal_shards: Some(renewal),
        listen: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    Server::start_config(Config::load(flags).unwrap())
}

#[test]
fn renewal_commands_keep_a_lease_alive_and_refuse_what_the_server_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut s = start_renewal(&data, 1, 1);
    let u = s.url.clone();
    let g = ok(&u, &["lease", "grant", "job/kept", "--duration-ms", "2000"]);
    let (landlord, cookie) =
        (g["landlord"].as_str().unwrap().to_string(), g["cookie"].as_str().unwrap().to_string());
    let set = ok(&u, &["renewal", "create-set", "--duration-ms", "60000"]);
    let (service, cookie_of_set) =
        (set["service"].as_str().unwrap().to_string(), set["set"].as_str().unwrap().to_string());
    assert_eq!(service, "0000000000000002");
    assert_eq!(set["duration_ms"], "60000");
    let add = [
        "renewal",
        "add",
        &service,
        &cookie_of_set,
        &landlord,
        &cookie,
        "--remaining-ms",
        "2000",
        "--renew-ms",
        "2000",
    ];
    ok(&u, &add);
    let listed = ok(&u, &["renewal", "list", &service, &cookie_of_set]);
    assert_eq!(listed["leases"][0]["cookie"], cookie.as_str());
    assert_eq!(listed["leases"][0]["urls"][0], u.as_str());
    // Nobody but the service renews it: after twice its duration it is alive.
    std::thread::sleep(std::time::Duration::from_millis(4_500));
    let one = ok(&u, &["lease", "get", &landlord, &cookie]);
    assert_eq!(one["resource_text"], "job/kept");
    // A landlord URL the server's allow-list refuses: exit 1 with the server's reason.
    let mut bad = add.to_vec();
    bad.extend_from_slice(&["--landlord-urls", "http://169.254.169.254/"]);
    let (code, v) = json(&u, &bad);
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("--renewal-allow"), "{v}");
    // A listener, the set renewed, the lease taken back, the set cancelled.
    let l = ok(
        &u,
        &[
            "renewal",
            "listen",
            &service,
            &cookie_of_set,
            "--event",
            "renewal-failure",
            "--url",
            "http://127.0.0.1:9/x",
        ],
    );
    assert!(l["event_id"].is_string(), "{l}");
    let r = ok(&u, &["renewal", "renew-set", &service, &cookie_of_set, "--duration-ms", "30000"]);
    assert_eq!(r["duration_ms"], "30000");
    let back = ok(&u, &["renewal", "remove", &service, &cookie_of_set, &landlord, &cookie]);
    assert_eq!(back["leases"][0]["cookie"], cookie.as_str());
    let left: i64 = back["leases"][0]["remaining_ms"].as_str().unwrap().parse().unwrap();
    assert!(left > 0 && left <= 2_000, "{back}");
    ok(&u, &["renewal", "cancel-set", &service, &cookie_of_set]);
    let (code, v) = json(&u, &["renewal", "list", &service, &cookie_of_set]);
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("unknown_lease"), "{v}");
    // The table form.
    let out = leasehold(&u, &["renewal", "create-set"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("SERVICE"));
    s.stop();
    // Offline, the store commands read the renewal shard as a server would (not refused as a
    // snapshot of another kind), and compact it.
    let d = data.to_str().unwrap();
    let v = ok(&u, &["store", "verify", "--data", d]);
    let shard2 = v.as_array().unwrap().iter().find(|r| r["landlord"] == service.as_str()).unwrap();
    assert_eq!((shard2["kind"].as_str(), shard2["ok"].as_bool()), (Some("renewal"), Some(true)));
    assert!(shard2["last_seq"].as_u64().unwrap() >= 5, "{shard2}");
    let c = ok(&u, &["store", "compact", "--data", d]);
    assert!(c.as_array().unwrap().iter().any(|r| r["landlord"] == service.as_str()), "{c}");
    let v = ok(&u, &["store", "verify", "--data", d]);
    assert!(v.as_array().unwrap().iter().all(|r| r["ok"] == true), "{v}");
    let out = leasehold(&u, &["store", "inspect", "--data", d]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("renewal shard"));
}
