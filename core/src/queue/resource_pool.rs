//! One agent's GPUs and named counts as a pool its leases take from and give back to.
//!
//! A request for whole devices (`gpus = 2`) takes that many devices no run uses, lowest
//! index first. A share below one device (`gpus = 0.25`) goes to the device with the least
//! room that still fits it (best fit), so small shares pack together and whole devices stay
//! free for whole-device runs, unless the caller picks among the devices with room (the
//! second level on a shared GPU, see `queue::device_choice`); the shares on one device
//! never add up to more than 1. Named
//! counts subtract from what the agent offers. All arithmetic is in exact ten-thousandths.

use hetpilot_protocol::resources::{
    GpuShare, ResourceAmount, ResourceGrant, ResourceOffer, ResourceRequest, GPUS,
};
use std::collections::BTreeMap;

/// Picks the device a fraction goes to among (index, room) pairs; `None`: the best fit.
pub(crate) type FractionPicker<'a> = &'a dyn Fn(&[(u32, u64)]) -> Option<u32>;

/// One device of the pool and how much of it runs use, in ten-thousandths.
#[derive(Debug, Clone)]
struct Device {
    index: u32,
    uuid: String,
    used: u64,
}

impl Device {
    fn room(&self) -> u64 {
        ResourceAmount::UNIT.saturating_sub(self.used)
    }
}

/// An agent's offer with what its runs hold of it.
#[derive(Debug, Clone, Default)]
pub struct ResourcePool {
    offer: ResourceOffer,
    devices: Vec<Device>,
    /// Named counts in use, in ten-thousandths.
    named_used: BTreeMap<String, u64>,
}

impl ResourcePool {
    /// A pool of everything `offer` holds, none of it in use.
    pub fn new(offer: ResourceOffer) -> Self {
        let mut devices: Vec<Device> = offer
            .gpus
            .iter()
            .map(|g| Device {
                index: g.index,
                uuid: g.uuid.clone(),
                used: 0,
            })
            .collect();
        devices.sort_by_key(|d| d.index);
        ResourcePool {
            offer,
            devices,
            named_used: BTreeMap::new(),
        }
    }

    /// What the agent offers.
    pub fn offer(&self) -> &ResourceOffer {
        &self.offer
    }

    /// Whether the agent offers GPUs.
    pub fn has_gpus(&self) -> bool {
        !self.devices.is_empty()
    }

    /// How much of each device runs use now, by device index.
    pub fn gpu_use(&self) -> impl Iterator<Item = (u32, ResourceAmount)> + '_ {
        self.devices.iter().map(|d| {
            let used = ResourceAmount::from_units(d.used.min(ResourceAmount::UNIT));
            (d.index, used.unwrap_or_default())
        })
    }

    /// How much of named count `name` runs use now.
    pub fn named_use(&self, name: &str) -> ResourceAmount {
        let used = self.named_used.get(name).copied().unwrap_or(0);
        ResourceAmount::from_units(used).unwrap_or_default()
    }

    /// Whether the whole offer, with nothing in use, could ever grant `request`.
    pub fn could_grant(&self, request: &ResourceRequest) -> bool {
        request.0.iter().all(|(name, amount)| {
            if name != GPUS {
                return self.offer.named.get(name).is_some_and(|o| o >= amount);
            }
            if amount.units() >= ResourceAmount::UNIT {
                amount.whole_units() <= self.devices.len() as u64
            } else {
                self.has_gpus()
            }
        })
    }

    /// Whether the free part of the pool could grant `request` now (taking nothing).
    pub(crate) fn can_grant(&self, request: &ResourceRequest) -> bool {
        self.choose(request, &|_| None).is_some()
    }

    /// Takes what `request` asks for and returns the grant, or `None` (taking nothing)
    /// when the free part of the pool cannot hold it.
    pub fn take(&mut self, request: &ResourceRequest) -> Option<ResourceGrant> {
        self.take_picking(request, &|_| None)
    }

    /// [`Self::take`], where a fraction of a device goes to the device `pick` names among
    /// those with room for it, given as (index, room in ten-thousandths); to the best fit
    /// when it names none of them.
    pub(crate) fn take_picking(
        &mut self,
        request: &ResourceRequest,
        pick: FractionPicker<'_>,
    ) -> Option<ResourceGrant> {
        let grant = self.choose(request, pick)?;
        self.hold(&grant);
        Some(grant)
    }

    /// Records `grant` as in use again (a lease recorded before a manager restart), as it
    /// was granted, even where it no longer fits: the devices are in use whatever the pool
    /// would choose now, so later leases must count them.
    pub fn hold(&mut self, grant: &ResourceGrant) {
        for share in &grant.gpus {
            if let Some(d) = self.device_mut(share) {
                d.used = d.used.saturating_add(share.amount.units());
            }
        }
        for (name, amount) in &grant.named {
            let used = self.named_used.entry(name.clone()).or_insert(0);
            *used = used.saturating_add(amount.units());
        }
    }

    /// Gives back what `grant` took (the run ended, was lost or killed).
    pub fn release(&mut self, grant: &ResourceGrant) {
        for share in &grant.gpus {
            if let Some(d) = self.device_mut(share) {
                d.used = d.used.saturating_sub(share.amount.units());
            }
        }
        for (name, amount) in &grant.named {
            if let Some(used) = self.named_used.get_mut(name) {
                *used = used.saturating_sub(amount.units());
                if *used == 0 {
                    self.named_used.remove(name);
                }
            }
        }
    }

    fn device_mut(&mut self, share: &GpuShare) -> Option<&mut Device> {
        self.devices
            .iter_mut()
            .find(|d| d.index == share.index && d.uuid == share.uuid)
    }

    /// The grant `request` would get now, changing nothing.
    fn choose(&self, request: &ResourceRequest, pick: FractionPicker<'_>) -> Option<ResourceGrant> {
        let mut grant = ResourceGrant::default();
        for (name, amount) in &request.0 {
            if name == GPUS {
                grant.gpus = self.choose_gpus(*amount, pick)?;
                continue;
            }
            let offered = self.offer.named.get(name)?.units();
            let used = self.named_used.get(name).copied().unwrap_or(0);
            if offered.saturating_sub(used) < amount.units() {
                return None;
            }
            grant.named.insert(name.clone(), *amount);
        }
        Some(grant)
    }

    fn choose_gpus(
        &self,
        amount: ResourceAmount,
        pick: FractionPicker<'_>,
    ) -> Option<Vec<GpuShare>> {
        let share = |d: &Device, amount| GpuShare {
            index: d.index,
            uuid: d.uuid.clone(),
            amount,
        };
        if amount.units() >= ResourceAmount::UNIT {
            let n = usize::try_from(amount.whole_units()).ok()?;
            let whole = ResourceAmount::whole(1)?;
            let free: Vec<GpuShare> = self
                .devices
                .iter()
                .filter(|d| d.used == 0)
                .take(n)
                .map(|d| share(d, whole))
                .collect();
            return (free.len() == n).then_some(free);
        }
        let fits: Vec<&Device> = self
            .devices
            .iter()
            .filter(|d| d.room() >= amount.units())
            .collect();
        let rooms: Vec<(u32, u64)> = fits.iter().map(|d| (d.index, d.room())).collect();
        let picked = pick(&rooms).and_then(|i| fits.iter().find(|d| d.index == i));
        let best = match picked {
            Some(d) => d,
            None => fits.iter().min_by_key(|d| (d.room(), d.index))?,
        };
        Some(vec![share(best, amount)])
    }
}

#[cfg(test)]
#[path = "resource_pool_tests.rs"]
mod tests;
