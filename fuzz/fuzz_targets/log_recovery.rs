//! Fuzz target: crash recovery and reads of a partition log whose segment and index files hold
//! arbitrary bytes (storage::Log). Input: [flags][index len][index bytes...][log bytes...].
//! Recovery must truncate to whole valid batches and never panic; every offset it keeps must be
//! readable; appends continue at the recovered log end; a clean reopen agrees.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use protocol::record::{batches, Compression, RecordBatchBuilder, Records};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use storage::{Log, LogConfig};
use types::{LeaderEpoch, Offset};

static RUN: AtomicU64 = AtomicU64::new(0);

fn read_all(log: &mut Log) {
    let (start, leo) = (log.log_start_offset(), log.log_end_offset());
    let mut o = start;
    while o < leo {
        let info = log
            .read(o, 4096, leo, true)
            .expect("recovered offsets are readable");
        let Records::File(f) = info.records else {
            panic!("no data below the log end")
        };
        let mut buf = vec![0u8; f.len as usize];
        f.file.read_exact_at(&mut buf, f.position).unwrap();
        let buf = Bytes::from(buf);
        let mut first = true;
        for b in batches(&buf) {
            let b = b.expect("whole batches");
            assert_eq!(
                b.compute_crc(),
                b.crc(),
                "recovery keeps only CRC-valid batches"
            );
            if first {
                assert!(
                    b.last_offset() >= o.get(),
                    "the batch containing the fetch offset comes first"
                );
                first = false;
            } else {
                assert!(b.base_offset() >= o.get(), "offsets increase");
            }
            o = Offset(b.next_offset());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let recover = data[0] & 1 == 1;
    let index_len = (data[1] as usize).min(data.len() - 2);
    let (index, log_bytes) = data[2..].split_at(index_len);
    // tmpfs when available: fsyncs there are free, so the fuzzer stays fast.
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!(
        "runnel-fuzz-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("00000000000000000000.log"), log_bytes).unwrap();
    std::fs::write(dir.join("00000000000000000000.index"), index).unwrap();
    let cfg = LogConfig {
        index_interval_bytes: 64,
        ..LogConfig::default()
    };
    let mut log = Log::open(&dir, cfg.clone(), uuid::Uuid::nil(), recover, Offset::ZERO, 0)
        .expect("open never fails on bad bytes");
    if recover {
        read_all(&mut log);
    } else {
        // Clean open trusts the index: reads may fail but must not panic.
        let leo = log.log_end_offset();
        for o in 0..leo.get().min(64) {
            let _ = log.read(Offset(o), 4096, leo, data[0] & 2 == 2);
        }
    }
    let _ = log.fetch_offset_by_timestamp(0);
    let _ = log.fetch_offset_by_timestamp(-3);
    let leo = log.log_end_offset();
    let mut b = RecordBatchBuilder::new(Compression::None);
    b.append(0, None, Some(Bytes::from_static(b"x")), vec![]);
    if let Ok(info) = log.append_as_leader(b.build().unwrap(), LeaderEpoch(0), 0) {
        assert_eq!(info.first_offset, leo);
        log.close().unwrap();
        drop(log);
        let log = Log::open(&dir, cfg, uuid::Uuid::nil(), false, Offset::ZERO, 0).unwrap();
        if recover {
            // A recovered log is whole; after a clean close it reopens at the same end.
            assert_eq!(log.log_end_offset(), leo.next());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
});
