//! The HTTP client stack to the API server, built here rather than by
//! `kube::Client::try_from`, for one reason: TCP keepalive.
//!
//! A connection can die without closing (docs/consistency.md, "A silent
//! watch"): a NAT or a load balancer that forgot it, a peer gone from the
//! network. The recorder bounds a watch's silence itself, but a socket
//! without keepalive never learns that its peer vanished, and kube 5 builds
//! its `HttpConnector` itself, keepalive off, with no hook to change it. So
//! this is kube's own stack (`ClientBuilder::try_from`), from its public API,
//! on a connector with keepalive on: proxies as kube handles them, its TLS,
//! its connect, read and write timeouts, its base URI, authentication (with
//! the refresh of exec credential plugins) and extra headers (our
//! User-Agent) layers. Left out: kube's retry layer (`connect` turns it off
//! anyway: retries are the recorder's), its tracing layer, and the expiry
//! date of an exec plugin's client certificate (`Client::valid_until`, which
//! kube computes privately and nothing here reads).

use http::{HeaderValue, Uri};
use hyper::rt::{Read, Write};
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connection, HttpConnector};
use hyper_util::rt::TokioExecutor;
use kube::client::{Body, ConfigExt};
use std::time::Duration;
use tower::{BoxError, Service, ServiceBuilder};

/// How long a connection stays idle before the kernel probes its peer.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// Between two unanswered probes.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes before the connection is dropped: a peer that vanished
/// is noticed about a minute (30 s + 3 × 10 s) after its last word.
const KEEPALIVE_RETRIES: u32 = 3;

/// A client for `config`, its sockets with TCP keepalive on.
pub fn client(config: &kube::Config) -> Result<kube::Client, kube::Error> {
    let mut connector = HttpConnector::new();
    connector.enforce_http(false);
    connector.set_keepalive(Some(KEEPALIVE_IDLE));
    connector.set_keepalive_interval(Some(KEEPALIVE_INTERVAL));
    connector.set_keepalive_retries(Some(KEEPALIVE_RETRIES));
    // Per address tried, so a name with a dead address moves on to the next;
    // the `TimeoutConnector` in `over` bounds the whole connect (proxy
    // tunnel and TLS included) as kube's does.
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_nodelay(true);
    let Some(proxy) = config.proxy_url.as_ref() else {
        return over(connector, config);
    };
    match proxy.scheme_str() {
        // kube-client's own answer without its `socks5` feature.
        Some("socks5") => Err(kube::Error::ProxyProtocolDisabled {
            proxy_url: Box::new(proxy.clone()),
            protocol_feature: "kube/socks5",
        }),
        Some("http") => over(tunnel(proxy, connector), config),
        // TLS to the proxy, checked against the cluster's certificate
        // authorities, as kube-client does.
        Some("https") => {
            let to_proxy = config.rustls_https_connector_with_connector(connector)?;
            over(tunnel(proxy, to_proxy), config)
        }
        _ => Err(kube::Error::ProxyProtocolUnsupported {
            proxy_url: Box::new(proxy.clone()),
        }),
    }
}

/// An HTTP CONNECT tunnel through `proxy`, with Basic credentials when its
/// URL has any.
fn tunnel<C>(proxy: &Uri, connector: C) -> Tunnel<C> {
    let tunnel = Tunnel::new(proxy.clone(), connector);
    match proxy_authorization(proxy) {
        Some(auth) => tunnel.with_auth(auth),
        None => tunnel,
    }
}

/// The `Proxy-Authorization` value for a proxy URL's userinfo (all before
/// the authority's last `@`, where `http::Uri` finds the host), if it has
/// one. `http::Uri` leaves percent-escapes alone, so a password with `@` or
/// `:` (escaped in the URL) is decoded first, as kube-client does.
fn proxy_authorization(proxy: &Uri) -> Option<HeaderValue> {
    use base64::Engine;
    let (userinfo, _) = proxy.authority()?.as_str().rsplit_once('@')?;
    let plain: Vec<u8> = percent_encoding::percent_decode_str(userinfo).collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(plain);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The rest of kube's stack over `connector` (the TCP connector, or a tunnel
/// through a proxy): TLS, timeouts, the pool, then the layers in kube's order.
fn over<C>(connector: C, config: &kube::Config) -> Result<kube::Client, kube::Error>
where
    C: Service<Uri> + Clone + Send + Sync + 'static,
    C::Response: Connection + Read + Write + Send + Unpin + 'static,
    C::Future: Send + 'static,
    C::Error: std::error::Error + Send + Sync + 'static,
{
    let auth_layer = config.auth_layer()?;
    let connector = config.rustls_https_connector_with_connector(connector)?;
    let mut connector = TimeoutConnector::new(connector);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Builder::new(TokioExecutor::new()).build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(auth_layer)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(http);
    // `Client::new` boxes the response body as kube's own builder does.
    Ok(kube::Client::new(service, config.default_namespace.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(plain: &str) -> Option<HeaderValue> {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(plain);
        Some(HeaderValue::from_str(&format!("Basic {encoded}")).unwrap())
    }

    fn auth(proxy: &str) -> Option<HeaderValue> {
        proxy_authorization(&proxy.parse().unwrap())
    }

    #[test]
    fn proxy_credentials_are_percent_decoded_then_basic() {
        assert_eq!(auth("http://user:pass@proxy:3128"), basic("user:pass"));
        assert_eq!(
            auth("http://user:pa%40ss%3Aword@proxy:3128"),
            basic("user:pa@ss:word")
        );
        // Not an escape: passed through as written.
        assert_eq!(auth("http://user:pass%+A@proxy"), basic("user:pass%+A"));
        // The host follows the last `@`, for `http::Uri` as for Go: an
        // unescaped `@` before it belongs to the password.
        assert_eq!(auth("http://user:p@ss@proxy"), basic("user:p@ss"));
        assert_eq!(auth("http://proxy:3128"), None);
        assert!(auth("https://u:p@proxy").is_some_and(|v| v.is_sensitive()));
    }

    #[tokio::test]
    async fn proxy_schemes_are_answered_as_kube_client_answers_them() {
        let mut config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        config.proxy_url = Some("socks5://127.0.0.1:1080".parse().unwrap());
        assert!(matches!(
            client(&config),
            Err(kube::Error::ProxyProtocolDisabled { .. })
        ));
        config.proxy_url = Some("ftp://127.0.0.1:21".parse().unwrap());
        assert!(matches!(
            client(&config),
            Err(kube::Error::ProxyProtocolUnsupported { .. })
        ));
        for proxy in [
            None,
            Some("http://u:p@127.0.0.1:3128"),
            Some("https://127.0.0.1:3128"),
        ] {
            config.proxy_url = proxy.map(|p| p.parse().unwrap());
            assert!(client(&config).is_ok(), "{proxy:?}");
        }
    }
}
