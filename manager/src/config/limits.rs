//! `[limits]`: what the HTTP API accepts, so no caller (with or without a token) can
//! exhaust the manager's memory, descriptors or time.
//!
//! ```toml
//! [limits]
//! max_body_kib = 1024              # every request body but the ones below
//! max_submit_mib = 64              # POST /v1/apps
//! max_results_mib = 8              # an agent's results
//! max_file_mib = 4096              # one upload to the file service
//! max_output_mib = 64              # one task stream an agent sends for `hetpilot logs`
//!                                  #   (a longer one: its last this many MiB)
//! max_large_requests = 4           # submits whose bodies are read at once ...
//! # max_large_requests_per_user = 2 # ... of which one caller holds at most this many
//!                                  #   (default: half of max_large_requests, at least 1)
//! header_read_timeout_secs = 10    # a connection must send its headers this fast
//! body_timeout_secs = 60           # ... and then no pause this long within a body
//! body_deadline_secs = 120         # ... and the whole body within this (file uploads aside)
//! max_connections = 16384          # at once (capped by the open-files limit)
//! max_connections_per_ip = 1024    # at once from one address
//! submit_burst = 20                # submits per user at once ...
//! submits_per_minute = 120         # ... then at this rate
//! register_burst = 200             # agent registrations per platform (or pilot) at once ...
//! registrations_per_minute = 1200  # ... then at this rate
//! max_event_streams_per_user = 32  # task-event streams one user holds open at once
//! ```

use serde::Deserialize;
use std::time::Duration;

/// The `[limits]` section.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct LimitsConfig {
    pub max_body_kib: u64,
    pub max_submit_mib: u64,
    pub max_results_mib: u64,
    pub max_file_mib: u64,
    pub max_output_mib: u64,
    pub max_large_requests: usize,
    /// `None`: half of `max_large_requests`, at least one.
    pub max_large_requests_per_user: Option<usize>,
    pub header_read_timeout_secs: f64,
    pub body_timeout_secs: f64,
    pub body_deadline_secs: f64,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub submit_burst: u32,
    pub submits_per_minute: u32,
    pub register_burst: u32,
    pub registrations_per_minute: u32,
    pub max_event_streams_per_user: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_body_kib: 1024,
            max_submit_mib: 64,
            max_results_mib: 8,
            max_file_mib: 4096,
            max_output_mib: 64,
            max_large_requests: 4,
            max_large_requests_per_user: None,
            header_read_timeout_secs: 10.0,
            body_timeout_secs: 60.0,
            body_deadline_secs: 120.0,
            max_connections: 16_384,
            max_connections_per_ip: 1024,
            submit_burst: 20,
            submits_per_minute: 120,
            register_burst: 200,
            registrations_per_minute: 1200,
            max_event_streams_per_user: 32,
        }
    }
}

impl LimitsConfig {
    /// The first field out of range, as (`limits.FIELD`, problem).
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let counts = [
            ("limits.max_body_kib", self.max_body_kib),
            ("limits.max_submit_mib", self.max_submit_mib),
            ("limits.max_results_mib", self.max_results_mib),
            ("limits.max_file_mib", self.max_file_mib),
            ("limits.max_output_mib", self.max_output_mib),
            ("limits.max_large_requests", self.max_large_requests as u64),
            (
                "limits.max_large_requests_per_user",
                self.large_requests_per_user() as u64,
            ),
            ("limits.max_connections", self.max_connections as u64),
            (
                "limits.max_connections_per_ip",
                self.max_connections_per_ip as u64,
            ),
            ("limits.submit_burst", self.submit_burst.into()),
            ("limits.submits_per_minute", self.submits_per_minute.into()),
            ("limits.register_burst", self.register_burst.into()),
            (
                "limits.registrations_per_minute",
                self.registrations_per_minute.into(),
            ),
            (
                "limits.max_event_streams_per_user",
                self.max_event_streams_per_user as u64,
            ),
        ];
        if let Some((field, _)) = counts.iter().find(|(_, v)| *v == 0) {
            return Some((field, "must be at least 1".into()));
        }
        if self.large_requests_per_user() > self.max_large_requests {
            return Some((
                "limits.max_large_requests_per_user",
                format!(
                    "{} is more than limits.max_large_requests ({})",
                    self.large_requests_per_user(),
                    self.max_large_requests
                ),
            ));
        }
        let sizes = [
            ("limits.max_body_kib", self.max_body_kib, 1 << 20),
            ("limits.max_submit_mib", self.max_submit_mib, 1 << 14),
            ("limits.max_results_mib", self.max_results_mib, 1 << 14),
            ("limits.max_file_mib", self.max_file_mib, 1 << 30),
            ("limits.max_output_mib", self.max_output_mib, 1 << 14),
        ];
        if let Some((field, v, max)) = sizes.iter().find(|(_, v, max)| v > max) {
            return Some((
                field,
                format!("{v} is more than the largest allowed, {max}"),
            ));
        }
        for (field, secs) in [
            (
                "limits.header_read_timeout_secs",
                self.header_read_timeout_secs,
            ),
            ("limits.body_timeout_secs", self.body_timeout_secs),
            ("limits.body_deadline_secs", self.body_deadline_secs),
        ] {
            if !(secs.is_finite() && (0.1..=86_400.0).contains(&secs)) {
                return Some((field, format!("{secs} is not between 0.1 and 86400")));
            }
        }
        None
    }

    /// The large-body slots one caller may hold at once.
    pub fn large_requests_per_user(&self) -> usize {
        self.max_large_requests_per_user
            .unwrap_or((self.max_large_requests / 2).max(1))
    }

    pub fn body_bytes(&self) -> usize {
        (self.max_body_kib << 10) as usize
    }

    pub fn submit_bytes(&self) -> usize {
        (self.max_submit_mib << 20) as usize
    }

    pub fn results_bytes(&self) -> usize {
        (self.max_results_mib << 20) as usize
    }

    pub fn file_bytes(&self) -> usize {
        (self.max_file_mib << 20) as usize
    }

    /// The most bytes of one task stream an agent sends for `hetpilot logs`.
    pub fn output_bytes(&self) -> u64 {
        self.max_output_mib << 20
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.header_read_timeout_secs)
    }

    pub fn body_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.body_timeout_secs)
    }

    pub fn body_deadline(&self) -> Duration {
        Duration::from_secs_f64(self.body_deadline_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_name_the_field() {
        assert_eq!(LimitsConfig::default().problem(), None);
        let zero = LimitsConfig {
            max_connections_per_ip: 0,
            ..Default::default()
        };
        assert_eq!(zero.problem().unwrap().0, "limits.max_connections_per_ip");
        let no_streams = LimitsConfig {
            max_event_streams_per_user: 0,
            ..Default::default()
        };
        assert_eq!(
            no_streams.problem().unwrap().0,
            "limits.max_event_streams_per_user"
        );
        let huge = LimitsConfig {
            max_file_mib: u64::MAX,
            ..Default::default()
        };
        assert_eq!(huge.problem().unwrap().0, "limits.max_file_mib");
        let nan = LimitsConfig {
            header_read_timeout_secs: f64::NAN,
            ..Default::default()
        };
        assert_eq!(nan.problem().unwrap().0, "limits.header_read_timeout_secs");
        let forever = LimitsConfig {
            body_deadline_secs: f64::INFINITY,
            ..Default::default()
        };
        assert_eq!(forever.problem().unwrap().0, "limits.body_deadline_secs");
        let one = LimitsConfig {
            max_large_requests: 1,
            ..Default::default()
        };
        assert_eq!(one.problem(), None, "the default share follows the total");
        assert_eq!(one.large_requests_per_user(), 1);
        assert_eq!(LimitsConfig::default().large_requests_per_user(), 2);
        let greedy = LimitsConfig {
            max_large_requests: 4,
            max_large_requests_per_user: Some(5),
            ..Default::default()
        };
        let (field, problem) = greedy.problem().unwrap();
        assert_eq!(field, "limits.max_large_requests_per_user");
        assert!(
            problem.contains("limits.max_large_requests (4)"),
            "{problem}"
        );
    }
}
