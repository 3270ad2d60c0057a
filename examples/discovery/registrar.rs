//! A registrar (a lookup service, as far as discovery goes): announces its id, groups and
//! locator over UDP every interval, and answers unicast discovery on its TCP port with the
//! same announcement datagram. Prints one JSON line when it is up.

use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, UdpSocket};
use std::time::Duration;

use ldrun::{choose_mode, multicast_sender, now_ms, Args, Mode};
use leasehold::discovery::{Announcement, Locator, RegistrarId};

const USAGE: &str = "\
registrar: announces itself over UDP and answers unicast discovery over TCP.

USAGE: registrar --id HEX --announce-port PORT [OPTIONS]

OPTIONS:
  --id HEX             registrar id, up to 32 hex digits (kept across restarts)
  --groups A,B         its groups (default: none; \"\" is the public group)
  --port PORT          TCP port for unicast discovery on 127.0.0.1 (default: any free one);
                       the locator it announces is 127.0.0.1:PORT
  --announce-port P    UDP port announcements go to (the multicast group's, or the lookup
                       discovery service's on 127.0.0.1)
  --announce MODE      auto | multicast | unicast (default auto: multicast if it works on lo)
  --interval-ms MS     between announcements (default 300)
  --ttl-ms MS          how long each announcement counts (default 1500)
";

fn main() {
    if let Err(e) = run() {
        eprintln!("registrar: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let args = Args::parse(USAGE)?;
    let id = args.get("id").ok_or("--id is required (see --help)")?;
    let id = u128::from_str_radix(id, 16).map_err(|_| format!("--id wants hex, got {id:?}"))?;
    let groups: std::collections::BTreeSet<String> = match args.get("groups") {
        None => Default::default(),
        Some(g) => g.split(',').map(str::to_string).collect(),
    };
    let aport = args.num("announce-port", 0)?;
    if !(1..=65535).contains(&aport) {
        return Err("--announce-port is required, 1 to 65535".into());
    }
    let interval = args.num("interval-ms", 300)?.max(10) as u64;
    let ttl = args.num("ttl-ms", 1500)?.max(1);
    let port = args.num("port", 0)?;
    let tcp = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port as u16))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let port = tcp.local_addr().map_err(|e| e.to_string())?.port();
    let locator = Locator::new("127.0.0.1", port).map_err(|e| e.to_string())?;
    let (mode, why) = choose_mode(&args.or("announce", "auto"), aport as u16)?;
    let socket = match mode {
        Mode::Multicast(_) => multicast_sender().map_err(|e| e.to_string())?,
        Mode::Unicast(_) => UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?,
    };
    // Sequence numbers grow across restarts: the start time in ms, times 1000, plus a count.
    let base = (now_ms() as u64).saturating_mul(1000);
    let announcement = move |n: u64| Announcement {
        registrar: RegistrarId(id),
        groups: groups.clone(),
        locator: locator.clone(),
        sequence: base + n,
        ttl,
    };
    let first = announcement(0);
    println!(
        "{}",
        serde_json::json!({
            "registrar": RegistrarId(id).to_string(),
            "locator": first.locator.to_string(),
            "announcements": mode.describe(),
            "multicast_unavailable": why,
        })
    );
    // Unicast discovery: each connection gets the current announcement, then is closed.
    let current =
        std::sync::Arc::new(std::sync::Mutex::new(first.encode().map_err(|e| e.to_string())?));
    let answer = current.clone();
    std::thread::spawn(move || {
        for mut c in tcp.incoming().flatten() {
            let bytes = answer.lock().unwrap().clone();
            let _ = std::io::Write::write_all(&mut c, &bytes);
        }
    });
    let target = mode.target();
    let mut n = 0u64;
    loop {
        let bytes = announcement(n).encode().map_err(|e| e.to_string())?;
        *current.lock().unwrap() = bytes.clone();
        if let Err(e) = socket.send_to(&bytes, target) {
            eprintln!("registrar: announcing to {target}: {e}");
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(interval));
    }
}
