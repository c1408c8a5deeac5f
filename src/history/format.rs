//! How the memory maps label what they draw: byte counts for people and text safe inside an SVG.
//! The replay tool draws its maps with the same two helpers, through `rmm::testing`.

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
