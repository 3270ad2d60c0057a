//! The client's errors.

use leasehold::LeaseError;

/// What can go wrong in the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// No server gave a wire reply (refused, reset, timed out, 5xx, not a wire reply): an
    /// *indefinite* failure. What each server said is in the message.
    #[error("no server answered: {0}")]
    Unavailable(String),
    /// The landlord answered with an error: a *definite* failure.
    #[error(transparent)]
    Lease(LeaseError),
    /// A server answered an admin or status request with an error status.
    #[error("HTTP {status}: {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The body, as text.
        message: String,
    },
    /// The server refused the caller before any landlord saw the request: no credential, an
    /// unknown one, or an operation or resource the caller's identity may not use (HTTP 401 or
    /// 403, a wire error from landlord `0`). Definite: waiting or asking again cannot change
    /// it. What the recipes ([`crate::recipes`]) return for such a refusal.
    #[error("refused by the server: {0}")]
    Refused(String),
    /// A bad setting (URL, header, time-out).
    #[error("bad client setting: {0}")]
    Config(String),
    /// The driver has been closed.
    #[error("the renewal driver is closed")]
    Closed,
}

impl ClientError {
    /// Whether retrying cannot help: everything but [`ClientError::Unavailable`] (and an
    /// indefinite [`LeaseError`]).
    pub fn is_definite(&self) -> bool {
        match self {
            ClientError::Unavailable(_) => false,
            ClientError::Lease(e) => e.is_definite(),
            _ => true,
        }
    }

    /// The error as the core's renewal manager takes it ([`leasehold::RenewalManager::handle_failure`]):
    /// [`ClientError::Unavailable`] is [`LeaseError::Indefinite`].
    pub fn to_lease_error(&self) -> LeaseError {
        match self {
            ClientError::Unavailable(m) => LeaseError::Indefinite(m.clone()),
            ClientError::Lease(e) => e.clone(),
            ClientError::Http { status, message } => {
                LeaseError::Decode(format!("HTTP {status}: {message}"))
            }
            ClientError::Refused(m) => LeaseError::LeaseDenied(m.clone()),
            ClientError::Config(m) => LeaseError::InvalidArgument(m.clone()),
            ClientError::Closed => LeaseError::Indefinite("the renewal driver is closed".into()),
        }
    }
}

impl From<LeaseError> for ClientError {
    fn from(e: LeaseError) -> Self {
        ClientError::Lease(e)
    }
}
