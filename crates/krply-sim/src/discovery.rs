//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`,
//! `/apis/{group}`, `/apis/{group}/{version}` in their plain JSON forms (kubectl
//! asks for aggregated discovery first and falls back to these).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::catalog::{Catalog, ResourceDef};
use super::error::{self, ApiStatus};

/// The server version: kubectl's dispatcher picks a client matching it.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0-krply-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub(crate) fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

pub(crate) fn groups(catalog: &Catalog) -> Value {
    let groups: Vec<Value> = catalog
        .groups()
        .iter()
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub(crate) fn group(catalog: &Catalog, name: &str) -> Result<Value, ApiStatus> {
    let groups = catalog.groups();
    let (g, vs) = groups
        .iter()
        .find(|(g, _)| g == name)
        .ok_or_else(error::path_not_found)?;
    let mut doc = group_doc(g, vs);
    if let Some(m) = doc.as_object_mut() {
        m.insert("kind".into(), json!("APIGroup"));
        m.insert("apiVersion".into(), json!("v1"));
    }
    Ok(doc)
}

/// A short, stable hash of a resource's storage identity (clients only compare it).
fn storage_version_hash(def: &ResourceDef, version: &str) -> String {
    let d = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{}/{}/{}", def.group, version, def.kind).as_bytes(),
    );
    URL_SAFE_NO_PAD.encode(&d.as_ref()[..8])
}

fn resource_doc(def: &ResourceDef, version: &str) -> Vec<Value> {
    let mut main = json!({
        "name": def.plural,
        "singularName": def.singular,
        "namespaced": def.namespaced,
        "kind": def.kind,
        "verbs": def.verbs,
        "storageVersionHash": storage_version_hash(def, version),
    });
    if let Some(m) = main.as_object_mut() {
        if !def.short_names.is_empty() {
            m.insert("shortNames".into(), json!(def.short_names));
        }
        if !def.categories.is_empty() {
            m.insert("categories".into(), json!(def.categories));
        }
    }
    let mut out = vec![main];
    for sub in def.subresources() {
        let mut s = json!({
            "name": format!("{}/{sub}", def.plural),
            "singularName": "",
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": ["get", "patch", "update"],
        });
        if sub == "scale"
            && let Some(m) = s.as_object_mut()
        {
            m.insert("group".into(), json!("autoscaling"));
            m.insert("version".into(), json!("v1"));
            m.insert("kind".into(), json!("Scale"));
        }
        out.push(s);
    }
    out
}

/// The APIResourceList of `group/version`.
pub(crate) fn resources(catalog: &Catalog, group: &str, version: &str) -> Result<Value, ApiStatus> {
    let mut defs: Vec<&ResourceDef> = catalog
        .all()
        .iter()
        .filter(|d| d.group == group && d.serves(version))
        .map(|d| &**d)
        .collect();
    if defs.is_empty() {
        return Err(error::path_not_found());
    }
    defs.sort_by(|a, b| a.plural.cmp(&b.plural));
    let resources: Vec<Value> = defs.iter().flat_map(|d| resource_doc(d, version)).collect();
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let c = Catalog::builtin();
        let apps = resources(&c, "apps", "v1").unwrap();
        let names: Vec<&str> = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"deployments/scale"));
        assert!(names.contains(&"deployments/status"));
        let scale = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["group"], "autoscaling");
        let deploy = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments")
            .unwrap();
        assert_eq!(deploy["shortNames"], json!(["deploy"]));
        assert_eq!(deploy["categories"], json!(["all"]));
        let core = resources(&c, "", "v1").unwrap();
        assert_eq!(core["groupVersion"], "v1");
        assert!(resources(&c, "apps", "v2").is_err());
        let gl = groups(&c);
        assert_eq!(
            gl["groups"][0]["preferredVersion"]["groupVersion"],
            "apps/v1"
        );
        assert_eq!(group(&c, "batch").unwrap()["kind"], "APIGroup");
        assert!(group(&c, "nope").is_err());
        assert_eq!(version()["minor"], "33");
    }
}
