//! Allocation-free JSON lookups for the write path (`Value::pointer`
//! allocates a string per path token).

use serde_json::Value;

/// The value at a JSON pointer such as `/metadata/name` or `/spec/ports/0`.
pub(crate) fn get<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.contains('~') {
        return v.pointer(pointer);
    }
    let mut cur = v;
    for token in pointer.split('/').skip(1) {
        cur = match cur {
            Value::Object(m) => m.get(token)?,
            Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The string at a JSON pointer, or `""`.
pub(crate) fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    get(v, pointer).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lookups_match_serde_pointers() {
        let v = json!({"metadata": {"name": "x", "a/b": 1, "list": [{"k": "v"}]}});
        for p in [
            "",
            "/metadata",
            "/metadata/name",
            "/metadata/list/0/k",
            "/metadata/list/9",
            "/nope",
            "/metadata/a~1b",
        ] {
            assert_eq!(get(&v, p), v.pointer(p), "{p}");
        }
        assert_eq!(text(&v, "/metadata/name"), "x");
        assert_eq!(text(&v, "/metadata/missing"), "");
    }
}
