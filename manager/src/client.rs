//! A typed client of the `/v1` API, used by the CLI, the demo and the tests.

use hetpilot_protocol::error_code::ErrorCode;
use hetpilot_protocol::file_listing::FilePage;
use hetpilot_protocol::pilots::{PlatformStatus, PlatformsReloaded};
use hetpilot_protocol::protocol::{
    AgentTokenInfo, AppReport, AppSummary, ForgetSummary, NewAgentToken, NewUser, PurgeRequest,
    SubmitResponse, TaskDetail, TaskInfo, TokenResponse,
};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::task_output::OutputStream;
use hetpilot_protocol::views::ScheduleView;
use hetpilot_protocol::{AppId, TaskRef};
use hetpilot_transport::http::{self, CallError};
use hetpilot_transport::tls::{self, ClientTrust, TlsError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("cannot reach the manager at {url}: {message} (is `hetpilot serve` running there?)")]
    Unreachable { url: String, message: String },
    #[error(
        "the manager at {url} shows a certificate from an issuer this machine does not trust \
         (a self-signed one?): pass --tls-fingerprint SHA256 or set HETPILOT_TLS_FINGERPRINT \
         (the admin's `hetpilot user add` prints it), or --ca-file/HETPILOT_CA_FILE"
    )]
    UntrustedCertificate { url: String },
    #[error("{message} (HTTP {status}{})", code.map(|c| format!(", {c}")).unwrap_or_default())]
    Refused {
        status: u16,
        message: String,
        /// The manager's code for it; none for a refusal this client made up.
        code: Option<ErrorCode>,
    },
}

impl ClientError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Refused { status, .. } => Some(*status),
            ClientError::Unreachable { .. } | ClientError::UntrustedCertificate { .. } => None,
        }
    }
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

/// `s` made safe as one path segment (anything but hex digits and letters is dropped: ids
/// are hex).
fn url_segment(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).collect()
}

impl Client {
    /// A client of the manager at `base` (trusting its certificate as `trust` says).
    pub fn new(base: &str, token: &str, trust: &ClientTrust) -> Result<Client, TlsError> {
        let builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(http::POOL_IDLE_TIMEOUT)
            .timeout(Duration::from_secs(600));
        let http = trust
            .apply_for(base, builder)?
            .build()
            .expect("building the HTTP client");
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.trim().to_string(),
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// A request that got no answer, as the error to show.
    fn unreachable(&self, e: &reqwest::Error) -> ClientError {
        if tls::is_unknown_issuer(e) {
            return ClientError::UntrustedCertificate {
                url: self.base.clone(),
            };
        }
        ClientError::Unreachable {
            url: self.base.clone(),
            message: http::with_causes(e),
        }
    }

    async fn call<T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, ClientError> {
        http::call(req.bearer_auth(&self.token))
            .await
            .map_err(|e| match e {
                CallError::Unreachable(e) => self.unreachable(&e),
                CallError::Refused {
                    status,
                    message,
                    code,
                } => ClientError::Refused {
                    status,
                    message,
                    code,
                },
            })
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(format!("{}{path}", self.base))
    }

    fn post<B: Serialize>(&self, path: &str, body: &B) -> reqwest::RequestBuilder {
        self.http.post(format!("{}{path}", self.base)).json(body)
    }

    pub async fn health(&self) -> Result<serde_json::Value, ClientError> {
        self.call(self.get("/v1/health")).await
    }

    /// The URL of the caller's file `name`: each `/`-separated part percent-encoded as one
    /// path segment.
    fn file_url(&self, name: &str) -> Result<reqwest::Url, ClientError> {
        let refused = |message: String| ClientError::Refused {
            status: 400,
            message,
            code: None,
        };
        let mut url = reqwest::Url::parse(&self.base).map_err(|e| refused(e.to_string()))?;
        url.path_segments_mut()
            .map_err(|()| refused(format!("{} cannot take a path", self.base)))?
            .pop_if_empty()
            .extend(["v1", "files"])
            .extend(name.split('/'));
        Ok(url)
    }

    /// Sends a file request; an answer other than success becomes `Refused` with the
    /// manager's message.
    async fn send_file_request(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        let resp =
            req.bearer_auth(&self.token)
                .send()
                .await
                .map_err(|e| ClientError::Unreachable {
                    url: self.base.clone(),
                    message: http::with_causes(&e),
                })?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let (message, code) = match resp.json::<serde_json::Value>().await {
            Ok(b) => (
                b["error"].as_str().unwrap_or("refused").to_string(),
                b["code"].as_str().and_then(|c| c.parse().ok()),
            ),
            Err(_) => (
                status.canonical_reason().unwrap_or("error").to_string(),
                None,
            ),
        };
        Err(ClientError::Refused {
            status: status.as_u16(),
            message,
            code,
        })
    }

    /// `GET /v1/apps/APP/events?after=CURSOR`: the application's task ends past `after`
    /// as newline-delimited JSON, its body still to be read (see [`crate::event_stream`]).
    pub async fn events(&self, app: AppId, after: u64) -> Result<reqwest::Response, ClientError> {
        let req = self
            .get(&format!("/v1/apps/{app}/events"))
            .query(&[("after", after.to_string())]);
        self.send_file_request(req).await
    }

    /// `GET /v1/tasks/TASK/output`: one stream of run `attempt` of `task`, fetched through
    /// the manager (which asks the agent for it when it has not got it); `range` is a
    /// `Range` header value such as `bytes=-65536`. Its body is still to be read.
    pub async fn task_output(
        &self,
        task: TaskRef,
        attempt: u32,
        stream: OutputStream,
        range: Option<&str>,
    ) -> Result<reqwest::Response, ClientError> {
        let mut req = self.get(&format!("/v1/tasks/{task}/output")).query(&[
            ("attempt", attempt.to_string()),
            ("stream", stream.as_str().to_string()),
        ]);
        if let Some(range) = range {
            req = req.header(reqwest::header::RANGE, range);
        }
        self.send_file_request(req).await
    }

    /// `PUT /v1/files/NAME`: stores `body` as the caller's file `name`.
    pub async fn put_file(&self, name: &str, body: reqwest::Body) -> Result<(), ClientError> {
        let url = self.file_url(name)?;
        self.send_file_request(self.http.put(url).body(body))
            .await
            .map(drop)
    }

    /// `GET /v1/files/NAME`: the caller's file `name`, its body still to be read (in
    /// pieces, with `Response::chunk`).
    pub async fn get_file(&self, name: &str) -> Result<reqwest::Response, ClientError> {
        let url = self.file_url(name)?;
        self.send_file_request(self.http.get(url)).await
    }

    /// `DELETE /v1/files/NAME`: removes the caller's file `name`; returns its size.
    pub async fn remove_file(&self, name: &str) -> Result<u64, ClientError> {
        let url = self.file_url(name)?;
        let resp = self.send_file_request(self.http.delete(url)).await?;
        let body: serde_json::Value = resp.json().await.map_err(|e| ClientError::Refused {
            status: 502,
            message: format!("the manager's answer is not JSON: {e}"),
            code: None,
        })?;
        Ok(body["size"].as_u64().unwrap_or(0))
    }

    /// `GET /v1/files`: a page of the caller's files starting with `prefix`, after `after`.
    pub async fn list_files(
        &self,
        prefix: Option<&str>,
        after: Option<&str>,
        limit: Option<u64>,
    ) -> Result<FilePage, ClientError> {
        let mut q: Vec<(&str, String)> = Vec::new();
        if let Some(p) = prefix {
            q.push(("prefix", p.to_string()));
        }
        if let Some(a) = after {
            q.push(("after", a.to_string()));
        }
        if let Some(l) = limit {
            q.push(("limit", l.to_string()));
        }
        self.call(self.get("/v1/files").query(&q)).await
    }

    pub async fn submit(&self, spec: &AppSpec) -> Result<SubmitResponse, ClientError> {
        self.call(self.post("/v1/apps", spec)).await
    }

    /// One page of a listing route (`/v1/apps`, `/v1/agents`, ...): at most `limit` rows
    /// whose key orders after the cursor `after`.
    pub async fn list_page<T: DeserializeOwned>(
        &self,
        path: &str,
        limit: u64,
        after: Option<&str>,
    ) -> Result<Vec<T>, ClientError> {
        let mut q = vec![("limit", limit.to_string())];
        if let Some(a) = after {
            q.push(("after", a.to_string()));
        }
        self.call(self.get(path).query(&q)).await
    }

    pub async fn app(&self, app: AppId) -> Result<AppSummary, ClientError> {
        self.call(self.get(&format!("/v1/apps/{app}"))).await
    }

    /// The application's summary once more than `seen` of its tasks have ended or it has
    /// finished, or after `wait_ms` (the manager's long poll).
    pub async fn app_wait(
        &self,
        app: AppId,
        seen: u64,
        wait_ms: u64,
    ) -> Result<AppSummary, ClientError> {
        self.call(self.get(&format!("/v1/apps/{app}?wait_ms={wait_ms}&seen={seen}")))
            .await
    }

    pub async fn report(&self, app: AppId) -> Result<AppReport, ClientError> {
        self.call(self.get(&format!("/v1/apps/{app}/report"))).await
    }

    /// One page of an application's tasks in index order: at most `limit`, each with an
    /// index greater than `after`.
    pub async fn tasks(
        &self,
        app: AppId,
        state: Option<&str>,
        limit: u64,
        after: Option<u64>,
    ) -> Result<Vec<TaskInfo>, ClientError> {
        let mut q = vec![("limit", limit.to_string())];
        if let Some(s) = state {
            q.push(("state", s.to_string()));
        }
        if let Some(a) = after {
            q.push(("after", a.to_string()));
        }
        self.call(self.get(&format!("/v1/apps/{app}/tasks")).query(&q))
            .await
    }

    pub async fn task(&self, task: TaskRef) -> Result<TaskDetail, ClientError> {
        self.call(self.get(&format!("/v1/tasks/{task}"))).await
    }

    pub async fn cancel(&self, app: AppId) -> Result<AppSummary, ClientError> {
        self.call(self.post(&format!("/v1/apps/{app}/cancel"), &serde_json::json!({})))
            .await
    }

    /// Forgets an ended application (its owner, or admin).
    pub async fn forget(&self, app: AppId) -> Result<ForgetSummary, ClientError> {
        self.call(self.post(&format!("/v1/apps/{app}/forget"), &serde_json::json!({})))
            .await
    }

    /// Forgets every application that ended at least `older_than_secs` ago (admin).
    pub async fn purge(&self, older_than_secs: u64) -> Result<ForgetSummary, ClientError> {
        self.call(self.post("/v1/admin/purge", &PurgeRequest { older_than_secs }))
            .await
    }

    pub async fn create_user(&self, name: &str) -> Result<TokenResponse, ClientError> {
        self.call(self.post("/v1/users", &NewUser { name: name.into() }))
            .await
    }

    /// Registration tokens still valid (admin).
    /// Revokes a registration token by its id (admin).
    pub async fn revoke_agent_token(&self, id: &str) -> Result<AgentTokenInfo, ClientError> {
        let id: String = url_segment(id);
        self.call(self.post(
            &format!("/v1/agent-tokens/{id}/revoke"),
            &serde_json::json!({}),
        ))
        .await
    }

    /// A new token for the calling admin; the old one stops working (admin).
    pub async fn rotate_admin_token(&self) -> Result<TokenResponse, ClientError> {
        self.call(self.post("/v1/admin/rotate-token", &serde_json::json!({})))
            .await
    }

    /// A registration token for agents of `platform` (admin), registering only from
    /// `register_from` (CIDR ranges) if given.
    pub async fn agent_token(
        &self,
        platform: &str,
        ttl_secs: Option<u64>,
        register_from: Option<Vec<String>>,
    ) -> Result<TokenResponse, ClientError> {
        self.call(self.post(
            "/v1/agent-tokens",
            &NewAgentToken {
                platform: platform.into(),
                ttl_secs,
                register_from,
            },
        ))
        .await
    }

    pub async fn schedule(&self) -> Result<ScheduleView, ClientError> {
        self.call(self.get("/v1/schedule")).await
    }

    /// The online affinity tables (`GET /v1/affinity`).
    pub async fn affinity(
        &self,
    ) -> Result<hetpilot_protocol::affinity_view::AffinityView, ClientError> {
        self.call(self.get("/v1/affinity")).await
    }

    pub async fn platform_status(&self) -> Result<Vec<PlatformStatus>, ClientError> {
        self.call(self.get("/v1/platforms")).await
    }

    /// Asks the manager to re-read and re-check the platforms' profiles (admin).
    pub async fn reload_platforms(&self) -> Result<PlatformsReloaded, ClientError> {
        self.call(self.post("/v1/platforms/reload", &serde_json::json!({})))
            .await
    }
}
