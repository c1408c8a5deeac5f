//! The memory map of a pool at one moment as an SVG picture, drawn as the replay tool
//! (`rmm_replay`) draws its maps: each segment a band of addresses (low addresses on the left,
//! the widest segment across the whole plot, the others to the same scale), blocks handed out in
//! blue over the free memory's grey, each band labelled with its size and how much of it is
//! handed out. The output depends only on the segments.

use super::format::{human_bytes as human, xml_escape as escape};
use crate::resource::{BlockState, MemorySegment};
use std::fmt::Write;

const LEFT: usize = 240;
const WIDTH: usize = 1000;
const RIGHT: usize = 20;
const TOP: usize = 52;
const BAND: usize = 18;
const GAP: usize = 4;
const BOTTOM: usize = 30;
/// The most segments drawn (the largest ones); the caption counts the rest.
const MAX_BANDS: usize = 200;

/// The SVG picture of `segments`, under the title `caption`.
pub fn memory_map_svg(segments: &[MemorySegment], caption: &str) -> String {
    let mut shown: Vec<&MemorySegment> = segments.iter().collect();
    shown.sort_by_key(|s| std::cmp::Reverse(s.total_size));
    shown.truncate(MAX_BANDS);
    shown.sort_by_key(|s| (s.capture, s.address));
    let widest = shown.iter().map(|s| s.total_size).max().unwrap_or(1).max(1);
    let scale = WIDTH as f64 / widest as f64;
    let plot_h = shown.len() * (BAND + GAP);
    let (width, height) = (LEFT + WIDTH + RIGHT, TOP + plot_h.max(20) + BOTTOM);
    let reserved: usize = segments.iter().map(|s| s.total_size).sum();
    let allocated: usize = segments.iter().map(MemorySegment::allocated_size).sum();
    let blocks: usize = segments.iter().map(MemorySegment::allocated_blocks).sum();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
         font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(s, "<style>.f{{fill:#e4e4e4}}.a{{fill:#08306b}}</style>");
    let _ = writeln!(s, "<rect width=\"{width}\" height=\"{height}\" fill=\"#fff\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">memory map: {}</text>",
        escape(caption)
    );
    let more = segments.len() - shown.len();
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"36\">{} segment(s){}, {} reserved, {} in {blocks} block(s) handed out, {} free</text>",
        segments.len(),
        if more > 0 { format!(" ({more} smallest not drawn)") } else { String::new() },
        human(reserved),
        human(allocated),
        human(reserved - allocated)
    );
    if shown.is_empty() {
        let _ = writeln!(s, "<text x=\"{LEFT}\" y=\"{}\">no segments to draw</text>", TOP + 14);
    }
    for (k, seg) in shown.iter().enumerate() {
        let y = TOP + k * (BAND + GAP);
        let w = (seg.total_size as f64 * scale).max(1.0);
        let _ = writeln!(s, "<g transform=\"translate({LEFT},{y})\">");
        let _ = writeln!(s, "<rect width=\"{w:.2}\" height=\"{BAND}\" class=\"f\"/>");
        for b in seg.blocks.iter().filter(|b| b.state == BlockState::Allocated) {
            let x = (b.address - seg.address) as f64 * scale;
            let bw = (b.size as f64 * scale).max(0.5);
            let _ = writeln!(s, "<rect x=\"{x:.2}\" width=\"{bw:.2}\" height=\"{BAND}\" class=\"a\"/>");
        }
        s.push_str("</g>\n");
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:#x}: {} / {}</text>",
            LEFT - 6,
            y + BAND / 2 + 4,
            seg.address,
            human(seg.allocated_size()),
            human(seg.total_size)
        );
    }
    s.push_str("</svg>\n");
    s
}
