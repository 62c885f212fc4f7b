//! "Did you mean": the known name closest to a mistyped one, as kubectl and
//! cargo suggest, by Jaro-Winkler similarity (strsim, which clap itself uses).

/// How similar a name must be to be suggested (clap uses the same bar).
const THRESHOLD: f64 = 0.8;

/// The candidate closest to `typed`, if one is close enough. Ties go to the
/// first candidate.
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&typed, &c.to_ascii_lowercase());
        if score >= THRESHOLD && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn close_names_are_suggested_and_far_ones_are_not() {
        let types = [
            "deployments",
            "deployment",
            "deploy",
            "configmaps",
            "services",
        ];
        assert_eq!(closest("deploymnet", types), Some("deployment"));
        assert_eq!(closest("confgmaps", types), Some("configmaps"));
        assert_eq!(closest("Servics", types), Some("services"));
        assert_eq!(closest("ingress", types), None);
        let names = ["frontend", "frontend-config", "cartservice"];
        assert_eq!(closest("frontedn", names), Some("frontend"));
        assert_eq!(closest("zzz", names), None);
        assert_eq!(closest("x", []), None);
    }
}
