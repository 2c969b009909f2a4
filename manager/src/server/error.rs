//! Error answers: a status code and `{"error": "..."}`.

use crate::db::StoreError;
use crate::service::ServiceError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use hetpilot_protocol::protocol::ErrorBody;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        let status = match &e {
            ServiceError::Unauthorized => StatusCode::UNAUTHORIZED,
            ServiceError::Forbidden(_) => StatusCode::FORBIDDEN,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServiceError::Conflict(_) => StatusCode::CONFLICT,
            ServiceError::Gone(_) => StatusCode::GONE,
            ServiceError::Quota(_) => StatusCode::FORBIDDEN,
            ServiceError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            ServiceError::NameTooLong(_) => StatusCode::URI_TOO_LONG,
            ServiceError::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
            // The writer thread logs a full data directory once, not once a request.
            ServiceError::Store(StoreError::Full { .. }) => StatusCode::INSUFFICIENT_STORAGE,
            ServiceError::Store(_) | ServiceError::Database(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() && status != StatusCode::INSUFFICIENT_STORAGE {
            tracing::error!(error = %e, "request failed");
        }
        ApiError {
            status,
            message: e.to_string(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        ApiError {
            status: r.status(),
            message: r.body_text(),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: r.body_text(),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError {
            status: r.status(),
            message: r.body_text(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(ErrorBody {
                error: self.message,
            }),
        )
            .into_response()
    }
}
