//! Request extractors: the caller's identity (found by the `auth` layer), the address the
//! request came from, and JSON, path and query extractors whose rejections are JSON error
//! bodies.

use super::error::ApiError;
use crate::service::{Principal, ServiceError};
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts};
use axum::http::request::Parts;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

/// The authenticated caller.
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let who = parts.extensions.remove::<Principal>();
        Ok(Caller(who.ok_or(ServiceError::Unauthorized)?))
    }
}

/// The peer address of the connection the request came on, as the accept loop saw it
/// (`hetpilot_transport::serve`); `None` for a router served some other way.
pub struct Source(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Source {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>();
        Ok(Source(peer.map(|ConnectInfo(addr)| addr.ip())))
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
