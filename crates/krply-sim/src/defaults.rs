//! What the server and its controllers fill in: API defaulting (Service
//! ports, pod templates, workload strategies), cluster IP and node port
//! allocation, and a simulated controller that keeps workload status
//! "rolled out" (the status a healthy cluster would converge to).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::catalog::ResourceDef;
use super::jsonx;
use super::keyed_lists;
use super::managed::FieldSet;

/// The Deployment controller's annotation.
const REVISION: &str = krply_apimachinery::annotations::REVISION;
/// kube-apiserver's count of a DaemonSet's pod templates.
const TEMPLATE_GENERATION: &str = krply_apimachinery::annotations::TEMPLATE_GENERATION;

const CLUSTER_IP_BASE: u32 = (10 << 24) | (96 << 16); // 10.96.0.0/12
const CLUSTER_IP_SIZE: u32 = 1 << 20;
const CLUSTER_IP_FIRST: u32 = 11; // .1 is the kubernetes Service, .10 the DNS Service
const NODE_PORT_MIN: u16 = 30000;
const NODE_PORT_MAX: u16 = 32767;

/// Cluster IPs (10.96.0.0/12) and node ports (30000-32767) in use.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allocator {
    cluster_ips: BTreeSet<u32>,
    next_ip: u32,
    node_ports: BTreeSet<u16>,
    next_port: u16,
    pod_ips: u32,
}

fn ip_to_string(ip: u32) -> String {
    format!(
        "{}.{}.{}.{}",
        ip >> 24,
        (ip >> 16) & 255,
        (ip >> 8) & 255,
        ip & 255
    )
}

fn parse_ip(s: &str) -> Option<u32> {
    let parts: Vec<u32> = s
        .split('.')
        .map(|p| p.parse::<u8>().map(u32::from))
        .collect::<Result<_, _>>()
        .ok()?;
    (parts.len() == 4).then(|| (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3])
}

impl Allocator {
    fn cluster_ip(&mut self) -> Option<u32> {
        // Bounded by the size of the range.
        for _ in 0..CLUSTER_IP_SIZE {
            let offset = CLUSTER_IP_FIRST + self.next_ip % (CLUSTER_IP_SIZE - CLUSTER_IP_FIRST - 1);
            self.next_ip = self.next_ip.wrapping_add(1);
            let ip = CLUSTER_IP_BASE + offset;
            if self.cluster_ips.insert(ip) {
                return Some(ip);
            }
        }
        None
    }

    fn reserve_ip(&mut self, s: &str) -> Result<(), String> {
        let ip = parse_ip(s)
            .ok_or_else(|| format!("Invalid value: \"{s}\": must be a valid IP address"))?;
        if ip & !(CLUSTER_IP_SIZE - 1) != CLUSTER_IP_BASE {
            return Err(format!(
                "Invalid value: []string{{\"{s}\"}}: failed to allocate IP {s}: the provided IP ({s}) is not in the valid range. The range of valid IPs is 10.96.0.0/12"
            ));
        }
        if !self.cluster_ips.insert(ip) {
            return Err(format!(
                "Invalid value: []string{{\"{s}\"}}: failed to allocate IP {s}: provided IP is already allocated"
            ));
        }
        Ok(())
    }

    fn node_port(&mut self) -> Option<u16> {
        let span = NODE_PORT_MAX - NODE_PORT_MIN + 1;
        for _ in 0..span {
            let port = NODE_PORT_MIN + self.next_port % span;
            self.next_port = self.next_port.wrapping_add(1);
            if self.node_ports.insert(port) {
                return Some(port);
            }
        }
        None
    }

    fn pod_ip(&mut self) -> String {
        self.pod_ips = self.pod_ips.wrapping_add(1);
        let n = self.pod_ips % (1 << 16);
        format!("10.244.{}.{}", n >> 8, (n & 255).max(1))
    }

    /// Gives back what a deleted object held.
    pub(crate) fn release(&mut self, def: &ResourceDef, obj: &Value) {
        if !is(def, "", "Service") {
            return;
        }
        for ip in service_ips(obj) {
            self.cluster_ips.remove(&ip);
        }
        for p in node_ports(obj) {
            self.node_ports.remove(&p);
        }
    }

    /// Gives back what an update stopped using.
    pub(crate) fn release_unused(&mut self, def: &ResourceDef, old: &Value, new: &Value) {
        if !is(def, "", "Service") {
            return;
        }
        let keep = node_ports(new);
        for p in node_ports(old).into_iter().filter(|p| !keep.contains(p)) {
            self.node_ports.remove(&p);
        }
    }
}

fn service_ips(obj: &Value) -> Vec<u32> {
    jsonx::get(obj, "/spec/clusterIPs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter_map(parse_ip)
                .collect()
        })
        .unwrap_or_default()
}

fn node_ports(obj: &Value) -> Vec<u16> {
    jsonx::get(obj, "/spec/ports")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
                .filter_map(|p| u16::try_from(p).ok())
                .collect()
        })
        .unwrap_or_default()
}

fn is(def: &ResourceDef, group: &str, kind: &str) -> bool {
    def.builtin && def.group == group && def.kind == kind
}

/// The map under `key`, created empty when missing; `None` when the client
/// put something other than an object there (then nothing is defaulted).
fn obj_mut<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    parent
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

fn default(m: &mut Map<String, Value>, key: &str, v: Value) {
    if !m.contains_key(key) {
        m.insert(key.to_string(), v);
    }
}

/// Applies API defaults and allocations. `old` is the stored object on
/// updates. Errors are `(field, message)` causes of a 422.
///
/// Long on purpose: a table of per-kind defaults, one short arm per kind.
pub(crate) fn apply(
    def: &ResourceDef,
    obj: &mut Value,
    old: Option<&Value>,
    alloc: &mut Allocator,
) -> Result<(), Vec<(String, String)>> {
    if !def.builtin {
        return Ok(());
    }
    let Some(root) = obj.as_object_mut() else {
        return Ok(());
    };
    match (def.group.as_str(), def.kind.as_str()) {
        ("", "Service") => service(root, old, alloc)?,
        ("", "Namespace") => {
            let name = root
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if let Some(labels) = obj_mut(root, "metadata").and_then(|m| obj_mut(m, "labels")) {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            if let Some(spec) = obj_mut(root, "spec") {
                default(spec, "finalizers", json!(["kubernetes"]));
            }
            if let Some(status) = obj_mut(root, "status") {
                default(status, "phase", json!("Active"));
            }
        }
        ("", "Secret") => default(root, "type", json!("Opaque")),
        ("", "Pod") => {
            if let Some(spec) = obj_mut(root, "spec") {
                pod_spec(spec);
            }
        }
        ("apps", "Deployment") => {
            let Some(spec) = obj_mut(root, "spec") else {
                return Ok(());
            };
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
            strategy(
                spec,
                "strategy",
                json!({"maxSurge": "25%", "maxUnavailable": "25%"}),
            );
            template(spec);
        }
        ("apps", "StatefulSet") => {
            let Some(spec) = obj_mut(root, "spec") else {
                return Ok(());
            };
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "podManagementPolicy", json!("OrderedReady"));
            strategy(
                spec,
                "updateStrategy",
                json!({"partition": 0, "maxUnavailable": 1}),
            );
            default(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
            template(spec);
        }
        ("apps", "DaemonSet") => {
            // The server counts pod templates in an annotation: 1 at create,
            // one more whenever the template changes.
            let new_template = root.get("spec").and_then(|s| s.get("template"));
            let generation = match old {
                None => Some(1),
                Some(o) if o.pointer("/spec/template") != new_template => o
                    .pointer(&format!(
                        "/metadata/annotations/{}",
                        TEMPLATE_GENERATION.replace('/', "~1")
                    ))
                    .and_then(Value::as_str)
                    .and_then(|g| g.parse::<u64>().ok())
                    .map(|g| g + 1),
                Some(_) => None,
            };
            if let Some(g) = generation
                && let Some(meta) = obj_mut(root, "metadata")
                && let Some(annotations) = meta
                    .entry("annotations")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            {
                annotations.insert(TEMPLATE_GENERATION.into(), json!(g.to_string()));
            }
            let Some(spec) = obj_mut(root, "spec") else {
                return Ok(());
            };
            default(spec, "revisionHistoryLimit", json!(10));
            strategy(
                spec,
                "updateStrategy",
                json!({"maxSurge": 0, "maxUnavailable": 1}),
            );
            template(spec);
        }
        ("apps", "ReplicaSet") => {
            let Some(spec) = obj_mut(root, "spec") else {
                return Ok(());
            };
            default(spec, "replicas", json!(1));
            template(spec);
        }
        _ => {}
    }
    Ok(())
}

/// A workload's update strategy: `RollingUpdate` unless it says otherwise,
/// and then each missing rolling-update field, even inside a strategy the
/// client sent (`kubectl create deployment` sends `strategy: {}`).
fn strategy(spec: &mut Map<String, Value>, key: &str, rolling: Value) {
    let Some(st) = spec
        .entry(key.to_string())
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return;
    };
    default(st, "type", json!("RollingUpdate"));
    if st.get("type").and_then(Value::as_str) != Some("RollingUpdate") {
        return;
    }
    if let (Some(ru), Some(fields)) = (
        st.entry("rollingUpdate")
            .or_insert_with(|| json!({}))
            .as_object_mut(),
        rolling.as_object(),
    ) {
        for (k, v) in fields {
            default(ru, k, v.clone());
        }
    }
}

fn template(spec: &mut Map<String, Value>) {
    if let Some(pod) = obj_mut(spec, "template").and_then(|t| obj_mut(t, "spec")) {
        pod_spec(pod);
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "securityContext", json!({}));
    // The deprecated field mirrors the current one.
    if let Some(name) = spec.get("serviceAccountName").cloned() {
        default(spec, "serviceAccount", name);
    }
    for list in ["initContainers", "containers"] {
        let Some(Value::Array(cs)) = spec.get_mut(list) else {
            continue;
        };
        for c in cs.iter_mut().filter_map(Value::as_object_mut) {
            let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
            let tag = image.rsplit('/').next().unwrap_or_default();
            let latest = !tag.contains(':') && !image.contains('@') || tag.ends_with(":latest");
            default(
                c,
                "imagePullPolicy",
                json!(if latest { "Always" } else { "IfNotPresent" }),
            );
            default(c, "terminationMessagePath", json!("/dev/termination-log"));
            default(c, "terminationMessagePolicy", json!("File"));
            default(c, "resources", json!({}));
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
                    default(p, "timeoutSeconds", json!(1));
                    default(p, "periodSeconds", json!(10));
                    default(p, "successThreshold", json!(1));
                    default(p, "failureThreshold", json!(3));
                    if let Some(get) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                        default(get, "scheme", json!("HTTP"));
                    }
                }
            }
            if let Some(Value::Array(ports)) = c.get_mut("ports") {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    default(p, "protocol", json!("TCP"));
                }
            }
        }
    }
}

/// A Service's defaults and allocations: type, session affinity, IP families and
/// policies, a cluster IP, node ports for NodePort and LoadBalancer, and the target
/// port of each port. Long on purpose: kube-apiserver's steps for a Service in its
/// order, each a few lines.
fn service(
    root: &mut Map<String, Value>,
    old: Option<&Value>,
    alloc: &mut Allocator,
) -> Result<(), Vec<(String, String)>> {
    let Some(spec) = obj_mut(root, "spec") else {
        return Ok(());
    };
    default(spec, "type", json!("ClusterIP"));
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if kind == "ExternalName" {
        return Ok(());
    }
    default(spec, "sessionAffinity", json!("None"));
    default(spec, "ipFamilies", json!(["IPv4"]));
    default(spec, "ipFamilyPolicy", json!("SingleStack"));
    default(spec, "internalTrafficPolicy", json!("Cluster"));
    let with_node_ports = kind == "NodePort" || kind == "LoadBalancer";
    if with_node_ports {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", json!(true));
        if let Some(status) = obj_mut(root, "status") {
            default(status, "loadBalancer", json!({}));
        }
    }
    let Some(spec) = obj_mut(root, "spec") else {
        return Ok(());
    };
    // Cluster IP: kept from the stored object, else the requested one, else allocated.
    let old_ip = old
        .and_then(|o| jsonx::get(o, "/spec/clusterIP"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let requested = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .map(str::to_string);
    let ip = match (&old_ip, &requested) {
        (Some(o), Some(r)) if o != r && !r.is_empty() => {
            return Err(vec![(
                "spec.clusterIPs[0]".into(),
                format!("Invalid value: []string{{\"{r}\"}}: may not change once set"),
            )]);
        }
        (Some(o), _) => o.clone(),
        (None, Some(r)) if r == "None" => r.clone(),
        (None, Some(r)) if !r.is_empty() => {
            alloc
                .reserve_ip(r)
                .map_err(|m| vec![("spec.clusterIPs".to_string(), m)])?;
            r.clone()
        }
        _ => match alloc.cluster_ip() {
            Some(ip) => ip_to_string(ip),
            None => {
                return Err(vec![(
                    "spec.clusterIPs".into(),
                    "Internal error: failed to allocate a serviceIP: range is full".into(),
                )]);
            }
        },
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    let old_ports: Vec<Value> = old
        .and_then(|o| jsonx::get(o, "/spec/ports"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                default(p, "targetPort", port);
            }
            if !with_node_ports {
                p.remove("nodePort");
                continue;
            }
            if p.contains_key("nodePort") {
                continue;
            }
            let same = old_ports.iter().find(|o| {
                o.get("port") == p.get("port")
                    && o.get("protocol").unwrap_or(&json!("TCP"))
                        == p.get("protocol").unwrap_or(&json!("TCP"))
            });
            let np = match same.and_then(|o| o.get("nodePort")).and_then(Value::as_u64) {
                Some(n) => n,
                None => match alloc.node_port() {
                    Some(n) => u64::from(n),
                    None => {
                        return Err(vec![(
                            "spec.ports.nodePort".into(),
                            "Internal error: failed to allocate a nodePort: range is full".into(),
                        )]);
                    }
                },
            };
            p.insert("nodePort".into(), json!(np));
        }
    }
    Ok(())
}

/// What the server set on a new object that its creator does not own
/// (managedFields paths): the status of a resource with a status
/// subresource, and a Service's allocations (cluster IPs, IP families,
/// node ports) the request did not ask for. Defaults proper (a Service's
/// `type`, a port's `protocol`) stay the creator's, as in a real cluster.
pub(crate) fn allocated(def: &ResourceDef, sent: &Value, stored: &Value) -> FieldSet {
    let mut out = FieldSet::default();
    if def.status && stored.get("status").is_some() {
        out.children.insert("f:status".into(), FieldSet::leaf());
    }
    if !is(def, "", "Service") {
        return out;
    }
    let mut spec = FieldSet::default();
    for f in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if jsonx::get(sent, &format!("/spec/{f}")).is_none()
            && jsonx::get(stored, &format!("/spec/{f}")).is_some()
        {
            spec.children.insert(format!("f:{f}"), FieldSet::leaf());
        }
    }
    let sent_ports = jsonx::get(sent, "/spec/ports").and_then(Value::as_array);
    let stored_ports = jsonx::get(stored, "/spec/ports").and_then(Value::as_array);
    let mut ports = FieldSet::default();
    for (i, p) in stored_ports.into_iter().flatten().enumerate() {
        let asked = sent_ports
            .and_then(|s| s.get(i))
            .is_some_and(|s| s.get("nodePort").is_some());
        if asked || p.get("nodePort").is_none() {
            continue;
        }
        if let Some(k) = keyed_lists::item_key(&["port", "protocol"], p) {
            let mut item = FieldSet::default();
            item.children.insert("f:nodePort".into(), FieldSet::leaf());
            ports.children.insert(format!("k:{k}"), item);
        }
    }
    if !ports.is_empty() {
        spec.children.insert("f:ports".into(), ports);
    }
    if !spec.is_empty() {
        out.children.insert("f:spec".into(), spec);
    }
    out
}

/// `k8s.io/apimachinery/pkg/util/rand.SafeEncodeString` of an FNV-1a hash:
/// how ReplicaSet and revision names get their suffix.
pub(crate) fn template_hash(v: Option<&Value>) -> String {
    let text = v.map(Value::to_string).unwrap_or_default();
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

fn int(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

/// Sets the status a converged controller would report. Returns the field
/// manager of that controller when the status changed.
/// Whether a simulated controller writes objects of `def` (see
/// [`simulate_controllers`]): only then does a write need to keep what the
/// controller may change, to record its managedFields.
pub(crate) fn simulates(def: &ResourceDef) -> bool {
    def.builtin
        && matches!(
            (def.group.as_str(), def.kind.as_str()),
            (
                "apps",
                "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet"
            ) | ("", "Pod")
                | ("apiextensions.k8s.io", "CustomResourceDefinition")
        )
}

/// What the simulated controllers read of an object before they write its status.
struct Seen {
    generation: i64,
    name: String,
    /// `spec.replicas`, 1 when unset.
    replicas: i64,
    observed: i64,
    /// The status already says what the controller would write.
    converged: bool,
}

/// Sets each count to `replicas`, or removes it at zero (as the controllers omit zeros).
fn set_counts(m: &mut Map<String, Value>, replicas: i64, keys: &[&str]) {
    for k in keys {
        if replicas > 0 {
            m.insert((*k).into(), json!(replicas));
        } else {
            m.remove(*k);
        }
    }
}

/// What the controllers of a real cluster would soon write to a stored object: runs the
/// one for `def` on `obj`, and returns the field manager it writes as, or none when it
/// has nothing to change (docs/simulator.md).
pub(crate) fn simulate_controllers(
    def: &ResourceDef,
    obj: &mut Value,
    now: &str,
    alloc: &mut Allocator,
) -> Option<&'static str> {
    let generation = int(jsonx::get(obj, "/metadata/generation"));
    let replicas = jsonx::get(obj, "/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0);
    let observed = int(jsonx::get(obj, "/status/observedGeneration"));
    let seen = Seen {
        generation,
        name: jsonx::text(obj, "/metadata/name").to_string(),
        replicas,
        observed,
        converged: observed == generation
            && int(jsonx::get(obj, "/status/replicas")) == replicas
            && obj.get("status").is_some(),
    };
    let root = obj.as_object_mut()?;
    match (def.builtin, def.group.as_str(), def.kind.as_str()) {
        (true, "apps", "Deployment") => deployment(root, &seen, now),
        (true, "apps", "StatefulSet") => stateful_set(root, &seen),
        (true, "apps", "ReplicaSet") => replica_set(root, &seen),
        (true, "apps", "DaemonSet") => daemon_set(root, &seen),
        (true, "", "Pod") => pod(root, &seen, now, alloc),
        (true, "apiextensions.k8s.io", "CustomResourceDefinition") => crd(root, &seen, now),
        _ => None,
    }
}

/// The Deployment controller: status, conditions and the revision annotation, as if every
/// replica of the current ReplicaSet were ready.
fn deployment(root: &mut Map<String, Value>, seen: &Seen, now: &str) -> Option<&'static str> {
    let name = &seen.name;
    if seen.converged {
        return None;
    }
    let hash = template_hash(root.get("spec").and_then(|s| s.get("template")));
    let old_conditions = root
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let since = |t: &str| {
        old_conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            .and_then(|c| c.get("lastTransitionTime"))
            .cloned()
            .unwrap_or_else(|| json!(now))
    };
    let available_since = since("Available");
    let progressing_since = since("Progressing");
    // The revision annotation: 1 for the first ReplicaSet, one more
    // for each new pod template (a new ReplicaSet).
    let rolled_from = old_conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Progressing"))
        .and_then(|c| c.get("message").and_then(Value::as_str))
        .and_then(|m| m.strip_prefix(&format!("ReplicaSet \"{name}-")))
        .and_then(|m| m.split('"').next())
        .map(str::to_string);
    if let Some(meta) = obj_mut(root, "metadata") {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut()?;
        let revision = annotations
            .get(REVISION)
            .and_then(Value::as_str)
            .and_then(|r| r.parse::<u64>().ok())
            .unwrap_or(0);
        let revision = match rolled_from {
            _ if revision == 0 => 1,
            Some(old) if old != hash => revision + 1,
            _ => revision,
        };
        annotations.insert(REVISION.into(), json!(revision.to_string()));
    }
    let status = obj_mut(root, "status")?;
    status.insert("observedGeneration".into(), json!(seen.generation));
    set_counts(
        status,
        seen.replicas,
        &[
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
        ],
    );
    status.insert(
        "conditions".into(),
        json!([
            {"type": "Available", "status": "True", "lastUpdateTime": available_since, "lastTransitionTime": available_since,
             "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "lastUpdateTime": now, "lastTransitionTime": progressing_since,
             "reason": "NewReplicaSetAvailable", "message": format!("ReplicaSet \"{name}-{hash}\" has successfully progressed.")}
        ]),
    );
    Some("kube-controller-manager")
}

/// The StatefulSet controller: every replica ready at the current revision.
fn stateful_set(root: &mut Map<String, Value>, seen: &Seen) -> Option<&'static str> {
    let name = &seen.name;
    if seen.converged {
        return None;
    }
    let revision = format!(
        "{name}-{}",
        template_hash(root.get("spec").and_then(|s| s.get("template")))
    );
    let status = obj_mut(root, "status")?;
    status.insert("observedGeneration".into(), json!(seen.generation));
    status.insert("replicas".into(), json!(seen.replicas));
    set_counts(
        status,
        seen.replicas,
        &[
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
        ],
    );
    status.insert("currentRevision".into(), json!(revision));
    status.insert("updateRevision".into(), json!(revision));
    status.insert("collisionCount".into(), json!(0));
    Some("kube-controller-manager")
}

/// The ReplicaSet controller: every replica ready.
fn replica_set(root: &mut Map<String, Value>, seen: &Seen) -> Option<&'static str> {
    if seen.converged {
        return None;
    }
    let status = obj_mut(root, "status")?;
    status.insert("observedGeneration".into(), json!(seen.generation));
    status.insert("replicas".into(), json!(seen.replicas));
    set_counts(
        status,
        seen.replicas,
        &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"],
    );
    Some("kube-controller-manager")
}

/// The DaemonSet controller, on a one-node cluster.
fn daemon_set(root: &mut Map<String, Value>, seen: &Seen) -> Option<&'static str> {
    if seen.observed == seen.generation && root.get("status").is_some() {
        return None;
    }
    let status = obj_mut(root, "status")?;
    for (k, v) in [
        ("currentNumberScheduled", 1),
        ("desiredNumberScheduled", 1),
        ("numberAvailable", 1),
        ("numberMisscheduled", 0),
        ("numberReady", 1),
        ("updatedNumberScheduled", 1),
    ] {
        status.insert(k.into(), json!(v));
    }
    status.insert("observedGeneration".into(), json!(seen.generation));
    Some("kube-controller-manager")
}

/// The kubelet: a new Pod runs at once, with an IP, every container started.
fn pod(
    root: &mut Map<String, Value>,
    _seen: &Seen,
    now: &str,
    alloc: &mut Allocator,
) -> Option<&'static str> {
    if root.get("status").and_then(|s| s.get("phase")).is_some() {
        return None;
    }
    let containers: Vec<Value> = root
        .get("spec")
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ip = alloc.pod_ip();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            json!({
                "name": c.get("name").cloned().unwrap_or(Value::Null),
                "image": c.get("image").cloned().unwrap_or(Value::Null),
                "imageID": "",
                "ready": true, "started": true, "restartCount": 0,
                "state": {"running": {"startedAt": now}}
            })
        })
        .collect();
    let cond = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    root.insert(
        "status".into(),
        json!({
            "phase": "Running", "hostIP": "10.0.0.10", "hostIPs": [{"ip": "10.0.0.10"}],
            "podIP": ip, "podIPs": [{"ip": ip}], "startTime": now, "qosClass": "BestEffort",
            "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
            "containerStatuses": statuses
        }),
    );
    Some("kubelet")
}

/// The apiextensions controller: names accepted, storage versions recorded, established.
fn crd(root: &mut Map<String, Value>, _seen: &Seen, now: &str) -> Option<&'static str> {
    let names = root
        .get("spec")
        .and_then(|s| s.get("names"))
        .cloned()
        .unwrap_or(json!({}));
    let storage: Vec<Value> = root
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut accepted = names.clone();
    if let Some(m) = accepted.as_object_mut() {
        if !m.contains_key("singular")
            && let Some(k) = m.get("kind").and_then(Value::as_str)
        {
            let singular = k.to_lowercase();
            m.insert("singular".into(), json!(singular));
        }
        if !m.contains_key("listKind")
            && let Some(k) = m.get("kind").and_then(Value::as_str)
        {
            let list_kind = format!("{k}List");
            m.insert("listKind".into(), json!(list_kind));
        }
    }
    let status = obj_mut(root, "status")?;
    if status.get("acceptedNames") == Some(&accepted) {
        return None;
    }
    let mut stored: Vec<Value> = status
        .get("storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for v in storage {
        if !stored.contains(&v) {
            stored.push(v);
        }
    }
    status.insert("acceptedNames".into(), accepted);
    status.insert("storedVersions".into(), Value::Array(stored));
    status.insert(
        "conditions".into(),
        json!([
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ]),
    );
    Some("kube-apiserver")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn def(group: &str, plural: &str) -> ResourceDef {
        Catalog::builtin()
            .by_resource(group, plural)
            .map(|d| (**d).clone())
            .unwrap()
    }

    #[test]
    fn services_get_ips_and_node_ports() {
        let svc = def("", "services");
        let mut a = Allocator::default();
        let mut s1 =
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 8080}]}});
        apply(&svc, &mut s1, None, &mut a).unwrap();
        assert_eq!(s1["spec"]["clusterIP"], "10.96.0.11");
        assert_eq!(s1["spec"]["clusterIPs"], json!(["10.96.0.11"]));
        assert_eq!(s1["spec"]["ports"][0]["nodePort"], 30000);
        assert_eq!(s1["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(s1["status"]["loadBalancer"], json!({}));
        let mut s2 = json!({"spec": {"ports": [{"port": 80}]}});
        apply(&svc, &mut s2, None, &mut a).unwrap();
        assert_eq!(s2["spec"]["clusterIP"], "10.96.0.12");
        assert_eq!(s2["spec"]["ports"][0]["targetPort"], 80);
        assert!(s2["spec"]["ports"][0].get("nodePort").is_none());
        // An update keeps the allocations.
        let mut upd =
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 9090}]}});
        apply(&svc, &mut upd, Some(&s1), &mut a).unwrap();
        assert_eq!(upd["spec"]["clusterIP"], "10.96.0.11");
        assert_eq!(upd["spec"]["ports"][0]["nodePort"], 30000);
        // A taken IP is refused.
        let mut taken = json!({"spec": {"clusterIP": "10.96.0.12", "ports": [{"port": 1}]}});
        assert!(apply(&svc, &mut taken, None, &mut a).is_err());
        a.release(&svc, &s2);
        let mut again = json!({"spec": {"clusterIP": "10.96.0.12", "ports": [{"port": 1}]}});
        assert!(apply(&svc, &mut again, None, &mut a).is_ok());
    }

    #[test]
    fn allocations_are_not_the_creators() {
        let svc = def("", "services");
        let mut a = Allocator::default();
        let sent = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30100}]}});
        let mut stored = sent.clone();
        apply(&svc, &mut stored, None, &mut a).unwrap();
        assert_eq!(
            allocated(&svc, &sent, &stored).to_fields_v1(),
            json!({
                "f:spec": {
                    "f:clusterIP": {}, "f:clusterIPs": {}, "f:ipFamilies": {}, "f:ipFamilyPolicy": {},
                    "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {"f:nodePort": {}}}
                }
            }),
            "the node port it asked for stays its own"
        );
        let cm = def("", "configmaps");
        assert!(allocated(&cm, &json!({}), &json!({"data": {}})).is_empty());
    }

    #[test]
    fn deployments_converge() {
        let d = def("apps", "deployments");
        let mut a = Allocator::default();
        let mut obj = json!({"metadata": {"name": "web", "generation": 1}, "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        apply(&d, &mut obj, None, &mut a).unwrap();
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
        assert_eq!(
            simulate_controllers(&d, &mut obj, "t", &mut a),
            Some("kube-controller-manager")
        );
        assert_eq!(obj["status"]["readyReplicas"], 3);
        assert_eq!(obj["status"]["observedGeneration"], 1);
        assert_eq!(
            simulate_controllers(&d, &mut obj, "t2", &mut a),
            None,
            "already converged"
        );
        obj["spec"]["replicas"] = json!(0);
        obj["metadata"]["generation"] = json!(2);
        simulate_controllers(&d, &mut obj, "t3", &mut a);
        assert!(obj["status"].get("readyReplicas").is_none());
    }

    #[test]
    fn hash_is_stable_and_safe() {
        let t = json!({"a": 1});
        assert_eq!(template_hash(Some(&t)), template_hash(Some(&t)));
        assert!(
            template_hash(Some(&t))
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
    }
}
