//! Shared plumbing for the leasehold examples: a tiny HTTP/1.1 carrier for the wire protocol
//! (std only, loopback), the lock and election recipes on it, and a timeline recorder that
//! prints and draws what happened to each lease.
#![deny(missing_docs)]

pub mod fenced;
pub mod http;
pub mod recipes;
pub mod timeline;
