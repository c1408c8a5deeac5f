//! The command line of `rmm_replay`, parsed by clap: the defaults `--help` shows are the ones the
//! code uses.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Exit status: a log was malformed or its replay failed.
pub const EXIT_BAD_LOG: u8 = 1;
/// Exit status: a CUDA resource or upstream was asked for and there is no CUDA device.
pub const EXIT_NO_CUDA: u8 = 3;

const USAGE: &str = "\
rmm_replay [--resource pool|virtual_pool|cuda|cuda_async] [--upstream host|host-ordered|cuda] [--initial-pool BYTES]
                  [--maximum-pool BYTES] [--shards N] [--runs N] [--check] [--map DIR] LOG...
       rmm_replay generate thrust|multi_stream|random OUT [--ops N] [--seed S]";

const AFTER_HELP: &str = "\
Logs are replayed in file order on one thread.
Exit status: 0 ok, 1 bad log or failed replay, 2 usage, 3 no CUDA device for a CUDA resource or upstream.";

/// `rmm_replay`'s arguments.
#[derive(Debug, Parser)]
#[command(
    name = "rmm_replay",
    version,
    about = "Replays RMM allocation logs against a resource of rmm-rs: time per operation, peak upstream bytes",
    override_usage = USAGE,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// `generate`, or none to replay logs.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// What to replay against
    #[arg(long, value_enum, default_value_t = Resource::Pool)]
    pub resource: Resource,
    /// The pool's upstream
    #[arg(long, value_enum, default_value_t = Upstream::Host)]
    pub upstream: Upstream,
    /// Bytes the pool takes at construction (0: it grows on demand); BYTES may end in K, M or G
    /// (powers of 1024, also KiB, MiB, GiB)
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, default_value_t = 0)]
    pub initial_pool: usize,
    /// The most the pool may hold [default: unlimited]
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub maximum_pool: Option<usize>,
    /// The pool's shards (1: one lock, every stream's blocks coalesce)
    #[arg(long, value_name = "N", default_value_t = rmm::resource::pool::DEFAULT_SHARDS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub shards: usize,
    /// Warm replays after the cold one
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub runs: usize,
    /// Only read the logs: print ops and peak_live_bytes
    #[arg(long)]
    pub check: bool,
    /// Write DIR/NAME.svg for each log NAME.csv: a memory map over time of the cold replay (address
    /// against operation; holes between live blocks are fragmentation)
    #[arg(long, value_name = "DIR", conflicts_with = "check")]
    pub map: Option<PathBuf>,
    /// Allocation logs (CSV: Thread,Time,Action,Pointer,Size,Stream)
    #[arg(value_name = "LOG", required = true)]
    pub logs: Vec<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a log through our LoggingResourceAdaptor over a pool on host memory
    Generate {
        /// What the log records
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(crate::generate::PATTERNS))]
        pattern: String,
        /// The log to write
        out: PathBuf,
        /// Steps (thrust, default 120), iterations per thread (multi_stream, 120) or operations
        /// (random, 3000; 200000 is the whole fixed trace)
        #[arg(long, value_name = "N")]
        ops: Option<usize>,
        /// The random generator's seed (each pattern has its own default)
        #[arg(long, value_name = "S")]
        seed: Option<u64>,
    },
}

/// The resource a log is replayed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Resource {
    /// Our PoolMemoryResource over --upstream
    Pool,
    /// CudaMemoryResource (cudaMalloc)
    Cuda,
    /// CudaAsyncMemoryResource (the driver's stream-ordered pool)
    #[value(name = "cuda_async")]
    CudaAsync,
    /// Our VirtualPoolMemoryResource: a reserved range (--maximum-pool, default 256G) mapped in
    /// 2 MiB granules; over --upstream host or host-ordered the mappings are only recorded
    #[value(name = "virtual_pool")]
    VirtualPool,
}

/// The pool's upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Upstream {
    /// Host memory: no GPU needed
    Host,
    /// Host memory, streams handing blocks over as on a GPU (publish, then wait)
    HostOrdered,
    /// CudaMemoryResource
    Cuda,
}

impl Cli {
    /// What needs a CUDA device here, in words; `None` when the host suffices.
    pub fn needs_cuda(&self) -> Option<&'static str> {
        match (self.resource, self.upstream) {
            (Resource::Cuda, _) => Some("--resource cuda"),
            (Resource::CudaAsync, _) => Some("--resource cuda_async"),
            (Resource::Pool, Upstream::Cuda) => Some("--upstream cuda (the pool's upstream)"),
            (Resource::VirtualPool, Upstream::Cuda) => Some("--resource virtual_pool --upstream cuda"),
            (Resource::Pool | Resource::VirtualPool, Upstream::Host | Upstream::HostOrdered) => None,
        }
    }
}

/// `1024`, `64K`, `16M`, `2G`, also with `iB` or `B` after the letter.
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let bad = || format!("'{s}' is not a byte count (e.g. 1048576, 64K, 16M, 2GiB)");
    let t = s.trim();
    let t = t.strip_suffix("iB").or_else(|| t.strip_suffix('B')).unwrap_or(t);
    let (digits, shift) = match t.chars().last().ok_or_else(bad)? {
        'K' | 'k' => (&t[..t.len() - 1], 10),
        'M' | 'm' => (&t[..t.len() - 1], 20),
        'G' | 'g' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n = digits.parse::<usize>().map_err(|_| bad())?;
    n.checked_mul(1usize << shift).ok_or_else(|| format!("'{s}' bytes do not fit in {} bits", usize::BITS))
}

/// Lets a closed stdout (`rmm_replay ... | head -1`) end the program quietly, as for other command
/// line tools: Rust ignores SIGPIPE, which turns the next write into an error and `println!` into
/// a panic.
#[cfg(unix)]
pub fn restore_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    // SIGPIPE is 13 and SIG_DFL 0 on every Unix Rust supports.
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: signal(2) with a valid signal number and SIG_DFL, before any other thread exists.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

/// Nothing to do where there are no signals.
#[cfg(not(unix))]
pub fn restore_sigpipe() {}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rmm_replay").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("16MiB"), Ok(16 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("3kB"), Ok(3 << 10));
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("M").is_err());
        assert!(parse_bytes("12X").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("99999999999999999999G").is_err());
    }

    #[test]
    fn defaults_come_from_the_code() {
        let c = parse(&["a.csv"]).unwrap();
        assert_eq!(c.resource, Resource::Pool);
        assert_eq!(c.upstream, Upstream::Host);
        assert_eq!((c.initial_pool, c.maximum_pool), (0, None));
        assert_eq!(c.shards, rmm::resource::pool::DEFAULT_SHARDS);
        assert_eq!(c.runs, 5);
        assert!(!c.check && c.map.is_none() && c.command.is_none());
        let help = Cli::command().render_help().to_string();
        assert!(help.contains(&format!("[default: {}]", rmm::resource::pool::DEFAULT_SHARDS)), "{help}");
    }

    #[test]
    fn equals_and_separate_values() {
        let c = parse(&["--resource=cuda_async", "--upstream", "host-ordered", "--initial-pool=16M", "x.csv"]).unwrap();
        assert_eq!((c.resource, c.upstream, c.initial_pool), (Resource::CudaAsync, Upstream::HostOrdered, 16 << 20));
        assert_eq!(c.needs_cuda(), Some("--resource cuda_async"));
        let c = parse(&["--maximum-pool=1GiB", "--shards=1", "--runs=0", "--map=maps", "a", "b"]).unwrap();
        assert_eq!((c.maximum_pool, c.shards, c.runs), (Some(1 << 30), 1, 0));
        assert_eq!(c.map, Some(PathBuf::from("maps")));
        assert_eq!(c.logs, vec![PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(c.needs_cuda(), None);
    }

    #[test]
    fn generate_is_a_subcommand() {
        let c = parse(&["generate", "random", "out.csv", "--ops=10", "--seed", "3"]).unwrap();
        let Some(Command::Generate { pattern, out, ops, seed }) = c.command else { panic!("{c:?}") };
        assert_eq!((pattern.as_str(), out, ops, seed), ("random", PathBuf::from("out.csv"), Some(10), Some(3)));
        assert!(parse(&["generate", "nonsense", "out.csv"]).is_err());
        assert!(parse(&["generate", "random"]).is_err());
    }

    #[test]
    fn usage_errors() {
        for args in [&[][..], &["--shards", "0", "a"], &["--runs"], &["--initial-pool", "lots", "a"], &["--x", "a"]] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        }
    }
}
