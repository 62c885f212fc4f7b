//! `import` as a table (docs/output.md): what became of each Parquet segment
//! file brought into the journal.

use crate::segments::import::Imported;

/// One row per segment file: its cluster, stream and day, the rows it held,
/// those added, and what became of it.
pub fn table(done: &[Imported]) -> String {
    let rows: Vec<Vec<String>> = done
        .iter()
        .map(|d| {
            // The cluster and stream name the file's directories: its own
            // name (the day) is enough here; JSON keeps the whole path.
            let file = std::path::Path::new(&d.path)
                .file_name()
                .map_or_else(|| d.path.clone(), |f| f.to_string_lossy().into_owned());
            vec![
                d.cluster.clone(),
                d.stream.clone(),
                file,
                d.rows.to_string(),
                d.added.to_string(),
                if d.gap_before {
                    format!("{} (gap before)", d.result)
                } else {
                    d.result.to_string()
                },
            ]
        })
        .collect();
    super::table(
        &["CLUSTER", "STREAM", "FILE", "ROWS", "ADDED", "RESULT"],
        &rows,
    )
}
