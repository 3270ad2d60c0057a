//! Output: aligned tables for people, JSON for scripts (`--output json`).

use serde_json::Value;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Aligned columns.
    Table,
    /// One JSON document.
    Json,
}

/// A result: rows under headers (for the table), and the same as JSON.
pub struct Shown {
    pub headers: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
    pub json: Value,
    /// A line under the table (a cursor, a summary); not in the JSON (which has it as data).
    pub note: Option<String>,
}

impl Shown {
    pub fn print(&self, output: Output) {
        match output {
            Output::Json => {
                println!("{}", serde_json::to_string_pretty(&self.json).unwrap_or_default())
            }
            Output::Table => {
                let mut widths: Vec<usize> = self.headers.iter().map(|h| h.len()).collect();
                for r in &self.rows {
                    for (i, c) in r.iter().enumerate() {
                        if i < widths.len() {
                            widths[i] = widths[i].max(c.chars().count());
                        }
                    }
                }
                let line = |cells: Vec<&str>| {
                    let mut s = String::new();
                    for (i, c) in cells.iter().enumerate() {
                        if i + 1 == cells.len() {
                            s.push_str(c);
                        } else {
                            s.push_str(&format!("{c:<w$}  ", w = widths[i]));
                        }
                    }
                    println!("{}", s.trim_end());
                };
                line(self.headers.clone());
                for r in &self.rows {
                    line(r.iter().map(String::as_str).collect());
                }
                if let Some(n) = &self.note {
                    println!("{n}");
                }
            }
        }
    }
}

impl Shown {
    /// As [`Shown::print`], but JSON on one line (for what prints and then goes on: `lock`,
    /// `elect`, whose output a script reads line by line).
    pub fn print_line(&self, output: Output) {
        match output {
            Output::Json => println!("{}", self.json),
            Output::Table => self.print(output),
        }
    }
}

/// Milliseconds as people read them (FOREVER as "forever").
pub fn ms(v: i64) -> String {
    if v == leasehold::FOREVER {
        "forever".into()
    } else if v >= 10_000 {
        format!("{:.1} s", v as f64 / 1000.0)
    } else {
        format!("{v} ms")
    }
}
