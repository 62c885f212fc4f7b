//! Stable cluster IDs: one per API server URL.

/// The ID of the cluster served at `server`: the host's first label (or the whole
/// IP address) and 8 hex digits of a SHA-256 over the normalised URL, e.g.
/// `127.0.0.1-3f2a9b1c` or `api-5e0c11aa`. The same URL always gives the same ID,
/// whatever the context or user it was reached with.
pub fn cluster_id(server: &str) -> String {
    let normalized = normalize_server(server);
    let digest = ring::digest::digest(&ring::digest::SHA256, normalized.as_bytes());
    let hex: String = digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let host = host_of(&normalized);
    let label = if host.starts_with('[') {
        "ipv6".to_string()
    } else if host.parse::<std::net::IpAddr>().is_ok() {
        host.to_string()
    } else {
        host.split('.').next().unwrap_or("cluster").to_string()
    };
    let label: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let label = if label.is_empty() {
        "cluster".to_string()
    } else {
        label
    };
    format!("{label}-{hex}")
}

/// `https://API.Example.com:443/` and `https://api.example.com` are one server.
pub fn normalize_server(server: &str) -> String {
    let s = server.trim();
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None => ("https".to_string(), s),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let authority = authority.to_ascii_lowercase();
    let default_port = if scheme == "http" { ":80" } else { ":443" };
    let has_port = match authority.rfind(':') {
        Some(i) => !authority[i..].contains(']'),
        None => false,
    };
    let authority = if has_port {
        authority
    } else {
        format!("{authority}{default_port}")
    };
    format!("{scheme}://{authority}{path}")
}

fn host_of(normalized: &str) -> &str {
    let rest = normalized.split_once("://").map_or(normalized, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.starts_with('[') {
        return authority.split(']').next().map_or(authority, |h| h);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_server_same_id() {
        assert_eq!(
            cluster_id("https://API.example.com:443/"),
            cluster_id("https://api.example.com")
        );
        assert_ne!(
            cluster_id("https://api.example.com"),
            cluster_id("https://api.example.com:6443")
        );
    }

    #[test]
    fn readable_labels() {
        assert!(cluster_id("http://127.0.0.1:8080").starts_with("127.0.0.1-"));
        assert!(cluster_id("https://abc.gr7.eu-west-1.eks.amazonaws.com").starts_with("abc-"));
        assert!(cluster_id("https://[::1]:6443").starts_with("ipv6-"));
        assert_eq!(cluster_id("https://x").len(), "x-".len() + 8);
    }
}
