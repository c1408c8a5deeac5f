//! Not part of the API: what the replay tool, the benchmarks and the tests share, so that they draw
//! the same numbers from one generator and label their pictures alike.

pub use crate::history::format::{human_bytes, xml_escape};
pub use rmm_algorithms::testing::SplitMix64;
