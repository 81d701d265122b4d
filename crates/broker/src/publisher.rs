//! Metadata publishers (Kafka's `MetadataPublisher`): components that react to each new metadata image, in
//! image order, after the broker's own topic registry and partitions have it. A cluster member's metadata
//! listener publishes every image it replays; a standalone broker's `LocalTopicAdmin` publishes the image
//! before and after each topic change it makes — so a publisher (the group coordinator's) works the same way
//! in both modes.

use std::sync::Arc;

use metadata::MetadataImage;
use parking_lot::RwLock;

/// A component told of every new metadata image. Called one image at a time: keep it short, and spawn long
/// work (e.g. loading a coordinator partition) elsewhere.
pub trait MetadataPublisher: Send + Sync {
    /// `current` replaced `previous` (the first image of a process follows an empty one at offset -1).
    fn on_image(&self, previous: &MetadataImage, current: &MetadataImage);
}

/// The publishers installed on a broker (Kafka's `MetadataLoader.installPublishers`): installed once the
/// services they belong to are built, then told of every image in installation order.
#[derive(Default)]
pub struct Publishers(RwLock<Vec<Arc<dyn MetadataPublisher>>>);

impl std::fmt::Debug for Publishers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Publishers({})", self.0.read().len())
    }
}

impl Publishers {
    /// Adds `publisher`; it is told of every image published from now on.
    pub fn install(&self, publisher: Arc<dyn MetadataPublisher>) {
        self.0.write().push(publisher);
    }

    /// Tells every installed publisher, in order, that `current` replaced `previous`.
    pub fn publish(&self, previous: &MetadataImage, current: &MetadataImage) {
        let publishers = self.0.read().clone();
        for p in &publishers {
            p.on_image(previous, current);
        }
    }
}
