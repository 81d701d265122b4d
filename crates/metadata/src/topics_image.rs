//! [`TopicsImage`]: the topics of a [`crate::MetadataImage`] by name and by id (Kafka's `TopicsImage`,
//! with its `topicsByName` and `topicsById`).
//!
//! Both maps are persistent B-trees ([`imbl::OrdMap`]): cloning an image shares every topic and costs
//! O(1), a change copies only the O(log n) nodes on its path, and [`OrdMap::diff`] between two images that
//! share structure visits only the nodes that differ. So replaying a record, publishing an image and
//! comparing it with the previous one cost O(changes · log topics), not O(topics) (issue 13: creating a
//! topic must not get slower with the number of topics).
//!
//! Reads go through `Deref` to the by-name map (`get`, `iter`, `values`, `len`, `diff`, ...); changes go
//! through [`TopicsImage::insert`] and [`TopicsImage::remove`], which keep the id index in step. The JSON is
//! the by-name map alone (an object keyed by topic name, as when it was a `BTreeMap`); the id index is
//! rebuilt when it is read.

use std::ops::Deref;

use imbl::OrdMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use crate::image::TopicImage;

/// Topics by name, plus the index from topic id to name. Equality compares the topics only.
#[derive(Clone, Debug, Default)]
pub struct TopicsImage {
    by_name: OrdMap<String, TopicImage>,
    by_id: OrdMap<Uuid, String>,
}

impl TopicsImage {
    /// Adds or replaces topic `name` (O(log n)); returns the topic it replaced. The caller keeps ids
    /// unique: a topic of another name holding `topic.topic_id` must be removed first.
    pub fn insert(&mut self, name: String, topic: TopicImage) -> Option<TopicImage> {
        let id = topic.topic_id;
        let old = self.by_name.insert(name.clone(), topic);
        if let Some(o) = &old {
            if o.topic_id != id {
                self.by_id.remove(&o.topic_id);
            }
        }
        self.by_id.insert(id, name);
        old
    }

    /// Removes topic `name` (O(log n)); returns it.
    pub fn remove(&mut self, name: &str) -> Option<TopicImage> {
        let old = self.by_name.remove(name)?;
        if self.by_id.get(&old.topic_id).is_some_and(|n| n == name) {
            self.by_id.remove(&old.topic_id);
        }
        Some(old)
    }

    /// The name of the topic with id `id` (O(log n)).
    pub fn name_by_id(&self, id: Uuid) -> Option<&str> {
        self.by_id.get(&id).map(String::as_str)
    }

    /// The topic with id `id` (O(log n)).
    pub fn by_id(&self, id: Uuid) -> Option<&TopicImage> {
        self.name_by_id(id).and_then(|n| self.by_name.get(n))
    }

    /// Topic `name` for a change that keeps its id (partitions, configs).
    pub(crate) fn get_mut(&mut self, name: &str) -> Option<&mut TopicImage> {
        self.by_name.get_mut(name)
    }

    /// The topic with id `id`, for a change that keeps its id.
    pub(crate) fn by_id_mut(&mut self, id: Uuid) -> Option<&mut TopicImage> {
        let name = self.by_id.get(&id)?;
        self.by_name.get_mut(name.as_str())
    }
}

impl Deref for TopicsImage {
    type Target = OrdMap<String, TopicImage>;

    fn deref(&self) -> &Self::Target {
        &self.by_name
    }
}

impl PartialEq for TopicsImage {
    fn eq(&self, other: &Self) -> bool {
        self.by_name == other.by_name
    }
}

impl Eq for TopicsImage {}

impl FromIterator<(String, TopicImage)> for TopicsImage {
    fn from_iter<I: IntoIterator<Item = (String, TopicImage)>>(iter: I) -> Self {
        let mut topics = TopicsImage::default();
        for (name, topic) in iter {
            topics.insert(name, topic);
        }
        topics
    }
}

impl<'a> IntoIterator for &'a TopicsImage {
    type Item = (&'a String, &'a TopicImage);
    type IntoIter = imbl::ordmap::Iter<'a, String, TopicImage, imbl::shared_ptr::DefaultSharedPtr>;

    fn into_iter(self) -> Self::IntoIter {
        self.by_name.iter()
    }
}

impl Serialize for TopicsImage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.by_name.iter())
    }
}

impl<'de> Deserialize<'de> for TopicsImage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<String, TopicImage>::deserialize(d)?;
        Ok(map.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, id: u128) -> (String, TopicImage) {
        let t = TopicImage {
            name: name.into(),
            topic_id: Uuid::from_u128(id),
            ..TopicImage::default()
        };
        (name.into(), t)
    }

    #[test]
    fn id_index_follows_inserts_replacements_and_removals() {
        let mut t: TopicsImage = [topic("a", 1), topic("b", 2)].into_iter().collect();
        assert_eq!(t.by_id(Uuid::from_u128(2)).unwrap().name, "b");
        // Re-created with another id: the old id is gone.
        let (n, a3) = topic("a", 3);
        t.insert(n, a3);
        assert!(t.by_id(Uuid::from_u128(1)).is_none());
        assert_eq!(t.name_by_id(Uuid::from_u128(3)), Some("a"));
        t.remove("b");
        assert!(t.by_id(Uuid::from_u128(2)).is_none());
        assert_eq!(t.len(), 1);
        // JSON is the by-name map; reading it back rebuilds the index.
        let json = serde_json::to_string(&t).unwrap();
        assert!(json.starts_with(r#"{"a":{"name":"a""#), "{json}");
        let back: TopicsImage = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.name_by_id(Uuid::from_u128(3)), Some("a"));
    }

    #[test]
    fn a_clone_shares_structure_and_diff_sees_only_the_change() {
        let mut before = TopicsImage::default();
        for i in 0..10_000u128 {
            let (n, t) = topic(&format!("t{i:05}"), i + 1);
            before.insert(n, t);
        }
        let mut after = before.clone();
        let (n, t) = topic("new", 99_999);
        after.insert(n, t);
        let diff: Vec<_> = before.diff(&after).collect();
        assert_eq!(diff.len(), 1);
        assert!(matches!(diff[0], imbl::ordmap::DiffItem::Add(k, _) if k == "new"));
    }
}
