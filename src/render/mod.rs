//! Output: kubectl-style tables, JSON and YAML, and colour that follows
//! `--color`, `NO_COLOR` and whether stdout is a terminal.

pub mod audit;
pub mod bars;
pub mod clock;
pub mod coverage;
pub mod diff;
pub mod fields;
pub mod get;
pub mod import;
pub mod log;
pub mod plan;
pub mod record;
pub mod snapshot;
pub mod status;
pub mod timeline;
pub mod values;
pub mod warnings;

/// Text answers fit this many columns (docs/output.md: 120).
pub const TEXT_WIDTH: usize = 120;

/// The width text answers fit (docs/output.md): `None` for `-o wide`, which
/// never shortens; on a terminal, `COLUMNS` when set, else the terminal's
/// width; otherwise (a pipe, a file) [`TEXT_WIDTH`].
pub fn text_width(wide: bool) -> Option<usize> {
    let terminal = std::io::stdout().is_terminal();
    width_for(
        wide,
        terminal,
        std::env::var("COLUMNS").ok().as_deref(),
        terminal
            .then(|| crossterm::terminal::size().ok())
            .flatten()
            .map(|(w, _)| usize::from(w)),
    )
}

/// [`text_width`]'s decision, from what it read.
fn width_for(
    wide: bool,
    terminal: bool,
    columns: Option<&str>,
    size: Option<usize>,
) -> Option<usize> {
    if wide {
        return None;
    }
    if !terminal {
        return Some(TEXT_WIDTH);
    }
    let columns = columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    // Narrower than this, nothing reads well: lines wrap instead.
    Some(
        columns
            .or(size.filter(|&w| w > 0))
            .unwrap_or(TEXT_WIDTH)
            .max(40),
    )
}

use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table, presets};
use serde::Serialize;
use std::io::IsTerminal;

/// `-o` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    /// kubectl's `-o wide`: the table with every column (where a command has
    /// one; elsewhere `wide` is its table).
    Wide,
    Text,
    Json,
    Yaml,
    Unified,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Wide => "wide",
            Format::Text => "text",
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Unified => "unified",
        }
    }

    /// Parses `-o VALUE` against what a command supports; `None` picks `default`.
    pub fn choose(
        value: Option<&str>,
        default: Format,
        allowed: &[Format],
    ) -> Result<Format, String> {
        let Some(value) = value else {
            return Ok(default);
        };
        let f = match value.to_ascii_lowercase().as_str() {
            "wide" if allowed.contains(&Format::Wide) => Format::Wide,
            "table" | "wide" => Format::Table,
            "text" => Format::Text,
            "json" => Format::Json,
            "yaml" => Format::Yaml,
            "unified" => Format::Unified,
            _ => return Err(unsupported(value, allowed)),
        };
        if allowed.contains(&f) {
            Ok(f)
        } else {
            Err(unsupported(value, allowed))
        }
    }
}

fn unsupported(value: &str, allowed: &[Format]) -> String {
    let names: Vec<&str> = allowed.iter().map(|f| f.name()).collect();
    format!(
        "unsupported output format \"{value}\": use one of {}",
        names.join(", ")
    )
}

/// A kubectl-style table: upper-case headers, left-aligned columns three spaces
/// apart, no borders, no trailing spaces.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = Table::new();
    t.load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .force_no_tty()
        .set_header(headers.to_vec());
    for row in rows {
        t.add_row(row.clone());
    }
    let last = headers.len().saturating_sub(1);
    for (i, column) in t.column_iter_mut().enumerate() {
        column.set_padding((0, if i == last { 0 } else { 3 }));
        column.set_cell_alignment(CellAlignment::Left);
        column.set_constraint(ColumnConstraint::ContentWidth);
    }
    let mut out = String::new();
    for line in t.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn json<T: Serialize>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// Writes `value` as [`json`] makes it, as it goes: a large answer is not
/// first built whole in memory.
pub fn write_json<T: Serialize, W: std::io::Write>(value: &T, mut w: W) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut w, value).map_err(std::io::Error::from)?;
    w.write_all(b"\n")
}

/// Writes `frame` as [`write_json`] does, with `items`, each as `item` shows
/// it, in place of the empty list its last field holds: the list an answer is
/// made of (a `diff`'s objects), rendered in chunks on several threads and
/// written in order as each is ready. The bytes are those of `frame` holding
/// `items` written by [`write_json`]. On W-wide's 15,526 objects (9.9 MB)
/// rendering took a fifth of `diff -o json` on one thread; rendered whole in
/// two shares instead of chunks, the shares' growing buffers took a third of
/// the command's page faults (docs/journal.md, "Where the time of an answer
/// goes").
pub fn write_json_list<'a, F, S, T, W>(
    frame: &F,
    items: &'a [S],
    item: &(impl Fn(&'a S) -> T + Sync),
    mut w: W,
) -> std::io::Result<()>
where
    F: Serialize,
    S: Sync,
    T: Serialize,
    W: std::io::Write,
{
    /// How the pretty printer ends a value whose last field is an empty list.
    const EMPTY_LAST: &[u8] = b"[]\n}";
    let mut head = serde_json::to_vec_pretty(frame).map_err(std::io::Error::from)?;
    if items.is_empty() {
        w.write_all(&head)?;
        return w.write_all(b"\n");
    }
    if !head.ends_with(EMPTY_LAST) {
        return Err(std::io::Error::other(
            "internal error: a list answer's frame does not end with its empty list",
        ));
    }
    head.truncate(head.len() - EMPTY_LAST.len());
    w.write_all(&head)?;
    w.write_all(b"[\n")?;
    let chunks: Vec<&[S]> = items.chunks(JSON_CHUNK).collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get().min(4))
        .min(chunks.len());
    if threads < 2 {
        let mut buf = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            buf.clear();
            json_list_items(chunk, item, i == 0, &mut buf)?;
            w.write_all(&buf)?;
        }
    } else {
        write_chunks_in_order(&chunks, item, threads, &mut w)?;
    }
    w.write_all(b"\n  ]\n}\n")
}

/// Renders `chunks` on `threads` threads, thread `t` the chunks `t`, `t +
/// threads`, ..., and writes each to `w` in order as it comes. Each thread
/// has at most [`JSON_AHEAD`] chunks waiting to be written, and renders into
/// buffers written before, given back: memory stays a few chunks whatever the
/// answer. A failed write ends the threads (their sends fail).
fn write_chunks_in_order<'a, S: Sync, T: Serialize>(
    chunks: &[&'a [S]],
    item: &(impl Fn(&'a S) -> T + Sync),
    threads: usize,
    w: &mut impl std::io::Write,
) -> std::io::Result<()> {
    use std::sync::mpsc;
    std::thread::scope(|scope| {
        let mut lanes = Vec::with_capacity(threads);
        for t in 0..threads {
            let (send, rendered) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(JSON_AHEAD);
            let (give_back, returned) = mpsc::channel::<Vec<u8>>();
            scope.spawn(move || {
                for (i, chunk) in chunks.iter().enumerate().skip(t).step_by(threads) {
                    let mut buf = returned.try_recv().unwrap_or_default();
                    buf.clear();
                    let done = json_list_items(chunk, item, i == 0, &mut buf).map(|()| buf);
                    let failed = done.is_err();
                    // The writer gave up: so does this thread.
                    if send.send(done).is_err() || failed {
                        return;
                    }
                }
            });
            lanes.push((rendered, give_back));
        }
        for i in 0..chunks.len() {
            let (rendered, give_back) = &lanes[i % threads];
            let buf = rendered
                .recv()
                .unwrap_or_else(|_| Err(std::io::Error::other("a rendering thread failed")))?;
            w.write_all(&buf)?;
            // The thread may have ended: the buffer is then dropped here.
            let _ = give_back.send(buf);
        }
        Ok(())
    })
}

/// Items rendered together, as one piece of output.
const JSON_CHUNK: usize = 256;

/// How many rendered chunks a rendering thread may have waiting to be written.
const JSON_AHEAD: usize = 2;

/// `items` as elements of a list that is a top-level field, appended to
/// `out`: each pretty printed, every line indented by two levels, separated
/// by `,\n` (also before the first, unless `first`).
fn json_list_items<'a, S, T: Serialize>(
    items: &'a [S],
    item: impl Fn(&'a S) -> T,
    first: bool,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    const INDENT: &[u8] = b"    ";
    let mut one = Vec::new();
    for (i, x) in items.iter().enumerate() {
        if i > 0 || !first {
            out.extend_from_slice(b",\n");
        }
        one.clear();
        serde_json::to_writer_pretty(&mut one, &item(x)).map_err(std::io::Error::from)?;
        // A JSON string holds no raw newline: every one is between lines.
        let mut rest = &one[..];
        while let Some(n) = memchr::memchr(b'\n', rest) {
            out.extend_from_slice(INDENT);
            out.extend_from_slice(&rest[..=n]);
            rest = &rest[n + 1..];
        }
        out.extend_from_slice(INDENT);
        out.extend_from_slice(rest);
    }
    Ok(())
}

/// `value` as JSON for `-o json`, else as YAML (`-o yaml`).
pub fn structured<T: Serialize>(format: Format, value: &T) -> String {
    if format == Format::Json {
        json(value)
    } else {
        yaml(value)
    }
}

/// YAML as `kubectl get -o yaml` writes it: a string on one line stays on one
/// line however long (an image reference is never folded at 80 columns into a
/// `>-` block); a string with newlines is a literal `|` block.
pub fn yaml<T: Serialize>(value: &T) -> String {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.folded_wrap_chars = usize::MAX;
    match serde_saphyr::to_string_with_options(value, options) {
        Ok(s) if s.ends_with('\n') => s,
        Ok(s) => s + "\n",
        Err(e) => format!("# cannot render YAML: {e}\n"),
    }
}

/// `--color` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// Whether to colour stdout: `always`/`never` win, `auto` colours a terminal
/// unless `NO_COLOR` is set to anything non-empty.
pub fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}

/// Minimal ANSI styling.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    pub enabled: bool,
}

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    pub fn bold(self, t: &str) -> String {
        self.wrap("1", t)
    }
    pub fn red(self, t: &str) -> String {
        self.wrap("31", t)
    }
    pub fn green(self, t: &str) -> String {
        self.wrap("32", t)
    }
    pub fn yellow(self, t: &str) -> String {
        self.wrap("33", t)
    }
    pub fn dim(self, t: &str) -> String {
        self.wrap("2", t)
    }
}

/// `1.2 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_rendered_in_shares_is_the_list_written_whole() {
        #[derive(serde::Serialize)]
        struct Frame<T> {
            window: &'static str,
            nested: serde_json::Value,
            objects: Vec<T>,
        }
        let item = |i: usize| {
            serde_json::json!({
                "name": format!("web-{i}"),
                "text": "two\nlines \"quoted\"",
                "empty": {},
                "none": [],
                "fields": [{"path": ".spec", "before": null, "after": [1, {"x": i}]}],
            })
        };
        for n in [0, 1, 2, JSON_CHUNK - 1, JSON_CHUNK, JSON_CHUNK * 9 + 7] {
            let items: Vec<_> = (0..n).map(item).collect();
            let frame = |objects| Frame {
                window: "1h",
                nested: serde_json::json!({"a": [1, 2]}),
                objects,
            };
            let mut whole = Vec::new();
            write_json(&frame(items.clone()), &mut whole).unwrap();
            let mut shares = Vec::new();
            write_json_list(&frame(Vec::new()), &items, &|x| x, &mut shares).unwrap();
            assert_eq!(
                String::from_utf8(shares).unwrap(),
                String::from_utf8(whole).unwrap(),
                "{n} items"
            );
        }
    }

    #[test]
    fn a_writer_that_fails_ends_the_rendering_threads_with_its_error() {
        /// Takes `left` bytes, then fails as a closed pipe does.
        struct Closing {
            left: usize,
        }
        impl std::io::Write for Closing {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.left == 0 {
                    return Err(std::io::ErrorKind::BrokenPipe.into());
                }
                let n = buf.len().min(self.left);
                self.left -= n;
                Ok(n)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        #[derive(serde::Serialize)]
        struct Frame {
            objects: Vec<u64>,
        }
        let items: Vec<u64> = (0..JSON_CHUNK as u64 * 40).collect();
        let frame = Frame {
            objects: Vec::new(),
        };
        for left in [0, 10, 5_000, 100_000] {
            let err = write_json_list(&frame, &items, &|x| x, Closing { left }).unwrap_err();
            assert_eq!(
                err.kind(),
                std::io::ErrorKind::BrokenPipe,
                "after {left} bytes"
            );
        }
    }

    #[test]
    fn a_frame_without_its_list_last_is_refused() {
        #[derive(serde::Serialize)]
        struct Frame {
            objects: Vec<u8>,
            after: u8,
        }
        let frame = Frame {
            objects: Vec::new(),
            after: 1,
        };
        let err = write_json_list(&frame, &[1], &|x| x, Vec::new()).unwrap_err();
        assert!(err.to_string().contains("internal error"), "{err}");
    }

    #[test]
    fn tables_look_like_kubectl() {
        let out = table(
            &["NAME", "STATE", "EVENTS"],
            &[
                vec!["configmaps.v1@shop".into(), "watching".into(), "12".into()],
                vec!["x".into(), "".into(), "3".into()],
            ],
        );
        assert_eq!(
            out,
            "NAME                 STATE      EVENTS\nconfigmaps.v1@shop   watching   12\nx                               3\n"
        );
    }

    #[test]
    fn yaml_keeps_single_line_strings_on_one_line_as_kubectl_does() {
        let image = "us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7";
        let v = serde_json::json!({"image": image, "script": "set -e\necho hi\n", "args": ["--port", "8080"]});
        assert_eq!(
            yaml(&v),
            format!(
                "image: {image}\nscript: |\n  set -e\n  echo hi\nargs:\n- --port\n- \"8080\"\n"
            )
        );
    }

    #[test]
    fn text_fits_the_terminal_on_a_terminal_and_120_columns_elsewhere() {
        assert_eq!(width_for(true, true, Some("80"), Some(100)), None);
        assert_eq!(width_for(false, false, Some("80"), None), Some(TEXT_WIDTH));
        assert_eq!(width_for(false, true, Some("80"), Some(100)), Some(80));
        assert_eq!(width_for(false, true, None, Some(100)), Some(100));
        assert_eq!(width_for(false, true, Some("x"), None), Some(TEXT_WIDTH));
        assert_eq!(width_for(false, true, Some("20"), None), Some(40));
    }

    #[test]
    fn formats_are_checked() {
        assert_eq!(
            Format::choose(None, Format::Table, &[Format::Table]),
            Ok(Format::Table)
        );
        assert_eq!(
            Format::choose(Some("JSON"), Format::Table, &[Format::Table, Format::Json]),
            Ok(Format::Json)
        );
        assert_eq!(
            Format::choose(
                Some("unified"),
                Format::Table,
                &[Format::Table, Format::Json]
            )
            .unwrap_err(),
            "unsupported output format \"unified\": use one of table, json"
        );
    }

    #[test]
    fn bytes() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
