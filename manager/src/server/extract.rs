//! Request extractors: the caller's identity (found by the `auth` layer), and JSON, path
//! and query extractors whose rejections are JSON error bodies.

use super::error::ApiError;
use crate::service::{Principal, ServiceError};
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::request::Parts;

/// The authenticated caller.
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let who = parts.extensions.remove::<Principal>();
        Ok(Caller(who.ok_or(ServiceError::Unauthorized)?))
    }
}

#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> axum::response::IntoResponse for Json<T> {
    fn into_response(self) -> axum::response::Response {
        axum::Json(self.0).into_response()
    }
}

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);
