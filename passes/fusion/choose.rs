//! With a device profile: which way to run a matched chain is predicted fastest.

use super::price::Priced;
use super::{Fuser, MatchedChain};
use crate::analysis::device_profile::Alternative;
use crate::analysis::picker::{Pick, ProfileChoice, pick_log_mel_with_profile, pick_with_profile};
use crate::fused::{FusedAttrs, Lowering};
use crate::rewrite::Rewriter;

impl Fuser {
    /// With a device profile: every alternative predicted, the fastest fused
    /// one recorded in the op's attributes (its plan, or a host call), and
    /// the choice returned; without one, for a dynamic batch, or for a
    /// log-mel op where the profile has no log-mel line (the gate decides), `None`.
    pub(super) fn choose(&self, rw: &Rewriter<'_>, chain: &mut MatchedChain, priced: &Priced) -> Option<ProfileChoice> {
        let device = self.device.as_ref()?;
        let attrs = match &mut chain.attrs {
            FusedAttrs::WelchPeaks(attrs) => attrs,
            FusedAttrs::LogMel(attrs) => {
                // One way to run natively: the choice is that, a host call, or not fusing.
                let native = attrs.lowering.is_some_and(|l| l != Lowering::Host);
                let choice = pick_log_mel_with_profile(device, attrs, &rw.node(chain.input).ty, &priced.chain, native)?;
                if choice.picked == Some(Alternative::HostCall) {
                    attrs.lowering = Some(Lowering::Host);
                }
                return Some(choice);
            }
        };
        let native = attrs.lowering.is_some_and(|l| l != Lowering::Host);
        let mut choice = pick_with_profile(device, attrs, &rw.node(chain.input).ty, &priced.chain, native)?;
        // A forced plan applies where it runs, whatever its prediction; that
        // prediction, not the fastest's, decides whether to fuse.
        let forced = self.force_plan.filter(|p| choice.considered(Alternative::Fused(*p)));
        if let Some(plan) = forced {
            choice = choice.forced_to(Alternative::Fused(plan));
        }
        match forced.map(Alternative::Fused).or(choice.picked) {
            // Nothing fused has a finite prediction: the rule's plan stays
            // (the chain is not fused unless `force=true`).
            None => {}
            Some(Alternative::Fused(name)) => {
                attrs.plan = Some(name);
                let reason = if forced.is_some() { format!("force-plan={name}") } else { format!("profile: predicted fastest of {} alternatives", choice.predictions.len()) };
                chain.pick = Some(Pick { plan: name, reason });
            }
            Some(_) => {
                attrs.lowering = Some(Lowering::Host);
                attrs.plan = None;
                chain.pick = None;
            }
        }
        Some(choice)
    }
}
