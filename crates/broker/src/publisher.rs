//! Metadata publishers (Kafka's `MetadataPublisher`): components that react to each new metadata image of a
//! cluster member, in image order, after the broker's own topic registry and partitions have it.

use controller::MetadataImage;

/// A component told of every new metadata image. Called on the metadata listener task, one image at a time:
/// keep it short, and spawn long work (e.g. loading a coordinator partition) elsewhere.
pub trait MetadataPublisher: Send + Sync {
    /// `current` replaced `previous` (the first image of a process follows an empty one at offset -1).
    fn on_image(&self, previous: &MetadataImage, current: &MetadataImage);
}
