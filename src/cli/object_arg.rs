//! Finding the one object a `TYPE/NAME` argument names, offline.

use super::reader::Reader;
use crate::error::{CliError, CliResult};
use crate::history::resolve::Target;
use crate::history::tracked::Tracked;
use crate::history::{History, Scope};

/// The object `arg` names in the reader's namespace, across every stream that
/// covers it (docs/consistency.md, "Several streams over one object").
pub fn find<'h>(reader: &Reader, history: &'h History<'_>, arg: &str) -> CliResult<Tracked<'h>> {
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
    let streams = history.streams_for(&scope);
    let ids: Vec<_> = streams.iter().map(|s| s.info.id).collect();
    let found = history
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
    let object = &found[0];
    let stream = history
        .stream(object.stream)
        .ok_or_else(|| CliError::runtime("the object's stream is missing from the journal"))?;
    Ok(history.track_row(stream, object)?)
}
