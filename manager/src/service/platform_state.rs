//! What the manager knows of its profiled platforms besides their pilots (which the
//! control plane keeps): each one's provisioning status, its shape and planned cores per
//! pilot (see `platforms`), what its pilots offer besides cores (see `resource_check`) and
//! the latest round of platform checks (see `platform_checks`).

use super::platforms::Shape;
use super::Manager;
use crate::provision::CheckFailure;
use hetpilot_protocol::pilots::PlatformStatus;
use std::collections::BTreeMap;
use std::sync::MutexGuard;

/// The profiled platforms as the provisioner and the checks left them.
#[derive(Default)]
pub struct PlatformState {
    pub(super) platforms: BTreeMap<String, PlatformStatus>,
    /// Each profiled platform's shape, from its profile.
    pub(super) shapes: BTreeMap<String, Shape>,
    /// The cores per pilot each profiled platform is planned with (see `platforms`).
    pub(super) planned_cores: BTreeMap<String, u32>,
    /// What each profiled platform's pilots offer besides cores (see `resource_check`).
    pub(super) resources: BTreeMap<String, super::resource_check::PlatformResources>,
    /// The round of platform checks under way (see `platform_checks`).
    pub(super) check_round: u64,
    /// Why each platform that failed the latest round of checks failed.
    pub(super) check_failures: BTreeMap<String, CheckFailure>,
}

impl Manager {
    pub(super) fn platform_state(&self) -> MutexGuard<'_, PlatformState> {
        self.platforms.lock().unwrap_or_else(|p| p.into_inner())
    }
}
