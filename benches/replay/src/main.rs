//! `rmm_replay`: replays RMM allocation logs against a resource of this crate and reports the time
//! per operation and how much memory the resource took from its upstream.
//!
//! ```text
//! rmm_replay [--resource pool|virtual_pool|cuda|cuda_async] [--upstream host|host-ordered|cuda] [--initial-pool BYTES]
//!            [--maximum-pool BYTES] [--shards N] [--runs N] [--check] [--map DIR] LOG...
//! rmm_replay generate thrust|multi_stream|random OUT [--ops N] [--seed S]
//! ```
//!
//! `--help` describes every option and its default (`cli.rs`); `--version` prints the version.
//!
//! A log is what `LoggingResourceAdaptor` (ours) or RMM's `logging_resource_adaptor` writes (see
//! `log.rs` for what is accepted). Each logged pointer is mapped to the pointer the resource
//! returns; allocations and frees are replayed **in file order on one thread**, also for logs
//! written by several threads (their rows are already in the order the logger saw them). Each
//! distinct logged stream becomes one stream: on the host a distinct fake handle, on the GPU one
//! `CudaStream` each; the handles `0x0` (default), `0x1` (legacy) and `0x2` (per-thread default)
//! stay themselves. Every request is aligned to 256 bytes (logs do not record alignments).
//!
//! Each log gets a fresh resource. The first (cold) replay grows it from empty (or from
//! `--initial-pool`); `--runs` further (warm) replays reuse it. Blocks the log leaves live are freed
//! after each replay, untimed; all streams are synchronised before the clock stops.
//!
//! Output: `#` comment lines and CSV rows `impl,resource,workload,param,value,unit` like
//! `alloc_bench` (impl `rmm-rs-native`, workload `replay`, param the log's file name without
//! `.csv`), the unit naming the quantity:
//! - `ops`: allocations and frees replayed;
//! - `ns_per_op`: median of the warm replays (the cold one when `--runs 0`);
//! - `cold_ns_per_op`: the first replay, growth included;
//! - `peak_upstream_bytes`: the most bytes the resource held from its upstream during the cold
//!   replay (pool: a `StatisticsResourceAdaptor` around the upstream; `cuda`: the bytes allocated;
//!   `cuda_async`: the driver pool's reserved-memory high-water mark);
//! - `peak_live_bytes`: the most requested bytes live at once, computed from the log;
//! - `fragmentation`: peak_upstream_bytes / peak_live_bytes;
//! - `largest_free_block_bytes` (pools only): the pool's largest free block after the cold replay,
//!   every block freed: how much of what it holds one request can get without growing.
//!
//! Resources: `pool` (our `PoolMemoryResource`) over `--upstream host` (host memory, no GPU; the
//! resource column says `pool_host`), `--upstream host-ordered` (host memory, but streams handed
//! blocks over as on a GPU: publish, then wait; `pool_host_ordered`, so the device pool's
//! fragmentation can be studied without one) or `--upstream cuda` (`pool`); `virtual_pool` (our
//! `VirtualPoolMemoryResource`: a reservation of `--maximum-pool` bytes, 256 GiB unless given,
//! mapped in 2 MiB granules; its peak upstream bytes are the bytes mapped) over the same three
//! upstreams, on the host a stand-in that only records the mappings (`virtual_pool_host`,
//! `virtual_pool_host_ordered`; on the GPU `virtual_pool`); `cuda`; `cuda_async`.
//! `--check` only reads the logs.
//!
//! `--map DIR` also writes `DIR/<log name>.svg`, the memory map of each cold replay: address against
//! operation, each block from its allocation to its free, the address ranges used (spread over the
//! upstream's chunks) stacked (`memory_map.rs`). Recording the addresses is part of the timed cold
//! replay.
//!
//! Exit status: 0 on success; 1 when a log is malformed or its replay failed (the message names
//! the file and line), or a map could not be written; 2 for a usage error; 3 when a CUDA resource
//! or upstream is asked for and there is no CUDA device (the message names what needed one).
//! A closed standard output (`| head`) ends the program quietly.

mod cli;
mod generate;
mod log;
mod memory_map;

use clap::Parser;
use cli::{Cli, Command, Resource, Upstream};
use log::{Kind, Log};
use rmm::adaptor::StatisticsResourceAdaptor;
use rmm::pool::HostPhysicalMemory;
use rmm::pool::SimulatedDeviceOrder;
use rmm::pool::StreamOrder;
use rmm::resource::{
    CudaAsyncMemoryResource, CudaMemoryResource, HostMemoryResource, PoolMemoryResource, VirtualPoolMemoryResource,
};
use rmm::{CudaStream, CudaStreamView, MemoryResource};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const IMPL: &str = "rmm-rs-native";
const ALIGN: usize = 256;
/// The virtual pool's reservation unless `--maximum-pool` gives one.
const VIRTUAL_RESERVE: usize = 256 << 30;
/// The stand-in's granule: the recommended granularity of the H100 and H200.
const VIRTUAL_GRANULE: usize = 2 << 20;
/// Where the stand-in's reservation seems to start.
const VIRTUAL_HOST_BASE: usize = 0x7f00_0000_0000;

/// The resource column of the output.
fn resource_name(o: &Cli) -> &'static str {
    match (o.resource, o.upstream) {
        (Resource::Pool, Upstream::Host) => "pool_host",
        (Resource::Pool, Upstream::HostOrdered) => "pool_host_ordered",
        (Resource::Pool, Upstream::Cuda) => "pool",
        (Resource::Cuda, _) => "cuda",
        (Resource::CudaAsync, _) => "cuda_async",
        (Resource::VirtualPool, Upstream::Host) => "virtual_pool_host",
        (Resource::VirtualPool, Upstream::HostOrdered) => "virtual_pool_host_ordered",
        (Resource::VirtualPool, Upstream::Cuda) => "virtual_pool",
    }
}

/// The logged streams, mapped to streams of this process.
struct Streams {
    views: Vec<CudaStreamView<'static>>,
    gpu: bool,
    // Owns the real streams the views name; dropped after the resource (declared later there).
    _owned: Vec<CudaStream>,
}

impl Streams {
    fn new(logged: &[usize], gpu: bool) -> rmm::Result<Self> {
        let mut views = Vec::with_capacity(logged.len());
        let mut owned = Vec::new();
        for (i, &handle) in logged.iter().enumerate() {
            views.push(if handle <= 2 {
                // SAFETY: the default, legacy and per-thread default streams exist in every process.
                unsafe { CudaStreamView::from_handle(handle) }
            } else if gpu {
                let s = CudaStream::new()?;
                // SAFETY: `_owned` keeps the stream until the views are dropped with it.
                let v = unsafe { s.view().detach() };
                owned.push(s);
                v
            } else {
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                unsafe { CudaStreamView::from_handle(0x1000 * (i + 1)) }
            });
        }
        Ok(Streams { views, gpu, _owned: owned })
    }

    fn synchronize(&self) -> rmm::Result<()> {
        if self.gpu {
            for v in &self.views {
                v.synchronize()?;
            }
        }
        Ok(())
    }
}

/// What one log's replays measured.
struct Measured {
    cold: Duration,
    warm: Vec<Duration>,
    peak_upstream: usize,
    /// The pool's largest free block once the cold replay and its final frees are done, when the
    /// resource is a pool.
    largest_free: Option<usize>,
    /// What each allocation of the cold replay returned, in order (only for `--map`).
    addresses: Vec<usize>,
}

fn op_error(log: &Log, i: usize, streams: &[usize], e: rmm::Error) -> String {
    let op = log.ops[i];
    let what = if op.kind == Kind::Allocate { "allocate" } else { "free" };
    format!(
        "line {}: {what} of {} bytes on logged stream {:#x} failed: {e}",
        log.lines[i], op.size, streams[op.stream as usize]
    )
}

/// Replays the log once; returns the time of the logged operations (streams synchronised).
/// Blocks the log leaves live are freed afterwards, untimed. `addresses`, when given, receives what
/// each allocation returned.
fn replay_once<R: MemoryResource>(
    mr: &R,
    log: &Log,
    streams: &Streams,
    table: &mut [*mut u8],
    mut addresses: Option<&mut Vec<usize>>,
) -> Result<Duration, String> {
    let sync = |e: rmm::Error| format!("synchronising the streams failed: {e}");
    let t0 = Instant::now();
    for (i, op) in log.ops.iter().enumerate() {
        let s = streams.views[op.stream as usize];
        let slot = op.slot as usize;
        match op.kind {
            Kind::Allocate => match mr.allocate(op.size, ALIGN, s) {
                Ok(p) => {
                    table[slot] = p;
                    if let Some(a) = addresses.as_deref_mut() {
                        a.push(p as usize);
                    }
                }
                Err(e) => return Err(op_error(log, i, &log.streams, e)),
            },
            Kind::Free => {
                if let Err(e) = mr.deallocate(table[slot], op.size, ALIGN, s) {
                    return Err(op_error(log, i, &log.streams, e));
                }
            }
        }
    }
    streams.synchronize().map_err(sync)?;
    let elapsed = t0.elapsed();
    for op in &log.live_at_end {
        let s = streams.views[op.stream as usize];
        mr.deallocate(table[op.slot as usize], op.size, ALIGN, s)
            .map_err(|e| format!("freeing a block left live at the end of the log failed: {e}"))?;
    }
    streams.synchronize().map_err(sync)?;
    Ok(elapsed)
}

/// The cold replay (its addresses recorded for `--map`), the peak upstream bytes and the largest
/// free block after it, then `--runs` warm replays.
fn measure<R: MemoryResource>(
    mr: &R,
    peak_upstream: impl Fn(&R) -> usize,
    largest_free: impl Fn(&R) -> Option<usize>,
    log: &Log,
    streams: &Streams,
    o: &Cli,
) -> Result<Measured, String> {
    let mut table = vec![std::ptr::null_mut(); log.slots];
    let mut addresses = Vec::with_capacity(if o.map.is_some() { log.allocations() } else { 0 });
    let record = o.map.is_some().then_some(&mut addresses);
    let cold = replay_once(mr, log, streams, &mut table, record)?;
    let peak_upstream = peak_upstream(mr);
    let largest_free = largest_free(mr);
    let mut warm = Vec::with_capacity(o.runs);
    for _ in 0..o.runs {
        warm.push(replay_once(mr, log, streams, &mut table, None)?);
    }
    Ok(Measured { cold, warm, peak_upstream, largest_free, addresses })
}

fn replay(o: &Cli, log: &Log) -> Result<Measured, String> {
    let e = |e: rmm::Error| format!("creating the resource failed: {e}");
    let gpu = o.needs_cuda().is_some();
    let streams = Streams::new(&log.streams, gpu).map_err(|e| format!("creating streams failed: {e}"))?;
    match (o.resource, o.upstream) {
        (Resource::Pool, Upstream::Host) => {
            replay_pool(o, HostMemoryResource::new(), Box::new(rmm::pool::HostOrder), log, &streams)
        }
        (Resource::Pool, Upstream::HostOrdered) => {
            replay_pool(o, HostMemoryResource::new(), Box::new(SimulatedDeviceOrder), log, &streams)
        }
        (Resource::Pool, Upstream::Cuda) => {
            replay_pool(o, CudaMemoryResource::new(), Box::new(rmm::resource::CudaEventOrder::new()), log, &streams)
        }
        (Resource::VirtualPool, Upstream::Host) => {
            replay_virtual_pool_on_host(o, Box::new(rmm::pool::HostOrder), log, &streams)
        }
        (Resource::VirtualPool, Upstream::HostOrdered) => {
            replay_virtual_pool_on_host(o, Box::new(SimulatedDeviceOrder), log, &streams)
        }
        (Resource::VirtualPool, Upstream::Cuda) => {
            let reserve = o.maximum_pool.unwrap_or(VIRTUAL_RESERVE);
            let mr = VirtualPoolMemoryResource::new(reserve, o.initial_pool).map_err(e)?;
            measure(&mr, |m| m.mapped_bytes(), |m| Some(m.state().largest_free_block), log, &streams, o)
        }
        (Resource::Cuda, _) => {
            let mr = StatisticsResourceAdaptor::new(CudaMemoryResource::new());
            measure(&mr, |m| m.bytes_counter().peak as usize, |_| None, log, &streams, o)
        }
        (Resource::CudaAsync, _) => {
            let mr = StatisticsResourceAdaptor::new(CudaAsyncMemoryResource::new(None, None).map_err(e)?);
            measure(
                &mr,
                |m| m.upstream().reserved_memory_high().ok().unwrap_or(m.bytes_counter().peak as usize),
                |_| None,
                log,
                &streams,
                o,
            )
        }
    }
}

/// A pool over `upstream` (counted by a statistics adaptor, whose peak is the pool's peak upstream
/// bytes), ordered by `order`, sized and sharded as the options say.
fn replay_pool<U: MemoryResource>(
    o: &Cli,
    upstream: U,
    order: Box<dyn StreamOrder>,
    log: &Log,
    streams: &Streams,
) -> Result<Measured, String> {
    let upstream = StatisticsResourceAdaptor::new(upstream);
    // SAFETY: the callers pair each order with its upstream's memory: the host orders with host memory, CudaEventOrder with device memory.
    let mr = unsafe { PoolMemoryResource::with_shards(upstream, o.initial_pool, o.maximum_pool, order, o.shards) }
        .map_err(|e| format!("creating the resource failed: {e}"))?;
    measure(
        &mr,
        |p| p.upstream().bytes_counter().peak as usize,
        |p| Some(p.state().largest_free_block),
        log,
        streams,
        o,
    )
}

/// The virtual pool over a stand-in reservation that only records its mappings, at a made-up
/// address: the replay allocates and frees, and never touches a block.
fn replay_virtual_pool_on_host(
    o: &Cli,
    order: Box<dyn StreamOrder>,
    log: &Log,
    streams: &Streams,
) -> Result<Measured, String> {
    let reserve = o.maximum_pool.unwrap_or(VIRTUAL_RESERVE).div_ceil(VIRTUAL_GRANULE) * VIRTUAL_GRANULE;
    let phys = HostPhysicalMemory::new(VIRTUAL_HOST_BASE, reserve, VIRTUAL_GRANULE);
    // SAFETY: the stand-in's addresses are never read or written: a replay only allocates and
    // frees blocks, and the resource never touches them either.
    let mr = unsafe { VirtualPoolMemoryResource::with_physical(phys, o.initial_pool, order, o.shards) }
        .map_err(|e| format!("creating the resource failed: {e}"))?;
    measure(&mr, |m| m.mapped_bytes(), |m| Some(m.state().largest_free_block), log, streams, o)
}

fn read_log(path: &Path) -> Result<Log, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    log::parse(file).map_err(|e| e.to_string())
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Writes `DIR/<name>.svg`, the memory map of the cold replay; returns its path.
fn write_map(dir: &Path, name: &str, resource: &str, log: &Log, m: &Measured) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}.svg"));
    let blocks = memory_map::blocks(log, &m.addresses);
    let grid = memory_map::Grid::new(&blocks, log.ops.len());
    let caption =
        memory_map::Caption { name, resource, peak_live: log.peak_live_bytes, peak_upstream: m.peak_upstream };
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, memory_map::render(&grid, &caption)))
        .map_err(|e| format!("cannot write the memory map {}: {e}", path.display()))?;
    Ok(path)
}

fn run(o: &Cli) -> ExitCode {
    if let Some(what) = o.needs_cuda().filter(|_| !o.check && !rmm::cuda_available()) {
        eprintln!("rmm_replay: {what} needs a CUDA device, and there is none here");
        return ExitCode::from(cli::EXIT_NO_CUDA);
    }
    let resource = if o.check { "none" } else { resource_name(o) };
    if o.check {
        println!("# {IMPL}: reading the logs only (--check)");
    } else {
        println!(
            "# {IMPL}: resource {resource}, initial pool {} bytes, alignment {ALIGN}, 1 cold + {} warm replays each, in file order on one thread",
            o.initial_pool, o.runs
        );
    }
    println!("impl,resource,workload,param,value,unit");
    let mut failed = false;
    for path in &o.logs {
        let name = path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
        let log = match read_log(path) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("rmm_replay: {}: {e}", path.display());
                failed = true;
                continue;
            }
        };
        let allocations = log.allocations();
        println!(
            "# {name}: {} rows: {allocations} allocate, {} free, {} allocate failure (skipped), {} free of null (skipped); \
             {} threads, {} streams; {} blocks ({} bytes) live at the end",
            log.rows,
            log.ops.len() - allocations,
            log.failures,
            log.null_frees,
            log.threads,
            log.streams.len(),
            log.live_at_end.len(),
            log.live_bytes_at_end()
        );
        let row = |value: String, unit: &str| println!("{IMPL},{resource},replay,{name},{value},{unit}");
        row(log.ops.len().to_string(), "ops");
        if o.check {
            row(log.peak_live_bytes.to_string(), "peak_live_bytes");
            continue;
        }
        let m = match replay(o, &log) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("rmm_replay: {}: {e}", path.display());
                failed = true;
                continue;
            }
        };
        let per_op = |d: Duration| d.as_nanos() as f64 / log.ops.len().max(1) as f64;
        let cold = per_op(m.cold);
        let warm = if m.warm.is_empty() { cold } else { per_op(median(&m.warm)) };
        let fragmentation = m.peak_upstream as f64 / log.peak_live_bytes.max(1) as f64;
        row(format!("{warm:.1}"), "ns_per_op");
        row(format!("{cold:.1}"), "cold_ns_per_op");
        row(m.peak_upstream.to_string(), "peak_upstream_bytes");
        if let Some(largest) = m.largest_free {
            row(largest.to_string(), "largest_free_block_bytes");
        }
        row(log.peak_live_bytes.to_string(), "peak_live_bytes");
        row(format!("{fragmentation:.3}"), "fragmentation");
        println!(
            "# {name}: {warm:.1} ns/op (cold {cold:.1}), peak upstream {:.2} MiB, peak live {:.2} MiB, upstream/live {fragmentation:.2}",
            mib(m.peak_upstream),
            mib(log.peak_live_bytes)
        );
        if let Some(dir) = &o.map {
            match write_map(dir, &name, resource, &log, &m) {
                Ok(svg) => println!("# {name}: memory map {}", svg.display()),
                Err(e) => {
                    eprintln!("rmm_replay: {}: {e}", path.display());
                    failed = true;
                }
            }
        }
    }
    if failed {
        ExitCode::from(cli::EXIT_BAD_LOG)
    } else {
        ExitCode::SUCCESS
    }
}

fn run_generate(pattern: &str, out: &Path, ops: Option<usize>, seed: Option<u64>) -> ExitCode {
    match generate::generate(pattern, out, ops, seed) {
        Ok(summary) => {
            println!("{}: {pattern}, {summary}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rmm_replay generate: {e}");
            ExitCode::from(cli::EXIT_BAD_LOG)
        }
    }
}

fn main() -> ExitCode {
    cli::restore_sigpipe();
    let o = Cli::parse();
    match &o.command {
        Some(Command::Generate { pattern, out, ops, seed }) => run_generate(pattern, out, *ops, *seed),
        None => run(&o),
    }
}
