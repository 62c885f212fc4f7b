//! Finding the one object a `TYPE/NAME` argument names, offline.

use super::reader::Reader;
use crate::error::{CliError, CliResult};
use crate::history::resolve::Target;
use crate::history::{History, Scope, StreamHistory};
use crate::journal::versions::ObjectRow;

/// The object `arg` names in the reader's namespace, and its stream. Where both
/// a namespace stream and an all-namespaces stream hold it, the first answers;
/// where the stream is here more than once (imported), the lane that covers
/// most of `window` does.
pub fn find<'h>(
    reader: &Reader,
    history: &'h History<'_>,
    arg: &str,
    window: Option<(i64, i64)>,
) -> CliResult<(&'h StreamHistory, ObjectRow)> {
    let target = history.target(arg)?;
    let Target::Object(resource, name) = target else {
        return Err(CliError::usage(format!(
            "\"{arg}\" names a type; name one object as TYPE/NAME, like {arg}/NAME"
        )));
    };
    let namespace = if resource.namespaced {
        reader.namespace.clone()
    } else {
        None
    };
    let scope = Scope {
        namespace: namespace.clone(),
        types: Some(vec![resource.clone()]),
    };
    let streams = history.streams_during(&scope, window);
    let ids: Vec<_> = streams.iter().map(|s| s.info.id).collect();
    let mut found = history
        .journal
        .objects_named(&ids, namespace.as_deref(), &name)?;
    if found.is_empty() {
        let place = match &namespace {
            Some(ns) => format!(" in namespace {ns}"),
            None if resource.namespaced => " in any namespace".to_string(),
            None => String::new(),
        };
        let err = CliError::runtime(format!(
            "{}/{name} was never recorded{place}",
            resource.group_resource()
        ));
        let known = history.journal.object_names(&ids, namespace.as_deref())?;
        let err = match crate::history::suggest::closest(&name, known.iter().map(String::as_str)) {
            Some(close) => err.hint(format!("did you mean \"{}/{close}\"?", resource.singular)),
            None => err,
        };
        return Err(
            err.hint("`kubectl krply coverage` shows what is recorded; -n picks the namespace")
        );
    }
    if namespace.is_none() && resource.namespaced {
        let mut namespaces: Vec<&str> = found.iter().map(|o| o.namespace.as_str()).collect();
        namespaces.sort();
        namespaces.dedup();
        if namespaces.len() > 1 {
            return Err(CliError::usage(format!(
                "{}/{name} exists in several namespaces ({}); pick one with -n",
                resource.group_resource(),
                namespaces.join(", ")
            )));
        }
    }
    // Prefer the stream recorded for exactly this namespace.
    found.sort_by_key(|o| {
        history
            .stream(o.stream)
            .map(|s| s.info.namespace.is_none())
            .unwrap_or(true)
    });
    let object = found.remove(0);
    let stream = history
        .stream(object.stream)
        .ok_or_else(|| CliError::runtime("the object's stream is missing from the journal"))?;
    Ok((stream, object))
}
