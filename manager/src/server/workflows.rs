//! `POST /v1/workflows`: a WfCommons instance, Pegasus DAX or application file with
//! `[[task]]` tables sent as the body, read by the manager as `hetpilot submit
//! --wfcommons/--dax/FILE` reads the file, and submitted as the
//! caller; `POST /v1/workflows/inputs`: the external inputs such a workflow reads and the
//! names to store them under first (see `service::workflow_submit`). The body is the
//! document as it is (any content type), up to the WfCommons bound (8 × the submit
//! limit); a DAX and an application file are held to their own, tighter one.

use super::error::ApiError;
use super::extract::{Caller, Json, Query};
use crate::service::{Manager, WorkflowInputs, WorkflowRequest};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use hetpilot_protocol::protocol::{ErrorBody, SubmitResponse};
use std::sync::Arc;

/// The document, or why it could not be read (413 past the route's limit).
fn document(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|r| ApiError::with_status(r.status(), r.body_text()))
}

#[utoipa::path(post, path = "/v1/workflows", tag = "applications", params(WorkflowRequest),
    request_body(content = String, description = "The WfCommons JSON, DAX XML or TOML application file with [[task]] tables", content_type = "application/octet-stream"),
    responses((status = 200, description = "Read, stored and queued", body = SubmitResponse), (status = "4XX", description = "Refused: the error says why (the field, or the line and column of the document)", body = ErrorBody)))]
pub async fn submit(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(request): Query<WorkflowRequest>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<SubmitResponse>, ApiError> {
    let document = document(body)?;
    Ok(Json(m.submit_workflow(&who, request, document).await?))
}

#[utoipa::path(post, path = "/v1/workflows/inputs", tag = "applications", params(WorkflowRequest),
    request_body(content = String, description = "The WfCommons JSON, DAX XML or TOML application file with [[task]] tables", content_type = "application/octet-stream"),
    responses((status = 200, description = "The files the workflow reads and no task writes, and their names among the caller's files", body = WorkflowInputs), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn inputs(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(request): Query<WorkflowRequest>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<WorkflowInputs>, ApiError> {
    let document = document(body)?;
    Ok(Json(m.workflow_inputs(&who, request, document).await?))
}
