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

/// Feed lines fit this many columns where there is no terminal to fit.
pub const FEED_WIDTH: usize = 120;

/// Where the lines below a feed line's head start: under its type.
pub const FEED_INDENT: usize = 9;

/// `text` with every line longer than `width` broken into pieces of at most
/// `width` columns, each piece after the first indented by `indent` (a
/// hanging indent), so a terminal never wraps a line in the middle of a value
/// at column 0. Breaks at a space when one is near the end, else anywhere.
pub fn hang(text: &str, width: usize, indent: usize) -> String {
    let width = width.max(indent + 10);
    let mut lines: Vec<String> = Vec::new();
    for line in text.split('\n') {
        let mut rest: Vec<char> = line.chars().collect();
        let mut lead = 0;
        loop {
            let room = width - lead;
            if rest.len() <= room {
                lines.push(format!(
                    "{}{}",
                    " ".repeat(lead),
                    rest.iter().collect::<String>()
                ));
                break;
            }
            // A space in the last quarter of the room breaks more kindly.
            let cut = (room * 3 / 4..room)
                .rev()
                .find(|&i| rest[i] == ' ')
                .map_or(room, |i| i + 1);
            let piece: String = rest[..cut].iter().collect();
            lines.push(format!("{}{}", " ".repeat(lead), piece.trim_end()));
            rest.drain(..cut);
            while rest.first() == Some(&' ') {
                rest.remove(0);
            }
            lead = indent;
        }
    }
    lines.join("\n")
}

impl FeedItem {
    /// `12:04:31 MODIFIED deployment/frontend -n shop  spec.replicas: 1 -> 3  (kubectl-scale)`,
    /// within [`FEED_WIDTH`].
    pub fn line(&self) -> String {
        self.line_within(FEED_WIDTH)
    }

    /// [`FeedItem::line`] within `width` columns (a terminal's): the fields
    /// below the head when they do not fit beside it, and any line still too
    /// long broken with a hanging indent ([`hang`]).
    pub fn line_within(&self, width: usize) -> String {
        hang(&self.unbroken(width), width, FEED_INDENT)
    }

    fn unbroken(&self, width: usize) -> String {
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
        let room = width.saturating_sub(head.chars().count() + 2);
        match fields_after(&self.fields, room, FEED_INDENT, Some(width)) {
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
    for (i, paragraph) in text.split('\n').enumerate() {
        // A line of its own (a `hint:`) starts at the margin.
        if i > 0 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::new();
            fresh = true;
        }
        wrap_words(&mut out, &mut line, &mut fresh, paragraph, width);
    }
    out.push_str(&line);
    out
}

/// [`wrap`]'s words of one paragraph onto `line`, lines full into `out`.
fn wrap_words(out: &mut String, line: &mut String, fresh: &mut bool, text: &str, width: usize) {
    for word in text.split(' ') {
        let len = line.chars().count();
        if !*fresh && len + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            *line = "    ".to_string();
            *fresh = true;
        }
        if !*fresh {
            line.push(' ');
        }
        line.push_str(word);
        *fresh = false;
    }
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
    /// What retention behind the recorder did, when it was asked to.
    pub retention: Option<RetentionSummary>,
    /// What folding behind the recorder did, when it folded anything.
    pub folded: Option<FoldSummary>,
}

/// What a recorder folded into blocks behind itself in one run
/// (docs/journal.md, "Cold history in blocks").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldSummary {
    pub records: u64,
    /// The longest any step held the journal writer.
    pub longest_step: Duration,
}

/// What `record --retain` / `--max-size` pruned in one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionSummary {
    pub records_deleted: u64,
    pub objects_deleted: u64,
    /// The longest any step held the journal writer.
    pub longest_step: Duration,
    /// The latest cut carried out (ms).
    pub cut: Option<i64>,
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

/// A short duration in milliseconds, to a tenth: `3.2 ms`.
fn format_ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
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
    if let Some(r) = &summary.retention {
        text.push_str(&match r.cut {
            Some(cut) => format!(
                "retention: history before {} pruned ({} record(s), {} object(s)); no step held the writer longer than {}\n",
                super::clock::clock().stamp(cut),
                r.records_deleted,
                r.objects_deleted,
                format_ms(r.longest_step)
            ),
            None => "retention: nothing old enough to prune yet\n".to_string(),
        });
    }
    if let Some(f) = &summary.folded {
        text.push_str(&format!(
            "history: {} record(s) folded into blocks behind the recorder; no step held the writer longer than {}\n",
            f.records,
            format_ms(f.longest_step)
        ));
    }
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

    #[test]
    fn a_long_line_hangs_under_its_head_and_never_exceeds_the_width() {
        let line = format!(
            "10:00:00 MODIFIED configmap/x -n shop  data.k: {} -> b",
            "a".repeat(90)
        );
        let hung = hang(&line, 60, FEED_INDENT);
        for (i, l) in hung.lines().enumerate() {
            assert!(l.chars().count() <= 60, "{hung}");
            if i > 0 {
                assert!(
                    l.starts_with("         ") && !l[9..].starts_with(' '),
                    "{hung}"
                );
            }
        }
        assert_eq!(
            hung.replace(&format!("\n{}", " ".repeat(9)), "")
                .replace(' ', ""),
            line.replace(' ', "")
        );
        assert_eq!(hang("short", 60, 9), "short");
    }

    use super::*;
    use crate::diff::{FieldChange, parse_path};
    use serde_json::json;

    #[test]
    fn long_notices_wrap_between_words() {
        let text = "history lost (410 Expired: too old resource version: 50 (50) (in watch stream)): gap recorded, relisting";
        let hinted = wrap(
            "warning: x  ",
            "it failed\nhint: log in again and the recorder goes on by itself",
            30,
        );
        assert_eq!(
            hinted,
            "warning: x  it failed\nhint: log in again and the\n    recorder goes on by itself"
        );
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
