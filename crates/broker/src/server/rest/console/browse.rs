//! The console's message browser: `GET /console/api/topics/{topic}/records` reads records of one partition
//! through the broker's Fetch handler (so ACLs apply), from an offset, from a timestamp (ListOffsets by time),
//! or the newest ones, and answers them with keys, values and header values in base64 for the page to show
//! as text, JSON or hex. With `wait_ms` the Fetch waits for records that are not written yet: the live tail's
//! long poll.
//!
//! Query: `partition` (default 0), one of `offset` (≥ 0), `timestamp` (ms since the epoch) or
//! `from=end` (the newest `limit` records; the default is the LogStartOffset), `limit` (1..=[`MAX_LIMIT`],
//! default 100), `wait_ms` (0..=[`MAX_WAIT_MS`], default 0). At most [`MAX_BYTES`] of keys, values and
//! headers are answered (at least one record), so large records end the list early: `next_offset` says
//! where to go on.
//! Answer: `{"partition", "log_start_offset", "high_watermark", "next_offset", "records": [{"offset",
//! "timestamp", "key", "value", "headers": [{"name", "value"}]}]}` (`key`/`value` base64 or null).
//! Errors: 404 unknown topic or partition, 400 a bad query, the Kafka error of the Fetch otherwise.

use base64ct::{Base64, Encoding};
use bytes::Bytes;
use protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use protocol::messages::ListOffsetsRequest;
use protocol::record::{batches, Record};
use protocol::{ErrorCode, RequestBody, ResponseBody};
use serde::Deserialize;
use serde_json::{json, Value};

use super::super::error::RestError;
use super::super::v2::kafka::Kafka;
use super::super::v3::{metadata, unexpected};
use super::super::{ok, Ctx, RestResult, P, Q};

/// The most records one call answers.
pub const MAX_LIMIT: usize = 5_000;
/// The most bytes of keys, values and headers one call answers (at least one record, however large).
pub const MAX_BYTES: usize = 8 * 1024 * 1024;
/// The longest a call waits for new records (ms).
pub const MAX_WAIT_MS: i32 = 10_000;
/// Bytes asked of one Fetch.
const FETCH_MAX_BYTES: i32 = 4 * 1024 * 1024;

/// ListOffsets' "earliest" and "latest" timestamps.
pub(super) const EARLIEST: i64 = -2;
pub(super) const LATEST: i64 = -1;

/// The query string.
#[derive(Debug, Default, Deserialize)]
pub struct BrowseQuery {
    partition: Option<i32>,
    offset: Option<i64>,
    timestamp: Option<i64>,
    from: Option<String>,
    limit: Option<usize>,
    wait_ms: Option<i32>,
}

/// Where to start reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Offset(i64),
    Timestamp(i64),
    Newest,
    Oldest,
}

impl BrowseQuery {
    /// The start position, the limit and the wait; 400 for a bad combination.
    fn parse(&self) -> Result<(Start, usize, i32), RestError> {
        let start = match (self.offset, self.timestamp, self.from.as_deref()) {
            (Some(o), None, None) if o >= 0 => Start::Offset(o),
            (None, Some(t), None) if t >= 0 => Start::Timestamp(t),
            (None, None, Some("end")) => Start::Newest,
            (None, None, Some("beginning") | None) => Start::Oldest,
            _ => {
                return Err(RestError::bad_request(
                    "give one of offset (>= 0), timestamp (ms >= 0) or from=end|beginning",
                ))
            }
        };
        let limit = self.limit.unwrap_or(100);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(RestError::bad_request(format!(
                "limit must be 1..={MAX_LIMIT}"
            )));
        }
        let wait = self.wait_ms.unwrap_or(0);
        if !(0..=MAX_WAIT_MS).contains(&wait) {
            return Err(RestError::bad_request(format!(
                "wait_ms must be 0..={MAX_WAIT_MS}"
            )));
        }
        Ok((start, limit, wait))
    }
}

/// The offsets of `partitions` of `topic` for `timestamp` (ListOffsets; [`EARLIEST`], [`LATEST`] or a time
/// in ms): `(partition, offset)` in the order asked, -1 where the partition answered an error or no record
/// is that late. Errors: the request's own failure.
pub(super) async fn list_offsets(
    ctx: &Ctx,
    topic: &str,
    partitions: &[i32],
    timestamp: i64,
) -> Result<Vec<(i32, i64)>, RestError> {
    let asked = partitions.iter().map(|&p| ListOffsetsPartition {
        partition_index: p,
        current_leader_epoch: -1,
        timestamp,
        ..Default::default()
    });
    let request = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.to_string(),
            partitions: asked.collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::ListOffsets(r) = ctx.call(RequestBody::ListOffsets(request)).await? else {
        return Err(unexpected());
    };
    let answered: Vec<_> = r.topics.into_iter().flat_map(|t| t.partitions).collect();
    let offset_of = |p: i32| {
        (answered.iter())
            .find(|a| a.partition_index == p && a.error_code == 0)
            .map_or(-1, |a| a.offset)
    };
    Ok(partitions.iter().map(|&p| (p, offset_of(p))).collect())
}

/// One partition's offset for `timestamp` (see [`list_offsets`]; -1 also for a partition that answered an
/// error, which the Fetch after it then reports).
async fn list_offset(
    ctx: &Ctx,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> Result<i64, RestError> {
    let offsets = list_offsets(ctx, topic, &[partition], timestamp).await?;
    Ok(offsets.first().map_or(-1, |o| o.1))
}

/// What is left of one call's answer: records and bytes.
struct Room {
    records: usize,
    bytes: usize,
}

impl Room {
    fn full(&self) -> bool {
        self.records == 0 || self.bytes == 0
    }
}

/// The bytes a record adds to an answer (key, value, header names and values).
fn record_bytes(r: &Record) -> usize {
    let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
    let headers: usize = r.headers.iter().map(|(n, v)| n.len() + len(v)).sum();
    len(&r.key) + len(&r.value) + headers
}

/// The data records at or after `from` in `raw` (control batches skipped; a batch cut short at the end of a
/// Fetch, or one that does not decode, ends the list) while `room` lasts; `first` lets one record past the
/// byte bound when the answer has none yet.
fn decode(raw: &Bytes, from: i64, room: &mut Room, first: bool) -> Vec<Record> {
    let mut out = Vec::new();
    for batch in batches(raw) {
        let Ok(batch) = batch else { break };
        if batch.is_control() {
            continue;
        }
        let Ok(records) = batch.records() else { break };
        for r in records.into_iter().filter(|r| r.offset >= from) {
            let size = record_bytes(&r);
            let alone = first && out.is_empty();
            if room.records == 0 || (size > room.bytes && !alone) {
                room.bytes = 0;
                return out;
            }
            room.records -= 1;
            room.bytes = room.bytes.saturating_sub(size);
            out.push(r);
        }
    }
    out
}

/// The offset after the last batch in `raw` (control batches included), `None` when it holds no whole batch.
fn next_after(raw: &Bytes) -> Option<i64> {
    batches(raw)
        .map_while(Result::ok)
        .last()
        .map(|b| b.next_offset())
}

fn b64(b: &Option<Bytes>) -> Value {
    b.as_ref()
        .map_or(Value::Null, |b| Value::String(Base64::encode_string(b)))
}

fn record_json(r: &Record) -> Value {
    let headers: Vec<Value> = (r.headers.iter())
        .map(|(name, value)| json!({ "name": name, "value": b64(value) }))
        .collect();
    json!({
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": b64(&r.key),
        "value": b64(&r.value),
        "headers": headers,
    })
}

/// `GET /console/api/topics/{topic}/records` (see the module doc).
pub async fn records(ctx: Ctx, P(topic): P<String>, Q(query): Q<BrowseQuery>) -> RestResult {
    let (start, limit, wait) = query.parse()?;
    let partition = query.partition.unwrap_or(0);
    let t = metadata(&ctx, Some(&topic)).await?;
    let t = t.into_iter().next().ok_or_else(unexpected)?;
    if !t.partitions.iter().any(|p| p.partition_index == partition) {
        return Err(RestError::not_found(format!(
            "Partition {partition} of topic {topic} cannot be found."
        )));
    }
    let mut offset = match start {
        Start::Offset(o) => o,
        Start::Oldest => list_offset(&ctx, &topic, partition, EARLIEST).await?,
        Start::Timestamp(ts) => match list_offset(&ctx, &topic, partition, ts).await? {
            -1 => list_offset(&ctx, &topic, partition, LATEST).await?,
            o => o,
        },
        Start::Newest => {
            let end = list_offset(&ctx, &topic, partition, LATEST).await?;
            let begin = list_offset(&ctx, &topic, partition, EARLIEST).await?;
            (end - limit as i64).max(begin)
        }
    };
    let kafka = Kafka {
        bridge: &ctx.state.bridge,
        origin: &ctx.origin,
    };
    let tp = (topic.clone(), partition);
    let mut out: Vec<Record> = Vec::new();
    let mut room = Room {
        records: limit,
        bytes: MAX_BYTES,
    };
    let (mut wait_ms, mut reset) = (wait, false);
    let (mut hw, mut lso): (i64, i64);
    loop {
        let fetched = kafka
            .fetch(&[(tp.clone(), offset.max(0))], wait_ms, 1, FETCH_MAX_BYTES)
            .await?;
        let f = fetched.into_iter().next().ok_or_else(unexpected)?;
        if f.error == ErrorCode::OFFSET_OUT_OF_RANGE && !reset {
            reset = true;
            let end = list_offset(&ctx, &topic, partition, LATEST).await?;
            let begin = list_offset(&ctx, &topic, partition, EARLIEST).await?;
            if offset >= end {
                // Past the end: nothing to show; the next call starts at the end.
                (hw, lso, offset) = (end, begin, end);
                break;
            }
            // Retention removed the start: begin where the log begins, as auto.offset.reset=earliest would.
            offset = begin;
            continue;
        }
        RestError::check(f.error.0, None)?;
        (hw, lso) = (f.high_watermark, f.log_start_offset);
        let got = decode(&f.records, offset, &mut room, out.is_empty());
        let after_batches = next_after(&f.records);
        out.extend(got);
        if room.full() {
            offset = out.last().map_or(offset, |r| r.offset + 1);
            break;
        }
        match after_batches {
            Some(n) if n > offset => offset = n,
            _ => break,
        }
        if offset >= hw {
            break;
        }
        wait_ms = 0;
    }
    let list: Vec<Value> = out.iter().map(record_json).collect();
    ok(json!({
        "partition": partition,
        "log_start_offset": lso,
        "high_watermark": hw,
        "next_offset": offset,
        "records": list,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::record::{Compression, RecordBatchBuilder};

    fn q(s: &str) -> BrowseQuery {
        let uri: axum::http::Uri = format!("http://h/r?{s}").parse().unwrap();
        axum::extract::Query::<BrowseQuery>::try_from_uri(&uri)
            .unwrap()
            .0
    }

    #[test]
    fn query_forms() {
        assert_eq!(q("").parse().unwrap(), (Start::Oldest, 100, 0));
        assert_eq!(
            q("offset=5&limit=7&wait_ms=10").parse().unwrap(),
            (Start::Offset(5), 7, 10)
        );
        assert_eq!(q("from=end").parse().unwrap().0, Start::Newest);
        assert_eq!(q("timestamp=9").parse().unwrap().0, Start::Timestamp(9));
        for bad in [
            "offset=-1",
            "offset=1&timestamp=2",
            "from=middle",
            "limit=0",
            "limit=5001",
            "wait_ms=-1",
            "wait_ms=10001",
        ] {
            assert_eq!(q(bad).parse().unwrap_err().error_code, 400, "{bad}");
        }
    }

    #[test]
    fn decode_skips_earlier_offsets_and_stops_at_room() {
        let mut b = RecordBatchBuilder::new(Compression::None).base_offset(10);
        for i in 0..5u8 {
            b.append(0, None, Some(Bytes::from(vec![i])), Vec::new());
        }
        let raw = b.build().unwrap();
        let room = |records, bytes| Room { records, bytes };
        let got = decode(&raw, 12, &mut room(2, 100), true);
        assert_eq!(got.iter().map(|r| r.offset).collect::<Vec<_>>(), [12, 13]);
        assert_eq!(next_after(&raw), Some(15));
        // The byte bound: each value is one byte; the first record passes even past it.
        assert_eq!(decode(&raw, 10, &mut room(10, 3), false).len(), 3);
        assert_eq!(decode(&raw, 10, &mut room(10, 0), true).len(), 1);
        assert!(decode(&raw, 10, &mut room(10, 0), false).is_empty());
        // A batch cut short ends the list without an error.
        let cut = raw.slice(..raw.len() - 1);
        assert!(decode(&cut, 0, &mut room(10, 100), true).is_empty());
        assert_eq!(next_after(&cut), None);
    }
}
