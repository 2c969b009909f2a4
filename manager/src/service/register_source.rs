//! Where an agent registration may come from: inside its platform's `register_from` ranges
//! and inside its token's own ranges (`hetpilot token agent --from`), each where set. The
//! source is the TCP peer the manager's accept loop saw (a forwarding header is no
//! evidence). A registration from elsewhere is refused (403) and logged at WARN with the
//! address, the platform and the token, so the admin sees a token used where it should
//! not be (and can revoke it); the refusal itself does not tell the caller the ranges.

use super::{Manager, Principal, ServiceError};
use crate::source_ranges::SourceRanges;
use std::net::IpAddr;

/// One rule a registration's source must satisfy.
struct Rule<'a> {
    /// Whose ranges these are, in words (`platform `P`'s register_from`).
    whose: String,
    ranges: &'a SourceRanges,
}

impl Manager {
    /// Refuses (403) a registration with `who`'s token from `source` (`None`: the address
    /// is unknown) when a range rule applies and `source` is outside it.
    pub(super) fn check_registration_source(
        &self,
        who: &Principal,
        source: Option<IpAddr>,
    ) -> Result<(), ServiceError> {
        let (platform, token, token_ranges) = match who {
            Principal::AgentRegistration {
                platform,
                token_id,
                register_from,
                ..
            } => (platform, token_id.clone(), register_from.as_ref()),
            Principal::PilotRegistration {
                platform, pilot, ..
            } => (platform, format!("pilot {pilot}"), None),
            _ => return Ok(()),
        };
        let platform_ranges = match self.settings.platform(platform) {
            Some(p) => p.register_ranges().map_err(|e| {
                ServiceError::Forbidden(format!(
                    "platform `{platform}` has an unusable register_from ({e}): no agent \
                     may register on it until the configuration is fixed"
                ))
            })?,
            None => None,
        };
        let rules = platform_ranges
            .as_ref()
            .map(|ranges| Rule {
                whose: format!("platform `{platform}`'s register_from"),
                ranges,
            })
            .into_iter()
            .chain(token_ranges.map(|ranges| Rule {
                whose: "this registration token's --from".into(),
                ranges,
            }));
        let source = source.map(|s| s.to_canonical());
        for rule in rules {
            let Some(source) = source else {
                tracing::warn!(platform = %platform, token = %token, allowed = %rule.ranges,
                    "agent registration refused: {} applies and the source address is unknown",
                    rule.whose);
                return Err(ServiceError::Forbidden(format!(
                    "registration refused: {} limits where agents may register from, and \
                     this manager cannot see this request's source address",
                    rule.whose
                )));
            };
            if !rule.ranges.contains(source) {
                tracing::warn!(platform = %platform, token = %token, source = %source,
                    allowed = %rule.ranges,
                    "agent registration refused: source address outside {}", rule.whose);
                return Err(ServiceError::Forbidden(format!(
                    "registration refused: source address {source} is outside the ranges \
                     {} allows; register from a host inside them (the manager's admin \
                     finds them in its configuration or `hetpilot token list`)",
                    rule.whose
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ManagerConfig;
    use crate::provision::PilotHost;
    use hetpilot_protocol::protocol::{NewAgentToken, RegisterRequest};
    use std::sync::Arc;

    /// A manager whose `local` platform allows registrations from `platform_ranges`.
    fn open(dir: &tempfile::TempDir, platform_ranges: Option<&[&str]>) -> Arc<Manager> {
        let mut settings =
            ManagerConfig::load(None, &[("data_dir", dir.path().display().to_string())]).unwrap();
        settings.platforms[0].register_from =
            platform_ranges.map(|r| r.iter().map(|s| s.to_string()).collect());
        Manager::open(settings).unwrap()
    }

    fn admin(m: &Manager, dir: &tempfile::TempDir) -> Principal {
        let token = std::fs::read_to_string(super::super::admin_token_path(dir.path())).unwrap();
        m.authenticate(Some(token.trim())).unwrap()
    }

    /// A registration token for `local` and its principal.
    async fn token(m: &Manager, admin: &Principal, from: Option<&[&str]>) -> (String, Principal) {
        let token = m
            .create_agent_token(
                admin,
                NewAgentToken {
                    platform: "local".into(),
                    ttl_secs: None,
                    register_from: from.map(|r| r.iter().map(|s| s.to_string()).collect()),
                },
            )
            .await
            .unwrap()
            .token;
        let who = m.authenticate(Some(&token)).unwrap();
        (token, who)
    }

    fn request() -> RegisterRequest {
        RegisterRequest {
            cores: 2,
            ..super::super::test_support::local_request("node1")
        }
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    /// A 403 naming `whose` rule refused it, or a panic.
    fn refused(r: Result<impl std::fmt::Debug, ServiceError>, whose: &str) {
        match r {
            Err(ServiceError::Forbidden(msg)) => assert!(msg.contains(whose), "{msg}"),
            other => panic!("expected 403 naming {whose}, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_tokens_ranges_admit_only_their_sources_also_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let m = open(&dir, None);
        let admin = admin(&m, &dir);
        let (bound_token, bound) = token(&m, &admin, Some(&["127.0.0.1/32", "10.1.0.0/16"])).await;
        let Principal::AgentRegistration { token_id, .. } = &bound else {
            panic!("{bound:?}")
        };
        let whose = "this registration token's --from";
        refused(m.register(&bound, ip("127.0.0.2"), request()).await, whose);
        refused(
            m.register(&bound, ip("::ffff:10.2.0.1"), request()).await,
            whose,
        );
        refused(m.register(&bound, None, request()).await, "cannot see");
        assert!(m.register(&bound, ip("127.0.0.1"), request()).await.is_ok());
        assert!(m
            .register(&bound, ip("::ffff:10.1.7.7"), request())
            .await
            .is_ok());
        let (_, open_token) = token(&m, &admin, None).await;
        assert!(m.register(&open_token, None, request()).await.is_ok());

        drop(m);
        let m = open(&dir, None);
        let bound = m.authenticate(Some(&bound_token)).unwrap();
        let listed = m.list_agent_tokens(&admin).await.unwrap();
        let bound_info = listed.iter().find(|t| t.id == *token_id).unwrap();
        assert_eq!(
            bound_info.register_from.as_deref(),
            Some(&["127.0.0.1/32".to_string(), "10.1.0.0/16".to_string()][..])
        );
        refused(m.register(&bound, ip("127.0.0.2"), request()).await, whose);
        assert!(m.register(&bound, ip("127.0.0.1"), request()).await.is_ok());
    }

    #[tokio::test]
    async fn a_platforms_ranges_bind_every_token_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let m = open(&dir, Some(&["10.1.0.0/16"]));
        let admin = admin(&m, &dir);
        let whose = "platform `local`'s register_from";
        let (_, open_token) = token(&m, &admin, None).await;
        refused(
            m.register(&open_token, ip("127.0.0.1"), request()).await,
            whose,
        );
        assert!(m
            .register(&open_token, ip("10.1.0.9"), request())
            .await
            .is_ok());
        // Both rules hold where both are set.
        let (_, narrower) = token(&m, &admin, Some(&["10.1.2.0/24"])).await;
        refused(
            m.register(&narrower, ip("10.1.3.1"), request()).await,
            "--from",
        );
        let (_, wider) = token(&m, &admin, Some(&["10.0.0.0/8"])).await;
        refused(m.register(&wider, ip("10.2.0.1"), request()).await, whose);
        // A pilot's own credential too.
        let (pilot, credential) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
        let pilot_token = m.authenticate(Some(&credential)).unwrap();
        let mut req = request();
        req.pilot = Some(pilot.name.clone());
        refused(
            m.register(&pilot_token, ip("127.0.0.1"), req.clone()).await,
            whose,
        );
        assert!(m.register(&pilot_token, ip("10.1.0.2"), req).await.is_ok());
    }

    #[tokio::test]
    async fn malformed_ranges_for_a_token_are_refused_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let m = open(&dir, None);
        let admin = admin(&m, &dir);
        for bad in [&["10.0.0.0/8", "10.1.2.3/33"][..], &["127.0.0.1/8"], &[]] {
            let r = m
                .create_agent_token(
                    &admin,
                    NewAgentToken {
                        platform: "local".into(),
                        ttl_secs: None,
                        register_from: Some(bad.iter().map(|s| s.to_string()).collect()),
                    },
                )
                .await;
            match r {
                Err(ServiceError::BadRequest(msg)) => {
                    assert!(msg.starts_with("field `register_from`: "), "{msg}")
                }
                other => panic!("{bad:?}: expected 400, got {other:?}"),
            }
        }
        assert!(m.list_agent_tokens(&admin).await.unwrap().is_empty());
    }
}
