//! Server-side tables (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`),
//! what `kubectl get` prints: column definitions and one row per object, with
//! the columns of the real server's printers for the common types and the
//! `additionalPrinterColumns` of CRDs.

use serde_json::{Value, json};

use super::catalog::ResourceDef;
use krply_apimachinery::printers::{
    AGE_DESC, Cell, NAME_DESC, age, age_since, builtin_columns, json_path,
};

/// `includeObject`: what each row carries besides its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub(crate) fn parse(s: Option<&str>) -> Result<IncludeObject, String> {
        match s {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"None\", \"Metadata\", \"Object\""
            )),
        }
    }
}

fn col(name: &str, type_: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

/// The column definitions and the cells of one object.
fn columns_and_cells(
    def: &ResourceDef,
    obj: Option<&Value>,
    now: jiff::Timestamp,
) -> (Vec<Value>, Vec<Value>) {
    let empty = Value::Null;
    let o = obj.unwrap_or(&empty);
    if def.builtin {
        return builtin_columns(&def.group, &def.kind)
            .iter()
            .map(|c| {
                let format = if matches!(c.cell, Cell::Name) {
                    "name"
                } else {
                    ""
                };
                let cell = c.cell_of(o, now);
                (
                    col(c.name, c.type_, format, c.description, c.priority),
                    cell,
                )
            })
            .unzip();
    }
    let name = json!(
        o.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    );
    let name_col = col("Name", "string", "name", NAME_DESC, 0);
    if def.printer_columns.is_empty() {
        let age_col = col("Age", "string", "", AGE_DESC, 0);
        return (vec![name_col, age_col], vec![name, json!(age(o, now))]);
    }
    // A custom resource's additionalPrinterColumns, each read by its JSONPath.
    let mut cols = vec![name_col];
    let mut cells = vec![name];
    for c in &def.printer_columns {
        cols.push(col(
            &c.name,
            &c.type_,
            &c.format,
            &c.description,
            c.priority,
        ));
        let v = json_path(o, &c.json_path);
        cells.push(match (c.type_.as_str(), v) {
            ("date", Value::String(t)) => json!(age_since(&t, now).unwrap_or(t)),
            (_, v) => v,
        });
    }
    (cols, cells)
}

/// The `object` of a row.
fn row_object(obj: &Value, include: IncludeObject) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => Some(obj.clone()),
        IncludeObject::Metadata => Some(partial_metadata(obj)),
    }
}

/// `meta.k8s.io/v1 PartialObjectMetadata` of an object.
pub(crate) fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A Table of `objects`, with list metadata.
pub(crate) fn table(
    def: &ResourceDef,
    objects: &[Value],
    include: IncludeObject,
    list_meta: Value,
) -> Value {
    let now = jiff::Timestamp::now();
    let (columns, _) = columns_and_cells(def, None, now);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let (_, cells) = columns_and_cells(def, Some(o), now);
            let mut row = json!({"cells": cells});
            if let (Some(obj), Some(m)) = (row_object(o, include), row.as_object_mut()) {
                m.insert("object".into(), obj);
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn human_durations_match_kubectl() {
        for (secs, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 600, "3h10m"),
            (10 * 3600, "10h"),
            (50 * 3600, "2d2h"),
            (72 * 3600, "3d"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400, "3y"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (9 * 365 * 86400, "9y"),
        ] {
            let now = jiff::Timestamp::from_second(1_795_946_400).unwrap();
            let t = (now - jiff::SignedDuration::from_secs(secs)).to_string();
            assert_eq!(age_since(&t, now).as_deref(), Some(want), "{secs}s");
        }
        // From the whole seconds of each: 0.2 s across a second boundary is 1s.
        let t = jiff::Timestamp::new(1_795_946_400, 900_000_000)
            .unwrap()
            .to_string();
        let now = jiff::Timestamp::new(1_795_946_401, 100_000_000).unwrap();
        assert_eq!(age_since(&t, now).as_deref(), Some("1s"));
    }

    fn catalog_def(group: &str, plural: &str) -> ResourceDef {
        Catalog::builtin()
            .by_resource(group, plural)
            .map(|d| (**d).clone())
            .unwrap()
    }

    #[test]
    fn deployment_rows() {
        let d = catalog_def("apps", "deployments");
        let created = crate::ids::format_rfc3339(
            jiff::Timestamp::now() - jiff::SignedDuration::from_secs(300),
        );
        let obj = json!({
            "metadata": {"name": "frontend", "creationTimestamp": created},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "frontend"}},
                     "template": {"spec": {"containers": [{"name": "server", "image": "fe:1"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
        });
        let t = table(
            &d,
            std::slice::from_ref(&obj),
            IncludeObject::Metadata,
            json!({"resourceVersion": "7"}),
        );
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "frontend",
                "2/3",
                3,
                2,
                "5m",
                "server",
                "fe:1",
                "app=frontend"
            ])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
        let t = table(&d, &[obj], IncludeObject::None, json!({}));
        assert!(t["rows"][0].get("object").is_none());
    }

    #[test]
    fn service_configmap_namespace_pod_rows() {
        let now = jiff::Timestamp::now();
        let svc = catalog_def("", "services");
        let (_, cells) = columns_and_cells(
            &svc,
            Some(
                &json!({"metadata": {"name": "fe"}, "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.11", "ports": [{"port": 80, "nodePort": 30001, "protocol": "TCP"}], "selector": {"app": "fe"}}}),
            ),
            now,
        );
        assert_eq!(
            &cells[1..5],
            &[
                json!("LoadBalancer"),
                json!("10.96.0.11"),
                json!("<pending>"),
                json!("80:30001/TCP")
            ]
        );
        let cm = catalog_def("", "configmaps");
        let (cols, cells) = columns_and_cells(
            &cm,
            Some(&json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}})),
            now,
        );
        assert_eq!(cols[1]["name"], "Data");
        assert_eq!(cells[1], 2);
        let ns = catalog_def("", "namespaces");
        let (_, cells) = columns_and_cells(
            &ns,
            Some(&json!({"metadata": {"name": "shop"}, "status": {"phase": "Active"}})),
            now,
        );
        assert_eq!(cells[1], "Active");
        let pod = catalog_def("", "pods");
        let (_, cells) = columns_and_cells(
            &pod,
            Some(
                &json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1}]}}),
            ),
            now,
        );
        assert_eq!(&cells[1..4], &[json!("1/2"), json!("Running"), json!("3")]);
    }

    #[test]
    fn crd_printer_columns() {
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}]}});
        let d = crate::catalog::def_from_crd(&crd).unwrap();
        let (cols, cells) = columns_and_cells(
            &d,
            Some(&json!({"metadata": {"name": "w"}, "spec": {"size": 3}})),
            jiff::Timestamp::now(),
        );
        assert_eq!(cols.len(), 2);
        assert_eq!(cells, vec![json!("w"), json!(3)]);
        assert_eq!(
            json_path(&json!({"a": {"b": [{"c": 1}]}}), ".a.b[0].c"),
            json!(1)
        );
    }
}
