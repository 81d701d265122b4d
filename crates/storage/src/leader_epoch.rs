//! Leader epoch cache of one partition (Kafka's `LeaderEpochFileCache`).

use crate::checkpoint::write_atomically;
use crate::vfs::{real_fs, Fs};
use std::io;
use std::path::{Path, PathBuf};
use types::{LeaderEpoch, Offset};

/// File name inside the partition directory (Kafka's).
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

/// (leader epoch, start offset) pairs: the first offset each leader epoch wrote.
///
/// On-disk format (Kafka's checkpoint text format), file `leader-epoch-checkpoint`:
/// `0\n<n>\n<epoch> <start_offset>\n...`, rewritten atomically (temp + fsync + rename) on every
/// change — rare: once per leader change. Epochs and start offsets strictly increase.
///
/// Recovery rule: loaded at open; entries at or beyond the recovered log end are dropped.
#[derive(Debug)]
pub struct LeaderEpochFileCache {
    fs: Fs,
    path: PathBuf,
    entries: Vec<(LeaderEpoch, Offset)>,
}

impl LeaderEpochFileCache {
    /// Loads the cache of partition directory `dir` (empty when the file is missing or
    /// malformed).
    pub fn load(dir: &Path) -> Self {
        Self::load_in(real_fs(), dir)
    }

    /// [`load`](Self::load) on `fs`.
    pub fn load_in(fs: Fs, dir: &Path) -> Self {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT);
        let entries = fs
            .read(&path)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| parse(&s))
            .unwrap_or_default();
        LeaderEpochFileCache { fs, path, entries }
    }

    /// The entries, ascending.
    pub fn entries(&self) -> &[(LeaderEpoch, Offset)] {
        &self.entries
    }

    /// The latest epoch, if any.
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.entries.last().map(|e| e.0)
    }

    /// Records that `epoch` starts at `start_offset` when it is newer than the latest epoch.
    /// Entries with a start offset >= `start_offset` but an older epoch are replaced (Kafka's
    /// `assign`).
    pub fn assign(&mut self, epoch: LeaderEpoch, start_offset: Offset) -> io::Result<()> {
        if epoch.get() < 0 || self.latest_epoch().is_some_and(|l| epoch <= l) {
            return Ok(());
        }
        self.entries.retain(|e| e.1 < start_offset);
        self.entries.push((epoch, start_offset));
        self.persist()
    }

    /// Kafka's `endOffsetFor`: (epoch, end offset) for OffsetForLeaderEpoch. The requested epoch
    /// equal to the latest → (latest, `log_end_offset`); else the start offset of the first
    /// higher epoch, with the largest epoch <= requested (or the requested one when all are
    /// higher). Unknown/undefined → (-1, -1) ([`LeaderEpoch::NONE`], [`Offset::NONE`]).
    pub fn end_offset_for(
        &self,
        requested: LeaderEpoch,
        log_end_offset: Offset,
    ) -> (LeaderEpoch, Offset) {
        const UNDEFINED: (LeaderEpoch, Offset) = (LeaderEpoch::NONE, Offset::NONE);
        if requested.get() < 0 {
            return UNDEFINED;
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end_offset);
        }
        let Some(higher) = self.entries.iter().find(|e| e.0 > requested) else {
            return UNDEFINED;
        };
        match self.entries.iter().rev().find(|e| e.0 <= requested) {
            Some(floor) => (floor.0, higher.1),
            None => (requested, higher.1),
        }
    }

    /// Drops entries starting at or after `end_offset` (log truncation).
    pub fn truncate_from_end(&mut self, end_offset: Offset) -> io::Result<()> {
        let before = self.entries.len();
        self.entries.retain(|e| e.1 < end_offset);
        if self.entries.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// Drops entries wholly below `start_offset`, moving the last one up to it (log start
    /// advanced).
    pub fn truncate_from_start(&mut self, start_offset: Offset) -> io::Result<()> {
        let Some(idx) = self.entries.iter().rposition(|e| e.1 <= start_offset) else {
            return Ok(());
        };
        if idx == 0 && self.entries[0].1 == start_offset {
            return Ok(());
        }
        let epoch = self.entries[idx].0;
        self.entries.drain(..=idx);
        self.entries.insert(0, (epoch, start_offset));
        self.persist()
    }

    /// Removes everything (log fully truncated).
    pub fn clear(&mut self) -> io::Result<()> {
        if !self.entries.is_empty() {
            self.entries.clear();
            self.persist()?;
        }
        Ok(())
    }

    fn persist(&self) -> io::Result<()> {
        let mut s = format!("0\n{}\n", self.entries.len());
        for (e, o) in &self.entries {
            s.push_str(&format!("{e} {o}\n"));
        }
        write_atomically(&self.fs, &self.path, s.as_bytes())
    }
}

fn parse(s: &str) -> Option<Vec<(LeaderEpoch, Offset)>> {
    let mut lines = s.lines();
    if lines.next()?.trim() != "0" {
        return None;
    }
    let n: usize = lines.next()?.trim().parse().ok()?;
    let mut out = Vec::with_capacity(n.min(1024));
    for line in lines.take(n) {
        let mut it = line.split_whitespace();
        let e: i32 = it.next()?.parse().ok()?;
        let o: i64 = it.next()?.parse().ok()?;
        if out
            .last()
            .is_some_and(|l: &(LeaderEpoch, Offset)| l.0.get() >= e || l.1.get() > o)
        {
            return None;
        }
        out.push((LeaderEpoch(e), Offset(o)));
    }
    (out.len() == n).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(epoch: i32, offset: i64) -> (LeaderEpoch, Offset) {
        (LeaderEpoch(epoch), Offset(offset))
    }

    #[test]
    fn assign_lookup_truncate_persist() {
        let d = tempfile::tempdir().unwrap();
        let mut c = LeaderEpochFileCache::load(d.path());
        c.assign(LeaderEpoch(0), Offset(0)).unwrap();
        c.assign(LeaderEpoch(0), Offset(5)).unwrap(); // same epoch: ignored
        c.assign(LeaderEpoch(2), Offset(10)).unwrap();
        c.assign(LeaderEpoch(5), Offset(20)).unwrap();
        assert_eq!(c.entries(), &[e(0, 0), e(2, 10), e(5, 20)]);
        assert_eq!(c.end_offset_for(LeaderEpoch(5), Offset(30)), e(5, 30));
        assert_eq!(c.end_offset_for(LeaderEpoch(2), Offset(30)), e(2, 20));
        assert_eq!(c.end_offset_for(LeaderEpoch(3), Offset(30)), e(2, 20));
        assert_eq!(c.end_offset_for(LeaderEpoch(0), Offset(30)), e(0, 10));
        assert_eq!(c.end_offset_for(LeaderEpoch(6), Offset(30)), e(-1, -1));
        assert_eq!(c.end_offset_for(LeaderEpoch(-1), Offset(30)), e(-1, -1));
        let c2 = LeaderEpochFileCache::load(d.path());
        assert_eq!(c2.entries(), c.entries());
        assert_eq!(
            std::fs::read_to_string(d.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap(),
            "0\n3\n0 0\n2 10\n5 20\n"
        );
        c.truncate_from_end(Offset(15)).unwrap();
        assert_eq!(c.entries(), &[e(0, 0), e(2, 10)]);
        c.truncate_from_start(Offset(12)).unwrap();
        assert_eq!(c.entries(), &[e(2, 12)]);
        c.clear().unwrap();
        assert!(LeaderEpochFileCache::load(d.path()).entries().is_empty());
    }
}
