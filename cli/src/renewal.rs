//! `leasehold renewal ...`: a renewal service's sets (seed 003, LR; docs/renewal-service.md),
//! with the set messages of `leasehold::service::wire` over the client crate's cluster
//! transport (`Cluster::send_set`, what `leasehold_client::RemoteSet` sends). A set is named
//! by its service (the renewal shard's landlord id, as `create-set` prints it) and its cookie:
//! the CLI keeps no state between runs, so every command takes both.

use hyper_util::client::legacy::connect::Connect;
use leasehold::service::wire::{
    ClientLease, SetEventType, SetReply, SetReplyBody, SetRequest, SetRequestBody,
};
use leasehold::{ErrorCode, LandlordId, Reply, ReplyBody, Request, RequestBody, FOREVER};
use leasehold_client::Cluster;
use serde_json::json;

use crate::out::{ms, Shown};
use crate::{cookie_arg, duration_arg, landlord_arg, refused_message, request_id, Done, Fail};

/// The renewal-service commands.
#[derive(Debug, clap::Subcommand)]
pub enum RenewalCmd {
    /// Creates a set (the server picks a renewal shard); prints its service and cookie.
    CreateSet {
        /// How long the set's own lease lasts: ms, `any` or `forever` (the server bounds it,
        /// --max-set-lease-ms).
        #[arg(long, default_value = "3600000")]
        duration_ms: String,
    },
    /// Hands a client lease to a set: the service renews it with its landlord from now on.
    Add {
        /// The set's service (16 hex digits, as `create-set` prints it).
        service: String,
        /// The set's cookie.
        set: String,
        /// The client lease's landlord (as `lease grant` prints it).
        landlord: String,
        /// The client lease's cookie.
        cookie: String,
        /// The time the client lease has left, ms (what it was granted, less the time since).
        #[arg(long)]
        remaining_ms: i64,
        /// Where its landlord is reached (comma-separated; default: --servers).
        #[arg(long, value_delimiter = ',')]
        landlord_urls: Vec<String>,
        /// How long the service keeps it renewed: ms or `forever` (until removed).
        #[arg(long, default_value = "forever")]
        membership_ms: String,
        /// What each renewal asks for: ms, `forever`, or `any` (with a `forever` membership).
        #[arg(long, default_value = "30000")]
        renew_ms: String,
    },
    /// Takes a client lease out of a set (not cancelled: its holder renews it again); prints
    /// the time it has left.
    Remove {
        /// The set's service.
        service: String,
        /// The set's cookie.
        set: String,
        /// The client lease's landlord.
        landlord: String,
        /// The client lease's cookie.
        cookie: String,
        /// Its landlord's URLs, as given to `add` (comma-separated; default: --servers).
        #[arg(long, value_delimiter = ',')]
        landlord_urls: Vec<String>,
    },
    /// The client leases of a set, with their time left and membership.
    List {
        /// The set's service.
        service: String,
        /// The set's cookie.
        set: String,
    },
    /// Asks for events of a set at a URL (the service POSTs them there; the server's
    /// --event-allow bounds which URLs it takes).
    Listen {
        /// The set's service.
        service: String,
        /// The set's cookie.
        set: String,
        /// renewal-failure or expiration-warning.
        #[arg(long)]
        event: String,
        /// The listener's URL (http:// or https://).
        #[arg(long)]
        url: String,
        /// For expiration-warning: how long before the set's lease ends, ms.
        #[arg(long, default_value_t = 0)]
        min_warning_ms: i64,
    },
    /// Renews a set's own lease.
    RenewSet {
        /// The set's service.
        service: String,
        /// The set's cookie.
        set: String,
        /// How long: ms, `any` or `forever`.
        #[arg(long, default_value = "3600000")]
        duration_ms: String,
    },
    /// Cancels a set: the service stops renewing its leases (they are not cancelled).
    CancelSet {
        /// The set's service.
        service: String,
        /// The set's cookie.
        set: String,
    },
}

/// The set reply's body, or its error as a failure (a refusal of the caller, an unknown set,
/// a URL outside the server's allow-list: exit 1 with the server's reason).
fn answered(reply: SetReply) -> Result<SetReplyBody, Fail> {
    match reply.body {
        SetReplyBody::Error(e)
            if reply.landlord.0 == 0 && e.error_code() == Some(ErrorCode::LeaseDenied) =>
        {
            Err(Fail::No(refused_message(&e.message)))
        }
        SetReplyBody::Error(e) => {
            let name = e.error_code().map_or("error", |c| c.name());
            Err(Fail::No(format!(
                "renewal service {} answered {name}: {}",
                reply.landlord, e.message
            )))
        }
        body => Ok(body),
    }
}

fn lease_answer(reply: Reply) -> Result<ReplyBody, Fail> {
    match reply.body {
        ReplyBody::Error(e) => {
            let name = e.error_code().map_or("error", |c| c.name());
            Err(Fail::No(format!(
                "renewal service {} answered {name}: {}",
                reply.landlord, e.message
            )))
        }
        b => Ok(b),
    }
}

fn event_arg(s: &str) -> Result<SetEventType, Fail> {
    match s {
        "renewal-failure" | "renewal_failure" => Ok(SetEventType::RenewalFailure),
        "expiration-warning" | "expiration_warning" => Ok(SetEventType::ExpirationWarning),
        o => Err(Fail::Usage(format!("--event {o:?}: renewal-failure or expiration-warning"))),
    }
}

fn duration_or_forever(s: &str) -> Result<i64, Fail> {
    duration_arg(s)
}

fn lease_shown(leases: &[ClientLease]) -> Shown {
    let rows = leases
        .iter()
        .map(|l| {
            vec![
                l.landlord.to_string(),
                l.cookie.to_string(),
                ms(l.remaining),
                l.membership.map(membership).unwrap_or_default(),
                l.renew.map(ms).unwrap_or_default(),
                l.urls.join(","),
            ]
        })
        .collect();
    let json: Vec<_> = leases
        .iter()
        .map(|l| {
            json!({
                "landlord": l.landlord, "cookie": l.cookie, "remaining_ms": l.remaining.to_string(),
                "membership_ms": l.membership.map(|m| m.to_string()),
                "renew_ms": l.renew.map(|m| m.to_string()), "urls": l.urls,
            })
        })
        .collect();
    Shown {
        headers: vec!["LANDLORD", "COOKIE", "LEFT", "KEPT FOR", "RENEW", "URLS"],
        rows,
        json: json!({ "leases": json }),
        note: None,
    }
}

fn membership(m: i64) -> String {
    if m == FOREVER {
        "forever".into()
    } else {
        ms(m)
    }
}

/// Runs a renewal command against the cluster `c` (`servers`: its URLs, the default landlord
/// URLs of `add` and `remove`).
pub async fn run<C: Connect + Clone + Send + Sync + 'static>(
    c: &Cluster<C>,
    cmd: RenewalCmd,
    servers: &[String],
) -> Done {
    let urls = |given: Vec<String>| if given.is_empty() { servers.to_vec() } else { given };
    let send = |service: Option<LandlordId>, body: SetRequestBody| async move {
        let reply = c.send_set(service, &SetRequest { id: request_id(), body }).await?;
        answered(reply)
    };
    match cmd {
        RenewalCmd::CreateSet { duration_ms } => {
            let body = SetRequestBody::CreateSet { duration: duration_arg(&duration_ms)? };
            let reply = c.send_set(None, &SetRequest { id: request_id(), body }).await?;
            let service = reply.landlord;
            let SetReplyBody::SetCreated { set, cookie, duration } = answered(reply)? else {
                return Err(Fail::No("unexpected answer to create_set".into()));
            };
            Ok(Shown {
                headers: vec!["SERVICE", "SET", "GRANTED"],
                rows: vec![vec![service.to_string(), cookie.to_string(), ms(duration)]],
                json: json!({ "service": service, "set": cookie, "number": set.to_string(), "duration_ms": duration.to_string() }),
                note: None,
            })
        }
        RenewalCmd::Add {
            service,
            set,
            landlord,
            cookie,
            remaining_ms,
            landlord_urls,
            membership_ms,
            renew_ms,
        } => {
            let (service, set) = (landlord_arg(&service)?, cookie_arg(&set)?);
            let lease = ClientLease {
                landlord: landlord_arg(&landlord)?,
                cookie: cookie_arg(&cookie)?,
                remaining: remaining_ms,
                urls: urls(landlord_urls),
                membership: None,
                renew: None,
            };
            let (l, k) = (lease.landlord, lease.cookie);
            let body = SetRequestBody::Add {
                set,
                lease,
                membership: duration_or_forever(&membership_ms)?,
                renew: duration_arg(&renew_ms)?,
            };
            send(Some(service), body).await?;
            Ok(Shown {
                headers: vec!["LANDLORD", "COOKIE", "ADDED TO"],
                rows: vec![vec![l.to_string(), k.to_string(), set.to_string()]],
                json: json!({ "service": service, "set": set, "landlord": l, "cookie": k }),
                note: None,
            })
        }
        RenewalCmd::Remove { service, set, landlord, cookie, landlord_urls } => {
            let (service, set) = (landlord_arg(&service)?, cookie_arg(&set)?);
            let (l, k) = (landlord_arg(&landlord)?, cookie_arg(&cookie)?);
            let body =
                SetRequestBody::Remove { set, landlord: l, cookie: k, urls: urls(landlord_urls) };
            let SetReplyBody::Removed { lease } = send(Some(service), body).await? else {
                return Err(Fail::No("unexpected answer to remove".into()));
            };
            match lease {
                Some(lease) => Ok(lease_shown(std::slice::from_ref(&lease))),
                None => Err(Fail::No(format!("lease {l} {k} is not in the set"))),
            }
        }
        RenewalCmd::List { service, set } => {
            let (service, set) = (landlord_arg(&service)?, cookie_arg(&set)?);
            let SetReplyBody::Leases { leases } =
                send(Some(service), SetRequestBody::Leases { set }).await?
            else {
                return Err(Fail::No("unexpected answer to leases".into()));
            };
            let mut shown = lease_shown(&leases);
            shown.note = Some(format!("{} client lease(s) in set {set}", leases.len()));
            Ok(shown)
        }
        RenewalCmd::Listen { service, set, event, url, min_warning_ms } => {
            let (service, set) = (landlord_arg(&service)?, cookie_arg(&set)?);
            let event = event_arg(&event)?;
            let body = SetRequestBody::Listen {
                set,
                event,
                min_warning: min_warning_ms,
                url: url.clone(),
                handback: vec![],
            };
            let SetReplyBody::Registered { event_id, sequence } = send(Some(service), body).await?
            else {
                return Err(Fail::No("unexpected answer to listen".into()));
            };
            Ok(Shown {
                headers: vec!["EVENT ID", "SEQUENCE", "URL"],
                rows: vec![vec![event_id.to_string(), sequence.to_string(), url.clone()]],
                json: json!({ "event_id": event_id.to_string(), "sequence": sequence.to_string(), "url": url }),
                note: None,
            })
        }
        RenewalCmd::RenewSet { service, set, duration_ms } => {
            let (service, cookie) = (landlord_arg(&service)?, cookie_arg(&set)?);
            let req = Request {
                id: request_id(),
                body: RequestBody::Renew { cookie, duration: duration_arg(&duration_ms)? },
            };
            let ReplyBody::Renewed { duration } = lease_answer(c.send(Some(service), &req).await?)?
            else {
                return Err(Fail::No("unexpected answer to renew".into()));
            };
            Ok(Shown {
                headers: vec!["SERVICE", "SET", "RENEWED"],
                rows: vec![vec![service.to_string(), cookie.to_string(), ms(duration)]],
                json: json!({ "service": service, "set": cookie, "duration_ms": duration.to_string() }),
                note: None,
            })
        }
        RenewalCmd::CancelSet { service, set } => {
            let (service, cookie) = (landlord_arg(&service)?, cookie_arg(&set)?);
            let req = Request { id: request_id(), body: RequestBody::Cancel { cookie } };
            lease_answer(c.send(Some(service), &req).await?)?;
            Ok(Shown {
                headers: vec!["SERVICE", "SET", "CANCELLED"],
                rows: vec![vec![service.to_string(), cookie.to_string(), "yes".into()]],
                json: json!({ "service": service, "set": cookie, "cancelled": true }),
                note: None,
            })
        }
    }
}
