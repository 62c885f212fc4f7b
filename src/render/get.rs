//! `get TYPE --at T` as a table, the way `kubectl get` prints one: NAME, the
//! columns of the kind's printer (krply-apimachinery's `printers`: READY,
//! UP-TO-DATE, AVAILABLE for Deployments, TYPE, CLUSTER-IP, PORT(S) for
//! Services, DATA for ConfigMaps, ...) or a custom resource's
//! `additionalPrinterColumns`, and AGE as of T (docs/output.md).

use krply_apimachinery::printers::{self, Column};
use serde_json::Value;

/// The columns of a table: a built-in printer's, or a custom resource's.
pub enum Columns {
    Builtin(&'static [Column]),
    /// `additionalPrinterColumns` of the CRD as recorded: name, type,
    /// JSONPath and priority; NAME before them and AGE after them, as
    /// kube-apiserver adds.
    Custom(Vec<PrinterColumn>),
}

/// One `additionalPrinterColumns` entry of a CustomResourceDefinition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub priority: i64,
}

impl PrinterColumn {
    /// The entries of `crd` for `version`, as the API server serves them.
    pub fn of_crd(crd: &Value, version: &str) -> Vec<PrinterColumn> {
        crd.pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
            })
            .and_then(|v| v.get("additionalPrinterColumns"))
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .filter_map(|c| {
                        Some(PrinterColumn {
                            name: c.get("name")?.as_str()?.to_string(),
                            type_: c
                                .get("type")
                                .and_then(Value::as_str)
                                .unwrap_or("string")
                                .to_string(),
                            json_path: c.get("jsonPath")?.as_str()?.to_string(),
                            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The table of `items` at `at` (ms): NAMESPACE first with `namespaces`,
/// the columns of priority 0 (and 1 with `wide`), headers upper-cased as
/// kubectl prints them.
pub fn table(columns: &Columns, items: &[Value], namespaces: bool, wide: bool, at: i64) -> String {
    let now = jiff::Timestamp::from_millisecond(at).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let shown = |priority: i64| priority == 0 || wide;
    let mut headers: Vec<String> = Vec::new();
    if namespaces {
        headers.push("NAMESPACE".into());
    }
    match columns {
        Columns::Builtin(cols) => headers.extend(
            cols.iter()
                .filter(|c| shown(c.priority))
                .map(|c| c.name.to_uppercase()),
        ),
        Columns::Custom(cols) => {
            headers.push("NAME".into());
            headers.extend(
                cols.iter()
                    .filter(|c| shown(c.priority))
                    .map(|c| c.name.to_uppercase()),
            );
            headers.push("AGE".into());
        }
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|o| {
            let mut row = Vec::new();
            if namespaces {
                row.push(text(
                    o.pointer("/metadata/namespace").unwrap_or(&Value::Null),
                ));
            }
            match columns {
                Columns::Builtin(cols) => row.extend(
                    cols.iter()
                        .filter(|c| shown(c.priority))
                        .map(|c| text(&c.cell_of(o, now))),
                ),
                Columns::Custom(cols) => {
                    row.push(text(o.pointer("/metadata/name").unwrap_or(&Value::Null)));
                    for c in cols.iter().filter(|c| shown(c.priority)) {
                        let v = printers::json_path(o, &c.json_path);
                        row.push(match (c.type_.as_str(), &v) {
                            ("date", Value::String(t)) => {
                                printers::age_since(t, now).unwrap_or_else(|| t.clone())
                            }
                            _ => text(&v),
                        });
                    }
                    row.push(printers::age(o, now));
                }
            }
            row
        })
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    super::table(&headers, &rows)
}

/// A cell as kubectl prints it: strings bare, nothing as `<none>`.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "<none>".into(),
        Value::String(s) if s.is_empty() => "<none>".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(name: &str, ready: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-12-01T10:00:00Z"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"spec": {"containers": [{"name": "server", "image": format!("{name}:v1")}]}}},
            "status": {"readyReplicas": ready, "updatedReplicas": 2, "availableReplicas": ready}})
    }

    #[test]
    fn a_deployment_table_reads_like_kubectls_at_that_time() {
        let at = 1_796_122_800_000; // 2026-12-01T11:00:00Z: an hour after creation
        let items = [deployment("frontend", 2), deployment("cartservice", 1)];
        let cols = Columns::Builtin(printers::builtin_columns("apps", "Deployment"));
        assert_eq!(
            table(&cols, &items, false, false, at),
            "NAME          READY   UP-TO-DATE   AVAILABLE   AGE\n\
             frontend      2/2     2            2           60m\n\
             cartservice   1/2     2            1           60m\n"
        );
        let wide = table(&cols, &items, true, true, at);
        assert!(
            wide.starts_with("NAMESPACE   NAME          READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS   IMAGES"),
            "{wide}"
        );
        assert!(wide.contains("frontend:v1"), "{wide}");
    }

    #[test]
    fn a_custom_resource_uses_its_crds_printer_columns() {
        let crd = json!({"spec": {"versions": [{"name": "v1", "additionalPrinterColumns": [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Owner", "type": "string", "jsonPath": ".spec.owner", "priority": 1}]}]}});
        let cols = Columns::Custom(PrinterColumn::of_crd(&crd, "v1"));
        let item = json!({"metadata": {"name": "big", "creationTimestamp": "2026-12-01T10:00:00Z"},
                          "spec": {"size": 3, "owner": "ann"}});
        assert_eq!(
            table(&cols, &[item], false, false, 1_796_119_230_000),
            "NAME   SIZE   AGE\nbig    3      30s\n"
        );
    }
}
