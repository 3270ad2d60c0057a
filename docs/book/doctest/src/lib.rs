//! The Rust code blocks of the documentation book, compiled and run as doc tests.
//!
//! `build.rs` copies every page of `docs/book/src` into `OUT_DIR`, with `{{#include}}` and
//! `{{#rustdoc_include}}` expanded as mdbook expands them, and makes one item per page whose
//! documentation is that page. So `cargo test -p leasehold-book --doc` runs each ```` ```rust ````
//! block of the book (as rustdoc runs any doc test: `# ` lines are hidden from the reader but
//! compiled, `no_run` blocks are only compiled, `ignore` blocks are fragments), and
//! `scripts/test-rust.sh` runs them with every other doc test of the workspace. The conventions
//! are on the book's page "Writing for this book" (`docs/book/src/contributing.md`).

/// One item per page of the book, documented with the page (only when testing docs).
#[cfg(doctest)]
pub mod pages {
    include!(concat!(env!("OUT_DIR"), "/pages.rs"));
}
