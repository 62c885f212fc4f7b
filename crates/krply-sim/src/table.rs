//! Server-side tables (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`),
//! what `kubectl get` prints: column definitions and one row per object, with
//! the columns of the real server's printers for the common types and the
//! `additionalPrinterColumns` of CRDs.

use serde_json::{Value, json};

use super::catalog::ResourceDef;
use super::ids;
use krply_apimachinery::duration::format_age;

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

const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

fn col(name: &str, type_: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

/// kubectl's AGE of `t` at `now`, from the whole seconds of each (creation
/// timestamps have no fraction).
fn age_since(t: jiff::Timestamp, now: jiff::Timestamp) -> String {
    format_age((now.as_second() - t.as_second()) * 1_000)
}

fn age(obj: &Value, now: jiff::Timestamp) -> String {
    match obj
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(ids::parse_rfc3339)
    {
        Some(t) => age_since(t, now),
        None => "<unknown>".into(),
    }
}

fn s<'a>(obj: &'a Value, ptr: &str) -> &'a str {
    obj.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

fn i(obj: &Value, ptr: &str) -> i64 {
    obj.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn or_none(v: String) -> String {
    if v.is_empty() { "<none>".into() } else { v }
}

fn selector_string(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return String::new();
    };
    let labels = sel.get("matchLabels").unwrap_or(sel);
    labels
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn containers(obj: &Value, ptr: &str, field: &str) -> String {
    obj.pointer(ptr)
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get(field).and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn service_ports(obj: &Value) -> String {
    let ports: Vec<String> = obj
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                    let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                    match p.get("nodePort").and_then(Value::as_i64) {
                        Some(np) => format!("{port}:{np}/{proto}"),
                        None => format!("{port}/{proto}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    or_none(ports.join(","))
}

fn external_ip(obj: &Value) -> String {
    let mut ips: Vec<String> = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    i.get("ip")
                        .or_else(|| i.get("hostname"))
                        .and_then(Value::as_str)
                })
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some(ext) = obj.pointer("/spec/externalIPs").and_then(Value::as_array) {
        ips.extend(ext.iter().filter_map(Value::as_str).map(str::to_string));
    }
    match s(obj, "/spec/type") {
        "ExternalName" => s(obj, "/spec/externalName").to_string(),
        "LoadBalancer" if ips.is_empty() => "<pending>".into(),
        _ => or_none(ips.join(",")),
    }
}

fn pod_ready(obj: &Value) -> (String, i64) {
    let total = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let statuses = obj
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts = statuses
        .iter()
        .map(|c| c.get("restartCount").and_then(Value::as_i64).unwrap_or(0))
        .sum();
    (format!("{ready}/{total}"), restarts)
}

fn pod_status(obj: &Value) -> String {
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return "Terminating".into();
    }
    let reason = s(obj, "/status/reason");
    if !reason.is_empty() {
        return reason.to_string();
    }
    let phase = s(obj, "/status/phase");
    if phase.is_empty() {
        "Pending".into()
    } else {
        phase.to_string()
    }
}

/// Evaluates a simple JSONPath (`.spec.a.b`, `.status.items[0].x`).
fn json_path(obj: &Value, path: &str) -> Value {
    let mut cur = obj;
    for part in path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
    {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        cur = match cur.get(key) {
            Some(v) => v,
            None => return Value::Null,
        };
        if let Some(i) = index {
            cur = match cur.get(i) {
                Some(v) => v,
                None => return Value::Null,
            };
        }
    }
    cur.clone()
}

/// One column of a built-in kind's table, as kube-apiserver's printers define it.
struct Column {
    name: &'static str,
    type_: &'static str,
    description: &'static str,
    /// 0 in the default table, 1 only in `-o wide`.
    priority: i64,
    cell: Cell,
}

/// How a column's cell is found in an object.
#[derive(Clone, Copy)]
enum Cell {
    Name,
    Age,
    Of(fn(&Value) -> Value),
}

const NAME: Column = Column {
    name: "Name",
    type_: "string",
    description: NAME_DESC,
    priority: 0,
    cell: Cell::Name,
};
const AGE: Column = Column {
    name: "Age",
    type_: "string",
    description: AGE_DESC,
    priority: 0,
    cell: Cell::Age,
};

const fn column(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
    priority: i64,
    cell: fn(&Value) -> Value,
) -> Column {
    Column {
        name,
        type_,
        description,
        priority,
        cell: Cell::Of(cell),
    }
}

const CONTAINERS_DESC: &str = "Names of each container in the template.";
const IMAGES_DESC: &str = "Images referenced by each container in the template.";

fn ready_of_desired(o: &Value) -> Value {
    json!(format!(
        "{}/{}",
        i(o, "/status/readyReplicas"),
        i(o, "/spec/replicas")
    ))
}

fn container_names(o: &Value) -> Value {
    json!(containers(o, "/spec/template/spec/containers", "name"))
}

fn container_images(o: &Value) -> Value {
    json!(containers(o, "/spec/template/spec/containers", "image"))
}

/// How many entries the maps at these paths hold together.
fn entries(o: &Value, paths: &[&str]) -> usize {
    paths
        .iter()
        .filter_map(|p| o.pointer(p).and_then(Value::as_object))
        .map(|m| m.len())
        .sum()
}

const DEPLOYMENT: &[Column] = &[
    NAME,
    column(
        "Ready",
        "string",
        "Number of the pod with ready state",
        0,
        ready_of_desired,
    ),
    column(
        "Up-to-date",
        "integer",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
        0,
        |o| json!(i(o, "/status/updatedReplicas")),
    ),
    column(
        "Available",
        "integer",
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
        0,
        |o| json!(i(o, "/status/availableReplicas")),
    ),
    AGE,
    column("Containers", "string", CONTAINERS_DESC, 1, container_names),
    column("Images", "string", IMAGES_DESC, 1, container_images),
    column(
        "Selector",
        "string",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
        1,
        |o| json!(selector_string(o.pointer("/spec/selector"))),
    ),
];

const STATEFUL_SET: &[Column] = &[
    NAME,
    column(
        "Ready",
        "string",
        "Number of the pod with ready state",
        0,
        ready_of_desired,
    ),
    AGE,
    column("Containers", "string", CONTAINERS_DESC, 1, container_names),
    column("Images", "string", IMAGES_DESC, 1, container_images),
];

const REPLICA_SET: &[Column] = &[
    NAME,
    column("Desired", "integer", "Number of desired pods.", 0, |o| {
        json!(i(o, "/spec/replicas"))
    }),
    column("Current", "integer", "Number of actual replicas.", 0, |o| {
        json!(i(o, "/status/replicas"))
    }),
    column("Ready", "integer", "Number of ready replicas.", 0, |o| {
        json!(i(o, "/status/readyReplicas"))
    }),
    AGE,
];

const CONFIG_MAP: &[Column] = &[
    NAME,
    column("Data", "integer", "Number of data items.", 0, |o| {
        json!(entries(o, &["/data", "/binaryData"]))
    }),
    AGE,
];

const SECRET: &[Column] = &[
    NAME,
    column("Type", "string", "The type of the secret.", 0, |o| {
        json!(s(o, "/type"))
    }),
    column("Data", "string", "The number of data items.", 0, |o| {
        json!(entries(o, &["/data", "/stringData"]))
    }),
    AGE,
];

const SERVICE: &[Column] = &[
    NAME,
    column("Type", "string", "The type of the service.", 0, |o| {
        json!(s(o, "/spec/type"))
    }),
    column(
        "Cluster-IP",
        "string",
        "The IP address of the service.",
        0,
        |o| json!(or_none(s(o, "/spec/clusterIP").to_string())),
    ),
    column(
        "External-IP",
        "string",
        "The external IP addresses of the service.",
        0,
        |o| json!(external_ip(o)),
    ),
    column(
        "Port(s)",
        "string",
        "The ports the service exposes.",
        0,
        |o| json!(service_ports(o)),
    ),
    AGE,
    column(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
        1,
        |o| json!(or_none(selector_string(o.pointer("/spec/selector")))),
    ),
];

const NAMESPACE: &[Column] = &[
    NAME,
    column("Status", "string", "The status of the namespace", 0, |o| {
        json!(s(o, "/status/phase"))
    }),
    AGE,
];

const POD: &[Column] = &[
    NAME,
    column(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
        0,
        |o| json!(pod_ready(o).0),
    ),
    column(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
        0,
        |o| json!(pod_status(o)),
    ),
    column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        0,
        |o| json!(pod_ready(o).1.to_string()),
    ),
    AGE,
    column(
        "IP",
        "string",
        "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        1,
        |o| json!(or_none(s(o, "/status/podIP").to_string())),
    ),
    column(
        "Node",
        "string",
        "Name of the Node the Pod is assigned to.",
        1,
        |o| json!(or_none(s(o, "/spec/nodeName").to_string())),
    ),
];

const SERVICE_ACCOUNT: &[Column] = &[
    NAME,
    column(
        "Secrets",
        "string",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
        0,
        |o| {
            json!(
                o.pointer("/secrets")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            )
        },
    ),
    AGE,
];

/// The table of a built-in kind; kinds without printers get name and age.
fn builtin_columns(def: &ResourceDef) -> &'static [Column] {
    match (def.group.as_str(), def.kind.as_str()) {
        ("apps", "Deployment") => DEPLOYMENT,
        ("apps", "StatefulSet") => STATEFUL_SET,
        ("apps", "ReplicaSet") => REPLICA_SET,
        ("", "ConfigMap") => CONFIG_MAP,
        ("", "Secret") => SECRET,
        ("", "Service") => SERVICE,
        ("", "Namespace") => NAMESPACE,
        ("", "Pod") => POD,
        ("", "ServiceAccount") => SERVICE_ACCOUNT,
        _ => &[NAME, AGE],
    }
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
        return builtin_columns(def)
            .iter()
            .map(|c| {
                let format = if matches!(c.cell, Cell::Name) {
                    "name"
                } else {
                    ""
                };
                let cell = match c.cell {
                    Cell::Name => json!(s(o, "/metadata/name")),
                    Cell::Age => json!(age(o, now)),
                    Cell::Of(f) => f(o),
                };
                (
                    col(c.name, c.type_, format, c.description, c.priority),
                    cell,
                )
            })
            .unzip();
    }
    let name = json!(s(o, "/metadata/name"));
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
            ("date", Value::String(t)) => json!(
                ids::parse_rfc3339(&t)
                    .map(|ts| age_since(ts, now))
                    .unwrap_or(t)
            ),
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
            let t = now - jiff::SignedDuration::from_secs(secs);
            assert_eq!(age_since(t, now), want, "{secs}s");
        }
        // From the whole seconds of each: 0.2 s across a second boundary is 1s.
        let t = jiff::Timestamp::new(1_795_946_400, 900_000_000).unwrap();
        let now = jiff::Timestamp::new(1_795_946_401, 100_000_000).unwrap();
        assert_eq!(age_since(t, now), "1s");
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
        let created =
            ids::format_rfc3339(jiff::Timestamp::now() - jiff::SignedDuration::from_secs(300));
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
