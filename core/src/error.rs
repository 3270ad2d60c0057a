//! The error family, mirroring the Jini lease exceptions.

use serde::{Deserialize, Serialize};

use crate::lease::Cookie;

/// Stable numeric codes, shared by every binding (C status codes, JS `code`, Python `code`).
///
/// The numbers never change once released; new codes are only ever appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(i32)]
pub enum ErrorCode {
    /// No error.
    Ok = 0,
    /// `UnknownLeaseException`: the lease is not (or no longer) known to its grantor.
    UnknownLease = 1,
    /// `LeaseDeniedException`: the grantor refused the request; the lease is unchanged.
    LeaseDenied = 2,
    /// `LeaseMapException`: some leases of a batch failed; each carries its own error.
    LeaseMap = 3,
    /// `IllegalArgumentException`: a bad duration, a mismatched lease, an impossible setting.
    InvalidArgument = 4,
    /// Bytes or text that do not decode: malformed, truncated, oversized or of another version.
    Decode = 5,
    /// An indefinite failure reported by the host (transport error, time-out): worth retrying.
    Indefinite = 6,
}

impl ErrorCode {
    /// The stable snake_case name of the code (`"unknown_lease"`, ...), as in the shared
    /// vectors (`core/tests/vectors/errors.json`); bindings may use it for error class names.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Ok => "ok",
            ErrorCode::UnknownLease => "unknown_lease",
            ErrorCode::LeaseDenied => "lease_denied",
            ErrorCode::LeaseMap => "lease_map",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::Decode => "decode",
            ErrorCode::Indefinite => "indefinite",
        }
    }

    /// The code for a number, if it is one.
    pub fn from_i32(code: i32) -> Option<ErrorCode> {
        Some(match code {
            0 => ErrorCode::Ok,
            1 => ErrorCode::UnknownLease,
            2 => ErrorCode::LeaseDenied,
            3 => ErrorCode::LeaseMap,
            4 => ErrorCode::InvalidArgument,
            5 => ErrorCode::Decode,
            6 => ErrorCode::Indefinite,
            _ => return None,
        })
    }
}

/// One lease's failure inside a [`LeaseError::LeaseMap`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseFailure {
    /// The lease that failed.
    pub cookie: Cookie,
    /// Why it failed.
    pub error: LeaseError,
}

/// Every error of leasehold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum LeaseError {
    /// The lease is unknown to its grantor: never granted, cancelled, or expired.
    #[error("unknown lease")]
    UnknownLease,
    /// The grantor refused; a denied renewal leaves the lease as it was.
    #[error("lease denied: {0}")]
    LeaseDenied(String),
    /// Some leases of a batch failed; the others succeeded.
    #[error("{} lease(s) of the batch failed", .0.len())]
    LeaseMap(Vec<LeaseFailure>),
    /// A bad argument: a negative duration other than ANY, a lease of another landlord, ...
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Input that does not decode.
    #[error("decode error: {0}")]
    Decode(String),
    /// An indefinite failure (transport error, time-out) reported by the host; retryable.
    #[error("indefinite failure: {0}")]
    Indefinite(String),
}

impl LeaseError {
    /// The stable numeric code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            LeaseError::UnknownLease => ErrorCode::UnknownLease,
            LeaseError::LeaseDenied(_) => ErrorCode::LeaseDenied,
            LeaseError::LeaseMap(_) => ErrorCode::LeaseMap,
            LeaseError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            LeaseError::Decode(_) => ErrorCode::Decode,
            LeaseError::Indefinite(_) => ErrorCode::Indefinite,
        }
    }

    /// Definite failures (LR.2) mean retrying cannot help; only [`LeaseError::Indefinite`] is not.
    pub fn is_definite(&self) -> bool {
        !matches!(self, LeaseError::Indefinite(_))
    }

    /// Rebuilds an error from its code and message (the wire form of a single error).
    ///
    /// Unknown codes read as [`LeaseError::Decode`], so a newer peer never crashes an older one.
    /// A [`LeaseError::LeaseMap`] does not travel as one error: batch replies carry each lease's
    /// own outcome instead ([`crate::wire::ReplyBody::RenewedAll`]), and the holder rebuilds the
    /// per-lease failures from those. Code 3 alone therefore reads back as an empty `LeaseMap`.
    pub fn from_code(code: i32, message: &str) -> LeaseError {
        let m = message.to_string();
        match ErrorCode::from_i32(code) {
            Some(ErrorCode::UnknownLease) => LeaseError::UnknownLease,
            Some(ErrorCode::LeaseDenied) => LeaseError::LeaseDenied(m),
            Some(ErrorCode::LeaseMap) => LeaseError::LeaseMap(Vec::new()),
            Some(ErrorCode::InvalidArgument) => LeaseError::InvalidArgument(m),
            Some(ErrorCode::Indefinite) => LeaseError::Indefinite(m),
            Some(ErrorCode::Decode) => LeaseError::Decode(m),
            Some(ErrorCode::Ok) | None => LeaseError::Decode(format!("error code {code}: {m}")),
        }
    }

    /// The message without the category prefix (what `from_code` takes back).
    pub fn detail(&self) -> String {
        match self {
            LeaseError::UnknownLease => String::new(),
            LeaseError::LeaseMap(f) => format!("{} lease(s) of the batch failed", f.len()),
            LeaseError::LeaseDenied(m)
            | LeaseError::InvalidArgument(m)
            | LeaseError::Decode(m)
            | LeaseError::Indefinite(m) => m.clone(),
        }
    }
}

/// Shorthand for results of leasehold.
pub type Result<T, E = LeaseError> = std::result::Result<T, E>;
