//! The storage layer's metrics (issue 17), through the `metrics` facade: recorded into whatever recorder the
//! process installed (the broker's Prometheus one), dropped when there is none. Names are what Kafka's
//! MBeans become under the Prometheus JMX exporter's usual rules:
//!
//! | name | Kafka MBean / source |
//! |---|---|
//! | `kafka_log_logflushstats_logflushrateandtimems{quantile}` (+ `_sum`, `_count`) | `kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs`: ms per log flush (the fsyncs of segments, indexes and the directory); its `_count`'s `rate()` is the flush rate |
//! | `kafka_log_logcleaner_cleaner_recopy_percent` | LogCleaner `cleaner-recopy-percent`: bytes written / bytes read × 100 by the last clean |
//! | `kafka_log_logcleaner_max_clean_time_secs` | LogCleaner `max-clean-time-secs`: the last clean's duration (one cleaner thread) |
//! | `kafka_log_logcleanermanager_max_dirty_percent` | LogCleanerManager `max-dirty-percent`: the dirtiest compacted log's dirty bytes / cleanable bytes × 100 at the last look for work |
//! | `kafka_log_logcleaner_cleans_total`, `..._bytes_read_total`, `..._bytes_written_total` | (Runnel) cleans completed, and the bytes they read and wrote (Kafka logs these per clean) |
//!
//! Flushes run off the log's lock, cleans on the cleaner thread: recording takes no lock of ours. The cleaner
//! gauges are set again on every look for work (at least every `log.cleaner.backoff.ms`), so they stay in the
//! output while the cleaner runs.

use std::time::Instant;

use metrics::{counter, describe_counter, describe_histogram, gauge, histogram, Unit};

use crate::CleanerStats;

/// Kafka's `LogFlushStats.LogFlushRateAndTimeMs` (a timer: ms per flush).
pub const LOG_FLUSH_TIME_MS: &str = "kafka_log_logflushstats_logflushrateandtimems";

/// Records one successful flush that started at `started`.
pub(crate) fn flushed(started: Instant) {
    histogram!(LOG_FLUSH_TIME_MS).record(started.elapsed().as_secs_f64() * 1e3);
}

/// Describes the storage metrics to the installed recorder and creates the counters at 0 (so a broker whose
/// cleaner never cleaned still exports them).
pub fn describe() {
    describe_histogram!(
        LOG_FLUSH_TIME_MS,
        Unit::Milliseconds,
        "Time per log flush: fsyncs of segments, indexes and the partition directory (Kafka LogFlushRateAndTimeMs)."
    );
    for (name, unit, help) in [
        (
            "kafka_log_logcleaner_cleans_total",
            Unit::Count,
            "Log cleans completed.",
        ),
        (
            "kafka_log_logcleaner_bytes_read_total",
            Unit::Bytes,
            "Bytes the log cleaner read.",
        ),
        (
            "kafka_log_logcleaner_bytes_written_total",
            Unit::Bytes,
            "Bytes the log cleaner wrote.",
        ),
    ] {
        describe_counter!(name, unit, help);
        counter!(name).increment(0);
    }
}

/// What the cleaner gauges show: the last clean's figures, kept by the cleaner between looks for work.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CleanerGauges {
    recopy_percent: f64,
    clean_time_secs: f64,
}

impl CleanerGauges {
    /// One look for work: `max_dirty_ratio` of the logs considered (0..=1), and `cleaned`, the clean it led
    /// to, if any (counted now).
    pub(crate) fn publish(&mut self, max_dirty_ratio: f64, cleaned: Option<&CleanerStats>) {
        if let Some(s) = cleaned {
            counter!("kafka_log_logcleaner_cleans_total").increment(1);
            counter!("kafka_log_logcleaner_bytes_read_total").increment(s.bytes_read);
            counter!("kafka_log_logcleaner_bytes_written_total").increment(s.bytes_written);
            self.recopy_percent = s.bytes_written as f64 / s.bytes_read.max(1) as f64 * 100.0;
            self.clean_time_secs = s.elapsed.as_secs_f64();
        }
        gauge!("kafka_log_logcleaner_cleaner_recopy_percent").set(self.recopy_percent);
        gauge!("kafka_log_logcleaner_max_clean_time_secs").set(self.clean_time_secs);
        gauge!("kafka_log_logcleanermanager_max_dirty_percent").set(max_dirty_ratio * 100.0);
    }
}
