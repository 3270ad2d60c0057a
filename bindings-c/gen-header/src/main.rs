//! Writes the C header of libleasehold: `leasehold-gen-header <crate dir> <output file>`.
//!
//! Settings come from `<crate dir>/cbindgen.toml`. Exits non-zero if cbindgen cannot parse the
//! crate, so a broken binding never leaves a stale header behind unnoticed.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: leasehold-gen-header <crate dir> <output header>");
        return ExitCode::from(2);
    }
    let crate_dir = PathBuf::from(&args[1]);
    let config = match cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cbindgen.toml: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cbindgen::Builder::new().with_crate(&crate_dir).with_config(config).generate() {
        Ok(bindings) => {
            bindings.write_to_file(&args[2]);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cbindgen: {e}");
            ExitCode::FAILURE
        }
    }
}
