//! Request paths and query strings: percent-decoding, parameters, and the
//! route a path names (discovery documents, resource collections, objects,
//! subresources).

/// Decodes `%XX` escapes (and `+` as space in query strings). An escape that
/// is not two hex digits is an error, as Go's `url.ParseQuery` makes it (the
/// crate alone would keep it literally).
pub(crate) fn percent_decode(s: &str, plus_is_space: bool) -> Result<String, String> {
    for (i, _) in s.match_indices('%') {
        let hex = s.get(i + 1..i + 3).unwrap_or(&s[i + 1..]);
        if hex.len() != 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("invalid URL escape \"%{hex}\""));
        }
    }
    let spaced;
    let s = if plus_is_space && s.contains('+') {
        spaced = s.replace('+', " ");
        &spaced
    } else {
        s
    };
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| "invalid UTF-8 in URL".to_string())
}

/// Query parameters in order; the first occurrence of a key wins (as Go's `Get`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Query {
    params: Vec<(String, String)>,
}

impl Query {
    pub(crate) fn parse(raw: Option<&str>) -> Result<Query, String> {
        let mut params = Vec::new();
        for pair in raw.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            params.push((percent_decode(k, true)?, percent_decode(v, true)?));
        }
        Ok(Query { params })
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Go's `strconv.ParseBool` of a parameter; absent is false.
    pub(crate) fn flag(&self, key: &str) -> Result<bool, String> {
        match self.get(key) {
            None | Some("") => Ok(false),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
            Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
            Some(v) => Err(format!("invalid value for {key}: {v:?}")),
        }
    }
}

/// The address of a resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub plural: String,
    pub name: Option<String>,
    pub sub: Option<String>,
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    Version,
    Health,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`
    Resources(String, String),
    Resource(ResourcePath),
    NotFound,
}

/// Parses a request path.
pub(crate) fn route(path: &str) -> Result<Route, String> {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode(s, false))
        .collect::<Result<_, _>>()?;
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    Ok(match s.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz"] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group((*g).into()),
        ["api", v] => Route::Resources(String::new(), (*v).into()),
        ["apis", g, v] => Route::Resources((*g).into(), (*v).into()),
        ["api", v, rest @ ..] => resource("", v, rest),
        ["apis", g, v, rest @ ..] => resource(g, v, rest),
        _ => Route::NotFound,
    })
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let rp = |namespace: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| {
        Route::Resource(ResourcePath {
            group: group.into(),
            version: version.into(),
            namespace: namespace.map(str::to_string),
            plural: plural.into(),
            name: name.map(str::to_string),
            sub: sub.map(str::to_string),
        })
    };
    match rest {
        ["namespaces", ns, sub @ ("status" | "finalize")] => {
            rp(None, "namespaces", Some(ns), Some(sub))
        }
        ["namespaces", ns, plural] => rp(Some(ns), plural, None, None),
        ["namespaces", ns, plural, name] => rp(Some(ns), plural, Some(name), None),
        ["namespaces", ns, plural, name, sub] => rp(Some(ns), plural, Some(name), Some(sub)),
        [plural] => rp(None, plural, None, None),
        [plural, name] => rp(None, plural, Some(name), None),
        [plural, name, sub] => rp(None, plural, Some(name), Some(sub)),
        _ => Route::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(
            percent_decode("app%20in%20(a%2Cb)", true).unwrap(),
            "app in (a,b)"
        );
        assert_eq!(percent_decode("a+b", true).unwrap(), "a b");
        assert_eq!(percent_decode("a+b", false).unwrap(), "a+b");
        assert!(percent_decode("%zz", true).is_err());
        assert!(percent_decode("%4", true).is_err());
    }

    #[test]
    fn query_params() {
        let q = Query::parse(Some("watch=1&labelSelector=app%3Dweb&limit=5&watch=false")).unwrap();
        assert!(q.flag("watch").unwrap());
        assert_eq!(q.get("labelSelector"), Some("app=web"));
        assert_eq!(q.get("limit"), Some("5"));
        assert!(!q.flag("missing").unwrap());
        assert!(
            Query::parse(Some("watch=yes"))
                .unwrap()
                .flag("watch")
                .is_err()
        );
    }

    #[test]
    fn routes() {
        let r = |p: &str| route(p).unwrap();
        assert_eq!(r("/version"), Route::Version);
        assert_eq!(
            r("/apis/apps/v1"),
            Route::Resources("apps".into(), "v1".into())
        );
        let Route::Resource(p) = r("/api/v1/namespaces/shop/configmaps/x") else {
            panic!()
        };
        assert_eq!(
            (p.namespace.as_deref(), p.plural.as_str(), p.name.as_deref()),
            (Some("shop"), "configmaps", Some("x"))
        );
        let Route::Resource(p) = r("/api/v1/namespaces/shop") else {
            panic!()
        };
        assert_eq!(
            (p.namespace, p.plural.as_str(), p.name.as_deref()),
            (None, "namespaces", Some("shop"))
        );
        let Route::Resource(p) = r("/api/v1/namespaces/shop/status") else {
            panic!()
        };
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.sub.as_deref()),
            ("namespaces", Some("shop"), Some("status"))
        );
        let Route::Resource(p) = r("/apis/apps/v1/namespaces/shop/deployments/fe/scale") else {
            panic!()
        };
        assert_eq!(p.sub.as_deref(), Some("scale"));
        let Route::Resource(p) = r("/apis/apps/v1/deployments") else {
            panic!()
        };
        assert!(p.namespace.is_none() && p.name.is_none());
        assert_eq!(r("/apis/apps/v1/namespaces/a/b/c/d/e"), Route::NotFound);
        assert_eq!(r("/openapi/v2"), Route::NotFound);
    }
}
