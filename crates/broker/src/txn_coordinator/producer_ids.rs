//! Producer ids for the transaction coordinator: a small pool refilled in the background from the broker's
//! allocator ([`MetadataStore::allocate_producer_id`]: the registry standalone, the controller's
//! AllocateProducerIds blocks in a cluster), because the coordinator core must not wait
//! ([`coordinator::transaction::ProducerIdSource`]). An empty pool answers COORDINATOR_LOAD_IN_PROGRESS (retriable, as
//! Kafka's `RPCProducerIdManager` answers while its next block is on the way) and starts a refill.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use types::{ErrorCode, ProducerId};

use crate::group_coordinator::CoordinatorError;
use crate::metadata::MetadataStore;

/// Ids kept ready.
const POOL_SIZE: usize = 16;

/// The pool of ready producer ids.
pub(super) struct ProducerIdPool {
    metadata: Arc<MetadataStore>,
    ready: Mutex<VecDeque<ProducerId>>,
    refilling: AtomicBool,
}

impl ProducerIdPool {
    pub(super) fn new(metadata: Arc<MetadataStore>) -> ProducerIdPool {
        ProducerIdPool {
            metadata,
            ready: Mutex::new(VecDeque::new()),
            refilling: AtomicBool::new(false),
        }
    }

    /// Starts a refill when the pool is below half and none runs (needs a tokio runtime; without one,
    /// nothing happens).
    pub(super) fn ensure_ready(self: &Arc<Self>) {
        if self.ready.lock().len() >= POOL_SIZE / 2 || self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.refilling.store(false, Ordering::Release);
            return;
        };
        let this = self.clone();
        handle.spawn(async move {
            while this.ready.lock().len() < POOL_SIZE {
                match this.metadata.allocate_producer_id().await {
                    Ok(id) => this.ready.lock().push_back(id),
                    Err(e) => {
                        tracing::warn!(error = %e, "no producer id for the transaction coordinator yet");
                        break;
                    }
                }
            }
            this.refilling.store(false, Ordering::Release);
        });
    }

    /// Makes sure an id is at hand (allocating one now if the pool is empty), then tops the pool up in the
    /// background. An allocation error leaves the pool empty (the coordinator answers it retriably).
    pub(super) async fn prime(self: &Arc<Self>) {
        if self.ready.lock().is_empty() {
            if let Ok(id) = self.metadata.allocate_producer_id().await {
                self.ready.lock().push_back(id);
            }
        }
        self.ensure_ready();
    }

    fn take(self: &Arc<Self>) -> Result<ProducerId, ErrorCode> {
        let id = self.ready.lock().pop_front();
        self.ensure_ready();
        id.ok_or(CoordinatorError::LoadInProgress.into())
    }
}

/// The coordinator's view of the pool.
pub(super) struct PoolSource(pub(super) Arc<ProducerIdPool>);

impl coordinator::transaction::ProducerIdSource for PoolSource {
    fn next_producer_id(&mut self) -> Result<ProducerId, ErrorCode> {
        self.0.take()
    }
}
