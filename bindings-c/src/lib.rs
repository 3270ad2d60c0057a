//! C binding of leasehold (grows in its own issue).

pub use leasehold::{ANY, FOREVER};
