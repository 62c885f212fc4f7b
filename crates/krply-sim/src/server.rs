//! The accept loop: HTTP/1.1 (hyper) over plain TCP or TLS on 127.0.0.1,
//! one task per connection, everything ending on shutdown.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::handler;
use super::shared::Shared;

/// Serves until `shutdown` flips (or its sender is dropped).
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    // Runs until shutdown.
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let shared = shared.clone();
                    let tls = tls.clone();
                    let shutdown = shutdown.clone();
                    let address = address.clone();
                    tokio::spawn(async move {
                        match tls {
                            Some(acceptor) => {
                                if let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await {
                                    // rustls verified it against the CA during the handshake.
                                    let client_cert = stream
                                        .get_ref()
                                        .1
                                        .peer_certificates()
                                        .is_some_and(|c| !c.is_empty());
                                    connection(stream, shared, address, client_cert, shutdown).await;
                                }
                            }
                            None => connection(stream, shared, address, false, shutdown).await,
                        }
                    });
                }
                // Out of file descriptors and the like: back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
}

async fn connection<S>(
    stream: S,
    shared: Arc<Shared>,
    address: String,
    client_cert: bool,
    mut shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let shared = shared.clone();
        let address = address.clone();
        async move { Ok::<_, Infallible>(handler::handle(shared, address, client_cert, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = conn => {}
        _ = shutdown.changed() => {}
    }
}
