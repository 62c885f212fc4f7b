//! Which proxy a connection goes through, as kubectl (Go's net/http) decides
//! it: the kubeconfig cluster's `proxy-url` if set; else `HTTPS_PROXY` for
//! `https://` servers and `HTTP_PROXY` for `http://` ones (upper or lower case),
//! unless `NO_PROXY` names the server. kube-rs alone applies `HTTPS_PROXY` to
//! every server and checks `NO_PROXY` against the wrong address.

use std::net::IpAddr;

fn env(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok())
        .filter(|v| !v.trim().is_empty())
}

/// The proxy for `server` from the environment, or `None` for a direct connection.
pub fn from_env(server: &http::Uri) -> Option<http::Uri> {
    let https = server.scheme_str() != Some("http");
    let proxy = if https {
        env(&["HTTPS_PROXY", "https_proxy"])
    } else {
        env(&["HTTP_PROXY", "http_proxy"])
    }?;
    let host = server.host()?.trim_matches(|c| c == '[' || c == ']');
    let port = server.port_u16().unwrap_or(if https { 443 } else { 80 });
    if let Some(no_proxy) = env(&["NO_PROXY", "no_proxy"])
        && bypasses(&no_proxy, host, port)
    {
        return None;
    }
    // Go accepts a proxy without a scheme and means http.
    let proxy = if proxy.contains("://") {
        proxy
    } else {
        format!("http://{proxy}")
    };
    proxy.parse().ok()
}

/// Whether a `NO_PROXY` list names `host:port`: `*`, an IP, a CIDR, a domain
/// (matching itself and its subdomains; a leading dot is optional), each
/// optionally with `:port`.
pub fn bypasses(no_proxy: &str, host: &str, port: u16) -> bool {
    let host = host.to_ascii_lowercase();
    let ip: Option<IpAddr> = host.parse().ok();
    no_proxy
        .split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let Some(ip) = ip
                && let Some((net, bits)) = entry.split_once('/')
                && let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>())
            {
                return in_cidr(ip, net, bits);
            }
            let (name, entry_port) = match entry.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') || h.ends_with(']') => (
                    h.trim_matches(|c| c == '[' || c == ']').to_string(),
                    p.parse::<u16>().ok(),
                ),
                _ => (
                    entry.trim_matches(|c| c == '[' || c == ']').to_string(),
                    None,
                ),
            };
            if entry_port.is_some_and(|p| p != port) {
                return false;
            }
            if let (Some(ip), Ok(e)) = (ip, name.parse::<IpAddr>()) {
                return ip == e;
            }
            let domain = name.trim_start_matches('.');
            host == domain || host.ends_with(&format!(".{domain}"))
        })
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_proxy_like_go() {
        assert!(bypasses("*", "api.example.com", 443));
        assert!(bypasses("127.0.0.1,localhost", "127.0.0.1", 6443));
        assert!(bypasses("example.com", "api.example.com", 443));
        assert!(bypasses(".example.com", "api.example.com", 443));
        assert!(bypasses("example.com", "example.com", 443));
        assert!(!bypasses("example.com", "notexample.com", 443));
        assert!(bypasses("10.0.0.0/8", "10.1.2.3", 443));
        assert!(!bypasses("10.0.0.0/8", "11.1.2.3", 443));
        assert!(bypasses("api.example.com:6443", "api.example.com", 6443));
        assert!(!bypasses("api.example.com:6443", "api.example.com", 443));
        assert!(bypasses("[::1]", "::1", 443));
        assert!(bypasses("fd00::/8", "fd00::1", 443));
        assert!(!bypasses("", "x", 1));
    }
}
