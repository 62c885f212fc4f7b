//! What the cluster does around some writes: a new Namespace gets the
//! `kube-root-ca.crt` ConfigMap and the `default` ServiceAccount; a deleted
//! Namespace takes everything in it along; a CustomResourceDefinition starts
//! or stops serving its resource (deleting a CRD deletes its objects).

use std::sync::Arc;

use serde_json::{Value, json};

use super::catalog::ResourceDef;
use super::store::{EventType, Store};
use super::write::WriteCtx;

const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

impl Store {
    /// Creates what the controllers create in every new namespace.
    pub(crate) fn populate_namespace(&mut self, ns: &str, now: &str) {
        let mut ctx = WriteCtx::new("kube-controller-manager");
        ctx.now = now.to_string();
        let objects = [
            (
                "configmaps",
                json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt", "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
                    "data": {"ca.crt": self.ca_pem}
                }),
            ),
            (
                "serviceaccounts",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
            ),
        ];
        for (plural, obj) in objects {
            if let Some(def) = self.catalog.by_resource("", plural).cloned() {
                // Cannot fail in a namespace that was just created.
                let _ = self.create(&def, "v1", Some(ns), obj, &ctx);
            }
        }
    }

    /// Marks a namespace Terminating, then deletes everything in it.
    pub(crate) fn terminate_namespace(&mut self, ns: &str, now: &str) {
        let Some(ns_def) = self.catalog.by_resource("", "namespaces").cloned() else {
            return;
        };
        if let Some(cur) = self.get(&ns_def, "", ns) {
            let mut v = cur.value.clone();
            let mf = cur.managed.clone();
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("deletionTimestamp".into(), json!(now));
            }
            if let Some(m) = v.as_object_mut() {
                m.insert("status".into(), json!({"phase": "Terminating"}));
            }
            self.commit(&ns_def, EventType::Modified, v, mf);
        }
        let defs: Vec<Arc<ResourceDef>> = self
            .catalog
            .all()
            .iter()
            .filter(|d| d.namespaced)
            .cloned()
            .collect();
        for def in defs {
            let names: Vec<String> = self
                .state(&def)
                .and_then(|rs| rs.objects.get(ns))
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            for name in names {
                self.finish_delete(&def, ns, &name, None);
            }
        }
    }

    /// Starts serving (or updates) the resource of a CRD.
    pub(crate) fn serve_crd(&mut self, mut def: ResourceDef) {
        match self.catalog.by_resource(&def.group, &def.plural).cloned() {
            Some(existing) if !existing.builtin => {
                def.instance = existing.instance;
                let def = Arc::new(def);
                self.catalog.register(def.clone());
                if let Some(rs) = self.resources.get_mut(&def.instance) {
                    rs.def = def;
                }
            }
            Some(_) => {}
            None => {
                let def = Arc::new(def);
                self.catalog.register(def.clone());
                self.add_resource_state(def);
            }
        }
    }

    /// Deletes every object of a CRD's resource and stops serving it.
    pub(crate) fn retire_crd(&mut self, crd: &Value) {
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let plural = crd
            .pointer("/spec/names/plural")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(def) = self
            .catalog
            .by_resource(group, plural)
            .filter(|d| !d.builtin)
            .cloned()
        else {
            return;
        };
        let keys: Vec<(String, String)> = self
            .state(&def)
            .map(|rs| {
                rs.objects
                    .iter()
                    .flat_map(|(ns, m)| m.keys().map(move |n| (ns.clone(), n.clone())))
                    .collect()
            })
            .unwrap_or_default();
        for (ns, name) in keys {
            self.finish_delete(&def, &ns, &name, None);
        }
        self.catalog.unregister(group, plural);
        self.remove_resource_state(def.instance);
    }
}
