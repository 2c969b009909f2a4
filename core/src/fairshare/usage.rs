//! Fairshare usage F_u per user (eq. 6, 9) with exponential decay.
//!
//! A job's charge is walltime_j × min_k SPEC_{j,k} × P(j): the walltime normalized by the
//! speed of the (slowest) machine that ran it (Section 3.2-3.3). Charges are dated at the
//! job's start and decay with a half-life h: a charge c made at time t counts
//! c × 2^{-(now - t)/h} at `now` (the continuous form of Maui's/Slurm's decay; no decay when
//! h is None). While a job runs its requested walltime stands in; on completion the real
//! walltime replaces it (Section 3.4), still dated at the start.
//!
//! Pure: times are seconds on the caller's clock; the ledger never reads one.

use std::collections::{BTreeMap, HashMap};

use super::machine::MachinePool;
use super::penalty::{PenaltyError, PenaltyFunction};
use super::request::JobRequest;

/// A job that started: what the ledger needs to charge its user now.
#[derive(Debug, Clone, PartialEq)]
pub struct JobStart {
    /// The job's number, unique among the jobs running in the ledger.
    pub job: u64,
    /// Whose usage the job charges.
    pub user: String,
    /// P(j).
    pub penalty: f64,
    /// min_k SPEC_{j,k} of the machines running the job (1.0 on a homogeneous platform).
    pub speed: f64,
    /// The walltime limit, the stand-in until the job ends.
    pub requested_walltime: f64,
    /// Start time, seconds on the caller's clock; the charge is dated here.
    pub start: f64,
}

/// A finished piece of work reported after the fact (e.g. a task report of the live
/// manager): who, what was reserved, for how long, on how fast a machine, when it started.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UsageRecord {
    pub(crate) user: String,
    pub(crate) request: JobRequest,
    pub(crate) walltime: f64,
    pub(crate) speed: f64,
    pub(crate) start: f64,
}

/// Ledger misuse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UsageError {
    /// [`UsageLedger::start`] of a job number that is still running.
    #[error("job {0} is already running in the usage ledger")]
    AlreadyRunning(u64),
    /// [`UsageLedger::finish`] of a job number that is not running.
    #[error("job {0} is not running in the usage ledger (finished twice, or never started)")]
    NotRunning(u64),
    /// A negative or non-finite number.
    #[error("invalid usage for job {job}: {what} must be finite and >= 0, got {value}")]
    Invalid {
        /// The job's number.
        job: u64,
        /// Which value: `penalty`, `speed`, `requested walltime`, `walltime`, ...
        what: &'static str,
        /// The value given.
        value: f64,
    },
    /// The penalty of a finished-work record could not be computed.
    #[error(transparent)]
    Penalty(#[from] PenaltyError),
}

/// Charges added up with decay: what a user's (or one application's) runs cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UsageAccount {
    /// Undecayed total.
    pub raw: f64,
    /// Decayed total as of `at`.
    pub decayed: f64,
    /// Seconds on the ledger's clock.
    pub at: f64,
}

impl UsageAccount {
    /// Adds `other`'s charges, decaying with `half_life` seconds (None: no decay).
    pub fn merge(&mut self, other: &UsageAccount, half_life: Option<f64>) {
        if self.raw == 0.0 && self.decayed == 0.0 {
            *self = *other;
            return;
        }
        let factor = |from: f64, to: f64| half_life.map_or(1.0, |h| (-(to - from) / h).exp2());
        if other.at >= self.at {
            self.decayed = self.decayed * factor(self.at, other.at) + other.decayed;
            self.at = other.at;
        } else {
            self.decayed += other.decayed * factor(other.at, self.at);
        }
        self.raw += other.raw;
    }

    /// Adds one charge of `amount` dated `at`.
    pub(crate) fn add(&mut self, amount: f64, at: f64, half_life: Option<f64>) {
        let charge = UsageAccount {
            raw: amount,
            decayed: amount,
            at,
        };
        self.merge(&charge, half_life);
    }
}

/// Per-user fairshare usage.
#[derive(Debug, Clone)]
pub struct UsageLedger {
    half_life: Option<f64>,
    accounts: BTreeMap<String, UsageAccount>,
    running: HashMap<u64, JobStart>,
}

impl UsageLedger {
    /// A ledger whose charges halve every `half_life` seconds (None: no decay).
    pub fn new(half_life: Option<f64>) -> Self {
        UsageLedger {
            half_life: half_life.filter(|h| h.is_finite() && *h > 0.0),
            accounts: BTreeMap::new(),
            running: HashMap::new(),
        }
    }

    /// The half-life charges decay with, seconds (None: no decay).
    pub fn half_life(&self) -> Option<f64> {
        self.half_life
    }

    fn decay(&self, dt: f64) -> f64 {
        self.half_life.map_or(1.0, |h| (-dt / h).exp2())
    }

    /// Add `amount` dated at `at` to `user`.
    fn charge(&mut self, user: &str, amount: f64, at: f64) {
        let half_life = self.half_life;
        match self.accounts.get_mut(user) {
            Some(account) => account.add(amount, at, half_life),
            None => {
                let mut account = UsageAccount::default();
                account.add(amount, at, half_life);
                self.accounts.insert(user.to_string(), account);
            }
        }
    }

    /// Adds charges made elsewhere (runs whose records are gone) to `user`'s account.
    pub(crate) fn carry(&mut self, user: &str, charges: &UsageAccount) {
        let half_life = self.half_life;
        self.accounts
            .entry(user.to_string())
            .or_default()
            .merge(charges, half_life);
    }

    /// A job started: charge requested_walltime × speed × P(j) now.
    pub fn start(&mut self, job: JobStart) -> Result<(), UsageError> {
        for (what, value) in [
            ("penalty", job.penalty),
            ("speed", job.speed),
            ("requested walltime", job.requested_walltime),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(UsageError::Invalid {
                    job: job.job,
                    what,
                    value,
                });
            }
        }
        if self.running.contains_key(&job.job) {
            return Err(UsageError::AlreadyRunning(job.job));
        }
        let amount = job.requested_walltime * job.speed * job.penalty;
        self.charge(&job.user, amount, job.start);
        self.running.insert(job.job, job);
        Ok(())
    }

    /// A job ended after `walltime` seconds: its real walltime replaces the stand-in.
    pub fn finish(&mut self, job: u64, walltime: f64) -> Result<(), UsageError> {
        if !(walltime.is_finite() && walltime >= 0.0) {
            return Err(UsageError::Invalid {
                job,
                what: "walltime",
                value: walltime,
            });
        }
        let started = self
            .running
            .remove(&job)
            .ok_or(UsageError::NotRunning(job))?;
        let delta = (walltime - started.requested_walltime) * started.speed * started.penalty;
        self.charge(&started.user, delta, started.start);
        Ok(())
    }

    /// Charge finished work directly, pricing it with `penalty` on `platform`.
    pub(crate) fn record(
        &mut self,
        platform: &MachinePool,
        penalty: &dyn PenaltyFunction,
        record: &UsageRecord,
    ) -> Result<f64, UsageError> {
        let p = penalty.penalty(platform, &record.request)?;
        let amount = record.walltime * record.speed * p;
        if !(amount.is_finite() && amount >= 0.0) {
            return Err(UsageError::Invalid {
                job: 0,
                what: "walltime × speed",
                value: amount,
            });
        }
        self.charge(&record.user, amount, record.start);
        Ok(amount)
    }

    /// Decayed usage F_u of `user` at `now` (0 for unknown users).
    pub fn usage(&self, user: &str, now: f64) -> f64 {
        self.accounts
            .get(user)
            .map_or(0.0, |a| a.decayed * self.decay(now - a.at))
    }

    /// Undecayed usage (eq. 6/9 summed over all charges).
    pub(crate) fn raw_usage(&self, user: &str) -> f64 {
        self.accounts.get(user).map_or(0.0, |a| a.raw)
    }

    /// Users with any charge, sorted.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.accounts.keys().map(String::as_str)
    }

    /// Jobs currently charged with their requested walltime.
    pub fn running_jobs(&self) -> usize {
        self.running.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(job: u64, user: &str, penalty: f64, req: f64, at: f64) -> JobStart {
        JobStart {
            job,
            user: user.into(),
            penalty,
            speed: 1.0,
            requested_walltime: req,
            start: at,
        }
    }

    #[test]
    fn requested_walltime_stands_in_until_completion() {
        let mut ledger = UsageLedger::new(None);
        ledger.start(start(1, "ann", 4.0, 100.0, 0.0)).unwrap();
        assert_eq!(ledger.usage("ann", 10.0), 400.0);
        ledger.finish(1, 30.0).unwrap();
        assert_eq!(ledger.usage("ann", 50.0), 120.0);
        assert_eq!(ledger.raw_usage("ann"), 120.0);
        assert_eq!(ledger.finish(1, 30.0), Err(UsageError::NotRunning(1)));
        assert_eq!(ledger.running_jobs(), 0);
    }

    #[test]
    fn speed_normalizes_walltime() {
        let mut ledger = UsageLedger::new(None);
        let mut fast = start(1, "ann", 1.0, 10.0, 0.0);
        fast.speed = 2.0;
        ledger.start(fast).unwrap();
        ledger.start(start(2, "bob", 1.0, 20.0, 0.0)).unwrap();
        assert_eq!(ledger.usage("ann", 0.0), ledger.usage("bob", 0.0));
    }

    #[test]
    fn decay_halves_usage_every_half_life_even_after_replacement() {
        let mut ledger = UsageLedger::new(Some(100.0));
        ledger.start(start(1, "ann", 1.0, 80.0, 0.0)).unwrap();
        assert!((ledger.usage("ann", 100.0) - 40.0).abs() < 1e-9);
        ledger.start(start(2, "ann", 1.0, 10.0, 200.0)).unwrap();
        // 80 dated 0 and 10 dated 200, seen at 200: 20 + 10.
        assert!((ledger.usage("ann", 200.0) - 30.0).abs() < 1e-9);
        // Job 1 really ran 40 s: the charge dated 0 becomes 40, i.e. 10 at t = 200.
        ledger.finish(1, 40.0).unwrap();
        assert!((ledger.usage("ann", 200.0) - 20.0).abs() < 1e-9);
        assert_eq!(ledger.raw_usage("ann"), 50.0);
    }

    proptest::proptest! {
        /// Whatever the order of starts and finishes, the decayed usage equals the direct
        /// sum of real walltime × speed × P(j) × 2^{-(now - start)/h} over finished jobs plus
        /// requested walltime for running ones.
        #[test]
        fn usage_equals_the_direct_decayed_sum(
            jobs in proptest::collection::vec((0u8..3, 0.0f64..1000.0, 0.1f64..8.0, 0.5f64..2.0, 0.0f64..500.0, 0.0f64..500.0, proptest::bool::ANY), 1..30),
            half_life in proptest::option::of(10.0f64..1000.0),
        ) {
            let mut ledger = UsageLedger::new(half_life);
            let mut expected = [0.0f64; 3];
            let now = 2000.0;
            let decay = |t: f64| half_life.map_or(1.0, |h| (-(now - t) / h).exp2());
            // In list order: start times go back and forth, which the ledger must handle.
            for (i, &job) in jobs.iter().enumerate() {
                let (user, start, penalty, speed, requested, real, finished) = job;
                ledger.start(JobStart { job: i as u64, user: format!("u{user}"), penalty, speed, requested_walltime: requested, start }).unwrap();
                if finished {
                    ledger.finish(i as u64, real).unwrap();
                }
                let walltime = if finished { real } else { requested };
                expected[usize::from(user)] += walltime * speed * penalty * decay(start);
            }
            for (u, want) in expected.iter().enumerate() {
                let got = ledger.usage(&format!("u{u}"), now);
                proptest::prop_assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "user {}: {} vs {}", u, got, want);
            }
        }
    }

    #[test]
    fn rejects_bad_values() {
        let mut ledger = UsageLedger::new(None);
        assert!(matches!(
            ledger.start(start(1, "a", f64::NAN, 1.0, 0.0)),
            Err(UsageError::Invalid {
                what: "penalty",
                ..
            })
        ));
        ledger.start(start(1, "a", 1.0, 1.0, 0.0)).unwrap();
        assert_eq!(
            ledger.start(start(1, "a", 1.0, 1.0, 0.0)),
            Err(UsageError::AlreadyRunning(1))
        );
    }
}
