//! A leader append of records the append does not own alone (a slice of the request's frame): each
//! batch's header is edited apart from its body and both are written with one `pwritev`.

use crate::tests::{batch, fetched, open};
use crate::vfs::{FileSystem, RealFs};
use crate::*;
use bytes::{Bytes, BytesMut};
use protocol::record::TimestampType;
use types::{LeaderEpoch, Offset};

const NOW: i64 = 1_700_000_000_000;

/// `parts` back to back inside a larger buffer, returned as a slice that shares it (as a decoded
/// Produce request's records share the connection's read buffer).
fn shared_slice(parts: &[Bytes]) -> (Bytes, Bytes) {
    let mut whole = BytesMut::from(&b"request header"[..]);
    let start = whole.len();
    for p in parts {
        whole.extend_from_slice(p);
    }
    whole.extend_from_slice(b"trailing fields");
    let whole = whole.freeze();
    let end = whole.len() - b"trailing fields".len();
    (whole.slice(start..end), whole)
}

fn appended_and_read(timestamp_type: TimestampType) {
    let d = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: timestamp_type,
        ..LogConfig::default()
    };
    let mut log = open(d.path(), config, false);
    log.append_as_leader(batch(2, NOW, 10), LeaderEpoch(3), NOW)
        .unwrap();
    let sent = [
        batch(3, NOW - 5, 100),
        batch(1, NOW - 4, 7),
        batch(4, NOW - 3, 1),
    ];
    let (records, _request) = shared_slice(&sent);
    let info = log
        .append_as_leader(records.clone(), LeaderEpoch(3), NOW)
        .unwrap();
    assert_eq!(
        (info.first_offset, info.last_offset),
        (Offset(2), Offset(9))
    );
    assert_eq!(info.valid_bytes, records.len());
    let got = fetched(&log.read(Offset(2), 1 << 20, Offset(10), true).unwrap());
    assert_eq!(got.len(), 3);
    let mut next = 2;
    for (g, s) in got.iter().zip(&sent) {
        g.validate().unwrap();
        assert_eq!(g.base_offset(), next);
        assert_eq!(g.partition_leader_epoch(), 3);
        assert_eq!(g.timestamp_type(), timestamp_type);
        // Everything after the header is stored exactly as the producer sent it.
        assert_eq!(&g.as_bytes()[61..], &s[61..]);
        next += g.records().unwrap().len() as i64;
    }
    if timestamp_type == TimestampType::LogAppendTime {
        assert!(got.iter().all(|g| g.max_timestamp() == NOW));
    }
    // The producer's bytes are untouched (its buffer is shared, not edited).
    assert_eq!(&records[..sent[0].len()], &sent[0][..]);
    // And it all survives a restart with recovery.
    drop(log);
    let mut log = open(d.path(), LogConfig::default(), true);
    assert_eq!(log.log_end_offset(), Offset(10));
    let again = fetched(&log.read(Offset(2), 1 << 20, Offset(10), true).unwrap());
    assert_eq!(again.len(), 3);
}

#[test]
fn a_shared_create_time_append_is_written_header_then_body() {
    appended_and_read(TimestampType::CreateTime);
}

#[test]
fn a_shared_log_append_time_append_gets_a_crc_over_the_edited_header_and_the_body() {
    appended_and_read(TimestampType::LogAppendTime);
}

#[test]
fn a_vectored_write_of_more_slices_than_iov_max_lands_in_order() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f");
    let file = RealFs.open(&path, true).unwrap();
    let pieces: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| vec![(i % 251) as u8; (i % 7) as usize])
        .collect();
    let slices: Vec<&[u8]> = pieces.iter().map(|p| &p[..]).collect();
    file.write_all_at(b"head", 0).unwrap();
    file.write_all_vectored_at(&slices, 4).unwrap();
    let expected: Vec<u8> = b"head".iter().copied().chain(pieces.concat()).collect();
    assert_eq!(std::fs::read(&path).unwrap(), expected);
}
