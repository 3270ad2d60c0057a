//! Copies the book's pages into OUT_DIR with their includes expanded, and writes `pages.rs`:
//! one item per page, documented with the page, so rustdoc runs the page's Rust blocks.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let src = manifest.join("../src");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed={}", src.display());
    let mut pages = Vec::new();
    collect(&src, &mut pages);
    pages.sort();
    let mut rs = String::new();
    for page in &pages {
        let rel = page.strip_prefix(&src).expect("under src");
        // Watch the page itself and (through `expand`) every file it includes.
        println!("cargo:rerun-if-changed={}", page.display());
        let text = fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        let text = expand(&text, page.parent().expect("a page is in a directory"), 0)
            .unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        let dest = out.join("pages").join(rel);
        fs::create_dir_all(dest.parent().expect("has a parent")).expect("create OUT_DIR/pages");
        fs::write(&dest, text).expect("write a page");
        let ident: String = rel
            .to_string_lossy()
            .trim_end_matches(".md")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        writeln!(
            rs,
            "/// `docs/book/src/{}`\n#[doc = include_str!({:?})]\npub struct {};",
            rel.display(),
            dest.display().to_string(),
            camel(&ident)
        )
        .expect("write to a String");
    }
    fs::write(out.join("pages.rs"), rs).expect("write pages.rs");
}

/// Every markdown page under `dir` (the figures' own README is not a page of the book).
fn collect(dir: &Path, pages: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_dir() && name != "figures" {
            collect(&path, pages);
        } else if name.ends_with(".md") && name != "SUMMARY.md" {
            pages.push(path);
        }
    }
}

fn camel(s: &str) -> String {
    let mut out = String::from("Page");
    for word in s.split('_').filter(|w| !w.is_empty()) {
        let mut cs = word.chars();
        if let Some(c) = cs.next() {
            out.push(c.to_ascii_uppercase());
            out.extend(cs);
        }
    }
    out
}

/// Expands `{{#include path[:spec]}}` and `{{#rustdoc_include path[:spec]}}` as mdbook does
/// (a whole file, line `N`, lines `N:M` with either end open, or an anchor's lines; lines
/// naming anchors dropped; `rustdoc_include` keeps the rest of the file as hidden `# ` lines).
fn expand(text: &str, base: &Path, depth: usize) -> Result<String, String> {
    if depth > 10 {
        return Err("includes nested deeper than 10".into());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{#") {
        let escaped = rest[..start].ends_with('\\');
        let Some(len) = rest[start..].find("}}") else { break };
        let inner = rest[start + 3..start + len].trim();
        let (kind, arg) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
        out.push_str(&rest[..start]);
        if escaped || !(kind == "include" || kind == "rustdoc_include") {
            out.push_str(&rest[start..start + len + 2]);
        } else {
            let (file, spec) = match arg.trim().split_once(':') {
                Some((f, s)) => (f, Some(s)),
                None => (arg.trim(), None),
            };
            let path = base.join(file);
            println!("cargo:rerun-if-changed={}", path.display());
            let part = include_part(&path, spec, kind == "rustdoc_include")?;
            out.push_str(&expand(&part, path.parent().unwrap_or(base), depth + 1)?);
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn anchor(line: &str) -> Option<(bool, &str)> {
    let (end, at) = match (line.find("ANCHOR_END:"), line.find("ANCHOR:")) {
        (Some(i), _) => (true, i + "ANCHOR_END:".len()),
        (None, Some(i)) => (false, i + "ANCHOR:".len()),
        _ => return None,
    };
    let name = line[at..].trim_start();
    let n =
        name.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')).unwrap_or(name.len());
    Some((end, &name[..n])).filter(|(_, n)| !n.is_empty())
}

fn include_part(path: &Path, spec: Option<&str>, rustdoc: bool) -> Result<String, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let chosen: Vec<bool> = match spec {
        None => vec![true; lines.len()],
        Some(s) if s.chars().all(|c| c.is_ascii_digit() || c == ':') => {
            let (a, b) = s.split_once(':').map_or((s, None), |(a, b)| (a, Some(b)));
            let lo = a.parse::<usize>().map_or(0, |n| n.saturating_sub(1));
            let hi = match b {
                None => lo + 1,
                Some("") => lines.len(),
                Some(b) => b.parse::<usize>().map_err(|e| format!("{s}: {e}"))?,
            };
            (0..lines.len()).map(|i| lo <= i && i < hi).collect()
        }
        Some(name) => {
            let mut inside = false;
            let mut found = false;
            let v: Vec<bool> = lines
                .iter()
                .map(|l| {
                    if let Some((end, n)) = anchor(l) {
                        if n == name {
                            inside = !end;
                            found = true;
                        }
                    }
                    inside
                })
                .collect();
            if !found {
                return Err(format!("{} has no anchor {name:?}", path.display()));
            }
            v
        }
    };
    let mut out = Vec::new();
    for (line, keep) in lines.iter().zip(chosen) {
        if anchor(line).is_some() {
            continue;
        }
        if keep {
            out.push(line.to_string());
        } else if rustdoc {
            out.push(if line.trim().is_empty() { "#".to_string() } else { format!("# {line}") });
        }
    }
    Ok(out.join("\n"))
}
