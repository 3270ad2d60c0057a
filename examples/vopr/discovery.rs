//! The lookup discovery service in the simulation.

/// One line about a message of the discovery protocols, for traces.
pub fn describe(bytes: &[u8]) -> String {
    format!("{} bytes", bytes.len())
}
