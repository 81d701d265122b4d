//! Fuzz target: RecordBatch v2 decoding (protocol::record). Any input must yield values or
//! errors — never a panic, hang, or allocation beyond the decompression cap.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use protocol::record::{batches, RecordBatchHeader, RecordBatchMut};

const CAP: usize = 4 << 20;

fn exercise(bytes: &Bytes) {
    for batch in batches(bytes) {
        let Ok(batch) = batch else { break };
        let _ = batch.validate_with(CAP);
        let _ = batch.compression();
        let _ = (
            batch.last_offset(),
            batch.next_offset(),
            batch.last_sequence(),
        );
        if batch.validate_with(CAP).is_ok() {
            // A valid batch must also decode record by record.
            let recs = batch.records().expect("validated batch decodes");
            assert_eq!(recs.len(), batch.records_count() as usize);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(&Bytes::copy_from_slice(data));
    // Same bytes with the CRC fixed up, so the record parser and decompressors are reached.
    if let Ok(h) = RecordBatchHeader::parse(data) {
        if h.size_in_bytes() <= data.len() {
            let mut v = data[..h.size_in_bytes()].to_vec();
            if let Ok(mut m) = RecordBatchMut::new(&mut v) {
                m.update_crc();
                exercise(&Bytes::from(v));
            }
        }
    }
});
