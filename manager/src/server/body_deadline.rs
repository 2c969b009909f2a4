//! A deadline on a whole request body (`limits.body_deadline_secs`). The body timeout
//! bounds each pause within a body, so a caller trickling a byte now and then could hold a
//! request (and a large-body slot) for ever; this bounds the whole. The clock starts when
//! the handler first reads the body (not while the request waits for a slot), and a body
//! still unfinished at the deadline ends the request with 408 and a message naming the
//! limit; the connection is closed, as the rest of its body was never read.

use super::error::ApiError;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::CONNECTION;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hetpilot_protocol::error_code::ErrorCode;
use http_body::{Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// What a body that missed its deadline yields to whoever reads it.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?} (limits.body_deadline_secs)")]
pub struct BodyDeadlinePassed(Duration);

/// A body that fails once `limit` has passed since it was first read.
struct DeadlineBody {
    inner: Body,
    limit: Duration,
    /// Set on the first read.
    deadline: Option<Pin<Box<Sleep>>>,
    /// Tells the middleware that this body, not its handler, ended the request.
    passed: Arc<AtomicBool>,
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let limit = this.limit;
        let deadline = this
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if deadline.as_mut().poll(cx).is_ready() {
            this.passed.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(axum::Error::new(BodyDeadlinePassed(limit)))));
        }
        Pin::new(&mut this.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Gives the request's body a deadline of `limit`; answers 408 if it passed.
pub async fn limit(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    let passed = Arc::new(AtomicBool::new(false));
    let watched = passed.clone();
    let req = req.map(|inner| {
        Body::new(DeadlineBody {
            inner,
            limit,
            deadline: None,
            passed: watched,
        })
    });
    let response = next.run(req).await;
    if !passed.load(Ordering::Relaxed) {
        return response;
    }
    tracing::info!(?limit, "request body too slow: answered 408");
    let mut late = ApiError::new(
        ErrorCode::RequestTimeout,
        format!(
            "the request body did not arrive within {} s (limits.body_deadline_secs): \
             send it faster, or send less",
            limit.as_secs_f64()
        ),
    )
    .into_response();
    late.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    late
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use http_body_util::BodyExt;
    use std::time::Instant;

    fn with_deadline(inner: Body, limit: Duration) -> (DeadlineBody, Arc<AtomicBool>) {
        let passed = Arc::new(AtomicBool::new(false));
        let body = DeadlineBody {
            inner,
            limit,
            deadline: None,
            passed: passed.clone(),
        };
        (body, passed)
    }

    #[tokio::test]
    async fn a_body_that_stalls_fails_at_its_deadline_counted_from_its_first_read() {
        let limit = Duration::from_millis(200);
        // One byte, then nothing more: a client that stopped sending.
        let stalls =
            futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b" "))])
                .chain(futures_util::stream::pending());
        let (mut body, passed) = with_deadline(Body::from_stream(stalls), limit);
        // Waiting longer than the deadline before the first read (for a slot, say) costs
        // the body nothing.
        tokio::time::sleep(limit * 2).await;
        let first_read = Instant::now();
        let first = body
            .frame()
            .await
            .expect("a frame")
            .expect("the first byte");
        assert_eq!(first.into_data().unwrap(), Bytes::from_static(b" "));
        let error = body.frame().await.expect("a frame").unwrap_err();
        assert!(first_read.elapsed() >= limit);
        assert!(passed.load(Ordering::Relaxed));
        assert!(
            error.to_string().contains("limits.body_deadline_secs"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_body_within_its_deadline_is_read_whole() {
        let (body, passed) = with_deadline(Body::from("{}"), Duration::from_secs(60));
        let read = body.collect().await.expect("the whole body");
        assert_eq!(read.to_bytes(), Bytes::from_static(b"{}"));
        assert!(!passed.load(Ordering::Relaxed));
    }
}
