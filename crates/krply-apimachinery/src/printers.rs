//! What `kubectl get` prints for an object of a built-in kind: the columns of
//! kube-apiserver's printers (`NAME`, `READY`, `UP-TO-DATE`, `AVAILABLE` and
//! `AGE` for a Deployment; `TYPE`, `CLUSTER-IP`, `PORT(S)` for a Service; `DATA`
//! for a ConfigMap; ...), and a custom resource's `additionalPrinterColumns`
//! read by their JSONPath. The simulator serves them as server-side tables;
//! krply's `get TYPE --at T` prints them for a past state.

use serde_json::{Value, json};

use crate::duration::format_age;

pub const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub const AGE_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// kubectl's AGE at `now` of the RFC 3339 time `t`, from the whole seconds
/// of each (creation timestamps have no fraction); `None` when `t` is not one.
pub fn age_since(t: &str, now: jiff::Timestamp) -> Option<String> {
    let t = t.parse::<jiff::Timestamp>().ok()?;
    Some(format_age((now.as_second() - t.as_second()) * 1_000))
}

/// An object's AGE at `now`, from its `creationTimestamp`.
pub fn age(obj: &Value, now: jiff::Timestamp) -> String {
    obj.pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| age_since(t, now))
        .unwrap_or_else(|| "<unknown>".into())
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
pub fn json_path(obj: &Value, path: &str) -> Value {
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
pub struct Column {
    pub name: &'static str,
    pub type_: &'static str,
    pub description: &'static str,
    /// 0 in the default table, 1 only in `-o wide`.
    pub priority: i64,
    pub cell: Cell,
}

impl Column {
    /// This column's cell for `obj`, its AGE counted at `now`.
    pub fn cell_of(&self, obj: &Value, now: jiff::Timestamp) -> Value {
        match self.cell {
            Cell::Name => json!(s(obj, "/metadata/name")),
            Cell::Age => json!(age(obj, now)),
            Cell::Of(f) => f(obj),
        }
    }
}

/// How a column's cell is found in an object.
#[derive(Clone, Copy)]
pub enum Cell {
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

/// The table of a built-in kind (its API group and kind); kinds without
/// printers get name and age.
pub fn builtin_columns(group: &str, kind: &str) -> &'static [Column] {
    match (group, kind) {
        ("apps", "Deployment") => DEPLOYMENT,
        ("apps", "StatefulSet") => STATEFUL_SET,
        ("apps", "ReplicaSet") => REPLICA_SET,
        ("", "ConfigMap") => CONFIG_MAP,
        ("", "Secret") => SECRET,
        ("", "Service") => SERVICE,
        ("", "Namespace") => NAMESPACE,
        ("", "Pod") => POD,
        ("", "ServiceAccount") => SERVICE_ACCOUNT,
        _ => NAME_AGE,
    }
}

/// Name and age alone.
pub const NAME_AGE: &[Column] = &[NAME, AGE];
