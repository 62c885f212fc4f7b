//! `TYPE[/NAME]` resource arguments: `krply::history::resolve::split`, then the type's
//! resolution against known resource types, both the pure
//! `krply::cluster::discovery::resolve` (what offline readers use) and
//! `Catalog::resolve` (the live, discovered form), and the "did you mean" suggestion
//! `krply::history::suggest::closest` that an unknown type gets.
//!
//! Input (UTF-8): the first line is the argument; every further line adds a resource
//! type to a realistic built-in set, as `group|version|plural|Kind|singular|short,names`.
//!
//! Properties: no panic; `split` then join gives the argument back; resolution is
//! ASCII-case-insensitive and ignores surrounding whitespace; `Catalog::resolve` agrees
//! with `resolve`; a suggestion is one of the candidates.

#![no_main]

use krply::cluster::discovery::{Catalog, Discovered, ResolveError, resolve};
use krply::history::resolve::{TargetError, split};
use krply::history::suggest::closest;
use krply::model::ResourceType;
use libfuzzer_sys::fuzz_target;

fn rt(group: &str, plural: &str, kind: &str, short: &[&str], namespaced: bool) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: "v1".into(),
        resource: plural.into(),
        kind: kind.into(),
        singular: kind.to_ascii_lowercase(),
        short_names: short.iter().map(|s| s.to_string()).collect(),
        namespaced,
    }
}

/// What a cluster with a couple of CRDs serves, name clashes included.
fn builtin() -> Vec<ResourceType> {
    vec![
        rt("", "pods", "Pod", &["po"], true),
        rt("", "configmaps", "ConfigMap", &["cm"], true),
        rt("", "services", "Service", &["svc"], true),
        rt("", "namespaces", "Namespace", &["ns"], false),
        rt("", "events", "Event", &["ev"], true),
        rt("events.k8s.io", "events", "Event", &["ev"], true),
        rt("apps", "deployments", "Deployment", &["deploy"], true),
        rt("apps", "replicasets", "ReplicaSet", &["rs"], true),
        rt("networking.k8s.io", "ingresses", "Ingress", &["ing"], true),
        rt("example.com", "widgets", "Widget", &["wd"], true),
        rt("other.io", "widgets", "Widget", &[], true),
        rt("example.com", "deployments", "Deployment", &[], true),
    ]
}

fn parse_type(line: &str) -> ResourceType {
    let mut f = line.split('|');
    let mut next = || f.next().unwrap_or_default().to_owned();
    let (group, version, resource, kind, singular) = (next(), next(), next(), next(), next());
    let short_names = next()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    ResourceType {
        group,
        version,
        resource,
        kind,
        singular,
        short_names,
        namespaced: true,
    }
}

/// A resolution result reduced to what must not depend on how the argument was typed.
fn outcome<'a>(
    r: &Result<&'a ResourceType, ResolveError>,
) -> Result<*const ResourceType, Option<Vec<String>>> {
    match r {
        Ok(t) => Ok(*t as *const ResourceType),
        Err(ResolveError::Unknown(_)) => Err(None),
        Err(ResolveError::Ambiguous { candidates, .. }) => Err(Some(candidates.clone())),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let arg = lines.next().unwrap_or_default();
    let mut types = builtin();
    types.extend(lines.take(64).map(parse_type));

    let (type_arg, name) = match split(arg) {
        Ok((t, None)) => {
            assert_eq!(t, arg);
            (t, None)
        }
        Ok((t, Some(n))) => {
            assert!(
                !t.is_empty() && !n.is_empty() && !n.contains('/'),
                "{arg:?}"
            );
            assert_eq!(format!("{t}/{n}"), arg);
            (t, Some(n))
        }
        Err(e) => {
            assert_eq!(e, TargetError::Malformed(arg.to_owned()));
            // Resolution still sees malformed arguments in other callers: keep going.
            (arg, None)
        }
    };
    let _ = name;

    let got = resolve(&types, type_arg);
    let want = outcome(&got);
    for variant in [
        type_arg.to_ascii_uppercase(),
        type_arg.to_ascii_lowercase(),
        format!(" {type_arg}\t"),
    ] {
        assert_eq!(
            outcome(&resolve(&types, &variant)),
            want,
            "{type_arg:?} and {variant:?} resolve differently"
        );
    }

    let catalog = Catalog {
        resources: types
            .iter()
            .map(|t| Discovered {
                resource: t.clone(),
                verbs: vec!["list".into(), "watch".into()],
            })
            .collect(),
        warnings: vec![],
    };
    match (catalog.resolve(type_arg), &got) {
        (Ok(d), Ok(t)) => assert_eq!(&d.resource, *t, "{type_arg:?}"),
        (Err(a), Err(b)) => assert_eq!(&a, b, "{type_arg:?}"),
        (a, b) => panic!("{type_arg:?}: Catalog::resolve gave {a:?}, resolve gave {b:?}"),
    }

    if got.is_err() {
        let names: Vec<&str> = types
            .iter()
            .flat_map(|t| {
                [t.resource.as_str(), t.singular.as_str(), t.kind.as_str()]
                    .into_iter()
                    .chain(t.short_names.iter().map(String::as_str))
            })
            .collect();
        if let Some(s) = closest(type_arg, names.iter().copied()) {
            assert!(names.contains(&s), "{type_arg:?} suggested {s:?}");
        }
    }
});
