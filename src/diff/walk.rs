//! The recursive comparison behind [`diff_objects`](super::diff_objects) and
//! [`changed_paths`](super::changed_paths).
//!
//! Both inputs are borrowed for the whole walk: the current path is a stack of borrowed
//! keys, values are compared in place, and a [`Sink`] decides what to keep of each
//! change (owned values, or only the rendered path).

use serde_json::{Map, Value};

use super::DiffOptions;
use super::noise;
use super::path::SegRef;
use krply_apimachinery::lists::{self, Pairing};

/// Receives each change as it is found.
pub(crate) trait Sink {
    fn change(&mut self, path: &[SegRef<'_>], before: Option<&Value>, after: Option<&Value>);
}

/// Compares `before` with `after`, reporting every change to `sink`.
pub(crate) fn walk(before: &Value, after: &Value, opts: &DiffOptions, sink: &mut impl Sink) {
    Walker {
        opts,
        sink,
        path: Vec::new(),
    }
    .value(before, after);
}

struct Walker<'a, 'o, S> {
    opts: &'o DiffOptions,
    sink: &'o mut S,
    path: Vec<SegRef<'a>>,
}

impl<'a, S: Sink> Walker<'a, '_, S> {
    fn value(&mut self, before: &'a Value, after: &'a Value) {
        match (before, after) {
            (Value::Object(b), Value::Object(a)) => self.objects(b, a),
            (Value::Array(b), Value::Array(a)) => self.lists(b, a),
            _ if before == after => {}
            _ => self.emit(Some(before), Some(after)),
        }
    }

    fn objects(&mut self, before: &'a Map<String, Value>, after: &'a Map<String, Value>) {
        for (key, a) in after {
            self.path.push(SegRef::Key(key));
            if !noise::is_noise_path(&self.path, self.opts) {
                match before.get(key) {
                    Some(b) => self.value(b, a),
                    None => self.emit(None, Some(a)),
                }
            }
            self.path.pop();
        }
        for (key, b) in before {
            if after.contains_key(key) {
                continue;
            }
            self.path.push(SegRef::Key(key));
            if !noise::is_noise_path(&self.path, self.opts) {
                self.emit(Some(b), None);
            }
            self.path.pop();
        }
    }

    fn lists(&mut self, before: &'a [Value], after: &'a [Value]) {
        match lists::pair(before, after) {
            Pairing::ByIndex => {
                for index in 0..before.len().max(after.len()) {
                    self.path.push(SegRef::Index(index));
                    match (before.get(index), after.get(index)) {
                        (Some(b), Some(a)) => self.value(b, a),
                        (b, a) => self.emit(b, a),
                    }
                    self.path.pop();
                }
            }
            Pairing::ByIdentity(matching) => {
                // `old_of_new` has one entry per new element, `old_kept` one per old one.
                for (index, (a, old)) in after.iter().zip(&matching.old_of_new).enumerate() {
                    self.path.push(SegRef::Index(index));
                    match old.and_then(|old| before.get(old)) {
                        Some(b) => self.value(b, a),
                        None => self.emit(None, Some(a)),
                    }
                    self.path.pop();
                }
                for (index, (b, kept)) in before.iter().zip(&matching.old_kept).enumerate() {
                    if !kept {
                        self.path.push(SegRef::Index(index));
                        self.emit(Some(b), None);
                        self.path.pop();
                    }
                }
            }
        }
    }

    /// Reports a change at the current path; where noise lies below the path, it is
    /// taken out of both sides first (and the change dropped if only noise differed).
    fn emit(&mut self, before: Option<&'a Value>, after: Option<&'a Value>) {
        if !noise::holds_noise(&self.path) {
            self.sink.change(&self.path, before, after);
            return;
        }
        let before = before.and_then(|v| noise::without_noise(&mut self.path, v, self.opts));
        let after = after.and_then(|v| noise::without_noise(&mut self.path, v, self.opts));
        if before != after {
            self.sink
                .change(&self.path, before.as_ref(), after.as_ref());
        }
    }
}
