//! Content negotiation: which representation an `Accept` header asks for
//! (plain JSON, a server-side Table, or PartialObjectMetadata) and which
//! request body types are understood.

/// A response representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Json,
    Table,
    PartialMetadata,
}

/// Media types the simulator serves, for 406 messages.
pub(crate) const SERVED: &[&str] = &[
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
];

/// Picks the first acceptable media range of `Accept`, in the client's order.
/// `None` when nothing acceptable is listed (406).
pub(crate) fn output(accept: Option<&str>) -> Option<Output> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(Output::Json);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut as_ = None;
        let mut g = None;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                match k.trim() {
                    "as" => as_ = Some(v.trim().to_string()),
                    "g" => g = Some(v.trim().to_string()),
                    _ => {}
                }
            }
        }
        if !matches!(media.as_str(), "application/json" | "*/*" | "application/*") {
            continue;
        }
        match (as_.as_deref(), g.as_deref()) {
            (None, _) => return Some(Output::Json),
            (Some("Table"), Some("meta.k8s.io") | None) => return Some(Output::Table),
            (
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io") | None,
            ) => {
                return Some(Output::PartialMetadata);
            }
            _ => continue,
        }
    }
    None
}

/// The body type of a create or update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyType {
    Json,
    Unsupported,
}

pub(crate) fn body_type(content_type: Option<&str>) -> BodyType {
    match media(content_type).as_deref() {
        None | Some("application/json") | Some("") => BodyType::Json,
        _ => BodyType::Unsupported,
    }
}

/// The patch type of a PATCH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
    Unsupported,
}

pub(crate) fn patch_type(content_type: Option<&str>) -> PatchType {
    match media(content_type).as_deref() {
        Some("application/merge-patch+json") => PatchType::Merge,
        Some("application/json-patch+json") => PatchType::Json,
        Some("application/strategic-merge-patch+json") => PatchType::Strategic,
        Some("application/apply-patch+yaml") | Some("application/apply-patch+cbor") => {
            PatchType::Apply
        }
        _ => PatchType::Unsupported,
    }
}

fn media(content_type: Option<&str>) -> Option<String> {
    content_type.map(|c| {
        c.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_of_real_clients() {
        assert_eq!(output(None), Some(Output::Json));
        assert_eq!(
            output(Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
            )),
            Some(Output::Table)
        );
        assert_eq!(
            output(Some("application/vnd.kubernetes.protobuf,application/json")),
            Some(Output::Json)
        );
        assert_eq!(
            output(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Some(Output::Json)
        );
        assert_eq!(
            output(Some(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
            )),
            Some(Output::PartialMetadata)
        );
        assert_eq!(output(Some("*/*")), Some(Output::Json));
        assert_eq!(output(Some("application/vnd.kubernetes.protobuf")), None);
    }

    #[test]
    fn body_and_patch_types() {
        assert_eq!(
            body_type(Some("application/json; charset=utf-8")),
            BodyType::Json
        );
        assert_eq!(
            body_type(Some("application/vnd.kubernetes.protobuf")),
            BodyType::Unsupported
        );
        assert_eq!(
            patch_type(Some("application/merge-patch+json")),
            PatchType::Merge
        );
        assert_eq!(
            patch_type(Some("application/apply-patch+yaml")),
            PatchType::Apply
        );
        assert_eq!(patch_type(Some("application/json")), PatchType::Unsupported);
    }
}
