//! The [`Fence`] as a [`Machine`]: what the bindings drive (a fence in every runtime is this
//! table of calls over the generic wrapper, see `docs/bindings.md`).
//!
//! Data form: options `{"highest": 7}` (absent: 0); inputs `{"op": "check", "token": 8}`,
//! `{"op": "admits", "token": 8}`, `{"op": "highest"}`; a check answers
//! `{"accepted": true, "token": 8, "highest": 8}` (refused: `accepted` false and the highest
//! unchanged), `admits` a boolean, `highest` a number. Tokens are integers (64-bit).

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::machine::Machine;
use crate::time::Millis;

use super::fence::Fence;

/// The settings of a fence.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FenceOptions {
    /// The highest token accepted so far (a fence restored from where the resource keeps it).
    #[serde(default)]
    pub highest: u64,
}

/// A call on a fence.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum FenceInput {
    /// [`Fence::check`]: accept `token` (and remember it) if it is at least the highest.
    Check {
        /// The token that came with the operation.
        token: u64,
    },
    /// [`Fence::admits`]: whether `token` would be accepted (nothing changes).
    Admits {
        /// The token.
        token: u64,
    },
    /// [`Fence::highest`].
    Highest,
}
crate::machine::op_first::op_first!(FenceInput);

/// What a check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FenceCheck {
    /// Whether the operation may go ahead.
    pub accepted: bool,
    /// The token checked.
    pub token: u64,
    /// The highest token accepted, after the check.
    pub highest: u64,
}

/// What a call answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FenceOutput {
    /// A check.
    Check(FenceCheck),
    /// `admits`.
    Admits(bool),
    /// `highest`.
    Highest(u64),
}

impl Machine for Fence {
    const NAME: &'static str = "Fence";
    type Options = FenceOptions;
    type Input = FenceInput;
    type Output = FenceOutput;
    type Transmit = ();
    type Event = ();

    fn create(options: FenceOptions, _seed: [u8; 32]) -> Result<Self> {
        Ok(Fence::with_highest(options.highest))
    }

    fn restore(_options: FenceOptions, snapshot: &str, _now: Millis) -> Result<Self> {
        serde_json::from_str(snapshot)
            .map_err(|e| LeaseError::InvalidArgument(format!("a fence snapshot: {e}")))
    }

    fn snapshot(&mut self, _now: Millis) -> String {
        serde_json::to_string(self).expect("a fence serializes")
    }

    fn handle(&mut self, input: FenceInput, _now: Millis) -> Result<FenceOutput> {
        Ok(match input {
            FenceInput::Check { token } => {
                let accepted = self.check(token).is_ok();
                FenceOutput::Check(FenceCheck { accepted, token, highest: self.highest() })
            }
            FenceInput::Admits { token } => FenceOutput::Admits(self.admits(token)),
            FenceInput::Highest => FenceOutput::Highest(self.highest()),
        })
    }

    fn poll_timeout(&self) -> Option<Millis> {
        None
    }

    fn handle_timeout(&mut self, _now: Millis) {}

    fn poll_transmit(&mut self, _now: Millis) -> Option<()> {
        None
    }

    fn poll_event(&mut self, _now: Millis) -> Option<()> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(f: &mut Fence, input: &str) -> serde_json::Value {
        let input: FenceInput = serde_json::from_str(input).unwrap();
        serde_json::to_value(f.handle(input, 0).unwrap()).unwrap()
    }

    #[test]
    fn a_fence_driven_as_data() {
        let opts: FenceOptions = serde_json::from_str(r#"{"highest": 7}"#).unwrap();
        let mut f = Fence::create(opts, [0; 32]).unwrap();
        assert_eq!(
            call(&mut f, r#"{"op": "check", "token": 6}"#),
            serde_json::json!({"accepted": false, "token": 6, "highest": 7})
        );
        assert_eq!(
            call(&mut f, r#"{"op": "check", "token": 9}"#),
            serde_json::json!({"accepted": true, "token": 9, "highest": 9})
        );
        assert_eq!(call(&mut f, r#"{"op": "admits", "token": 8}"#), serde_json::json!(false));
        assert_eq!(call(&mut f, r#"{"op": "highest"}"#), serde_json::json!(9));
        let snap = f.snapshot(0);
        assert_eq!(snap, r#"{"highest":"9"}"#);
        let mut g = Fence::restore(FenceOptions::default(), &snap, 0).unwrap();
        assert_eq!(call(&mut g, r#"{"op": "highest"}"#), serde_json::json!(9));
        assert!(serde_json::from_str::<FenceInput>(r#"{"op": "check", "token": -1}"#).is_err());
        assert!(serde_json::from_str::<FenceOptions>(r#"{"higest": 1}"#).is_err());
        assert!(Fence::restore(FenceOptions::default(), "{}", 0).is_err());
    }
}
