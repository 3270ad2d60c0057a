//! The resource's side of a lock: a fence that refuses holders older than the newest it has seen.
//!
//! A holder passes its lease's fencing token with every operation on the protected resource;
//! the resource (a storage service, a database row, a file) keeps a [`Fence`]. An operation is
//! accepted only with a token at least the highest the fence has accepted, and that token
//! becomes the highest. A holder that lost its lease while it was paused comes back with an old
//! token and is refused, even if it still believes it holds the lock: the new holder's first
//! operation has raised the fence.
//!
//! Equal tokens pass: a holder makes many operations under one lease (its token does not
//! change on renewal). Tokens only mean something for one landlord (they are that landlord's
//! counter), so a fence protects resources locked through one landlord.
//!
//! The same rule in SQL, for a row with a `token` column:
//! `UPDATE register SET value = $2, token = $1 WHERE id = 1 AND token <= $1` (zero rows
//! updated: refused).
//!
//! ```
//! use leasehold::coord::Fence;
//! let mut fence = Fence::new();
//! fence.check(3).unwrap();            // the first holder writes
//! fence.check(3).unwrap();            // and again
//! fence.check(7).unwrap();            // a later holder writes
//! let refused = fence.check(3).unwrap_err(); // the first holder, back from a pause
//! assert_eq!((refused.token, refused.highest), (3, 7));
//! assert!(refused.to_string().contains("older than 7"));
//! ```

use serde::{Deserialize, Serialize};

/// Accepts tokens at least as high as the highest accepted so far.
///
/// Serializes with serde (`{"highest":"7"}`) so a resource can keep it beside its data; it must
/// be stored durably with every write it fences (a fence that forgets lets old holders in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fence {
    /// The highest token accepted (0 before any).
    #[serde(with = "crate::time::dec::u64")]
    highest: u64,
}

/// An operation refused by a [`Fence`]: its token is older than one already accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "fenced: token {token} is older than {highest}, the highest this resource has accepted \
     (the lease behind token {token} has ended and the resource has a newer holder)"
)]
pub struct Fenced {
    /// The token refused.
    pub token: u64,
    /// The highest token accepted.
    pub highest: u64,
}

impl Fence {
    /// A fence that has accepted nothing.
    pub fn new() -> Fence {
        Fence { highest: 0 }
    }

    /// A fence that has accepted up to `highest` (read back from where the resource keeps it).
    pub fn with_highest(highest: u64) -> Fence {
        Fence { highest }
    }

    /// The highest token accepted (0 before any).
    pub fn highest(&self) -> u64 {
        self.highest
    }

    /// Whether an operation with `token` would be accepted, without accepting it.
    pub fn admits(&self, token: u64) -> bool {
        token >= self.highest
    }

    /// Accepts an operation with `token` if it is at least the highest accepted (and makes it
    /// the highest); refuses it otherwise, changing nothing.
    pub fn check(&mut self, token: u64) -> Result<(), Fenced> {
        if token < self.highest {
            return Err(Fenced { token, highest: self.highest });
        }
        self.highest = token;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_tokens_pass_older_are_refused_and_change_nothing() {
        let mut f = Fence::new();
        assert!(f.admits(0));
        f.check(5).unwrap();
        f.check(5).unwrap();
        assert_eq!(f.check(4), Err(Fenced { token: 4, highest: 5 }));
        assert_eq!(f.highest(), 5);
        f.check(u64::MAX).unwrap();
        assert!(!f.admits(5));
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, r#"{"highest":"18446744073709551615"}"#);
        assert_eq!(serde_json::from_str::<Fence>(&json).unwrap(), f);
    }
}
