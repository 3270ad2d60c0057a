//! The simulator replays a seed exactly: the same seed prints the same trace, byte for byte,
//! whether run alone or among others, on one thread or several.

use std::process::Command;

fn vopr(args: &[&str]) -> String {
    let out =
        Command::new(env!("CARGO_BIN_EXE_vopr")).args(args).output().expect("the vopr binary runs");
    assert!(out.status.code().is_some(), "vopr was killed: {out:?}");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    // The summary line carries the wall time, which no replay can repeat.
    text.lines().filter(|l| !l.starts_with("vopr summary:")).map(|l| format!("{l}\n")).collect()
}

/// The report blocks of a multi-seed run, by seed: from "seed N FAILED" to its replay line.
fn blocks(text: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(u64, String)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("seed ") {
            let seed = rest.split(' ').next().and_then(|s| s.parse().ok()).expect("a seed");
            cur = Some((seed, String::new()));
        }
        if let Some((_, b)) = &mut cur {
            b.push_str(line);
            b.push('\n');
            if line.starts_with("  replay: ") {
                out.push(cur.take().expect("open"));
            }
        }
    }
    out
}

#[test]
fn a_seed_replays_byte_for_byte() {
    for args in [
        vec!["--seed", "3", "--trace", "300"],
        vec!["--seed", "17", "--trace", "300"],
        vec!["--seed", "11", "--trace", "300", "--avoid", "restore-twin"],
        vec!["--seed", "5", "--trace", "300", "--avoid", "short-renewals,steps-back"],
    ] {
        let a = vopr(&args);
        let b = vopr(&args);
        assert!(a.lines().count() > 20, "a trace was printed for {args:?}:\n{a}");
        assert_eq!(a, b, "two replays of {args:?} differ");
    }
}

#[test]
fn a_failure_found_among_many_seeds_replays_alone_the_same() {
    let many = vopr(&["--seeds", "24", "--first-seed", "0", "--jobs", "2"]);
    let one_thread = vopr(&["--seeds", "24", "--first-seed", "0", "--jobs", "1"]);
    assert_eq!(many, one_thread, "the output depends on the number of threads");
    assert!(many.lines().last().is_some_and(|l| l.starts_with("vopr: ")), "{many}");
    for (seed, block) in blocks(&many) {
        let alone = vopr(&["--seed", &seed.to_string()]);
        let (_, alone_block) = blocks(&alone).pop().expect("a replay prints its block");
        assert_eq!(block, alone_block, "seed {seed} replays differently alone");
    }
}
