//! `runnel bench sink`: a minimal Kafka-protocol "sink" broker, the ceiling reference of the load
//! generator. It acknowledges Produce without storing anything and serves every Fetch from a
//! synthetic, pre-built log, so that `runnel bench produce|consume` (or librdkafka's
//! `rdkafka_performance`) against it measures the client alone.
//!
//! What it serves (everything else closes the connection):
//! - ApiVersions: only the APIs below, in the version ranges the real broker advertises
//!   ([`broker::server::apis::advertised_range`]; Produce from v0, as the broker does for librdkafka).
//! - Metadata: this node (id 1, the connection's local address) is the only broker and the
//!   controller; any requested topic exists, with `--partitions` partitions (or the count given to
//!   CreateTopics), leader 1, leader epoch 0. A request for all topics lists the topics seen so far.
//!   The sink remembers at most [`MAX_TOPICS`] topics and [`MAX_TOTAL_PARTITIONS`] partitions in
//!   all; a new topic beyond either gets UNKNOWN_TOPIC_OR_PARTITION (in every API).
//! - CreateTopics: success; a partition count given is remembered. More than
//!   [`MAX_PARTITIONS_PER_TOPIC`] partitions, or growing past [`MAX_TOTAL_PARTITIONS`], gets
//!   INVALID_PARTITIONS.
//! - InitProducerId: increasing producer ids from 1, epoch 0.
//! - Produce: acks=0 gets no response; otherwise each partition's `base_offset` is a running
//!   per-(topic, partition) counter advanced by the record count of every batch in the request
//!   (read from each RecordBatch header; CRCs are not checked; saturating at `i64::MAX`),
//!   `log_append_time_ms` -1.
//! - ListOffsets: earliest → 0, latest → `--fetch-records`, anything else (max timestamp, by
//!   timestamp) → 0.
//! - Fetch: copies of one pre-built uncompressed RecordBatch v2 of [`SINK_BATCH_RECORDS`] records
//!   of `--record-size`-byte values (all `x`), each copy with its base offset patched (the base
//!   offset is outside the CRC). The log is `[0, --fetch-records)` in every partition; the high
//!   watermark is `--fetch-records`. A fetch offset inside a batch is served from the start of
//!   that batch (clients skip records below their position). At the high watermark the answer
//!   is empty, after sleeping `max_wait_ms` (so a caught-up consumer does not spin); beyond it,
//!   OFFSET_OUT_OF_RANGE.
//!
//! Connections are served by one task each; requests are answered in order, and responses of
//! pipelined requests already in the read buffer are written together, but written out as soon as
//! more than [`MAX_QUEUED_RESPONSE_BYTES`] are queued (a Fetch answer is at most
//! [`MAX_FETCH_RESPONSE_BYTES`] of records), so a client that pipelines big Fetches without
//! reading holds at most a few tens of MiB of the sink's memory. A frame size outside
//! `8..=`[`protocol::MAX_FRAME_SIZE`] (100 MiB) closes the connection before anything is
//! allocated for it; the read buffer grows only as bytes arrive.

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use broker::server::apis::advertised_range;
use bytes::{Bytes, BytesMut};
use protocol::error::ErrorCode;
use protocol::messages::create_topics_response::CreatableTopicResult;
use protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use protocol::messages::{
    ApiVersionsResponse, CreateTopicsRequest, CreateTopicsResponse, FetchRequest, FetchResponse,
    InitProducerIdResponse, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest,
    MetadataResponse, ProduceRequest, ProduceResponse,
};
use protocol::record::{Compression, RecordBatchBuilder, Records};
use protocol::{ApiKey, Chunk, RequestBody, RequestHeader, ResponseBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Records per pre-built batch of the synthetic log.
pub const SINK_BATCH_RECORDS: i64 = 1000;

/// Node id of the sink in Metadata.
const NODE_ID: i32 = 1;

/// Byte offset of the records-count field (INT32) in a RecordBatch v2.
const RECORDS_COUNT_OFFSET: usize = 57;

/// Byte offset of the batch-length field (INT32) in a RecordBatch v2; it counts the bytes after it.
const BATCH_LENGTH_OFFSET: usize = 8;

/// Size of a RecordBatch v2 header (bytes), up to and including the records count.
const BATCH_HEADER_SIZE: usize = 61;

/// Largest read-ahead the frame reader allocates before bytes arrive (bytes).
const READ_CHUNK: usize = 64 * 1024;

/// Cap on a Fetch response's record bytes, whatever the request's max_bytes says (bytes).
pub const MAX_FETCH_RESPONSE_BYTES: usize = 16 << 20;

/// Response bytes a connection queues before writing them out (bytes).
pub const MAX_QUEUED_RESPONSE_BYTES: usize = 8 << 20;

/// Most partitions one topic may have (CreateTopics above it: INVALID_PARTITIONS).
pub const MAX_PARTITIONS_PER_TOPIC: i32 = 100_000;

/// Most topics the sink remembers; a new name beyond it gets UNKNOWN_TOPIC_OR_PARTITION.
pub const MAX_TOPICS: usize = 10_000;

/// Most partitions the sink remembers over all topics; a new topic past it gets
/// UNKNOWN_TOPIC_OR_PARTITION, a CreateTopics growing an existing one past it INVALID_PARTITIONS.
pub const MAX_TOTAL_PARTITIONS: usize = 1_000_000;

/// Cap on a Fetch's wait when it has nothing to return (ms).
const MAX_WAIT_CAP_MS: i32 = 30_000;

/// The APIs the sink serves.
const SINK_APIS: [ApiKey; 7] = [
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::ApiVersions,
    ApiKey::CreateTopics,
    ApiKey::InitProducerId,
];

/// Options of `runnel bench sink`.
#[derive(clap::Args, Debug, Clone)]
pub struct SinkOpts {
    /// Address to listen on; port 0 picks a free port (printed on stdout).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    listen: String,
    /// Partition count of every topic not created with an explicit count (1 to 100000).
    #[arg(long, default_value_t = 8)]
    partitions: i32,
    /// Records per partition in the synthetic log served to consumers (its high watermark).
    #[arg(long, default_value_t = 10_000_000)]
    fetch_records: i64,
    /// Value size of the synthetic log's records, in bytes.
    #[arg(long, default_value_t = 100)]
    record_size: usize,
}

/// One topic the sink has seen.
struct Topic {
    /// Topic id (UUID bytes), stable for the life of the process.
    id: [u8; 16],
    /// Next produce base offset of each partition.
    next_offsets: Vec<i64>,
}

/// State shared by all connections.
struct Sink {
    partitions: i32,
    fetch_records: i64,
    /// The synthetic log's batch of [`SINK_BATCH_RECORDS`] records (base offset 0).
    full_batch: Bytes,
    /// The last, shorter batch when `fetch_records` is not a multiple of [`SINK_BATCH_RECORDS`].
    tail_batch: Option<Bytes>,
    topics: Mutex<HashMap<String, Topic>>,
    /// Sum of the partition counts in `topics` (changed only with `topics` locked).
    total_partitions: AtomicUsize,
    next_producer_id: AtomicI64,
}

/// Runs `runnel bench sink` until SIGTERM or SIGINT.
pub fn run(opts: &SinkOpts) -> anyhow::Result<()> {
    if opts.partitions < 1 {
        anyhow::bail!("--partitions must be at least 1");
    }
    if opts.partitions > MAX_PARTITIONS_PER_TOPIC {
        anyhow::bail!("--partitions is at most {MAX_PARTITIONS_PER_TOPIC}");
    }
    if opts.fetch_records < 0 {
        anyhow::bail!("--fetch-records must not be negative");
    }
    if opts.record_size > 1 << 20 {
        anyhow::bail!("--record-size is at most 1 MiB");
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let full_batch = build_batch(SINK_BATCH_RECORDS, opts.record_size, now_ms)?;
    let rem = opts.fetch_records % SINK_BATCH_RECORDS;
    let tail_batch = if rem > 0 {
        Some(build_batch(rem, opts.record_size, now_ms)?)
    } else {
        None
    };
    let sink = Arc::new(Sink {
        partitions: opts.partitions,
        fetch_records: opts.fetch_records,
        full_batch,
        tail_batch,
        topics: Mutex::new(HashMap::new()),
        total_partitions: AtomicUsize::new(0),
        next_producer_id: AtomicI64::new(1),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(&opts.listen)
            .await
            .with_context(|| format!("binding {}", opts.listen))?;
        let addr = listener.local_addr()?;
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "runnel bench sink listening on {addr}")?;
            out.flush()?;
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        let sink = sink.clone();
                        tokio::spawn(async move {
                            if let Err(e) = serve_connection(stream, sink).await {
                                tracing::debug!(error = %e, "sink connection closed");
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
                _ = term.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    // Connections still open are dropped with the runtime.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(())
}

/// Builds one uncompressed RecordBatch v2 (base offset 0, partition leader epoch 0, CreateTime
/// `timestamp_ms` for every record) of `count` records with `record_size`-byte values of `x`
/// and no key, with a correct CRC-32C.
fn build_batch(count: i64, record_size: usize, timestamp_ms: i64) -> anyhow::Result<Bytes> {
    let value = Bytes::from(vec![b'x'; record_size]);
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .base_offset(0)
        .partition_leader_epoch(0);
    for _ in 0..count {
        builder.append(timestamp_ms, None, Some(value.clone()), Vec::new());
    }
    builder
        .build()
        .map_err(|e| anyhow!("building the synthetic batch: {e}"))
}

/// Sum of the records-count fields of the RecordBatches in `records`, walked by their length
/// fields. CRCs and everything else are not checked. Errors when a batch length is too small to
/// hold a batch header or runs past the end of `records`.
pub fn count_records(records: &[u8]) -> Result<i64, String> {
    let mut pos = 0usize;
    let mut total = 0i64;
    while pos < records.len() {
        let rest = &records[pos..];
        if rest.len() < BATCH_HEADER_SIZE {
            return Err(format!(
                "{} trailing bytes after the last batch",
                rest.len()
            ));
        }
        let len = i32::from_be_bytes(field4(rest, BATCH_LENGTH_OFFSET));
        let size = 12usize.saturating_add(usize::try_from(len).unwrap_or(0));
        if size < BATCH_HEADER_SIZE || size > rest.len() {
            return Err(format!("bad batch length {len} at byte {pos}"));
        }
        let count = i32::from_be_bytes(field4(rest, RECORDS_COUNT_OFFSET));
        total += i64::from(count.max(0));
        pos += size;
    }
    Ok(total)
}

/// The 4 bytes at `at` (the caller checked `at + 4 <= buf.len()`).
fn field4(buf: &[u8], at: usize) -> [u8; 4] {
    [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]
}

/// Appends copies of the synthetic log's batches to `out`, starting with the batch that contains
/// `fetch_offset` (aligned down to a multiple of [`SINK_BATCH_RECORDS`]), each with its base
/// offset patched, while the bytes stay within `limit` — or at least one batch when
/// `at_least_one`. Stops at `log_end`. Returns the number of bytes appended.
fn append_log(
    out: &mut BytesMut,
    full: &[u8],
    tail: Option<&[u8]>,
    fetch_offset: i64,
    log_end: i64,
    limit: usize,
    at_least_one: bool,
) -> usize {
    let mut written = 0usize;
    if fetch_offset >= log_end {
        return written;
    }
    let mut offset = fetch_offset - fetch_offset.rem_euclid(SINK_BATCH_RECORDS);
    while offset < log_end {
        let batch = if log_end - offset >= SINK_BATCH_RECORDS {
            full
        } else {
            match tail {
                Some(t) => t,
                None => break,
            }
        };
        if written + batch.len() > limit && !(at_least_one && written == 0) {
            break;
        }
        let start = out.len();
        out.extend_from_slice(batch);
        out[start..start + 8].copy_from_slice(&offset.to_be_bytes());
        written += batch.len();
        offset = match offset.checked_add(SINK_BATCH_RECORDS) {
            Some(next) => next,
            None => break,
        };
    }
    written
}

/// Serves one connection until EOF or a bad frame.
async fn serve_connection(mut stream: TcpStream, sink: Arc<Sink>) -> anyhow::Result<()> {
    let local = stream.local_addr()?;
    let max = protocol::MAX_FRAME_SIZE;
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut out: Vec<Bytes> = Vec::new();
    let mut queued = 0usize;
    loop {
        // Answer every whole frame already read, then write the answers together; write out
        // early once more than MAX_QUEUED_RESPONSE_BYTES are queued.
        while let Some(frame) = split_frame(&mut buf, max)? {
            match handle(&sink, local, frame).await {
                Ok(Some(chunks)) => {
                    for c in chunks {
                        if let Chunk::Bytes(b) = c {
                            queued += b.len();
                            out.push(b);
                        }
                    }
                }
                Ok(None) => {}
                Err(reason) => {
                    write_all(&mut stream, &mut out).await?;
                    return Err(anyhow!(reason));
                }
            }
            if queued > MAX_QUEUED_RESPONSE_BYTES {
                write_all(&mut stream, &mut out).await?;
                queued = 0;
            }
        }
        write_all(&mut stream, &mut out).await?;
        queued = 0;
        // Read more: grow by at most what a pending frame still needs (bounded by the frame cap).
        let want = match frame_size(&buf) {
            Some(size) => (4 + size - buf.len()).clamp(1, READ_CHUNK.max(buf.len())),
            None => READ_CHUNK,
        };
        if buf.capacity() - buf.len() < want {
            buf.reserve(want);
        }
        if stream.read_buf(&mut buf).await? == 0 {
            return if buf.is_empty() {
                Ok(())
            } else {
                Err(anyhow!("EOF inside a frame"))
            };
        }
    }
}

/// The size (after the prefix) of the frame at the front of `buf`, when its prefix is complete.
fn frame_size(buf: &[u8]) -> Option<usize> {
    (buf.len() >= 4).then(|| i32::from_be_bytes(field4(buf, 0)).max(0) as usize)
}

/// Splits the first whole frame (without its size prefix) off `buf`; `None` when incomplete.
/// Errors for a size outside `8..=max`.
fn split_frame(buf: &mut BytesMut, max: usize) -> anyhow::Result<Option<Bytes>> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = i32::from_be_bytes(field4(buf, 0));
    if size < 8 || size as usize > max {
        return Err(anyhow!("invalid frame size {size}"));
    }
    let total = 4 + size as usize;
    if buf.len() < total {
        return Ok(None);
    }
    let mut frame = buf.split_to(total);
    let _ = frame.split_to(4);
    Ok(Some(frame.freeze()))
}

/// Writes and clears `out`: small pieces joined, large ones written as they are.
async fn write_all(stream: &mut TcpStream, out: &mut Vec<Bytes>) -> std::io::Result<()> {
    let mut joined = BytesMut::new();
    for b in out.drain(..) {
        if b.len() >= READ_CHUNK {
            if !joined.is_empty() {
                stream.write_all(&joined).await?;
                joined.clear();
            }
            stream.write_all(&b).await?;
        } else {
            joined.extend_from_slice(&b);
        }
    }
    if !joined.is_empty() {
        stream.write_all(&joined).await?;
    }
    Ok(())
}

/// Handles one request frame: `Ok(Some(frame chunks))` to answer, `Ok(None)` for no answer
/// (acks=0), `Err(reason)` to close the connection.
async fn handle(
    sink: &Sink,
    local: SocketAddr,
    frame: Bytes,
) -> Result<Option<Vec<Chunk>>, String> {
    let (key, version, correlation_id) =
        RequestHeader::peek(&frame).ok_or("request shorter than its header")?;
    let api = ApiKey::from_i16(key)
        .filter(|a| SINK_APIS.contains(a))
        .ok_or_else(|| format!("api key {key} is not served by the sink"))?;
    let (lo, hi) = served_range(api).ok_or_else(|| format!("{} is not served", api.name()))?;
    if version < lo || version > hi {
        if api == ApiKey::ApiVersions {
            let body = api_versions(ErrorCode::UNSUPPORTED_VERSION);
            return encode(correlation_id, api, 0, &ResponseBody::ApiVersions(body)).map(Some);
        }
        return Err(format!("{} v{version} is not served", api.name()));
    }
    let (_header, body) =
        protocol::decode_request(frame).map_err(|e| format!("{} v{version}: {e}", api.name()))?;
    let response = match body {
        RequestBody::ApiVersions(_) => ResponseBody::ApiVersions(api_versions(ErrorCode::NONE)),
        RequestBody::Metadata(r) => ResponseBody::Metadata(sink.metadata(local, version, r)),
        RequestBody::CreateTopics(r) => ResponseBody::CreateTopics(sink.create_topics(r)),
        RequestBody::InitProducerId(_) => ResponseBody::InitProducerId(InitProducerIdResponse {
            error_code: 0,
            producer_id: sink.next_producer_id.fetch_add(1, Ordering::Relaxed),
            producer_epoch: 0,
            ..Default::default()
        }),
        RequestBody::Produce(r) => {
            if r.acks == 0 {
                sink.produce(r);
                return Ok(None);
            }
            ResponseBody::Produce(sink.produce(r))
        }
        RequestBody::ListOffsets(r) => ResponseBody::ListOffsets(sink.list_offsets(r)),
        RequestBody::Fetch(r) => {
            let wait = r.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS);
            let (resp, any_records) = sink.fetch(version, r);
            if !any_records && wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait as u64)).await;
            }
            ResponseBody::Fetch(resp)
        }
        other => return Err(format!("{} is not served", other.api_key().name())),
    };
    encode(correlation_id, api, version, &response).map(Some)
}

/// The version range the sink serves for `api`: the real broker's advertised range (Produce
/// advertised from v0, as the broker does, though v0–2 requests are closed).
fn served_range(api: ApiKey) -> Option<(i16, i16)> {
    advertised_range(api)
}

/// The ApiVersions response listing [`SINK_APIS`].
fn api_versions(error: ErrorCode) -> ApiVersionsResponse {
    broker::server::apis::api_versions_response_for(error, SINK_APIS.iter().copied())
}

fn encode(
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    body: &ResponseBody,
) -> Result<Vec<Chunk>, String> {
    protocol::encode_response(correlation_id, api, version, body)
        .map_err(|e| format!("encoding {} v{version}: {e}", api.name()))
}

/// A topic id (UUID bytes) as the codec's UUID type (a macro: the binary does not name the
/// `uuid` crate's type).
macro_rules! uuid {
    ($id:expr) => {
        protocol::codec::get_uuid(&mut Bytes::copy_from_slice(&$id)).unwrap_or_default()
    };
}

mod apis;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_records_walks_every_batch() {
        let a = build_batch(7, 10, 1).unwrap();
        let b = build_batch(1000, 3, 1).unwrap();
        let mut both = a.to_vec();
        both.extend_from_slice(&b);
        assert_eq!(count_records(&both), Ok(1007));
        assert_eq!(count_records(&[]), Ok(0));
        assert!(count_records(&both[..both.len() - 1]).is_err());
        let mut bad = a.to_vec();
        bad[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(count_records(&bad).is_err());
    }

    #[test]
    fn append_log_aligns_patches_and_stops_at_the_end() {
        let full = build_batch(SINK_BATCH_RECORDS, 10, 1).unwrap();
        let tail = build_batch(500, 10, 1).unwrap();
        let mut out = BytesMut::new();
        // Offset 1500 → batches at 1000, 2000 (full) and the 500-record tail at 3000 (log end 3500).
        let n = append_log(&mut out, &full, Some(&tail), 1500, 3500, usize::MAX, false);
        assert_eq!(n, 2 * full.len() + tail.len());
        let out = out.freeze();
        let mut offsets = Vec::new();
        for batch in protocol::record::batches(&out) {
            let batch = batch.unwrap();
            batch.validate().unwrap();
            offsets.push((batch.base_offset(), batch.next_offset()));
        }
        assert_eq!(offsets, vec![(1000, 2000), (2000, 3000), (3000, 3500)]);
        // The limit holds unless at least one batch is required.
        let mut out = BytesMut::new();
        assert_eq!(append_log(&mut out, &full, None, 0, 5000, 10, false), 0);
        assert_eq!(
            append_log(&mut out, &full, None, 0, 5000, 10, true),
            full.len()
        );
        // At or past the end: nothing.
        let mut out = BytesMut::new();
        assert_eq!(
            append_log(&mut out, &full, None, 3000, 3000, usize::MAX, true),
            0
        );
        // The end inside the tail batch's range is still the end.
        assert_eq!(
            append_log(&mut out, &full, Some(&tail), 3500, 3500, usize::MAX, true),
            0
        );
    }
}
