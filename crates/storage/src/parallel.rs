//! A bounded pool of scoped threads for per-log work at startup and shutdown (Kafka runs both on
//! `num.recovery.threads.per.data.dir` threads): opening or recovering each partition log, and closing
//! each at a clean shutdown. The work is mostly fsyncs, so more threads than cores overlap the disk's
//! waits.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The default number of threads per data directory for opening, recovering and closing logs
/// (`num.recovery.threads.per.data.dir` when not set): twice the available parallelism, at least 4
/// and at most 16. Kafka's default is 1; the work is fsync-bound, so a few threads per core hide the
/// disk's latency (2 cores: 4 threads).
pub fn default_recovery_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .saturating_mul(2)
        .clamp(4, 16)
}

/// `f` applied to every item on at most `threads` scoped threads (1 or a single item: on the calling
/// thread, in order); the results are in the items' order. Each thread takes the next item not yet
/// taken, so a slow item holds one thread only. A panic in `f` is resumed on the calling thread once
/// every thread has stopped.
pub(crate) fn map_bounded<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut out: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
        let mut panic = None;
        for h in handles {
            match h.join() {
                Ok(done) => done.into_iter().for_each(|(i, r)| out[i] = Some(r)),
                Err(p) => panic = Some(p),
            }
        }
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
    });
    out.into_iter()
        .map(|r| r.expect("every item was mapped"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_for_any_thread_count() {
        let items: Vec<u64> = (0..1000).collect();
        let serial = map_bounded(&items, 1, |x| x * x);
        for threads in [2, 3, 8, 2000] {
            assert_eq!(map_bounded(&items, threads, |x| x * x), serial);
        }
        assert!(map_bounded(&[] as &[u64], 8, |x| *x).is_empty());
    }

    #[test]
    fn never_more_threads_than_asked() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let items: Vec<u32> = (0..64).collect();
        map_bounded(&items, 3, |_| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
        });
        let most = most.load(Ordering::SeqCst);
        assert!((1..=3).contains(&most), "{most} threads at once");
    }

    #[test]
    #[should_panic(expected = "item 7")]
    fn a_panic_reaches_the_caller() {
        let items: Vec<u32> = (0..32).collect();
        map_bounded(&items, 4, |&x| assert!(x != 7, "item 7"));
    }
}
