//! The depot: `hetpilot-agent serve-files`, the agent in a file-server role, run on a host
//! near the storage so agents fetch inputs from it and store outputs to it directly, not
//! through the manager (a file store of the manager's `[[storage]]`, named in `store://`
//! URLs). It serves `ROOT/OWNER/PATH` at `/OWNER/PATH`: `GET` and `HEAD` (with a
//! single `Range`) and `PUT` (atomic: a synced temporary file renamed into place).
//!
//! It keeps no user list and no state: every request carries a grant the manager signed
//! with the secret this depot shares with it (`--secret-file`), naming this depot
//! (`--name`, as in the manager's `[[storage]]` entry), one owner and an expiry. A grant
//! opens only its owner's directory (see `auth`), and no path leads out of that
//! directory, not through `..` nor through symlinks (see `paths`). Files go out as opaque
//! bytes (`application/octet-stream`, `attachment`) and every answer says `nosniff`.

mod auth;
mod paths;

use anyhow::Context;
use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::header::X_CONTENT_TYPE_OPTIONS;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use hetpilot_protocol::error_code::ErrorCode;
use hetpilot_protocol::files::check_store_name;
use hetpilot_protocol::protocol::ErrorBody;
use hetpilot_transport::http_file::{self, HttpFileError};
use hetpilot_transport::serve::ServeLimits;
use hetpilot_transport::store_grant::StoreSecret;
use hetpilot_transport::tls::server_config;
use paths::PathError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

/// `hetpilot-agent serve-files`.
#[derive(Debug, clap::Args)]
pub struct ServeFilesArgs {
    /// Directory holding each user's files, as ROOT/USER/PATH.
    #[arg(long)]
    root: PathBuf,
    /// Address to listen on, e.g. `0.0.0.0:8480`.
    #[arg(long)]
    listen: String,
    /// File holding the secret shared with the manager (at least 32 bytes, mode 0600).
    #[arg(long)]
    secret_file: PathBuf,
    /// This depot's name, as in the manager's `[[storage]]` entry (default: the host name).
    #[arg(long)]
    name: Option<String>,
    /// Largest file one PUT may store, in MiB (larger ones get 413, also when chunked).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    max_file_mib: u64,
    /// Seconds a connection gets to send a request's headers.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86400))]
    header_read_timeout_secs: u64,
    /// Seconds a request body may pause before the request is dropped.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86400))]
    body_timeout_secs: u64,
    /// Connections held at once.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: u64,
    /// HTTPS certificate chain (PEM); with `--tls-key`, files are served over TLS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// HTTPS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Connections held at once from one IP address.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_ip: u64,
}

/// An error answer: a status and `{"error": "...", "code": "..."}`, the code following
/// from the status.
#[derive(Debug)]
pub struct DepotError {
    pub status: StatusCode,
    pub message: String,
}

impl From<HttpFileError> for DepotError {
    fn from(e: HttpFileError) -> Self {
        let status = e.status();
        if status.is_server_error() {
            tracing::error!(error = %e, "depot I/O");
        }
        DepotError {
            status,
            message: e.to_string(),
        }
    }
}

impl IntoResponse for DepotError {
    fn into_response(self) -> Response {
        let body = Json(ErrorBody {
            error: self.message,
            code: ErrorCode::of_http_status(self.status.as_u16()),
        });
        (self.status, body).into_response()
    }
}

impl From<PathError> for DepotError {
    fn from(e: PathError) -> Self {
        let status = match &e {
            PathError::Invalid(_) => StatusCode::BAD_REQUEST,
            PathError::NotFound(_) => StatusCode::NOT_FOUND,
            PathError::Outside(_) => StatusCode::FORBIDDEN,
            PathError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        };
        DepotError {
            status,
            message: e.to_string(),
        }
    }
}

/// What every request needs: the files' root, this depot's name and the shared secret.
struct DepotState {
    root: PathBuf,
    name: String,
    secret: StoreSecret,
}

/// Serves files until SIGTERM or SIGINT.
pub async fn serve(args: ServeFilesArgs) -> anyhow::Result<()> {
    let name = match args.name {
        Some(n) => n,
        None => sysinfo::System::host_name()
            .context("no --name given and the host name is unknown")?
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    check_store_name(&name)
        .map_err(anyhow::Error::msg)
        .context("--name")?;
    let secret = StoreSecret::load(&args.secret_file).context("--secret-file")?;
    let root = args
        .root
        .canonicalize()
        .with_context(|| format!("--root {}", args.root.display()))?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(server_config(cert, key).context("--tls-cert/--tls-key")?),
        _ => None,
    };
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(store = %name, root = %root.display(), %addr, "serving files");
    let depot = Arc::new(DepotState { root, name, secret });
    let app = Router::new()
        .route("/{owner}/{*path}", get(get_file).put(put_file))
        .with_state(depot)
        .layer(RequestBodyLimitLayer::new(
            (args.max_file_mib << 20) as usize,
        ))
        .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(
            args.body_timeout_secs,
        )))
        .layer(SetResponseHeaderLayer::if_not_present(
            X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ));
    let limits = ServeLimits {
        header_read_timeout: Duration::from_secs(args.header_read_timeout_secs),
        max_connections: args.max_connections as usize,
        max_connections_per_ip: args.max_connections_per_ip as usize,
        tls,
    };
    hetpilot_transport::serve::serve(listener, app, limits, stop_signal())
        .await
        .context("serving files")?;
    tracing::info!("depot stopped");
    Ok(())
}

async fn stop_signal() {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

fn refused(e: DepotError, method: &str, owner: &str, name: &str) -> DepotError {
    if !e.status.is_server_error() {
        tracing::warn!(method, owner, file = name, status = e.status.as_u16(), reason = %e.message, "request refused");
    }
    e
}

async fn get_file(
    State(depot): State<Arc<DepotState>>,
    UrlPath((owner, name)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, DepotError> {
    let serve = async {
        auth::authorize(&depot.secret, &depot.name, &headers, &owner)?;
        let path = paths::existing(&depot.root, &owner, &name)?;
        tracing::debug!(owner, file = name, "sending");
        Ok(http_file::send(&path, &name, &headers).await?.0)
    };
    serve.await.map_err(|e| refused(e, "GET", &owner, &name))
}

async fn put_file(
    State(depot): State<Arc<DepotState>>,
    UrlPath((owner, name)): UrlPath<(String, String)>,
    req: Request<Body>,
) -> Result<StatusCode, DepotError> {
    let receive = async {
        auth::authorize(&depot.secret, &depot.name, req.headers(), &owner)?;
        let (dir, file) = paths::new_file(&depot.root, &owner, &name)?;
        let bytes = http_file::receive(&dir.join(&file), req.into_body()).await?;
        tracing::info!(owner, file = name, bytes, "stored");
        Ok(StatusCode::CREATED)
    };
    receive.await.map_err(|e| refused(e, "PUT", &owner, &name))
}
