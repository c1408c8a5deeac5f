//! Stream order checked against a model of the device: every stream has a clock that each free on
//! it advances; a record captures the clock, a wait passes the captured time on, a synchronisation
//! passes every clock to every stream. A block freed on stream S at time t may reach stream T only
//! if T == S or T knows a time of S after t. Threads share streams (several threads per stream),
//! hand blocks to each other, and the pool runs close to its maximum, so hand-overs between
//! streams, per-thread shards and synchronisations all happen.

mod common;

use common::{seed, Rng};
use rmm::pool::{StreamKey, StreamOrder};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, MemoryResource, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const STREAMS: usize = 3;
const THREADS: usize = 9;
const GRANULE: usize = 256;

/// Blocks a thread hands to another thread of its stream to free: `(address, bytes)`.
type Mailbox = Mutex<Vec<(usize, usize)>>;

/// The device as the pool's stream order sees it.
#[derive(Default)]
struct Device {
    /// Each stream's clock, advanced by every free on it.
    clock: HashMap<usize, u64>,
    /// The time each stream's last record captured.
    captured: HashMap<usize, u64>,
    /// What each stream knows of the others' clocks.
    knows: HashMap<(usize, usize), u64>,
    /// The stream and time each freed granule was freed at.
    freed: HashMap<usize, (usize, u64)>,
    /// Hand-overs checked between different streams.
    crossings: usize,
}

#[derive(Clone, Default)]
struct ModelOrder(Arc<Mutex<Device>>);

impl StreamOrder for ModelOrder {
    fn record(&self, owner: StreamKey, _identity: u64) -> Result<()> {
        let mut d = self.0.lock().unwrap();
        let now = d.clock.get(&owner.0).copied().unwrap_or(0);
        d.captured.insert(owner.0, now);
        Ok(())
    }
    fn wait(&self, owner: StreamKey, _identity: u64, waiter: StreamKey) -> Result<()> {
        let mut d = self.0.lock().unwrap();
        let captured = d.captured.get(&owner.0).copied().expect("a wait for a stream that never recorded");
        let known = d.knows.entry((waiter.0, owner.0)).or_insert(0);
        *known = (*known).max(captured);
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        let mut d = self.0.lock().unwrap();
        let clocks: Vec<(usize, u64)> = d.clock.iter().map(|(&s, &t)| (s, t)).collect();
        let streams: Vec<usize> = clocks.iter().map(|&(s, _)| s).collect();
        for &waiter in &streams {
            for &(s, t) in &clocks {
                let known = d.knows.entry((waiter, s)).or_insert(0);
                *known = (*known).max(t);
            }
        }
        Ok(())
    }
}

impl ModelOrder {
    /// Notes a free of `[p, p + bytes)` on `stream` before the pool sees it, and advances the clock.
    fn freeing(&self, p: *mut u8, bytes: usize, stream: usize) {
        let mut d = self.0.lock().unwrap();
        let t = *d.clock.entry(stream).or_insert(0);
        for g in (p as usize..p as usize + bytes.max(1)).step_by(GRANULE) {
            d.freed.insert(g / GRANULE, (stream, t));
        }
        d.clock.insert(stream, t + 1);
    }

    /// Checks that `[p, p + bytes)`, just handed to `stream`, was free for it.
    fn allocated(&self, p: *mut u8, bytes: usize, stream: usize) {
        let mut d = self.0.lock().unwrap();
        for g in (p as usize..p as usize + bytes.max(1)).step_by(GRANULE) {
            if let Some((s, t)) = d.freed.remove(&(g / GRANULE)) {
                if s != stream {
                    let known = d.knows.get(&(stream, s)).copied().unwrap_or(0);
                    assert!(
                        known > t,
                        "granule {g:#x} freed on {s:#x} at {t} reached {stream:#x}, which knows {known}"
                    );
                    d.crossings += 1;
                }
            }
        }
    }
}

#[test]
fn threads_sharing_streams_keep_the_stream_order() {
    let order = ModelOrder::default();
    let upstream = Arc::new(HostMemoryResource::new());
    let base = seed("pool stream order model", 21);
    {
        let max = 24 << 20;
        let pool = PoolMemoryResource::with_stream_order(upstream.clone(), 4 << 20, Some(max), Box::new(order.clone()))
            .unwrap();
        let pool = Arc::new(pool);
        let mailboxes: Arc<Vec<Mailbox>> = Arc::new((0..STREAMS).map(|_| Mutex::default()).collect());
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, order, mailboxes) = (pool.clone(), order.clone(), mailboxes.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(base + t as u64);
                    let group = t % STREAMS;
                    let handle = 0x1000 * (group + 1);
                    let stream = CudaStreamView::from_handle(handle);
                    let mut live: Vec<(*mut u8, usize)> = Vec::new();
                    let free = |p: *mut u8, bytes: usize| {
                        order.freeing(p, bytes, handle);
                        pool.deallocate(p, bytes, 256, stream).unwrap();
                    };
                    for i in 0..20_000 {
                        if live.len() < 64 && (live.is_empty() || rng.below(2) == 0) {
                            let bytes = rng.log_uniform(8, 64 << 10);
                            let p = pool.allocate(bytes, 256, stream).unwrap();
                            order.allocated(p, bytes, handle);
                            live.push((p, bytes));
                        } else {
                            let (p, bytes) = live.swap_remove(rng.below(live.len()));
                            if rng.below(8) == 0 {
                                // Another thread of the stream frees it.
                                mailboxes[group].lock().unwrap().push((p as usize, bytes));
                            } else {
                                free(p, bytes);
                            }
                        }
                        if i % 16 == 0 {
                            let theirs: Vec<(usize, usize)> = mailboxes[group].lock().unwrap().drain(..).collect();
                            for (p, bytes) in theirs {
                                free(p as *mut u8, bytes);
                            }
                        }
                    }
                    for (p, bytes) in live {
                        free(p, bytes);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        for (group, mailbox) in mailboxes.iter().enumerate() {
            let stream = CudaStreamView::from_handle(0x1000 * (group + 1));
            for (p, bytes) in mailbox.lock().unwrap().drain(..) {
                order.freeing(p as *mut u8, bytes, stream.handle());
                pool.deallocate(p as *mut u8, bytes, 256, stream).unwrap();
            }
        }
        pool.check_invariants().unwrap();
        let state = pool.state();
        assert_eq!(state.free_bytes, state.pool_size);
    }
    let crossings = order.0.lock().unwrap().crossings;
    println!("granules handed from one stream to another: {crossings}");
    assert!(crossings > 0, "blocks moved between streams");
    assert_eq!(upstream.outstanding(), (0, 0));
}
