//! [`TopicPartition`]: a partition named by its topic's name and its index, and Kafka's topic-name rule.

/// A partition of a topic, by topic name and partition index (Kafka's `TopicPartition`): the key of a
/// partition's log in a data dir (`<topic>-<partition>`), of a transaction's partitions, and of requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`-`partition`.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// Directory name `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Parses a directory name `<topic>-<partition>`; `None` for anything else (a negative index, an
    /// illegal topic name).
    pub fn from_dir_name(name: &str) -> Option<Self> {
        let (t, p) = name.rsplit_once('-')?;
        let p: i32 = p.parse().ok()?;
        if p < 0 || !is_legal_topic_name(t) {
            return None;
        }
        Some(TopicPartition::new(t, p))
    }
}

/// Kafka's legal topic names (`Topic.validate`): 1–249 chars of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn is_legal_topic_name(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= 249
        && topic != "."
        && topic != ".."
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}
