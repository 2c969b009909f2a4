//! Error answers: a status and `{"error": "...", "code": "..."}`, the code one of
//! [`ErrorCode`]'s. A failure inside the manager is logged in full and answered as
//! `internal` without its details.

use crate::service::ServiceError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use hetpilot_protocol::error_code::ErrorCode;
use hetpilot_protocol::protocol::ErrorBody;

/// What an `internal` answer says: the details are for the manager's log only.
const INTERNAL_MESSAGE: &str = "the manager failed: its log has the details";

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    /// An answer with `code`'s own status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status: status_of(code),
            code,
            message: message.into(),
        }
    }

    /// An answer whose status came from another layer (file I/O, axum's extractors): its
    /// code follows from the status.
    pub fn with_status(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: ErrorCode::of_http_status(status.as_u16()),
            message: message.into(),
        }
    }
}

/// The status `code` is answered with.
fn status_of(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        ApiError::new(e.code(), e.to_string())
    }
}

/// A JSON body's rejection: `invalid_body`, or `too_large` past the route's limit.
impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let code = match r.status() {
            StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::TooLarge,
            s if s.is_server_error() => ErrorCode::Internal,
            _ => ErrorCode::InvalidBody,
        };
        ApiError {
            status: r.status(),
            code,
            message: r.body_text(),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        ApiError::new(ErrorCode::NotFound, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::with_status(r.status(), r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = if self.code == ErrorCode::Internal {
            tracing::error!(error = %self.message, status = %self.status, "request failed");
            INTERNAL_MESSAGE.to_owned()
        } else {
            self.message
        };
        let body = ErrorBody {
            error,
            code: self.code,
        };
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn answer(e: ApiError) -> (StatusCode, serde_json::Value) {
        let resp = e.into_response();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&body).unwrap())
    }

    /// A worker that panicked is the manager's failure, not the caller's: 500 `internal`,
    /// and the panic's words stay in the log.
    #[tokio::test]
    async fn a_panicked_worker_is_an_internal_error_without_its_details() {
        let joined = tokio::task::spawn_blocking(|| panic!("secret detail")).await;
        let e = ServiceError::from(joined.unwrap_err());
        let (status, body) = answer(e.into()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["code"], "internal");
        assert_eq!(body["error"], INTERNAL_MESSAGE);
    }

    #[tokio::test]
    async fn a_database_failure_is_internal_and_says_nothing_of_the_database() {
        let e = ServiceError::Database(rusqlite::Error::InvalidColumnName("secret".into()));
        let (status, body) = answer(e.into()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["code"], "internal");
        assert!(
            !body["error"].as_str().unwrap().contains("secret"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn each_refusal_carries_its_code_beside_the_message() {
        let cases = [
            (
                ServiceError::BadRequest("`limit` must be 1..=100000".into()),
                400,
                "invalid_field",
            ),
            (ServiceError::Unauthorized, 401, "unauthorized"),
            (
                ServiceError::Quota("over 10 apps".into()),
                403,
                "quota_exceeded",
            ),
            (
                ServiceError::NotFound("no application 7".into()),
                404,
                "not_found",
            ),
            (
                ServiceError::TooMany("32 streams open".into()),
                429,
                "too_many_streams",
            ),
        ];
        for (e, status, code) in cases {
            let message = e.to_string();
            let (got, body) = answer(e.into()).await;
            assert_eq!(got.as_u16(), status, "{body}");
            assert_eq!(body["code"], code);
            assert_eq!(body["error"], message);
        }
    }
}
