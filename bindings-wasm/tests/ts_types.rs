//! `js/generated.d.ts`: the TypeScript declarations of the core's data-form types, generated
//! from the Rust types (`ts_rs::TS`, derived behind the core's `ts` feature) and renamed the way
//! the package renames keys at run time (`src/data.js`, docs/bindings.md section 2: property
//! names camelCase, tag values as they are). The file is committed; this test fails when it
//! differs from what the Rust types give. `LEASEHOLD_BLESS=1 cargo test -p leasehold-wasm --test
//! ts_types` rewrites it.

use leasehold::discovery::{Announcement, Delivery, DeliveryFailure, DiscoveryOptions, Registrar};
use leasehold::holder::ManagerOptions;
use leasehold::machine::LimitsOptions;
use leasehold::service::machine::ServiceOptions;
use ts_rs::{Config, TS};

/// One exported declaration: its docs, then `export type Name = ...;`.
fn decl<T: TS>(cfg: &Config) -> String {
    format!("{}export {}\n", without_examples(&T::docs().unwrap_or_default()), T::decl(cfg))
}

/// Docs without their Rust examples (fenced blocks).
fn without_examples(docs: &str) -> String {
    let mut fenced = false;
    let keep = |l: &&str| {
        let fence = l.trim_start().starts_with("* ```");
        fenced ^= fence;
        !fence && !fenced
    };
    docs.lines().filter(keep).map(|l| format!("{l}\n")).collect()
}

/// `event_id` → `eventId`, for the property names of object types only: text in quotes (tag
/// values, literal types) and comments are left as they are.
fn camel_keys(ts: &str) -> String {
    let (mut out, b) = (String::with_capacity(ts.len()), ts.as_bytes());
    let mut i = 0;
    while i < b.len() {
        let rest = &ts[i..];
        let skip = if rest.starts_with("/*") {
            rest.find("*/").map_or(rest.len(), |e| e + 2)
        } else if let Some(quoted) = rest.strip_prefix('"') {
            quoted.find('"').map_or(rest.len(), |e| e + 2)
        } else if b[i].is_ascii_lowercase() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let n =
                rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let after = rest[n..].trim_start_matches('?');
            if after.starts_with(':') {
                for (k, word) in rest[..n].split('_').enumerate() {
                    let mut cs = word.chars();
                    if k > 0 {
                        out.extend(cs.next().map(|c| c.to_ascii_uppercase()));
                    }
                    out.push_str(cs.as_str());
                }
                i += n;
                continue;
            }
            n
        } else {
            rest.chars().next().map_or(1, char::len_utf8)
        };
        out.push_str(&rest[..skip]);
        i += skip;
    }
    out
}

fn generated() -> String {
    let cfg = Config::new().with_large_int("number | bigint");
    let decls = [
        decl::<leasehold::LandlordId>(&cfg),
        decl::<leasehold::discovery::RegistrarId>(&cfg),
        decl::<leasehold::discovery::Locator>(&cfg),
        decl::<Registrar>(&cfg),
        decl::<Announcement>(&cfg),
        decl::<leasehold::event::EventSource>(&cfg),
        decl::<Delivery>(&cfg),
        decl::<DeliveryFailure>(&cfg),
        decl::<LimitsOptions>(&cfg),
        decl::<DiscoveryOptions>(&cfg),
        decl::<ManagerOptions>(&cfg),
        decl::<ServiceOptions>(&cfg),
        decl::<leasehold::store::StoreConfig>(&cfg),
    ];
    // What the package gives out only: counters and times, which never pass 2^53 (FOREVER is
    // Infinity), so as numbers.
    let out = Config::new().with_large_int("number");
    let outputs = [
        decl::<leasehold::holder::RenewalManagerConfig>(&out),
        decl::<leasehold::holder::machine::RttData>(&out),
        decl::<leasehold::holder::RenewalStats>(&out),
        decl::<leasehold::store::FileOp>(&out),
    ];
    format!(
        "// Generated from the Rust types by bindings-wasm/tests/ts_types.rs: do not edit. The\n\
         // core's data forms as this package gives and takes them (camelCase keys; 64-bit\n\
         // integers as numbers when safe, else BigInts; durations in ms, Infinity for FOREVER).\n\
         import type {{ PolicyDescription as PolicySpec }} from './leasehold_wasm.js';\n\n{}",
        camel_keys(&[decls.join("\n"), outputs.join("\n")].join("\n"))
    )
}

#[test]
fn generated_types_are_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js/generated.d.ts");
    let want = generated();
    if std::env::var_os("LEASEHOLD_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from the Rust types: run LEASEHOLD_BLESS=1 cargo test -p leasehold-wasm \
         --test ts_types and commit it",
        path.display()
    );
}

#[test]
fn keys_are_renamed_and_values_kept() {
    assert_eq!(
        camel_keys("{ event_id: a, /** max_x: y */ \"bad_object\", b_c?: d }"),
        "{ eventId: a, /** max_x: y */ \"bad_object\", bC?: d }"
    );
}
