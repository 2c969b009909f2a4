//! User priority from fairshare usage: the user with the smallest usage per share goes
//! first (Section 2.1, max-min), with optional per-user shares (weights, default 1).
//! The factor is Slurm's classic fairshare factor 2^{-U/S}, with U the user's share of all
//! decayed usage and S the user's share of all shares: 1 for a user who used nothing,
//! 0.5 for a user who used exactly their share. Scheduling weights can use it directly.

use std::collections::BTreeMap;

use super::usage::UsageLedger;

/// Per-user shares (weights); users not listed get the default.
#[derive(Debug, Clone)]
pub struct Shares {
    /// Share of every user not listed (1 unless configured).
    pub default: f64,
    pub(crate) by_user: BTreeMap<String, f64>,
}

impl Default for Shares {
    fn default() -> Self {
        Shares {
            default: 1.0,
            by_user: BTreeMap::new(),
        }
    }
}

impl Shares {
    /// The share of `user`: its own, or the default.
    pub fn of(&self, user: &str) -> f64 {
        self.by_user.get(user).copied().unwrap_or(self.default)
    }
}

/// One line of the priority table.
#[derive(Debug, Clone, PartialEq)]
pub struct UserPriority {
    /// The user's name.
    pub user: String,
    /// Undecayed usage.
    pub(crate) raw_usage: f64,
    /// Decayed usage F_u at `now`.
    pub usage: f64,
    pub(crate) share: f64,
    /// 2^{-U/S}, in (0, 1].
    pub factor: f64,
}

/// The ordering key: decayed usage per share (smaller runs first).
pub fn effective_usage(ledger: &UsageLedger, shares: &Shares, user: &str, now: f64) -> f64 {
    ledger.usage(user, now) / shares.of(user).max(f64::MIN_POSITIVE)
}

/// Priorities of `users` (plus every user in the ledger), highest priority first; ties by
/// name.
pub fn priorities<'a>(
    ledger: &UsageLedger,
    shares: &Shares,
    users: impl IntoIterator<Item = &'a str>,
    now: f64,
) -> Vec<UserPriority> {
    let mut names: Vec<String> = ledger.users().map(str::to_string).collect();
    names.extend(users.into_iter().map(str::to_string));
    names.sort();
    names.dedup();
    let total_usage: f64 = names.iter().map(|u| ledger.usage(u, now)).sum();
    let total_shares: f64 = names.iter().map(|u| shares.of(u)).sum();
    let mut table: Vec<UserPriority> = names
        .into_iter()
        .map(|user| {
            let usage = ledger.usage(&user, now);
            let share = shares.of(&user);
            let u = if total_usage > 0.0 {
                usage / total_usage
            } else {
                0.0
            };
            let s = if total_shares > 0.0 {
                share / total_shares
            } else {
                0.0
            };
            let factor = if s > 0.0 { (-u / s).exp2() } else { 0.0 };
            UserPriority {
                raw_usage: ledger.raw_usage(&user),
                user,
                usage,
                share,
                factor,
            }
        })
        .collect();
    table.sort_by(|a, b| {
        b.factor
            .total_cmp(&a.factor)
            .then_with(|| a.user.cmp(&b.user))
    });
    table
}

#[cfg(test)]
mod tests {
    use super::super::usage::JobStart;
    use super::*;

    fn charge(ledger: &mut UsageLedger, job: u64, user: &str, amount: f64) {
        ledger
            .start(JobStart {
                job,
                user: user.into(),
                penalty: 1.0,
                speed: 1.0,
                requested_walltime: amount,
                start: 0.0,
            })
            .unwrap();
    }

    #[test]
    fn least_usage_per_share_goes_first() {
        let mut ledger = UsageLedger::new(None);
        charge(&mut ledger, 1, "heavy", 300.0);
        charge(&mut ledger, 2, "light", 100.0);
        let table = priorities(&ledger, &Shares::default(), ["idle"], 0.0);
        let order: Vec<&str> = table.iter().map(|p| p.user.as_str()).collect();
        assert_eq!(order, vec!["idle", "light", "heavy"]);
        assert_eq!(table[0].factor, 1.0);
        // Give "heavy" four times the share: 300/4 < 100.
        let mut shares = Shares::default();
        shares.by_user.insert("heavy".into(), 4.0);
        let table = priorities(&ledger, &shares, ["idle"], 0.0);
        let order: Vec<&str> = table.iter().map(|p| p.user.as_str()).collect();
        assert_eq!(order, vec!["idle", "heavy", "light"]);
        assert!(
            effective_usage(&ledger, &shares, "heavy", 0.0)
                < effective_usage(&ledger, &shares, "light", 0.0)
        );
    }
}
