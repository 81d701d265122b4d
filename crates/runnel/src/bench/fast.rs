//! librdkafka's fast paths, which rust-rdkafka's safe API does not expose: producing through a
//! topic handle (no per-record topic-name copy) and consuming through a queue callback (no per-record
//! event dispatch), as `rdkafka_performance` does. Without them the load generator, not the
//! broker, was the bottleneck (≈2–5× slower than rdkafka_performance on the same broker).

use std::ffi::{c_void, CString};
use std::ptr;

use rdkafka::bindings as rd;
use rdkafka::consumer::{BaseConsumer, Consumer, DefaultConsumerContext};
use rdkafka::producer::{BaseProducer, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;

/// A librdkafka topic handle of one producer.
pub struct Topic {
    rkt: *mut rd::rd_kafka_topic_t,
}

impl Topic {
    /// A handle for `topic` on `producer`; it must not outlive the producer.
    pub fn new<C: ProducerContext>(
        producer: &BaseProducer<C>,
        topic: &str,
    ) -> anyhow::Result<Topic> {
        let name = CString::new(topic)?;
        // SAFETY: the client pointer is valid for the producer's life; a null conf is allowed.
        let rkt = unsafe {
            rd::rd_kafka_topic_new(
                producer.client().native_ptr(),
                name.as_ptr(),
                ptr::null_mut(),
            )
        };
        if rkt.is_null() {
            anyhow::bail!("creating a topic handle for '{topic}'");
        }
        Ok(Topic { rkt })
    }

    /// Enqueues a copy of `value` (no key) to `partition` (−1: the partitioner's choice) with
    /// `opaque` as the delivery opaque (what rust-rdkafka hands to `ProducerContext::delivery`
    /// as a `usize`). Returns the error code when librdkafka refuses it (e.g. `QueueFull`).
    pub fn produce(
        &self,
        value: &[u8],
        opaque: usize,
        partition: i32,
    ) -> Result<(), RDKafkaErrorCode> {
        // SAFETY: `rkt` is valid; F_COPY makes librdkafka copy `value` before returning.
        let r = unsafe {
            rd::rd_kafka_produce(
                self.rkt,
                partition,
                rd::RD_KAFKA_MSG_F_COPY,
                value.as_ptr() as *mut c_void,
                value.len(),
                ptr::null(),
                0,
                opaque as *mut c_void,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            // SAFETY: reads librdkafka's thread-local last error.
            Err(unsafe { rd::rd_kafka_last_error() }.into())
        }
    }
}

impl Drop for Topic {
    fn drop(&mut self) {
        // SAFETY: created by rd_kafka_topic_new, destroyed once.
        unsafe { rd::rd_kafka_topic_destroy(self.rkt) }
    }
}

/// The consumer queue of one consumer, read in batches.
pub struct Batches<'a> {
    _consumer: &'a BaseConsumer<DefaultConsumerContext>,
    queue: *mut rd::rd_kafka_queue_t,
    /// Partitions that reported reaching their end (`enable.partition.eof=true`) so far.
    eof: std::collections::BTreeSet<i32>,
}

impl<'a> Batches<'a> {
    /// The consumer's queue (where its assigned partitions' messages arrive).
    pub fn new(consumer: &'a BaseConsumer<DefaultConsumerContext>) -> Batches<'a> {
        // SAFETY: the client pointer is valid while `consumer` is borrowed.
        let queue = unsafe { rd::rd_kafka_queue_get_consumer(consumer.client().native_ptr()) };
        Batches {
            _consumer: consumer,
            queue,
            eof: Default::default(),
        }
    }

    /// Waits up to `timeout_ms` for the first message, then calls `f(value, key_len)` for
    /// every record already queued (rd_kafka_consume_callback_queue: it does not wait for a
    /// batch to fill, so delivery latency is not inflated); returns how many records were
    /// seen, or the first error.
    pub fn next(
        &mut self,
        timeout_ms: i32,
        f: &mut dyn FnMut(&[u8], usize),
    ) -> Result<usize, RDKafkaErrorCode> {
        if self.queue.is_null() {
            return Err(RDKafkaErrorCode::InvalidArgument);
        }
        let mut state = CallbackState {
            f,
            seen: 0,
            error: None,
            eof: &mut self.eof,
        };
        // SAFETY: `state` outlives the call; `on_message` only runs during it.
        let r = unsafe {
            rd::rd_kafka_consume_callback_queue(
                self.queue,
                timeout_ms,
                Some(on_message),
                &mut state as *mut CallbackState<'_> as *mut c_void,
            )
        };
        if r < 0 {
            // SAFETY: reads librdkafka's thread-local last error.
            return Err(unsafe { rd::rd_kafka_last_error() }.into());
        }
        match state.error {
            Some(e) => Err(e),
            None => Ok(state.seen),
        }
    }

    /// How many partitions have reported reaching their end (their fetch position at the high watermark,
    /// past any transaction markers); only with `enable.partition.eof=true`.
    pub fn partitions_at_end(&self) -> usize {
        self.eof.len()
    }
}

struct CallbackState<'f> {
    f: &'f mut dyn FnMut(&[u8], usize),
    seen: usize,
    error: Option<RDKafkaErrorCode>,
    eof: &'f mut std::collections::BTreeSet<i32>,
}

/// librdkafka's per-message callback; the message is destroyed by librdkafka afterwards.
unsafe extern "C" fn on_message(m: *mut rd::rd_kafka_message_t, opaque: *mut c_void) {
    // SAFETY: `opaque` is the `CallbackState` passed by `Batches::next`, alive for the call;
    // `m` is a valid message for the duration of the callback.
    let (state, msg) = unsafe { (&mut *(opaque as *mut CallbackState<'_>), &*m) };
    if msg.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        let value = if msg.payload.is_null() {
            &[][..]
        } else {
            // SAFETY: payload points at `len` bytes owned by the message.
            unsafe { std::slice::from_raw_parts(msg.payload as *const u8, msg.len) }
        };
        (state.f)(value, msg.key_len);
        state.seen += 1;
    } else if msg.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR__PARTITION_EOF {
        state.eof.insert(msg.partition);
    } else if state.error.is_none() {
        state.error = Some(msg.err.into());
    }
}

impl Drop for Batches<'_> {
    fn drop(&mut self) {
        if !self.queue.is_null() {
            // SAFETY: obtained from rd_kafka_queue_get_consumer, destroyed once.
            unsafe { rd::rd_kafka_queue_destroy(self.queue) }
        }
    }
}
