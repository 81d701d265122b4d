//! Kafka's offset checkpoint files and `partition.metadata`.

use crate::vfs::{real_fs, Fs};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// A checkpoint file mapping (topic, partition) → offset, Kafka's text format:
///
/// ```text
/// 0                      version
/// 2                      number of entries
/// my-topic 0 1234        "<topic> <partition> <offset>" per line
/// other 3 0
/// ```
///
/// Written atomically: temp file, fsync, rename, fsync of the directory. A missing file reads
/// as empty; a malformed one is an `InvalidData` error.
#[derive(Debug, Clone)]
pub struct OffsetCheckpointFile {
    fs: Fs,
    path: PathBuf,
}

impl OffsetCheckpointFile {
    /// The checkpoint at `path` on the real file system.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self::new_in(real_fs(), path)
    }

    /// The checkpoint at `path` on `fs`.
    pub fn new_in(fs: Fs, path: impl Into<PathBuf>) -> Self {
        OffsetCheckpointFile {
            fs,
            path: path.into(),
        }
    }

    /// Writes all entries.
    pub fn write(&self, entries: &HashMap<(String, i32), i64>) -> io::Result<()> {
        let mut s = format!("0\n{}\n", entries.len());
        let mut v: Vec<_> = entries.iter().collect();
        v.sort();
        for ((t, p), o) in v {
            s.push_str(&format!("{t} {p} {o}\n"));
        }
        write_atomically(&self.fs, &self.path, s.as_bytes())
    }

    /// Reads all entries (empty when the file doesn't exist).
    pub fn read(&self) -> io::Result<HashMap<(String, i32), i64>> {
        let s = match self.fs.read(&self.path) {
            Ok(b) => {
                String::from_utf8(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(e),
        };
        let bad = |m: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {m}", self.path.display()),
            )
        };
        let mut lines = s.lines();
        if lines.next().map(str::trim) != Some("0") {
            return Err(bad("unsupported checkpoint version"));
        }
        let n: usize = lines
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| bad("bad entry count"))?;
        let mut out = HashMap::new();
        for line in lines.by_ref().take(n) {
            let mut it = line.split_whitespace();
            let (Some(t), Some(p), Some(o), None) = (it.next(), it.next(), it.next(), it.next())
            else {
                return Err(bad("bad entry line"));
            };
            let p: i32 = p.parse().map_err(|_| bad("bad partition"))?;
            let o: i64 = o.parse().map_err(|_| bad("bad offset"))?;
            out.insert((t.to_string(), p), o);
        }
        if out.len() != n {
            return Err(bad("entry count mismatch"));
        }
        Ok(out)
    }
}

/// Writes `data` to `path` via a temp file + fsync + rename + directory fsync.
pub(crate) fn write_atomically(fs: &Fs, path: &Path, data: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let f = fs.create(&tmp)?;
        f.write_all_at(data, 0)?;
        f.sync_all()?;
    }
    fs.rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        fs.sync_dir(dir)?;
    }
    Ok(())
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Kafka's `Uuid.toString()`: URL-safe base64 without padding (22 chars).
pub(crate) fn uuid_to_base64(u: &uuid::Uuid) -> String {
    let b = u.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &x)| acc | (x as u32) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Inverse of [`uuid_to_base64`].
pub(crate) fn uuid_from_base64(s: &str) -> Option<uuid::Uuid> {
    let s = s.as_bytes();
    if s.len() != 22 {
        return None;
    }
    let mut bytes = Vec::with_capacity(16);
    for chunk in s.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            let v = B64.iter().position(|&x| x == c)? as u32;
            n |= v << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            bytes.push((n >> (16 - 8 * i)) as u8);
        }
    }
    uuid::Uuid::from_slice(&bytes).ok()
}

/// `partition.metadata` (Kafka's format): `version: 0\ntopic_id: <base64url uuid>\n`.
pub(crate) fn write_partition_metadata(
    fs: &Fs,
    dir: &Path,
    topic_id: &uuid::Uuid,
) -> io::Result<()> {
    let s = format!("version: 0\ntopic_id: {}\n", uuid_to_base64(topic_id));
    write_atomically(fs, &dir.join("partition.metadata"), s.as_bytes())
}

/// Reads `partition.metadata`; `None` when missing or unreadable.
pub(crate) fn read_partition_metadata(fs: &Fs, dir: &Path) -> Option<uuid::Uuid> {
    let s = String::from_utf8(fs.read(&dir.join("partition.metadata")).ok()?).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("topic_id:"))
        .and_then(|v| uuid_from_base64(v.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn checkpoint_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let f = OffsetCheckpointFile::new(d.path().join("cp"));
        assert!(f.read().unwrap().is_empty());
        let mut m = HashMap::new();
        m.insert(("a-b".to_string(), 0), 5);
        m.insert(("x".to_string(), 3), 0);
        f.write(&m).unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("cp")).unwrap(),
            "0\n2\na-b 0 5\nx 3 0\n"
        );
        assert_eq!(f.read().unwrap(), m);
        fs::write(d.path().join("cp"), "0\n3\na 0 1\n").unwrap();
        assert!(f.read().is_err());
    }

    #[test]
    fn uuid_base64() {
        for _ in 0..20 {
            let u = uuid::Uuid::new_v4();
            let s = uuid_to_base64(&u);
            assert_eq!(s.len(), 22);
            assert_eq!(uuid_from_base64(&s), Some(u));
        }
        // Kafka: Uuid(0, 1).toString() == "AAAAAAAAAAAAAAAAAAAAAQ"
        assert_eq!(
            uuid_to_base64(&uuid::Uuid::from_u128(1)),
            "AAAAAAAAAAAAAAAAAAAAAQ"
        );
        let d = tempfile::tempdir().unwrap();
        let u = uuid::Uuid::new_v4();
        write_partition_metadata(&real_fs(), d.path(), &u).unwrap();
        assert_eq!(read_partition_metadata(&real_fs(), d.path()), Some(u));
    }
}
