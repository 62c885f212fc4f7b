//! The initial contents of a simulated cluster: the system namespaces
//! (default, kube-system, kube-public), and optionally the Online Boutique
//! shop (namespace `shop`: 12 Deployments, 12 Services, 11 ServiceAccounts
//! from the fixture, plus 3 ConfigMaps) or objects given by the caller.

use serde_json::{Value, json};

use super::Seed;
use super::error::SimError;
use super::store::Store;
use super::write::WriteCtx;

const SHOP_FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/shop/online-boutique.json"
));

fn seed_err(what: &str, e: impl std::fmt::Display) -> SimError {
    SimError::Seed(format!("{what}: {e}"))
}

/// Creates `obj` as `manager` would.
pub(crate) fn create(store: &mut Store, obj: Value, manager: &str) -> Result<(), SimError> {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let def = store
        .catalog
        .by_kind(&api_version, &kind)
        .cloned()
        .ok_or_else(|| seed_err("unknown kind", format!("{api_version} {kind}")))?;
    let version = def
        .version_of(&api_version)
        .unwrap_or(def.preferred_version())
        .to_string();
    store
        .create(&def, &version, None, obj, &WriteCtx::new(manager))
        .map(|_| ())
        .map_err(|e| seed_err(&format!("cannot seed {kind}"), e.message))
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

pub(crate) fn seed(store: &mut Store, seed: &Seed) -> Result<(), SimError> {
    for ns in ["default", "kube-system", "kube-public"] {
        create(store, namespace(ns), "kube-apiserver")?;
    }
    match seed {
        Seed::Empty => Ok(()),
        Seed::Shop => shop(store),
        Seed::Objects(objects) => {
            for obj in objects {
                let ns = obj
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let is_namespace = obj.get("kind").and_then(Value::as_str) == Some("Namespace");
                if !ns.is_empty() && !store.namespace_exists(ns) {
                    create(store, namespace(ns), "krply-sim")?;
                }
                let name = obj
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if is_namespace && store.namespace_exists(name) {
                    continue;
                }
                create(store, obj.clone(), "krply-sim")?;
            }
            Ok(())
        }
    }
}

fn shop(store: &mut Store) -> Result<(), SimError> {
    create(store, namespace("shop"), "kubectl-create")?;
    let list: Value =
        serde_json::from_str(SHOP_FIXTURE).map_err(|e| seed_err("shop fixture", e))?;
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .ok_or_else(|| seed_err("shop fixture", "no items"))?;
    for item in items {
        create(store, item.clone(), "kubectl-create")?;
    }
    let config_maps = [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "frontend-config", "namespace": "shop", "labels": {"app": "frontend"}},
            "data": {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550", "CURRENCY_SERVICE_ADDR": "currencyservice:7000",
                     "CART_SERVICE_ADDR": "cartservice:7070", "ENABLE_PROFILER": "0", "CYMBAL_BRANDING": "false"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "currency-rates", "namespace": "shop", "labels": {"app": "currencyservice"}},
            "data": {"rates.json": "{\"EUR\": \"1.0\", \"USD\": \"1.1305\", \"JPY\": \"126.40\", \"GBP\": \"0.85970\", \"CAD\": \"1.5128\", \"CHF\": \"1.1360\"}"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "feature-flags", "namespace": "shop", "labels": {"app.kubernetes.io/part-of": "online-boutique"}},
            "data": {"checkout.express": "true", "recommendations.enabled": "true", "ads.enabled": "false", "cart.max-items": "25"}}),
    ];
    for cm in config_maps {
        create(store, cm, "kubectl-create")?;
    }
    Ok(())
}
