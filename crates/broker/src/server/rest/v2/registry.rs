//! The consumer instances this broker holds, by group and instance name (no I/O; time is passed in): at
//! most a fixed number of them, each forgotten once idle (not used by any request) for longer than the
//! instance timeout — the caller closes what [`Registry::expire`] hands back.

use std::collections::HashMap;

/// Why an instance could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryError {
    /// An instance of that name exists in the group.
    Exists,
    /// The registry holds its maximum number of instances.
    Full,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    last_used_ms: i64,
}

/// Instances keyed by `(group, name)`, with their last use (ms since the epoch).
#[derive(Debug)]
pub struct Registry<V> {
    entries: HashMap<(String, String), Entry<V>>,
    max_instances: usize,
    timeout_ms: i64,
}

impl<V: Clone> Registry<V> {
    /// An empty registry of at most `max_instances`, each expiring after `timeout_ms` idle.
    pub fn new(max_instances: usize, timeout_ms: i64) -> Registry<V> {
        Registry {
            entries: HashMap::new(),
            max_instances,
            timeout_ms,
        }
    }

    /// Adds `value` as `name` in `group`, used at `now_ms`. An expired instance not yet taken by
    /// [`expire`](Self::expire) still holds its name.
    pub fn insert(
        &mut self,
        group: &str,
        name: &str,
        value: V,
        now_ms: i64,
    ) -> Result<(), RegistryError> {
        let key = (group.to_string(), name.to_string());
        if self.entries.contains_key(&key) {
            return Err(RegistryError::Exists);
        }
        if self.entries.len() >= self.max_instances {
            return Err(RegistryError::Full);
        }
        let entry = Entry {
            value,
            last_used_ms: now_ms,
        };
        self.entries.insert(key, entry);
        Ok(())
    }

    /// The instance `name` of `group`, marked used at `now_ms`; `None` when there is none or it has been
    /// idle longer than the timeout.
    pub fn get(&mut self, group: &str, name: &str, now_ms: i64) -> Option<V> {
        let timeout_ms = self.timeout_ms;
        let key = (group.to_string(), name.to_string());
        let entry = self.entries.get_mut(&key)?;
        if now_ms.saturating_sub(entry.last_used_ms) > timeout_ms {
            return None;
        }
        entry.last_used_ms = entry.last_used_ms.max(now_ms);
        Some(entry.value.clone())
    }

    /// Removes and returns the instance `name` of `group`.
    pub fn remove(&mut self, group: &str, name: &str) -> Option<V> {
        let key = (group.to_string(), name.to_string());
        self.entries.remove(&key).map(|e| e.value)
    }

    /// Removes and returns every instance idle for longer than the timeout at `now_ms`.
    pub fn expire(&mut self, now_ms: i64) -> Vec<V> {
        let timeout_ms = self.timeout_ms;
        let idle = |e: &Entry<V>| now_ms.saturating_sub(e.last_used_ms) > timeout_ms;
        let keys: Vec<_> = (self.entries.iter())
            .filter(|(_, e)| idle(e))
            .map(|(k, _)| k.clone())
            .collect();
        let removed = keys.iter().filter_map(|k| self.entries.remove(k));
        removed.map(|e| e.value).collect()
    }

    /// How many instances there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_per_group_and_bounded() {
        let mut r = Registry::new(2, 1000);
        assert_eq!(r.insert("g", "a", 1, 0), Ok(()));
        assert_eq!(r.insert("g", "a", 2, 0), Err(RegistryError::Exists));
        assert_eq!(r.insert("h", "a", 3, 0), Ok(()));
        assert_eq!(r.insert("g", "b", 4, 0), Err(RegistryError::Full));
        assert_eq!(r.get("g", "a", 10), Some(1));
        assert_eq!(r.get("g", "b", 10), None);
        assert_eq!(r.remove("g", "a"), Some(1));
        assert_eq!(r.insert("g", "b", 4, 0), Ok(()));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn idle_instances_expire_and_use_keeps_them() {
        let mut r = Registry::new(10, 1000);
        r.insert("g", "a", 1, 0).unwrap();
        r.insert("g", "b", 2, 0).unwrap();
        assert_eq!(r.get("g", "a", 900), Some(1));
        assert!(r.expire(1000).is_empty());
        // b idle 1001 ms: gone from get at once, and taken by expire; a was used at 900.
        assert_eq!(r.get("g", "b", 1001), None);
        assert_eq!(r.expire(1001), vec![2]);
        assert_eq!(r.get("g", "a", 1900), Some(1));
        assert_eq!(r.expire(2901), vec![1]);
        assert!(r.is_empty());
        // A clock going backwards never makes an instance look older.
        r.insert("g", "c", 3, 5000).unwrap();
        assert_eq!(r.get("g", "c", 4000), Some(3));
        assert!(r.expire(5500).is_empty());
    }
}
