//! Stream order checked against a model of the device (`common::clock_order`): every free ticks
//! its stream's clock, and a granule freed on stream S at time t may reach stream T only if
//! T == S or T's clock has S at t or later. Threads share streams (several threads per stream),
//! hand blocks to each other, and the pool runs close to its maximum, so hand-overs between
//! streams, per-thread shards and synchronisations all happen.

mod common;

use common::clock_order::ClockOrder;
use common::{seed, Rng};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, MemoryResource};
use std::collections::HashMap;
use std::sync::{Arc, Barrier, Mutex};

const STREAMS: usize = 3;
const THREADS: usize = 9;
const GRANULE: usize = 256;

/// Blocks a thread hands to another thread of its stream to free: `(address, bytes)`.
type Mailbox = Mutex<Vec<(usize, usize)>>;

/// Where each freed granule was freed, and when; and the hand-overs between streams checked.
#[derive(Default)]
struct Granules {
    freed: HashMap<usize, (usize, u64)>,
    crossings: usize,
}

/// The model's view of the pool's blocks.
#[derive(Clone, Default)]
struct Model {
    order: ClockOrder,
    granules: Arc<Mutex<Granules>>,
}

impl Model {
    /// Notes a free of `[p, p + bytes)` on `stream` before the pool sees it: the stream's clock
    /// advances, and the granules remember the time.
    fn freeing(&self, p: *mut u8, bytes: usize, stream: usize) {
        let t = self.order.tick(stream);
        let mut g = self.granules.lock().unwrap();
        for a in (p as usize..p as usize + bytes.max(1)).step_by(GRANULE) {
            g.freed.insert(a / GRANULE, (stream, t));
        }
    }

    /// Checks that `[p, p + bytes)`, just handed to `stream`, was free for it.
    fn allocated(&self, p: *mut u8, bytes: usize, stream: usize) {
        let mut g = self.granules.lock().unwrap();
        for a in (p as usize..p as usize + bytes.max(1)).step_by(GRANULE) {
            if let Some((s, t)) = g.freed.remove(&(a / GRANULE)) {
                if s != stream {
                    assert!(
                        self.order.sees(stream, s, t),
                        "granule {a:#x} freed on {s:#x} at {t} reached {stream:#x} unordered"
                    );
                    g.crossings += 1;
                }
            }
        }
    }
}

#[test]
fn threads_sharing_streams_keep_the_stream_order() {
    let model = Model::default();
    let upstream = Arc::new(HostMemoryResource::new());
    let base = seed("pool stream order model", 21);
    {
        let max = 24 << 20;
        let pool =
            // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
            unsafe { PoolMemoryResource::with_stream_order(upstream.clone(), 4 << 20, Some(max), Box::new(model.order.clone())) }
                .unwrap();
        let pool = Arc::new(pool);
        let mailboxes: Arc<Vec<Mailbox>> = Arc::new((0..STREAMS).map(|_| Mutex::default()).collect());
        // The threads start together: one spawned late on a busy machine could otherwise find the
        // others done, and no block would ever move between streams.
        let start = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, model, mailboxes, start) = (pool.clone(), model.clone(), mailboxes.clone(), start.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(base + t as u64);
                    let group = t % STREAMS;
                    let handle = 0x1000 * (group + 1);
                    // SAFETY: a stream name for resources over host memory: no driver call sees it.
                    let stream = unsafe { CudaStreamView::from_handle(handle) };
                    // The stream has a clock from now on, which synchronisations advance.
                    model.order.tick(handle);
                    start.wait();
                    let mut live: Vec<(*mut u8, usize)> = Vec::new();
                    let free = |p: *mut u8, bytes: usize| {
                        model.freeing(p, bytes, handle);
                        pool.deallocate(p, bytes, 256, stream).unwrap();
                    };
                    for i in 0..20_000 {
                        if live.len() < 64 && (live.is_empty() || rng.below(2) == 0) {
                            let bytes = rng.log_uniform(8, 64 << 10);
                            let p = pool.allocate(bytes, 256, stream).unwrap();
                            model.allocated(p, bytes, handle);
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
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            let stream = unsafe { CudaStreamView::from_handle(0x1000 * (group + 1)) };
            for (p, bytes) in mailbox.lock().unwrap().drain(..) {
                model.freeing(p as *mut u8, bytes, stream.handle());
                pool.deallocate(p as *mut u8, bytes, 256, stream).unwrap();
            }
        }
        let crossings = model.granules.lock().unwrap().crossings;
        println!("granules handed from one stream to another: {crossings}");
        // However the threads were scheduled, a new stream now takes the pool up to its maximum,
        // until no piece fits, which includes memory freed on the other streams, so hand-overs
        // are checked in every run.
        let late = 0x9000;
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let stream = unsafe { CudaStreamView::from_handle(late) };
        model.order.tick(late);
        const PIECE: usize = 64 << 10;
        let mut taken = Vec::new();
        let fits = |st: rmm::PoolState| st.largest_free_block >= PIECE || max - st.pool_size >= PIECE;
        while fits(pool.state()) {
            let p = pool.allocate(PIECE, 256, stream).unwrap();
            model.allocated(p, PIECE, late);
            taken.push(p);
        }
        for p in taken {
            model.freeing(p, PIECE, late);
            pool.deallocate(p, PIECE, 256, stream).unwrap();
        }
        pool.check_invariants().unwrap();
        let state = pool.state();
        assert_eq!(state.free_bytes, state.pool_size);
    }
    let crossings = model.granules.lock().unwrap().crossings;
    assert!(crossings > 0, "blocks moved between streams");
    assert_eq!(upstream.outstanding(), (0, 0));
}
