//! The host's side of anything that renews leases over the wire: one interface, so a host (or a
//! binding's driver) writes its loop once for the [`RenewalManager`] and the renewal service.

use crate::error::LeaseError;
use crate::holder::{RenewalEvent, RenewalManager, Transmit};
use crate::service::{RenewalService, SetEvent};
use crate::time::Millis;
use crate::wire::Reply;

/// A sans-I/O renewer driven by a host: call [`Renewer::handle_timeout`] when
/// [`Renewer::poll_timeout`] says, send what [`Renewer::poll_transmit`] hands out, give replies to
/// [`Renewer::handle_reply`] (or report a failed send with [`Renewer::handle_failure`]), and
/// deliver [`Renewer::poll_event`]s.
pub trait Renewer {
    /// What [`Renewer::poll_event`] hands out.
    type Event;
    /// When the host should call [`Renewer::handle_timeout`] next; `None` if nothing is scheduled.
    fn poll_timeout(&self) -> Option<Millis>;
    /// Advances to `now`.
    fn handle_timeout(&mut self, now: Millis);
    /// The next request to send; its send time is `now`.
    fn poll_transmit(&mut self, now: Millis) -> Option<Transmit>;
    /// A landlord's reply to a request from [`Renewer::poll_transmit`].
    fn handle_reply(&mut self, reply: &Reply, now: Millis);
    /// The host could not deliver request `request_id` (an indefinite failure is retried).
    fn handle_failure(&mut self, request_id: u64, error: LeaseError, now: Millis);
    /// The next event for the host.
    fn poll_event(&mut self) -> Option<Self::Event>;
}

macro_rules! renewer {
    ($t:ty, $event:ty) => {
        impl Renewer for $t {
            type Event = $event;
            fn poll_timeout(&self) -> Option<Millis> {
                <$t>::poll_timeout(self)
            }
            fn handle_timeout(&mut self, now: Millis) {
                <$t>::handle_timeout(self, now)
            }
            fn poll_transmit(&mut self, now: Millis) -> Option<Transmit> {
                <$t>::poll_transmit(self, now)
            }
            fn handle_reply(&mut self, reply: &Reply, now: Millis) {
                <$t>::handle_reply(self, reply, now)
            }
            fn handle_failure(&mut self, request_id: u64, error: LeaseError, now: Millis) {
                <$t>::handle_failure(self, request_id, error, now)
            }
            fn poll_event(&mut self) -> Option<$event> {
                <$t>::poll_event(self)
            }
        }
    };
}

renewer!(RenewalManager, RenewalEvent);
renewer!(RenewalService, SetEvent);
