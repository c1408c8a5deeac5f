//! Not part of the API: what the replay tool, the benchmarks and the tests share, so that they draw
//! the same numbers from one generator and label their pictures alike.

/// `bytes` for a label in a picture: B, KiB, MiB, GiB or TiB, one decimal above bytes (the memory
/// maps of `rmm::history` and of the replay tool).
pub fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `s` with the characters XML gives a meaning to escaped, for text and attributes of an SVG.
pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub use rmm_algorithms::testing::SplitMix64;
