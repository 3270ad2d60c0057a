//! Shared plumbing for the leasehold examples: a tiny HTTP/1.1 carrier for the wire protocol
//! (std only, loopback), a file fenced by lock tokens, and a timeline recorder that prints and
//! draws what happened to each lease.
#![deny(missing_docs)]

pub mod fenced;
pub mod http;
pub mod timeline;
