//! The files of a partition directory as the log finds them at open.

use super::is_leftover;
use crate::vfs::Fs;
use std::io;
use std::path::Path;

/// Base offsets of the `.log` files in `dir`, ascending (`[0]` when none); removes leftovers and
/// index files without a `.log`.
pub(super) fn segment_bases(fs: &Fs, dir: &Path) -> io::Result<Vec<i64>> {
    let mut bases = Vec::new();
    for entry in fs.read_dir(dir)? {
        let name = entry.name;
        if is_leftover(&name) {
            let _ = fs.remove_file(&dir.join(&name));
            continue;
        }
        if let Some(stem) = name.strip_suffix(".log") {
            if let Ok(o) = stem.parse::<i64>() {
                bases.push(o);
            }
        }
    }
    bases.sort_unstable();
    // Index files whose .log is missing are stale.
    for entry in fs.read_dir(dir)? {
        let name = entry.name;
        for suffix in [".index", ".timeindex", ".txnindex"] {
            if let Some(stem) = name.strip_suffix(suffix) {
                if let Ok(o) = stem.parse::<i64>() {
                    if bases.binary_search(&o).is_err() {
                        let _ = fs.remove_file(&dir.join(&name));
                    }
                }
            }
        }
    }
    if bases.is_empty() {
        bases.push(0);
    }
    Ok(bases)
}
