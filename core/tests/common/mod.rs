//! Shared by the restore fuzz tests: random, structure-aware mutations of a JSON snapshot.

#![allow(dead_code)]

use proptest::prelude::*;
use serde_json::Value;

/// One mutation: which node (by index in a walk of the document), what to do, and a value.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub node: usize,
    pub op: u8,
    pub value: i64,
}

pub fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(
        (
            any::<usize>(),
            0u8..10,
            prop_oneof![
                Just(0i64),
                Just(1),
                Just(-1),
                Just(2),
                Just(i64::MAX),
                Just(i64::MIN),
                Just(u32::MAX as i64),
                -1_000i64..100_000
            ],
        )
            .prop_map(|(node, op, value)| Mutation { node, op, value }),
        1..4,
    )
}

/// Every node of the document, parents before children, as paths of keys and indices.
fn paths(v: &Value, here: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(here.clone());
    match v {
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                here.push(PathStep::Index(i));
                paths(x, here, out);
                here.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                here.push(PathStep::Key(k.clone()));
                paths(x, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum PathStep {
    Index(usize),
    Key(String),
}

fn at<'a>(v: &'a mut Value, path: &[PathStep]) -> &'a mut Value {
    let mut v = v;
    for s in path {
        v = match s {
            PathStep::Index(i) => &mut v[*i],
            PathStep::Key(k) => &mut v[k.as_str()],
        };
    }
    v
}

/// Applies the mutations to the JSON text (skipping those that do not fit the node chosen).
pub fn mutate(text: &str, ms: &[Mutation]) -> String {
    let mut doc: Value = serde_json::from_str(text).unwrap();
    for m in ms {
        let mut all = Vec::new();
        paths(&doc, &mut Vec::new(), &mut all);
        let path = &all[m.node % all.len()];
        let node = at(&mut doc, path);
        match (node, m.op) {
            (Value::Number(n), 0..=4) => {
                let x = n.as_i64().unwrap_or(0);
                let y = match m.op {
                    0 => m.value,
                    1 => x.wrapping_add(1),
                    2 => x.wrapping_sub(1),
                    3 => x.wrapping_add(m.value),
                    _ => x.wrapping_neg(),
                };
                *at(&mut doc, path) = Value::from(y);
            }
            (Value::String(s), 0..=4) => {
                // Change one character (hex digits stay hex, mostly).
                let mut c: Vec<char> = s.chars().collect();
                if !c.is_empty() {
                    let i = (m.value.unsigned_abs() as usize) % c.len();
                    c[i] = match c[i] {
                        '0' => '1',
                        '9' => 'a',
                        'f' => '0',
                        ch if ch.is_ascii_digit() => ((ch as u8) + 1) as char,
                        ch if ch.is_ascii_hexdigit() => ((ch as u8) + 1) as char,
                        _ => 'x',
                    };
                }
                *at(&mut doc, path) = Value::from(c.into_iter().collect::<String>());
            }
            (Value::Bool(b), _) => {
                let nb = !*b;
                *at(&mut doc, path) = Value::from(nb);
            }
            (Value::Array(a), op) if !a.is_empty() => {
                let i = (m.value.unsigned_abs() as usize) % a.len();
                match op % 3 {
                    0 => {
                        let x = a[i].clone();
                        a.push(x);
                    }
                    1 => {
                        a.remove(i);
                    }
                    _ => {
                        let j = (i + 1) % a.len();
                        a.swap(i, j);
                    }
                }
            }
            (Value::Null, 5..=9) => {
                *at(&mut doc, path) = Value::from(m.value);
            }
            (node, 8 | 9) if !path.is_empty() => {
                // A value replaced by null (an optional field emptied, or a required one lost).
                let _ = node;
                *at(&mut doc, path) = Value::Null;
            }
            _ => {}
        }
    }
    serde_json::to_string(&doc).unwrap()
}
pub mod discovery;
pub mod vectors;
