//! The controller's `directory.id` (KIP-853's `ReplicaDirectoryId`), kept in `<data_dir>/meta.properties`
//! in Kafka's format, where `kafka-metadata-quorum.sh add-controller --command-config` reads it (Kafka's
//! `MetaPropertiesEnsemble`: the metadata log dir is `metadata.log.dir`, else the first of `log.dirs`).
//!
//! The file is Kafka's version 1 `meta.properties`: `key=value` lines, `#` comments, among them
//! `version=1`, `cluster.id=<22-char base64url UUID>`, `node.id=<n>` and `directory.id=<22-char base64url
//! UUID>`. The directory id is written once, at the controller's first start: a missing file is created
//! with all four keys; an existing one (the broker of the same process writes `meta.properties` too) keeps
//! its lines and gains a `directory.id` line if it has none. Written atomically (tmp, fsync, rename, dir
//! fsync), through the controller's `storage::Fs`.

use std::io;
use std::path::Path;

use storage::Fs;

/// The file name.
pub const META_PROPERTIES: &str = "meta.properties";

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A UUID as Kafka prints it: 22 characters of unpadded base64url.
pub fn base64url(id: uuid::Uuid) -> String {
    let mut bits: u128 = id.as_u128();
    // 128 bits = 21 full sextets + 2 bits, the last character holding those 2 bits shifted left by 4.
    let mut out = vec![0u8; 22];
    out[21] = ALPHABET[((bits & 0b11) << 4) as usize];
    bits >>= 2;
    for slot in out[..21].iter_mut().rev() {
        *slot = ALPHABET[(bits & 0x3f) as usize];
        bits >>= 6;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Parses Kafka's textual UUID (22 characters of unpadded base64url). `None` when it is not one.
pub fn parse_base64url(s: &str) -> Option<uuid::Uuid> {
    let b = s.trim().as_bytes();
    if b.len() != 22 {
        return None;
    }
    let value = |c: u8| ALPHABET.iter().position(|&a| a == c).map(|p| p as u128);
    let mut bits: u128 = 0;
    for &c in &b[..21] {
        bits = (bits << 6) | value(c)?;
    }
    let last = value(b[21])?;
    if last & 0b1111 != 0 {
        return None;
    }
    Some(uuid::Uuid::from_u128((bits << 2) | (last >> 4)))
}

/// A fresh directory id: random (from `seed` when given: a simulation's), neither the zero UUID nor one
/// whose text starts with `-` (Kafka's `Uuid.randomUuid` rules).
fn random_directory_id(seed: Option<u64>) -> uuid::Uuid {
    use rand::{Rng, SeedableRng};
    let mut rng = match seed {
        Some(s) => rand::rngs::StdRng::seed_from_u64(s),
        None => rand::rngs::StdRng::from_entropy(),
    };
    loop {
        let id = uuid::Uuid::from_u128(rng.gen::<u128>());
        if !id.is_nil() && !base64url(id).starts_with('-') {
            return id;
        }
    }
}

/// The controller's directory id from `data_dir/meta.properties`, written there first if absent (see the
/// module doc); a new one is drawn from `seed` when given (a simulation's), else from entropy. Errors: I/O,
/// or a `directory.id` line that is not a base64url UUID.
pub fn ensure_directory_id(
    fs: &Fs,
    data_dir: &Path,
    node_id: i32,
    cluster_id: &str,
    seed: Option<u64>,
) -> io::Result<uuid::Uuid> {
    let path = data_dir.join(META_PROPERTIES);
    let text = match fs.read(&path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let existing = text.as_deref().and_then(|t| {
        t.lines()
            .find_map(|l| l.trim().strip_prefix("directory.id="))
            .map(str::to_string)
    });
    if let Some(v) = existing {
        return parse_base64url(&v).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: directory.id {v:?} is not a UUID", path.display()),
            )
        });
    }
    let id = random_directory_id(seed);
    let mut out = match text {
        Some(t) => t,
        None => format!("#Runnel\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"),
    };
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("directory.id={}\n", base64url(id)));
    let tmp = data_dir.join(format!("{META_PROPERTIES}.tmp"));
    {
        let f = fs.create(&tmp)?;
        f.write_all_at(out.as_bytes(), 0)?;
        f.sync_all()?;
    }
    fs.rename(&tmp, &path)?;
    fs.sync_dir(data_dir)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_round_trips_as_kafka_prints_uuids() {
        // Kafka's Uuid.METADATA_TOPIC_ID (0, 1) prints as AAAAAAAAAAAAAAAAAAAAAQ.
        assert_eq!(
            base64url(uuid::Uuid::from_u128(1)),
            "AAAAAAAAAAAAAAAAAAAAAQ"
        );
        assert_eq!(base64url(uuid::Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        for _ in 0..100 {
            let id = random_directory_id(None);
            assert_eq!(parse_base64url(&base64url(id)), Some(id));
        }
        assert_eq!(parse_base64url("short"), None);
        assert_eq!(parse_base64url("AAAAAAAAAAAAAAAAAAAAAB"), None); // stray low bits
    }

    #[test]
    fn directory_id_is_written_once_and_keeps_other_lines() {
        let dir = tempfile::tempdir().unwrap();
        let fs = storage::real_fs();
        let first = ensure_directory_id(&fs, dir.path(), 3, "abc", None).unwrap();
        let again = ensure_directory_id(&fs, dir.path(), 3, "abc", None).unwrap();
        assert_eq!(first, again);
        let text = std::fs::read_to_string(dir.path().join(META_PROPERTIES)).unwrap();
        assert!(
            text.contains("version=1\ncluster.id=abc\nnode.id=3\n"),
            "{text}"
        );
        // A broker's file without a directory id gains one line.
        let other = tempfile::tempdir().unwrap();
        let broker = "#Runnel\nversion=1\ncluster.id=xyz\nnode.id=1";
        std::fs::write(other.path().join(META_PROPERTIES), broker).unwrap();
        let id = ensure_directory_id(&fs, other.path(), 1, "ignored", Some(7)).unwrap();
        let text = std::fs::read_to_string(other.path().join(META_PROPERTIES)).unwrap();
        assert_eq!(text, format!("{broker}\ndirectory.id={}\n", base64url(id)));
    }
}
