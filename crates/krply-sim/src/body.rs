//! The response body: a complete buffer, or the chunked stream of a watch
//! that can be aborted mid-stream (the client then sees the body end without
//! its terminating chunk).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::{mpsc, oneshot};

/// A response body.
#[derive(Debug)]
pub(crate) enum SimBody {
    Full(Option<Bytes>),
    Stream {
        rx: mpsc::Receiver<Bytes>,
        abort: Option<oneshot::Receiver<()>>,
    },
}

impl SimBody {
    pub(crate) fn full(b: impl Into<Bytes>) -> SimBody {
        SimBody::Full(Some(b.into()))
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            SimBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Stream { rx, abort } => {
                if let Some(a) = abort {
                    match Pin::new(a).poll(cx) {
                        Poll::Ready(Ok(())) => {
                            *abort = None;
                            return Poll::Ready(Some(Err(std::io::Error::new(
                                std::io::ErrorKind::ConnectionAborted,
                                "watch dropped by the simulator",
                            ))));
                        }
                        Poll::Ready(Err(_)) => *abort = None,
                        Poll::Pending => {}
                    }
                }
                rx.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, SimBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            SimBody::Stream { .. } => SizeHint::default(),
        }
    }
}
