//! Server-side apply on the store: `PATCH` with
//! `application/apply-patch+yaml` (and [`super::Simulator::apply`]). The
//! configuration is checked as the server checks it, merged by
//! [`super::ssa`], then stored through the create or update pipeline
//! (defaults, server-owned fields, validation, dry runs, watch events).

use std::sync::Arc;

use serde_json::{Map, Value};
use serde_saphyr::options::DuplicateKeyPolicy;

use super::catalog::ResourceDef;
use super::error::{self, ApiStatus};
use super::jsonx::text;
use super::managed::ManagedFields;
use super::ssa::{self, ApplyError};
use super::store::Store;
use super::write::{Owner, Sub, WriteCtx, Written};

/// `fieldValidation` of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// The `fieldValidation` parameter; `Err` is the cause of a 422.
    pub(crate) fn parse(v: Option<&str>) -> Result<FieldValidation, (String, String)> {
        match v.unwrap_or_default() {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err((
                "fieldValidation".into(),
                format!(
                    "Unsupported value: \"{other}\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                ),
            )),
        }
    }
}

fn yaml(body: &str, duplicates: DuplicateKeyPolicy) -> Result<Value, String> {
    let options = serde_saphyr::options! { duplicate_keys: duplicates };
    serde_saphyr::from_str_with_options::<Value>(body, options).map_err(|e| e.to_string())
}

/// The body of an apply: YAML or JSON, one object. With `Strict`
/// validation a duplicate key is an error, else the last one wins.
pub(crate) fn decode_body(body: &[u8], validation: FieldValidation) -> Result<Value, ApiStatus> {
    let decoded = match serde_json::from_slice::<Value>(body) {
        Ok(v) if validation != FieldValidation::Strict => v,
        _ => {
            let text = std::str::from_utf8(body)
                .map_err(|e| error::bad_request(format!("error decoding YAML: {e}")))?;
            let v = yaml(text, DuplicateKeyPolicy::LastWins)
                .map_err(|e| error::bad_request(format!("error decoding YAML: {e}")))?;
            if validation == FieldValidation::Strict {
                yaml(text, DuplicateKeyPolicy::Error)
                    .map_err(|e| error::bad_request(format!("error strict decoding YAML: {e}")))?;
            }
            v
        }
    };
    match decoded {
        Value::Object(_) => Ok(decoded),
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(error::bad_request(format!(
            "error decoding YAML: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            }
        ))),
    }
}

/// Checks the identity of an applied configuration against the request:
/// no managedFields, the URL's apiVersion and kind, its name and namespace.
fn check_config(
    def: &ResourceDef,
    version: &str,
    ns: &str,
    name: &str,
    config: &Value,
) -> Result<(), ApiStatus> {
    let Some(m) = config.as_object() else {
        return Err(error::bad_request(
            "the body of the request was not a YAML or JSON object",
        ));
    };
    match m.get("metadata") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return Err(error::bad_request("metadata: expected an object")),
    }
    match config.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.is_empty() => {}
        Some(_) => return Err(error::bad_request("metadata.managedFields must be nil")),
    }
    let expected = def.api_version(version);
    let av = text(config, "/apiVersion");
    if av != expected {
        return Err(error::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {av}, expected: {expected}"
        )));
    }
    match m.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            return Err(error::bad_request(format!(
                "Object 'Kind' is missing in '{config}'"
            )));
        }
        Some(k) if k != def.kind => {
            return Err(error::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )));
        }
        Some(_) => {}
    }
    let body_name = text(config, "/metadata/name");
    if body_name != name {
        return Err(error::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let body_ns = text(config, "/metadata/namespace");
    if def.namespaced && !body_ns.is_empty() && body_ns != ns {
        return Err(error::bad_request(format!(
            "the namespace of the object ({body_ns}) does not match the namespace on the request ({ns})"
        )));
    }
    Ok(())
}

impl Store {
    /// Server-side apply of `config` by `ctx.manager` to the object `name`
    /// (in namespace `ns`, `""` when cluster-scoped), creating it if it
    /// does not exist. `version` is the API version of the request.
    /// Returns the write and whether it created the object.
    #[expect(
        clippy::too_many_arguments,
        reason = "the address of the object, the configuration and the apply options"
    )]
    pub(crate) fn apply(
        &mut self,
        def: &Arc<ResourceDef>,
        version: &str,
        ns: &str,
        name: &str,
        config: Value,
        ctx: &WriteCtx,
        force: bool,
    ) -> Result<(Written, bool), ApiStatus> {
        check_config(def, version, ns, name, &config)?;
        let api_version = def.api_version(version);
        if def.builtin
            && let Some(msg) = ssa::undeclared_field(&def.group, &def.kind, &config)
        {
            return Err(ssa::typed_error(ns, name, &api_version, &def.kind, &msg));
        }
        let current = self
            .get(def, ns, name)
            .map(|c| (c.value.clone(), c.managed.clone()));
        let (live, live_managed) = match &current {
            Some((v, m)) => (v.clone(), m.clone()),
            None => (Value::Object(Map::new()), ManagedFields::default()),
        };
        let req = ssa::Request {
            manager: &ctx.manager,
            api_version: &api_version,
            now: &ctx.now,
            force,
            keyed: def.builtin,
            skip_status: def.status,
        };
        let applied = ssa::apply(&live, &live_managed, &config, &req).map_err(|e| match e {
            ApplyError::Typed(msg) => ssa::typed_error(ns, name, &api_version, &def.kind, &msg),
            ApplyError::Conflicts(c) => ssa::conflict_status(&c),
        })?;
        if current.is_some() {
            let mut object = Some(applied.object);
            let w = self.replace_owned(
                def,
                ns,
                name,
                Sub::Main,
                ctx,
                &mut |_| {
                    object
                        .take()
                        .ok_or_else(|| error::internal("the applied object was used twice"))
                },
                Owner::Apply(applied.managed),
            )?;
            return Ok((w, false));
        }
        if !text(&applied.object, "/metadata/resourceVersion").is_empty() {
            return Err(error::conflict(
                &def.plural,
                &def.group,
                name,
                error::MODIFIED_CONFLICT,
            ));
        }
        let uid = text(&applied.object, "/metadata/uid");
        if !uid.is_empty() {
            return Err(error::conflict(
                &def.plural,
                &def.group,
                name,
                &format!(
                    "uid mismatch: the provided object specified uid {uid}, and no existing object was found"
                ),
            ));
        }
        let path_ns = def.namespaced.then_some(ns);
        let w = self.create_owned(
            def,
            version,
            path_ns,
            applied.object,
            ctx,
            Owner::Apply(applied.managed),
        )?;
        Ok((w, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::json;

    #[test]
    fn bodies_are_yaml_or_json() {
        let y = decode_body(
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
            FieldValidation::Warn,
        )
        .unwrap();
        assert_eq!(
            y,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
        );
        let j = decode_body(
            br#"{"apiVersion":"v1","kind":"ConfigMap"}"#,
            FieldValidation::Strict,
        )
        .unwrap();
        assert_eq!(j["kind"], "ConfigMap");
        assert_eq!(decode_body(b"", FieldValidation::Warn).unwrap(), json!({}));
        let dup = b"kind: A\nkind: B\n";
        assert_eq!(
            decode_body(dup, FieldValidation::Ignore).unwrap()["kind"],
            "B"
        );
        let e = decode_body(dup, FieldValidation::Strict).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.starts_with("error strict decoding YAML"),
            "{}",
            e.message
        );
        let e = decode_body(b"[1, 2]", FieldValidation::Warn).unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
        assert!(decode_body(b"a: [", FieldValidation::Warn).is_err());
        assert!(FieldValidation::parse(Some("Loose")).is_err());
        assert_eq!(FieldValidation::parse(None).unwrap(), FieldValidation::Warn);
    }

    mod properties {
        use super::*;
        use crate::Seed;
        use proptest::prelude::*;

        const KEYS: [&str; 14] = [
            "replicas",
            "containers",
            "ports",
            "port",
            "containerPort",
            "protocol",
            "name",
            "labels",
            "selector",
            "type",
            "clusterIP",
            "template",
            "spec",
            "a",
        ];

        fn tree() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                (0i64..3).prop_map(Value::from),
                prop::sample::select(vec!["a", "TCP", "NodePort", "10.96.0.5"])
                    .prop_map(Value::from),
            ];
            leaf.prop_recursive(4, 32, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                    prop::collection::btree_map(
                        prop::sample::select(KEYS.to_vec()).prop_map(str::to_owned),
                        inner,
                        0..4
                    )
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        fn store() -> Store {
            let mut store = Store::new(100, String::new());
            crate::seed::seed(&mut store, &Seed::Empty).unwrap();
            store
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            /// Random specs of real kinds through the whole write pipeline:
            /// an answer, never a panic; a repeated apply writes nothing.
            #[test]
            fn the_store_answers_every_apply(
                kind in prop::sample::select(vec![
                    ("apps", "deployments"), ("", "services"), ("", "configmaps"), ("", "namespaces"),
                ]),
                spec in tree(),
                dry in any::<bool>(),
            ) {
                let mut store = store();
                let def = store.catalog.by_resource(kind.0, kind.1).cloned().unwrap();
                let ns = if def.namespaced { "default" } else { "" };
                let field = if def.kind == "ConfigMap" { "data" } else { "spec" };
                let mut config = json!({
                    "apiVersion": def.api_version("v1"), "kind": def.kind,
                    "metadata": {"name": "x"}
                });
                config[field] = spec;
                let mut ctx = WriteCtx::new("m");
                ctx.dry_run = dry;
                let first = store.apply(&def, "v1", ns, "x", config.clone(), &ctx, false);
                if first.is_err() || dry {
                    return Ok(());
                }
                let rv = store.rv;
                let again = store.apply(&def, "v1", ns, "x", config, &WriteCtx::new("m"), false);
                prop_assert!(again.is_ok(), "{:?}", again.err());
                prop_assert_eq!(store.rv, rv);
            }
        }
    }

    #[test]
    fn configurations_must_name_the_object_of_the_url() {
        let c = Catalog::builtin();
        let deploy = c.by_resource("apps", "deployments").unwrap();
        let ok = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}});
        assert!(check_config(deploy, "v1", "shop", "web", &ok).is_ok());
        let msg = |v: Value| {
            check_config(deploy, "v1", "shop", "web", &v)
                .unwrap_err()
                .message
        };
        assert_eq!(
            msg(
                json!({"apiVersion": "apps/v2", "kind": "Deployment", "metadata": {"name": "web"}})
            ),
            "Incorrect version specified in apply patch. Specified patch version: apps/v2, expected: apps/v1"
        );
        assert!(
            msg(json!({"apiVersion": "apps/v1", "metadata": {"name": "web"}}))
                .starts_with("Object 'Kind' is missing")
        );
        assert_eq!(
            msg(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"}})
            ),
            "the name of the object (api) does not match the name on the URL (web)"
        );
        assert_eq!(
            msg(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "x"}})
            ),
            "the namespace of the object (x) does not match the namespace on the request (shop)"
        );
        assert_eq!(
            msg(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "managedFields": [{"manager": "x"}]}})
            ),
            "metadata.managedFields must be nil"
        );
    }
}
