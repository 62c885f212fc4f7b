//! What `record` shows while it runs, as text (docs/output.md): the feed's
//! lines (one per recorded change, its fields after it), each stream's live
//! line, notices broken between words, and the summary when it stops. The
//! recorder's display (`recorder/display.rs`) draws them on the terminal or
//! writes them to stderr.

use super::fields::fields_after;
use crate::history::diff::Field;
use std::time::Duration;

/// One recorded change for the feed.
#[derive(Debug, Clone)]
pub struct FeedItem {
    /// When it was observed.
    pub at: i64,
    pub event: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// For a modification: what changed, old and new, and who owns it now.
    pub fields: Vec<Field>,
}

/// Feed lines fit this many columns.
pub const FEED_WIDTH: usize = 120;

impl FeedItem {
    /// `12:04:31 MODIFIED deployment/frontend -n shop  spec.replicas: 1 -> 3  (kubectl-scale)`
    pub fn line(&self) -> String {
        let who = if self.namespace.is_empty() {
            format!("{}/{}", self.kind.to_ascii_lowercase(), self.name)
        } else {
            format!(
                "{}/{} -n {}",
                self.kind.to_ascii_lowercase(),
                self.name,
                self.namespace
            )
        };
        let head = format!("{} {:<8} {who}", clock(self.at), self.event);
        if self.fields.is_empty() {
            return head;
        }
        let room = FEED_WIDTH.saturating_sub(head.chars().count() + 2);
        match fields_after(&self.fields, room, 9, Some(FEED_WIDTH)) {
            below if below.starts_with('\n') => format!("{head}{below}"),
            inline => format!("{head}  {inline}"),
        }
    }
}

/// `HH:MM:SS` of a time, in the zone text is shown in (named when recording
/// starts).
pub fn clock(at: i64) -> String {
    crate::render::clock::clock().time_s(at)
}

/// `HH:MM:SS.mmm` of a time, in the zone text is shown in.
pub fn clock_ms(at: i64) -> String {
    crate::render::clock::clock().time(at)
}

/// `watching               events      12  rv 4711         gaps 0`: a
/// stream's live line, from its phase's label, its events, the last
/// resourceVersion it saw and its gaps.
pub fn progress_line(phase: &str, events: u64, last_rv: &str, gaps: u64) -> String {
    format!(
        "{:<22} events {:>7}  rv {:<12} gaps {}",
        phase,
        events,
        if last_rv.is_empty() { "-" } else { last_rv },
        gaps
    )
}

/// `head` then `text`, broken between words into lines of at most `width`
/// characters, the later ones indented by four.
pub fn wrap(head: &str, text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = head.to_string();
    let mut fresh = true;
    for word in text.split(' ') {
        let len = line.chars().count();
        if !fresh && len + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = "    ".to_string();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    out.push_str(&line);
    out
}

/// What one stream recorded in this run.
#[derive(Debug, Clone)]
pub struct StreamSummary {
    pub name: String,
    /// Events made durable in this run (redeliveries excluded).
    pub events: u64,
    pub gaps: u64,
    pub last_rv: String,
    /// Why the stream could not be recorded, when it ended unavailable.
    pub unavailable: Option<String>,
    /// Changes the relists of this run found that no watch saw (changed,
    /// created or deleted while nobody watched).
    pub found_by_relists: u64,
}

/// What one run of `record` recorded, as it says when it stops.
#[derive(Debug, Clone)]
pub struct RecordSummary {
    pub cluster_id: String,
    pub elapsed: Duration,
    pub streams: Vec<StreamSummary>,
}

impl RecordSummary {
    pub fn events(&self) -> u64 {
        self.streams.iter().map(|s| s.events).sum()
    }
    pub fn gaps(&self) -> u64 {
        self.streams.iter().map(|s| s.gaps).sum()
    }
    pub fn found_by_relists(&self) -> u64 {
        self.streams.iter().map(|s| s.found_by_relists).sum()
    }
}

/// The final summary: totals, the journal's path, and one line per stream.
pub fn summary(summary: &RecordSummary, path: &std::path::Path) -> String {
    let mut text = format!(
        "recorded {} event(s) in {} stream(s) over {}; {} gap(s); {} change(s) found by relists\njournal {}\n",
        summary.events(),
        summary.streams.len(),
        crate::time::format_duration(summary.elapsed),
        summary.gaps(),
        summary.found_by_relists(),
        path.display()
    );
    for s in &summary.streams {
        text.push_str(&match &s.unavailable {
            // Nothing it says about events could be trusted: it never read them.
            Some(why) => format!("  {:<40} unavailable: {why}\n", s.name),
            None => format!(
                "  {:<40} events {:>6}  gaps {}  last rv {}{}\n",
                s.name,
                s.events,
                s.gaps,
                if s.last_rv.is_empty() {
                    "-"
                } else {
                    &s.last_rv
                },
                match s.found_by_relists {
                    0 => String::new(),
                    n => format!("  found by relists {n}"),
                }
            ),
        });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{FieldChange, parse_path};
    use serde_json::json;

    #[test]
    fn long_notices_wrap_between_words() {
        let text = "history lost (410 Expired: too old resource version: 50 (50) (in watch stream)): gap recorded, relisting";
        let out = wrap("warning: configmaps.v1@shop  ", text, 60);
        for line in out.lines() {
            assert!(line.chars().count() <= 60, "{out}");
        }
        assert_eq!(
            out.replace("\n    ", " "),
            format!("warning: configmaps.v1@shop  {text}")
        );
        assert_eq!(wrap("a  ", "short", 60), "a  short");
    }

    #[test]
    fn a_feed_line_has_the_time_the_values_and_the_manager_within_the_width() {
        let item = FeedItem {
            at: 1_795_946_400_000,
            event: "MODIFIED".into(),
            kind: "Deployment".into(),
            namespace: "shop".into(),
            name: "productcatalogservice".into(),
            fields: vec![Field {
                change: FieldChange {
                    path: parse_path("spec.template.spec.containers[0].image").unwrap(),
                    before: Some(json!(
                        "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6"
                    )),
                    after: Some(json!(
                        "us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
                    )),
                },
                manager: Some("helm".into()),
                by: Default::default(),
            }],
        };
        // Too long for the rest of the line: the field goes below it.
        let line = item.line();
        let (head, below) = line.split_once('\n').unwrap_or_else(|| panic!("{line}"));
        assert_eq!(
            head,
            "10:00:00 MODIFIED deployment/productcatalogservice -n shop  (helm)"
        );
        // The path, then each value whole on a line of its own.
        assert_eq!(
            below,
            "         spec.template.spec.containers[0].image:
           - us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6
           + us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
        );
        assert!(
            below.lines().all(|l| l.chars().count() <= FEED_WIDTH),
            "{below}"
        );
        let added = FeedItem {
            event: "ADDED".into(),
            fields: Vec::new(),
            ..item
        };
        assert_eq!(
            added.line(),
            "10:00:00 ADDED    deployment/productcatalogservice -n shop"
        );
    }
}
