//! Every route of the `/v1` API with a valid request for it, and the generator that turns
//! a valid request into a hostile one (mutated body, path or query, another caller's token).

use crate::mutate::{garbage_body, mutate, nasty_file_name, nasty_id, nasty_query_value};
use rand::seq::IndexedRandom;
use rand::Rng;
use serde_json::{json, Value};
use std::sync::Mutex;

/// Whose token a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    None,
    Garbage,
    Admin,
    /// The owner of the resources in the path (alice).
    User,
    /// Another user (bob).
    Foreign,
    Registration,
    Agent,
}

const TOKENS: [Tok; 7] = [
    Tok::None,
    Tok::Garbage,
    Tok::Admin,
    Tok::User,
    Tok::Foreign,
    Tok::Registration,
    Tok::Agent,
];

/// The routes of `manager/src/server/mod.rs`, `server/files.rs` and
/// `server/task_outputs.rs`: method, path template, and the caller a valid request has.
pub const ROUTES: &[(&str, &str, Tok)] = &[
    ("GET", "/v1/health", Tok::None),
    ("POST", "/v1/apps", Tok::User),
    ("GET", "/v1/apps", Tok::User),
    ("GET", "/v1/apps/{app}", Tok::User),
    ("GET", "/v1/apps/{app}/report", Tok::User),
    ("GET", "/v1/apps/{app}/tasks", Tok::User),
    ("POST", "/v1/apps/{app}/cancel", Tok::User),
    ("POST", "/v1/apps/{app}/forget", Tok::User),
    ("POST", "/v1/admin/purge", Tok::Admin),
    ("GET", "/v1/tasks/{task}", Tok::User),
    ("GET", "/v1/tasks/{task}/output", Tok::User),
    ("POST", "/v1/users", Tok::Admin),
    ("POST", "/v1/agent-tokens", Tok::Admin),
    ("POST", "/v1/agents", Tok::Registration),
    ("GET", "/v1/agents", Tok::Admin),
    ("POST", "/v1/agents/{agent}/pull", Tok::Agent),
    ("POST", "/v1/agents/{agent}/results", Tok::Agent),
    ("POST", "/v1/agents/{agent}/heartbeat", Tok::Agent),
    ("POST", "/v1/agents/{agent}/deregister", Tok::Agent),
    ("POST", "/v1/agents/{agent}/drain", Tok::Admin),
    (
        "PUT",
        "/v1/agents/{agent}/outputs/{task}/{attempt}/{stream}",
        Tok::Agent,
    ),
    ("GET", "/v1/schedule", Tok::Admin),
    ("GET", "/v1/usage", Tok::User),
    ("GET", "/v1/bandwidths", Tok::Admin),
    ("GET", "/v1/pilots", Tok::Admin),
    ("GET", "/v1/platforms", Tok::Admin),
    ("POST", "/v1/platforms/reload", Tok::Admin),
    ("GET", "/v1/files", Tok::User),
    ("GET", "/v1/files/{*name}", Tok::User),
    ("PUT", "/v1/files/{*name}", Tok::User),
    ("DELETE", "/v1/files/{*name}", Tok::User),
    ("GET", "/v1/apps/{app}/files/{*name}", Tok::User),
    ("PUT", "/v1/apps/{app}/files/{*name}", Tok::User),
    ("GET", "/v1/file-stats", Tok::Admin),
    ("GET", "/v1/agent-tokens", Tok::Admin),
    ("POST", "/v1/agent-tokens/{id}/revoke", Tok::Admin),
    ("GET", "/v1/whoami", Tok::User),
    ("GET", "/v1/affinity", Tok::User),
    ("GET", "/v1/staging", Tok::Admin),
    ("GET", "/v1/history", Tok::User),
    // `POST /v1/admin/rotate-token` is left out: a valid call would end the run's admin.
];

/// The tokens and ids the run knows; agents registered during the run join the pool.
pub struct World {
    pub admin: String,
    pub alice: String,
    pub bob: String,
    pub registration: String,
    pub alice_apps: Vec<u64>,
    pub bob_apps: Vec<u64>,
    /// (agent id, credential).
    pub agents: Mutex<Vec<(u64, String)>>,
}

/// What is done to a valid request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    None,
    /// Hostile path parameters.
    Path,
    /// Random edits of the JSON body (and hostile query values).
    Body,
    /// A body that is not the expected JSON.
    Garbage,
    /// Someone else's token.
    Token,
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct Req {
    pub route: &'static str,
    pub method: &'static str,
    /// Path and query, encoded.
    pub path: String,
    pub body: Option<Vec<u8>>,
    pub tok: Tok,
    pub token: String,
    /// What was done to the valid request, for the findings file.
    pub how: &'static str,
}

/// A file alice stores before the run, and its directory.
pub const FILE: &str = "data/in0.txt";
pub const DIR: &str = "data";

impl World {
    fn agent(&self, rng: &mut impl Rng) -> (u64, String) {
        let agents = self.agents.lock().expect("agent pool");
        agents.choose(rng).cloned().unwrap_or((1, String::new()))
    }

    fn token(&self, tok: Tok, rng: &mut impl Rng) -> String {
        match tok {
            Tok::None => String::new(),
            Tok::Garbage => ["hp_0000", "x", "Bearer", "\u{202E}"]
                .choose(rng)
                .expect("non-empty")
                .to_string(),
            Tok::Admin => self.admin.clone(),
            Tok::User => self.alice.clone(),
            Tok::Foreign => self.bob.clone(),
            Tok::Registration => self.registration.clone(),
            Tok::Agent => self.agent(rng).1,
        }
    }

    /// A random request: valid, or with one kind of damage.
    pub fn request(&self, rng: &mut impl Rng) -> Req {
        let &(method, route, valid_tok) = ROUTES.choose(rng).expect("routes");
        let app = *self.alice_apps.choose(rng).expect("apps");
        let (agent, credential) = self.agent(rng);
        let mut body = valid_body(route, app, rng);
        let mut how = "valid";
        let damage = match rng.random_range(0..100) {
            0..30 => Damage::None,
            30..55 => Damage::Path,
            55..85 => Damage::Body,
            85..92 => Damage::Garbage,
            _ => Damage::Token,
        };
        let mut id = |what: &str| -> String {
            if damage == Damage::Path {
                how = "path";
                nasty_id(rng)
            } else {
                match what {
                    "app" => app.to_string(),
                    "task" => format!("{app}.{}", rng.random_range(0..4)),
                    // No such token: revoking the run's registration token would end
                    // the registrations the run makes.
                    "id" => "999999".into(),
                    "attempt" => rng.random_range(1..3u32).to_string(),
                    "stream" => ["out", "err"].choose(rng).expect("streams").to_string(),
                    _ => agent.to_string(),
                }
            }
        };
        let mut path = route
            .replace("{app}", &id("app"))
            .replace("{task}", &id("task"))
            .replace("{agent}", &id("agent"))
            .replace("{id}", &id("id"))
            .replace("{attempt}", &id("attempt"))
            .replace("{stream}", &id("stream"));
        if path.contains("{*name}") {
            // A valid delete leaves alice's first file, which the probes read, in place.
            let names: &[&str] = match method {
                "DELETE" => &["notes.txt", "data/in1.txt"],
                _ => &[FILE, "notes.txt", "data/in1.txt"],
            };
            let name = if damage == Damage::Path {
                nasty_file_name(rng, FILE, DIR)
            } else {
                names.choose(rng).expect("names").to_string()
            };
            path = path.replace("{*name}", &name);
        }
        let valid_query = match route {
            "/v1/apps/{app}/tasks" => &[("state", "waiting"), ("limit", "10"), ("offset", "0")][..],
            "/v1/tasks/{task}/output" => &[("attempt", "1"), ("stream", "out")],
            "/v1/files" => &[
                ("prefix", "data/"),
                ("after", "data/in0.txt"),
                ("limit", "10"),
            ],
            _ => &[],
        };
        if !valid_query.is_empty() {
            let hostile = damage == Damage::Body;
            if hostile {
                how = "query";
            }
            let params: Vec<String> = valid_query
                .iter()
                .map(|&(k, v)| {
                    let v = if hostile {
                        nasty_query_value(rng)
                    } else {
                        v.to_string()
                    };
                    format!("{k}={v}")
                })
                .collect();
            path = format!("{path}?{}", params.join("&"));
        }
        if damage == Damage::Body {
            if let Some(Value::Object(_)) = &body {
                let v = body.as_mut().expect("object body");
                mutate(v, rng);
                how = "body";
            }
        }
        let mut raw = body.map(|b| serde_json::to_vec(&b).expect("JSON body"));
        if damage == Damage::Garbage {
            raw = Some(garbage_body(rng));
            how = "garbage body";
        }
        if method == "PUT" {
            let len = rng.random_range(0..4096);
            raw = Some((0..len).map(|_| rng.random()).collect());
        }
        let tok = if damage == Damage::Token || rng.random_bool(0.25) {
            *TOKENS.choose(rng).expect("tokens")
        } else {
            valid_tok
        };
        let token = if tok == Tok::Agent && valid_tok == Tok::Agent {
            credential
        } else {
            self.token(tok, rng)
        };
        if how == "valid" && tok != valid_tok {
            how = "token";
        }
        Req {
            route,
            method,
            path,
            body: raw,
            tok,
            token,
            how,
        }
    }
}

fn attempt(app: u64, index: u64) -> Value {
    json!({"task": {"app": app, "index": index}, "attempt": 1})
}

/// A request body the route accepts (None for routes without one).
fn valid_body(route: &str, app: u64, rng: &mut impl Rng) -> Option<Value> {
    let n = rng.random_range(1..5u64);
    Some(match route {
        "/v1/apps" => {
            let tasks = match rng.random_range(0..3) {
                0 => json!({"array": {"start": 0, "end": n - 1}}),
                1 => json!({"lines": (0..n).map(|i| format!("line {i}")).collect::<Vec<_>>()}),
                _ => {
                    json!({"params": (0..n).map(|i| json!({"x": i.to_string()})).collect::<Vec<_>>()})
                }
            };
            let command = match &tasks.get("params") {
                Some(_) => "echo {x}",
                None => "echo {}",
            };
            let mut spec = json!({
                "name": format!("fuzz-{n}"), "command": command, "tasks": tasks,
                "cores": 1, "memory_mb": 64, "env": {"A": "b"}, "max_attempts": 2,
                "timeout_secs": 60, "workdir": null, "output_dir": null,
            });
            if rng.random_bool(0.3) {
                spec["outputs"] = json!([format!("out/{}.txt", &command[5..])]);
            }
            spec
        }
        "/v1/users" => json!({"name": format!("user-{}", rng.random::<u32>())}),
        "/v1/agent-tokens" => json!({"platform": "local", "ttl_secs": 3600}),
        // Ended a year ago: a valid purge forgets nothing the run still uses.
        "/v1/admin/purge" => json!({"older_than_secs": 365 * 24 * 3600}),
        "/v1/agents" => json!({
            "platform": "local", "hostname": "node", "cores": 2, "memory_mb": 1024,
            "slots": 2, "batch_job_id": null, "walltime_end": null, "pilot": null,
        }),
        "/v1/agents/{agent}/pull" => json!({"max": n, "wait_ms": 0, "started": [attempt(app, 0)]}),
        "/v1/agents/{agent}/results" => json!({"results": [{
            "task": {"app": app, "index": rng.random_range(0..4)}, "attempt": 1,
            "outcome": "success", "exit_code": 0, "signal": null,
            "measurements": {"started_at_ms": 1, "ended_at_ms": 2, "wall_ms": 1.0,
                "user_cpu_ms": 0.5, "sys_cpu_ms": 0.1, "max_rss_kb": 100, "co_runners": [app]},
            "stdout_path": null, "stderr_path": null, "output_tail": "ok", "error": null,
        }]}),
        "/v1/agents/{agent}/heartbeat" => json!({
            "seen_up_to_ms": 0, "held": [attempt(app, 1)], "started": [],
        }),
        _ => return None,
    })
}

/// Whether a path holds a dot segment that an URL parser would fold away.
pub fn needs_raw(path: &str) -> bool {
    let p = path.split('?').next().unwrap_or(path).to_ascii_lowercase();
    p.split('/')
        .any(|s| matches!(s, "." | ".." | "%2e" | "%2e%2e" | ".%2e" | "%2e."))
}
