//! The allocation-history adaptor and its snapshots, over host memory: nothing recorded while
//! off, events in order with times that agree, the ring's bound, many threads, the snapshot's
//! segments against the pool's own numbers, the pickle read back by Python, and the dump on
//! out-of-memory.

use rmm::adaptor::HistoryResourceAdaptor;
use rmm::history::{self, Action, Frame, RecordOptions, Recorder};
use rmm::resource::{BlockState, HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource};
use std::collections::HashMap;
use std::sync::Arc;

const MIB: usize = 1 << 20;
type HostPool = PoolMemoryResource<HostMemoryResource>;

fn adaptor(initial: usize, maximum: Option<usize>) -> HistoryResourceAdaptor<HostPool> {
    HistoryResourceAdaptor::new(PoolMemoryResource::new(HostMemoryResource::new(), initial, maximum).expect("pool"))
}

fn on(max_entries: usize) -> RecordOptions {
    RecordOptions { max_entries, ..RecordOptions::default() }
}

const S: CudaStreamView = CudaStreamView::DEFAULT;

#[test]
fn off_by_default_records_nothing() {
    let mr = adaptor(MIB, None);
    assert!(!mr.recorder().is_enabled());
    let p = mr.allocate(1000, 256, S).unwrap();
    mr.deallocate(p, 1000, 256, S).unwrap();
    assert!(mr.recorder().is_empty());
    // Enabled, then disabled: what was recorded stays, nothing more is added.
    mr.recorder().enable(on(16)).unwrap();
    let p = mr.allocate(1000, 256, S).unwrap();
    mr.recorder().disable();
    mr.deallocate(p, 1000, 256, S).unwrap();
    let events = mr.recorder().events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].action, Action::Alloc);
}

#[test]
fn events_keep_their_order_size_stream_and_time() {
    let mr = adaptor(MIB, None);
    mr.recorder().enable(on(100)).unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s7 = unsafe { CudaStreamView::from_handle(0x7000) };
    let a = mr.allocate(1000, 256, s7).unwrap();
    let b = mr.allocate(3000, 256, S).unwrap();
    mr.deallocate(a, 1000, 256, s7).unwrap();
    mr.deallocate(b, 3000, 256, S).unwrap();
    let got: Vec<_> = mr.recorder().events().iter().map(|e| (e.action, e.addr, e.size, e.stream)).collect();
    assert_eq!(
        got,
        vec![
            (Action::Alloc, a as usize, 1000, 0x7000),
            (Action::Alloc, b as usize, 3000, 0),
            (Action::Free, a as usize, 1000, 0x7000),
            (Action::Free, b as usize, 3000, 0),
        ]
    );
    let times: Vec<u64> = mr.recorder().events().iter().map(|e| e.time_ns).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}

#[test]
fn the_ring_keeps_the_newest_max_entries() {
    let mr = adaptor(MIB, None);
    assert!(matches!(mr.recorder().enable(on(0)), Err(Error::InvalidArgument(_))));
    assert!(!mr.recorder().is_enabled(), "a refused enable changes nothing");
    mr.recorder().enable(on(4)).unwrap();
    let mut sizes = Vec::new();
    for i in 1..=5 {
        let n = i * 256;
        let p = mr.allocate(n, 256, S).unwrap();
        mr.deallocate(p, n, 256, S).unwrap();
        sizes.push(n);
    }
    let events = mr.recorder().events();
    assert_eq!(events.len(), 4);
    assert_eq!(mr.recorder().dropped(), 6);
    assert_eq!(events.iter().map(|e| e.size).collect::<Vec<_>>(), vec![1024, 1024, 1280, 1280]);
    // A smaller bound drops the oldest at once; clearing forgets everything.
    mr.recorder().enable(on(2)).unwrap();
    assert_eq!(mr.recorder().events().iter().map(|e| e.size).collect::<Vec<_>>(), vec![1280, 1280]);
    mr.recorder().enable(RecordOptions { clear: true, ..on(2) }).unwrap();
    assert!(mr.recorder().is_empty());
    assert_eq!(mr.recorder().dropped(), 0);
}

#[test]
fn threads_record_every_event_once_and_in_a_consistent_order() {
    let mr = Arc::new(adaptor(64 * MIB, None));
    mr.recorder().enable(on(1 << 20)).unwrap();
    const THREADS: usize = 8;
    const ROUNDS: usize = 2000;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let mr = mr.clone();
            s.spawn(move || {
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                let stream = unsafe { CudaStreamView::from_handle(0x1000 * (t + 1)) };
                for i in 0..ROUNDS {
                    let n = 256 * (1 + (i + t) % 7);
                    let p = mr.allocate(n, 256, stream).unwrap();
                    mr.deallocate(p, n, 256, stream).unwrap();
                }
            });
        }
    });
    let events = mr.recorder().events();
    assert_eq!(events.len(), THREADS * ROUNDS * 2);
    // Every address alternates alloc, free, alloc, ... with the same size: a free is recorded
    // before the block goes back, an allocation after it is handed out.
    let mut live: HashMap<usize, usize> = HashMap::new();
    for e in &events {
        match e.action {
            Action::Alloc => assert!(live.insert(e.addr, e.size).is_none(), "{:#x} allocated twice", e.addr),
            Action::Free => assert_eq!(live.remove(&e.addr), Some(e.size), "free of {:#x}", e.addr),
            Action::Oom => unreachable!(),
        }
    }
    assert!(live.is_empty());
    assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    // Streams spread over shards, which took ranges of each other's memory: the segments are
    // still the upstream's chunks, tiled, all free.
    let segments = mr.memory_segments().unwrap();
    let state = mr.upstream().state();
    assert_eq!(segments.iter().map(|s| s.total_size).sum::<usize>(), state.pool_size);
    for s in &segments {
        assert_eq!(s.blocks.iter().map(|b| b.size).sum::<usize>(), s.total_size);
        assert!(s.blocks.iter().all(|b| b.state == BlockState::Free));
    }
}

#[test]
fn a_virtual_pool_is_one_expandable_segment() {
    use rmm::pool::{HostOrder, HostPhysicalMemory};
    use rmm::resource::VirtualPoolMemoryResource;
    // A stand-in reservation that only records its mappings: the test never touches the memory.
    let stand_in = HostPhysicalMemory::new(0x7f00_0000_0000, 1 << 30, 2 * MIB);
    // SAFETY: the addresses are never read or written; the test only allocates and frees.
    let pool = unsafe { VirtualPoolMemoryResource::with_physical(stand_in, 0, Box::new(HostOrder), 1) }.unwrap();
    let mr = HistoryResourceAdaptor::new(pool);
    let a = mr.allocate(3 * MIB, 256, S).unwrap();
    let b = mr.allocate(5 * MIB, 256, S).unwrap();
    let segments = mr.memory_segments().unwrap();
    assert_eq!(segments.len(), 1, "{segments:?}");
    assert!(segments[0].expandable);
    assert_eq!(segments[0].total_size, mr.upstream().pool_size());
    assert_eq!(segments[0].requested_size(), 8 * MIB);
    mr.deallocate(a, 3 * MIB, 256, S).unwrap();
    mr.deallocate(b, 5 * MIB, 256, S).unwrap();
}

#[test]
fn non_waiting_free_declines_while_recording() {
    let mr = adaptor(MIB, None);
    let p = mr.allocate(512, 256, S).unwrap();
    mr.recorder().enable(on(16)).unwrap();
    assert!(!mr.try_deallocate_immediately(p, 512, 256, S));
    mr.deallocate(p, 512, 256, S).unwrap();
    assert_eq!(mr.recorder().events().len(), 1);
}

#[test]
fn segments_tile_the_pool_and_match_its_numbers() {
    let mr = adaptor(4 * MIB, None);
    let live: Vec<(*mut u8, usize)> = (1..40).map(|i| (mr.allocate(i * 1000, 256, S).unwrap(), i * 1000)).collect();
    // Free every other block, so free and handed-out blocks interleave.
    for &(p, n) in live.iter().step_by(2) {
        mr.deallocate(p, n, 256, S).unwrap();
    }
    // Past the initial chunk: the pool grows by a second segment.
    let big = mr.allocate(6 * MIB, 256, S).unwrap();
    let segments = mr.memory_segments().expect("a pool has segments");
    let state = mr.upstream().state();
    assert!(segments.len() >= 2);
    assert_eq!(segments.iter().map(|s| s.total_size).sum::<usize>(), state.pool_size);
    for s in &segments {
        assert_eq!(s.blocks.iter().map(|b| b.size).sum::<usize>(), s.total_size);
        let mut at = s.address;
        for b in &s.blocks {
            assert_eq!(b.address, at, "blocks tile the segment in address order");
            at += b.size;
        }
    }
    let free: usize =
        segments.iter().flat_map(|s| &s.blocks).filter(|b| b.state == BlockState::Free).map(|b| b.size).sum();
    assert_eq!(free, state.free_bytes);
    let requested: usize = segments.iter().map(|s| s.requested_size()).sum();
    let expected: usize = live.iter().skip(1).step_by(2).map(|&(_, n)| n).sum::<usize>() + 6 * MIB;
    assert_eq!(requested, expected);
    let blocks: usize = segments.iter().map(|s| s.allocated_blocks()).sum();
    assert_eq!(blocks, live.len() / 2 + 1);
    mr.deallocate(big, 6 * MIB, 256, S).unwrap();
    for &(p, n) in live.iter().skip(1).step_by(2) {
        mr.deallocate(p, n, 256, S).unwrap();
    }
}

#[test]
fn blocks_carry_the_stack_of_their_allocation() {
    let mr = adaptor(MIB, None);
    let frame = Frame { filename: "train.py".into(), line: 42, name: "step".into() };
    let f = frame.clone();
    mr.recorder().set_stack_source(Some(Arc::new(move || vec![f.clone()])));
    mr.recorder().enable(RecordOptions { stacks: true, ..on(16) }).unwrap();
    let p = mr.allocate(4096, 256, S).unwrap();
    let events = mr.recorder().events();
    assert_eq!(events[0].frames.as_deref(), Some(&[frame][..]));
    mr.deallocate(p, 4096, 256, S).unwrap();
}

/// Runs `python3` on `script` with the pickle's path as its argument; `None` without Python.
fn python(script: &str, pickle: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("python3").arg("-c").arg(script).arg(pickle).output().ok()?;
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn the_pickle_reads_back_in_python_with_torchs_keys() {
    let mr = adaptor(MIB, None);
    mr.recorder()
        .set_stack_source(Some(Arc::new(|| vec![Frame { filename: "a.py".into(), line: 1, name: "f".into() }])));
    mr.recorder().enable(RecordOptions { stacks: true, ..on(64) }).unwrap();
    let a = mr.allocate(1000, 256, S).unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let b = mr.allocate(5000, 256, unsafe { CudaStreamView::from_handle(0x7f00_0000_1234) }).unwrap();
    mr.deallocate(a, 1000, 256, S).unwrap();
    let dir = std::env::temp_dir().join(format!("rmm_history_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("snapshot.pickle");
    mr.dump_snapshot(&path).unwrap();
    let script = r#"
import pickle, sys
s = pickle.load(open(sys.argv[1], 'rb'))
seg_keys = {'device', 'address', 'total_size', 'allocated_size', 'active_size', 'requested_size',
            'stream', 'segment_type', 'segment_pool_id', 'is_expandable', 'frames', 'blocks'}
assert set(s) >= {'segments', 'device_traces', 'allocator_settings'}, set(s)
for seg in s['segments']:
    assert set(seg) == seg_keys, set(seg) ^ seg_keys
    assert sum(b['size'] for b in seg['blocks']) == seg['total_size']
    for b in seg['blocks']:
        assert set(b) == {'address', 'size', 'requested_size', 'state', 'frames'}, set(b)
        assert b['state'] in ('active_allocated', 'inactive')
active = [b for seg in s['segments'] for b in seg['blocks'] if b['state'] == 'active_allocated']
trace = s['device_traces'][0]
for e in trace:
    assert set(e) >= {'action', 'addr', 'size', 'stream', 'time_us', 'frames'}, set(e)
print(len(active), active[0]['requested_size'], active[0]['frames'][0]['name'],
      [e['action'] for e in trace], trace[1]['stream'])
"#;
    let Some(out) = python(script, &path) else {
        println!("skipped: no python3");
        return;
    };
    assert_eq!(
        out,
        format!("1 5000 f ['alloc', 'alloc', 'free_requested', 'free_completed'] {}", 0x7f00_0000_1234usize)
    );
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    mr.deallocate(b, 5000, 256, unsafe { CudaStreamView::from_handle(0x7f00_0000_1234) }).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn out_of_memory_writes_the_snapshot_and_the_map_and_names_them() {
    let mr = adaptor(MIB, Some(2 * MIB));
    let dir = std::env::temp_dir().join(format!("rmm_history_oom_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    mr.set_dump_on_oom(Some(dir.clone()));
    mr.recorder().enable(on(64)).unwrap();
    let p = mr.allocate(MIB, 256, S).unwrap();
    let err = mr.allocate(4 * MIB, 256, S).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
    let pickle = dir.join(message.split("memory snapshot written to ").nth(1).unwrap().split(',').next().unwrap());
    let svg = message.split("memory map to ").nth(1).unwrap().trim_end_matches(')').to_string();
    assert!(pickle.exists(), "{message}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("out of memory: 4194304 bytes requested"), "{svg}");
    let last = mr.recorder().events().pop().unwrap();
    assert_eq!((last.action, last.size), (Action::Oom, 4 * MIB));
    // A folder that does not exist: the error says why no snapshot was written.
    mr.set_dump_on_oom(Some(dir.join("missing")));
    let message = mr.allocate(4 * MIB, 256, S).unwrap_err().to_string();
    assert!(message.contains("no memory snapshot"), "{message}");
    mr.deallocate(p, MIB, 256, S).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// A fresh folder holding `victim` (another user's file) for the symbolic-link tests.
fn folder_with_a_victim(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("rmm_history_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, KEPT).unwrap();
    (dir, victim)
}

const KEPT: &str = "another user's file\n";

#[test]
fn a_snapshot_is_never_written_through_a_symbolic_link() {
    let (dir, victim) = folder_with_a_victim("snapshot_link");
    let link = dir.join("snapshot.pickle");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let mr = adaptor(MIB, None);
    match mr.dump_snapshot(&link).unwrap_err() {
        Error::Io { path, message } => {
            assert_eq!(path, link.display().to_string());
            assert!(message.contains("symbolic link"), "{message}");
        }
        other => panic!("expected Io, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), KEPT);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_out_of_memory_dump_is_never_written_through_a_symbolic_link() {
    let (dir, victim) = folder_with_a_victim("oom_link");
    // Dumps are numbered per process, and other tests of this binary dump too: a link stands at
    // each name the next dumps can take.
    for n in 0..64 {
        for extension in ["pickle", "svg"] {
            let name = format!("rmm_oom_{}_{n}.{extension}", std::process::id());
            std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        }
    }
    let mr = adaptor(MIB, Some(2 * MIB));
    mr.set_dump_on_oom(Some(dir.clone()));
    let err = mr.allocate(4 * MIB, 256, S).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
    assert!(message.contains("no memory snapshot") && message.contains("symbolic link"), "{message}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), KEPT);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_resource_without_segments_snapshots_its_trace_only() {
    let host = HostMemoryResource::new();
    let recorder = Recorder::new(0);
    let v = history::snapshot(&host, Some(&recorder));
    let text = format!("{v:?}");
    assert!(text.contains("segments") && text.contains("device_traces"));
    assert!(host.memory_segments().is_none());
}

#[test]
fn gpu_pool_snapshot_matches_the_pool() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    use rmm::resource::CudaMemoryResource;
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 32 * MIB, None).unwrap();
    let mr = HistoryResourceAdaptor::new(pool);
    mr.recorder().enable(on(1000)).unwrap();
    let stream = rmm::CudaStream::new().unwrap();
    let mut live: Vec<(*mut u8, usize)> =
        (1..50).map(|i| (mr.allocate(i * 4099, 256, stream.view()).unwrap(), i * 4099)).collect();
    live.push((mr.allocate(64 * MIB, 256, stream.view()).unwrap(), 64 * MIB));
    for &(p, n) in live.iter().step_by(3) {
        mr.deallocate(p, n, 256, stream.view()).unwrap();
    }
    let segments = mr.memory_segments().unwrap();
    let state = mr.upstream().state();
    assert_eq!(segments.iter().map(|s| s.total_size).sum::<usize>(), state.pool_size);
    let free: usize =
        segments.iter().flat_map(|s| &s.blocks).filter(|b| b.state == BlockState::Free).map(|b| b.size).sum();
    assert_eq!(free, state.free_bytes);
    let kept: Vec<_> = live.iter().enumerate().filter(|(i, _)| i % 3 != 0).map(|(_, &l)| l).collect();
    assert_eq!(segments.iter().map(|s| s.requested_size()).sum::<usize>(), kept.iter().map(|&(_, n)| n).sum::<usize>());
    let events = mr.recorder().events();
    assert_eq!(events.len(), live.len() + live.len().div_ceil(3));
    assert!(events
        .iter()
        .all(|e| e.device == rmm::DeviceId::current().unwrap().0 && e.stream == stream.view().handle()));
    for (p, n) in kept {
        mr.deallocate(p, n, 256, stream.view()).unwrap();
    }
    stream.synchronize().unwrap();
}
