//! Combined faults for the end-to-end suite and its benchmark: a fault-injecting proxy
//! between agents and the manager, a slow disk under the manager, and the driver that runs
//! many tasks through all of them at once and checks that each ended exactly once.

pub mod driver;
pub mod proxy;
pub mod slow_disk;
