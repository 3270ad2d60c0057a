//! `leasehold-server`: see `leasehold-server --help` and the crate docs.

use std::process::ExitCode;

use clap::Parser;
use leasehold_server::config::{Command, Config, Flags, QuarantineAction, StoreArgs};
use leasehold_server::quarantine::{self, Target};

fn main() -> ExitCode {
    let mut flags = Flags::parse();
    if let Some(Command::Quarantine { action }) = flags.command.take() {
        return quarantine_command(action);
    }
    let config = match Config::load(flags) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("leasehold-server: {e}");
            return ExitCode::from(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    if config.json_logs {
        logs.json().init();
    } else {
        logs.init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leasehold-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        leasehold_server::run(config, listener, shutdown_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "leasehold-server failed");
            eprintln!("leasehold-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

fn target(s: &StoreArgs) -> Result<Target, String> {
    match (&s.data, &s.store) {
        (Some(d), None) => Ok(Target::Files(d.clone())),
        (None, Some(u)) => Ok(Target::Postgres(u.clone())),
        _ => Err("give --data DIR or --store URL".into()),
    }
}

/// `leasehold-server quarantine ...`: prints text (or JSON with --json); exit 0 on success,
/// 1 when refused or failed, 2 for bad arguments.
fn quarantine_command(action: QuarantineAction) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leasehold-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let store = match &action {
        QuarantineAction::List { store }
        | QuarantineAction::Inspect { store, .. }
        | QuarantineAction::Repair { store, .. }
        | QuarantineAction::Restore { store, .. }
        | QuarantineAction::Release { store, .. } => store,
    };
    let (t, json) = match target(store) {
        Ok(t) => (t, store.json),
        Err(e) => {
            eprintln!("leasehold-server quarantine: {e}");
            return ExitCode::from(2);
        }
    };
    let out: Result<(String, String), String> = runtime.block_on(async {
        Ok(match &action {
            QuarantineAction::List { .. } => {
                let marks = quarantine::list(&t).await?;
                let text = if marks.is_empty() {
                    "no shard is quarantined\n".to_string()
                } else {
                    marks
                        .iter()
                        .map(|m| {
                            format!("shard {}: {} (by {}, at {})\n", m.shard, m.reason, m.by, m.at)
                        })
                        .collect()
                };
                (text, serde_json::to_string(&marks).unwrap_or_default())
            }
            QuarantineAction::Inspect { shard, .. } => {
                let i = quarantine::inspect(&t, *shard).await?;
                (i.to_string(), serde_json::to_string(&i).unwrap_or_default())
            }
            QuarantineAction::Repair { shard, .. } => {
                let c = quarantine::repair(&t, *shard).await?;
                (c.to_string(), serde_json::to_string(&c).unwrap_or_default())
            }
            QuarantineAction::Restore { shard, snapshot, .. } => {
                let bytes =
                    std::fs::read(snapshot).map_err(|e| format!("{}: {e}", snapshot.display()))?;
                let c = quarantine::restore(&t, *shard, &bytes).await?;
                (c.to_string(), serde_json::to_string(&c).unwrap_or_default())
            }
            QuarantineAction::Release { shard, .. } => {
                quarantine::release(&t, *shard).await?;
                (
                    format!("shard {shard} released: a server takes it at its next round\n"),
                    format!("{{\"released\":{shard}}}"),
                )
            }
        })
    });
    match out {
        Ok((text, js)) => {
            if json {
                println!("{js}");
            } else {
                print!("{text}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("leasehold-server quarantine: {e}");
            ExitCode::FAILURE
        }
    }
}
