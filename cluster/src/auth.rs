//! The shared secret of a cluster: every request a coordinator or worker sends carries it as
//! `authorization: Bearer <token>`, and a worker started with a token refuses requests
//! without it (`Unauthenticated`). Compared in constant time.

use std::sync::Arc;

use datafusion_distributed::grpc::BoxCloneSyncChannel;
use http::HeaderValue;
use tonic::{Request, Status};

/// The header value of `token`.
fn bearer(token: &str) -> Result<HeaderValue, String> {
    HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the cluster token must be printable ASCII".to_owned())
}

/// Checks a token is one a header can carry.
///
/// # Errors
/// A message when it is empty or not printable ASCII.
pub(crate) fn check_token(token: &str) -> Result<(), String> {
    if token.is_empty() {
        return Err("the cluster token is empty".into());
    }
    bearer(token).map(|_| ())
}

/// `channel` with every request carrying `token` (none: as it is).
pub(crate) fn with_token(
    channel: BoxCloneSyncChannel,
    token: Option<&Arc<str>>,
) -> BoxCloneSyncChannel {
    let Some(token) = token else {
        return channel;
    };
    let Ok(value) = bearer(token) else {
        return channel;
    };
    BoxCloneSyncChannel::new(
        tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<tonic::body::Body>| {
                req.headers_mut()
                    .insert(http::header::AUTHORIZATION, value.clone());
                req
            })
            .service(channel),
    )
}

/// A worker's check of every request: the token, when it has one.
#[derive(Clone)]
pub(crate) struct RequireToken {
    expected: Option<Arc<[u8]>>,
}

impl RequireToken {
    /// Requests must carry `token` (none: any request passes).
    pub(crate) fn new(token: Option<&str>) -> RequireToken {
        RequireToken {
            expected: token.map(|t| Arc::from(format!("Bearer {t}").into_bytes())),
        }
    }
}

impl tonic::service::Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if given.len() == expected.len() && constant_time_eq(given, expected) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "this worker requires the cluster's token (--token-file, or token_file in \
                 the cluster file)",
            ))
        }
    }
}

/// Whether `a` and `b` (of one length) are equal, in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
