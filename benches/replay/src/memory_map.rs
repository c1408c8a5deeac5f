//! The memory map of a replay as an SVG picture: address against time (operation index), each
//! block drawn from its allocation to its free over its address range, so that the holes between
//! live blocks (fragmentation) show.
//!
//! The resource's blocks lie in a few upstream chunks spread over the address space, so the
//! address axis shows only the ranges blocks used: their address ranges are merged into segments
//! (gaps smaller than a row's bytes are kept inside a segment, and at most [`MAX_SEGMENTS`]
//! segments are made, cutting at the largest gaps), stacked with a thin gap between them, low
//! addresses at the top, each labelled with its size (a label that would overwrite the one above
//! is left out). Every segment gets rows in proportion to its bytes (at least one).
//!
//! To stay small for 200k-operation logs the picture is a fixed grid, [`COLS`] columns of time by
//! about [`ROWS`] rows of address. A cell's shade is the largest fraction of its bytes live at once
//! during its time, in [`LEVELS`] steps (any live byte gives the lightest): a short-lived block,
//! such as scratch space that made the pool grow, shows as much as a long-lived one, and a cell
//! shows as a hole only when none of its bytes were live. Each run of equal shade along a row is
//! one `<rect>`; a run that repeats on the next rows grows taller instead. The output depends only
//! on the log and the addresses (no hash order, no clock).

use crate::log::{Kind, Log};
use rmm::testing::human_bytes as human;
use rmm::testing::xml_escape as escape;
use std::fmt::Write;

/// Columns of time (fewer when the log has fewer operations).
pub const COLS: usize = 1000;
/// Rows of address, shared out among the segments.
pub const ROWS: usize = 500;
/// Shades of a live cell.
pub const LEVELS: usize = 4;
/// The most address segments shown.
pub const MAX_SEGMENTS: usize = 32;

// The picture's frame, in pixels: the plot is COLS wide whatever the grid's column count.
const LEFT: usize = 90;
const RIGHT: usize = 20;
const TOP: usize = 52;
const BOTTOM: usize = 62;
const GAP: usize = 3;

/// One block of the replay: its address range and its lifetime in operation indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// What the allocation returned.
    pub addr: usize,
    /// The bytes requested.
    pub size: usize,
    /// The index of its allocation.
    pub from: usize,
    /// The index of its free; the operation count when the log leaves it live.
    pub to: usize,
}

/// The blocks of `log` as replayed, `addresses` holding what each allocation returned, in order.
/// Zero-byte blocks take no address range and are left out.
pub fn blocks(log: &Log, addresses: &[usize]) -> Vec<Block> {
    let n = log.ops.len();
    let mut out = Vec::new();
    let mut open: Vec<Option<usize>> = vec![None; log.slots];
    let mut next = addresses.iter();
    for (i, op) in log.ops.iter().enumerate() {
        let slot = op.slot as usize;
        match op.kind {
            Kind::Allocate => {
                let Some(&addr) = next.next() else { break };
                open[slot] = (op.size > 0).then(|| {
                    out.push(Block { addr, size: op.size, from: i, to: n });
                    out.len() - 1
                });
            }
            Kind::Free => {
                if let Some(b) = open[slot].take() {
                    out[b].to = i;
                }
            }
        }
    }
    out
}

/// A range of addresses shown on the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The first address.
    pub lo: usize,
    /// One past the last address.
    pub hi: usize,
    /// The grid rows it gets.
    pub rows: usize,
}

impl Segment {
    /// The first address of row `r`; `row_start(rows)` is `hi`.
    fn row_start(&self, r: usize) -> usize {
        self.lo + (r as u128 * (self.hi - self.lo) as u128 / self.rows as u128) as usize
    }

    /// The row of an address of the segment (rows begin at [`Segment::row_start`]).
    fn row_of(&self, addr: usize) -> usize {
        ((addr.saturating_sub(self.lo) as u128 * self.rows as u128 / (self.hi - self.lo) as u128) as usize)
            .min(self.rows - 1)
    }
}

/// The used address ranges of `blocks`, merged into at most [`MAX_SEGMENTS`] segments.
pub fn segments(blocks: &[Block]) -> Vec<Segment> {
    let mut ranges: Vec<(usize, usize)> =
        blocks.iter().filter(|b| b.size > 0).map(|b| (b.addr, b.addr.saturating_add(b.size))).collect();
    ranges.sort_unstable();
    let mut union: Vec<(usize, usize)> = Vec::new();
    for (lo, hi) in ranges {
        match union.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => union.push((lo, hi)),
        }
    }
    if union.is_empty() {
        return Vec::new();
    }
    // Cut at the gaps wider than a row of the tight union, the widest first.
    let used: usize = union.iter().map(|(lo, hi)| hi - lo).sum();
    let tolerance = used / ROWS;
    let mut gaps: Vec<(usize, usize)> =
        union.windows(2).enumerate().map(|(i, w)| (w[1].0 - w[0].1, i)).filter(|&(g, _)| g > tolerance).collect();
    gaps.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    gaps.truncate(MAX_SEGMENTS - 1);
    let mut cuts: Vec<usize> = gaps.into_iter().map(|(_, i)| i).collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for end in cuts.into_iter().chain(std::iter::once(union.len() - 1)) {
        out.push(Segment { lo: union[start].0, hi: union[end].1, rows: 0 });
        start = end + 1;
    }
    let total: usize = out.iter().map(|s| s.hi - s.lo).sum();
    for s in &mut out {
        s.rows = ((ROWS as f64 * (s.hi - s.lo) as f64 / total as f64).round() as usize).clamp(1, s.hi - s.lo);
    }
    out
}

/// The rasterised map: per segment, `rows x cols` cells holding the largest fraction of the
/// cell's bytes live at once during the cell's time.
pub struct Grid {
    /// The address ranges shown, low addresses first.
    pub segments: Vec<Segment>,
    /// Columns of time.
    pub cols: usize,
    /// Operations of the log.
    pub ops: usize,
    cells: Vec<Vec<f64>>,
}

/// Calls `f(row, bytes)` for each row of `seg` that block `b` holds bytes of.
fn rows_of(seg: &Segment, b: &Block, mut f: impl FnMut(usize, u64)) {
    let end = b.addr.saturating_add(b.size).min(seg.hi);
    for r in seg.row_of(b.addr)..seg.rows {
        let (start, next) = (seg.row_start(r), seg.row_start(r + 1));
        if start >= end {
            break;
        }
        let bytes = end.min(next).saturating_sub(b.addr.max(start));
        if bytes > 0 {
            f(r, bytes as u64);
        }
    }
}

impl Grid {
    /// Rasterises `blocks` of a log of `ops` operations. Column `c` holds the operations `i` with
    /// `i * cols / ops == c`, and the moment before the first of them.
    pub fn new(blocks: &[Block], ops: usize) -> Grid {
        let segments = segments(blocks);
        let cols = COLS.min(ops);
        let mut cells: Vec<Vec<f64>> = segments.iter().map(|s| vec![0.0; s.rows * cols]).collect();
        if cols == 0 {
            return Grid { segments, cols, ops, cells };
        }
        // (operation, allocation, block): at one operation a free sorts before an allocation.
        let mut events: Vec<(usize, bool, usize)> = Vec::with_capacity(2 * blocks.len());
        for (i, b) in blocks.iter().enumerate().filter(|(_, b)| b.size > 0) {
            events.push((b.from, true, i));
            if b.to < ops {
                events.push((b.to, false, i));
            }
        }
        events.sort_unstable();
        let segment_of = |b: &Block| segments.partition_point(|s| s.lo <= b.addr) - 1;
        let mut live: Vec<Vec<u64>> = segments.iter().map(|s| vec![0; s.rows]).collect();
        let mut most = live.clone();
        let mut next = events.iter().peekable();
        for c in 0..cols {
            for (most, live) in most.iter_mut().zip(&live) {
                most.copy_from_slice(live);
            }
            while let Some(&(_, allocation, i)) = next.next_if(|e| e.0 * cols / ops <= c) {
                let k = segment_of(&blocks[i]);
                let (live, most) = (&mut live[k], &mut most[k]);
                rows_of(&segments[k], &blocks[i], |r, bytes| {
                    if allocation {
                        live[r] += bytes;
                        most[r] = most[r].max(live[r]);
                    } else {
                        live[r] = live[r].saturating_sub(bytes);
                    }
                });
            }
            for (k, seg) in segments.iter().enumerate() {
                for r in 0..seg.rows {
                    let bytes = seg.row_start(r + 1) - seg.row_start(r);
                    cells[k][r * cols + c] = most[k][r] as f64 / bytes as f64;
                }
            }
        }
        Grid { segments, cols, ops, cells }
    }

    /// The live fraction of a cell.
    pub fn cell(&self, segment: usize, row: usize, col: usize) -> f64 {
        self.cells[segment][row * self.cols + col]
    }

    /// The segment and row an address falls in.
    #[cfg(test)]
    pub fn locate(&self, addr: usize) -> Option<(usize, usize)> {
        let k = self.segments.partition_point(|s| s.lo <= addr).checked_sub(1)?;
        let s = self.segments[k];
        (addr < s.hi).then(|| (k, s.row_of(addr)))
    }

    /// The shade of a cell: 0 when nothing is live there, else 1 to [`LEVELS`].
    pub fn level(&self, segment: usize, row: usize, col: usize) -> usize {
        let v = self.cell(segment, row, col);
        if v > 0.0 {
            ((v * LEVELS as f64 - 1e-9).ceil() as usize).clamp(1, LEVELS)
        } else {
            0
        }
    }
}

/// What the title says besides the map.
pub struct Caption<'a> {
    /// The log's name.
    pub name: &'a str,
    /// The resource column of the output.
    pub resource: &'a str,
    /// The most requested bytes live at once.
    pub peak_live: usize,
    /// The most bytes the resource held from its upstream.
    pub peak_upstream: usize,
}

fn shade(level: usize) -> String {
    // From light to dark blue.
    let t = (level - 1) as f64 / (LEVELS - 1) as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(198.0, 8.0), mix(219.0, 48.0), mix(239.0, 107.0))
}

/// The SVG picture of `grid`.
pub fn render(grid: &Grid, caption: &Caption) -> String {
    let plot_h: usize =
        grid.segments.iter().map(|s| s.rows).sum::<usize>() + GAP * grid.segments.len().saturating_sub(1);
    let (width, height) = (LEFT + COLS + RIGHT, TOP + plot_h.max(20) + BOTTOM);
    let mut s = String::new();
    let used: usize = grid.segments.iter().map(|s| s.hi - s.lo).sum();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
         font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = write!(s, "<style>.f{{fill:#e4e4e4}}");
    for l in 1..=LEVELS {
        let _ = write!(s, ".s{l}{{fill:{}}}", shade(l));
    }
    let _ = writeln!(s, "</style>\n<rect width=\"{width}\" height=\"{height}\" fill=\"#fff\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}: memory map of the cold replay ({})</text>",
        escape(caption.name),
        escape(caption.resource)
    );
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"36\">peak live {}, peak upstream {}; {} used address range(s), {} in all</text>",
        human(caption.peak_live),
        human(caption.peak_upstream),
        grid.segments.len(),
        human(used)
    );
    if grid.segments.is_empty() || grid.cols == 0 {
        let _ = writeln!(s, "<text x=\"{LEFT}\" y=\"{}\">no blocks to draw</text>", TOP + 14);
    }
    let mut y = TOP;
    let mut last_label: Option<usize> = None;
    for (k, seg) in grid.segments.iter().enumerate() {
        let scale =
            if grid.cols == COLS { String::new() } else { format!(" scale({},1)", COLS as f64 / grid.cols as f64) };
        let _ = writeln!(s, "<g transform=\"translate({LEFT},{y}){scale}\">");
        let _ = writeln!(s, "<rect width=\"{}\" height=\"{}\" class=\"f\"/>", grid.cols, seg.rows);
        write_runs(&mut s, grid, k);
        s.push_str("</g>\n");
        // A label is left out where it would overwrite the one above.
        let label_y = y + seg.rows / 2 + 4;
        if last_label.is_none_or(|l| label_y >= l + 11) {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{label_y}\" text-anchor=\"end\">{}</text>",
                LEFT - 6,
                human(seg.hi - seg.lo)
            );
            last_label = Some(label_y);
        }
        y += seg.rows + GAP;
    }
    write_axes(&mut s, grid, TOP + plot_h.max(20));
    s.push_str("</svg>\n");
    s
}

/// The shaded cells of segment `k`: one rect per run of equal shade along a row, grown downwards
/// while the next rows repeat it; grouped by shade, which the group names once.
fn write_runs(out: &mut String, grid: &Grid, k: usize) {
    let seg = grid.segments[k];
    // (x, len, level, first row) of the rects still growing.
    let mut open: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut groups = vec![String::new(); LEVELS];
    let emit = |groups: &mut [String], (x, len, level, y0): (usize, usize, usize, usize), y1: usize| {
        let _ = writeln!(groups[level - 1], "<rect x=\"{x}\" y=\"{y0}\" width=\"{len}\" height=\"{}\"/>", y1 - y0);
    };
    for r in 0..seg.rows {
        let mut runs = Vec::new();
        let mut c = 0;
        while c < grid.cols {
            let level = grid.level(k, r, c);
            let start = c;
            while c < grid.cols && grid.level(k, r, c) == level {
                c += 1;
            }
            if level > 0 {
                runs.push((start, c - start, level));
            }
        }
        let mut next = Vec::with_capacity(runs.len());
        let mut i = 0;
        for run in runs {
            while i < open.len() && open[i].0 < run.0 {
                emit(&mut groups, open[i], r);
                i += 1;
            }
            if i < open.len() && (open[i].0, open[i].1, open[i].2) == run {
                next.push(open[i]);
                i += 1;
            } else {
                next.push((run.0, run.1, run.2, r));
            }
        }
        for &o in &open[i..] {
            emit(&mut groups, o, r);
        }
        open = next;
    }
    for o in open {
        emit(&mut groups, o, seg.rows);
    }
    for (l, rects) in groups.iter().enumerate().filter(|(_, g)| !g.is_empty()) {
        let _ = write!(out, "<g class=\"s{}\">\n{rects}</g>\n", l + 1);
    }
}

fn write_axes(s: &mut String, grid: &Grid, bottom: usize) {
    let _ = writeln!(s, "<path d=\"M{LEFT} {TOP}V{bottom}H{}\" fill=\"none\" stroke=\"#333\"/>", LEFT + COLS);
    for q in 0..=4 {
        let x = LEFT + COLS * q / 4;
        let op = grid.ops * q / 4;
        let anchor = match q {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = writeln!(
            s,
            "<path d=\"M{x} {bottom}v4\" stroke=\"#333\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"{anchor}\">{op}</text>",
            bottom + 16
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">operation (time)</text>",
        LEFT + COLS / 2,
        bottom + 30
    );
    let mid = (TOP + bottom) / 2;
    let _ = writeln!(
        s,
        "<text transform=\"translate(14,{mid}) rotate(-90)\" text-anchor=\"middle\">address, low to high (used ranges stacked)</text>"
    );
    // The legend: free in a used range, then the shades.
    let y = bottom + 40;
    let _ = writeln!(s, "<rect x=\"{LEFT}\" y=\"{y}\" width=\"12\" height=\"12\" class=\"f\"/>");
    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">free (a hole while blocks around it live)</text>", LEFT + 16, y + 10);
    let x0 = LEFT + 300;
    for l in 1..=LEVELS {
        let _ = writeln!(s, "<rect x=\"{}\" y=\"{y}\" width=\"12\" height=\"12\" class=\"s{l}\"/>", x0 + 14 * (l - 1));
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\">live: up to 1/{LEVELS} ... all of a cell's bytes (the most at once in its time)</text>",
        x0 + 14 * LEVELS + 4,
        y + 10
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn block(addr: usize, size: usize, from: usize, to: usize) -> Block {
        Block { addr, size, from, to }
    }

    #[test]
    fn blocks_follow_slots() {
        let log = crate::log::parse(
            "Thread,Time,Action,Pointer,Size,Stream\n\
             1,t,allocate,0x100,10,0\n1,t,allocate,0x200,0,0\n1,t,free,0x100,10,0\n1,t,allocate,0x300,7,0\n"
                .as_bytes(),
        )
        .unwrap();
        let b = blocks(&log, &[1000, 2000, 3000]);
        assert_eq!(b, vec![block(1000, 10, 0, 2), block(3000, 7, 3, 4)]);
    }

    #[test]
    fn segments_drop_wide_gaps_and_keep_narrow_ones() {
        let s = segments(&[block(0, MIB, 0, 1), block(MIB + 256, MIB, 0, 1), block(1 << 40, 2 * MIB, 0, 1)]);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!((s[0].lo, s[0].hi), (0, 2 * MIB + 256));
        assert_eq!((s[1].lo, s[1].hi), (1 << 40, (1 << 40) + 2 * MIB));
        assert!(s[0].rows.abs_diff(s[1].rows) <= 1, "rows follow bytes: {s:?}");
        let many: Vec<Block> = (0..100).map(|i| block(i << 30, MIB, 0, 1)).collect();
        assert_eq!(segments(&many).len(), MAX_SEGMENTS);
        assert!(segments(&[]).is_empty());
    }

    /// Three 1 MiB blocks side by side over 100 operations; the middle one freed at operation 10.
    #[test]
    fn a_hole_shows() {
        let base = 1 << 30;
        let blocks = [block(base, MIB, 0, 100), block(base + MIB, MIB, 1, 10), block(base + 2 * MIB, MIB, 2, 100)];
        let g = Grid::new(&blocks, 100);
        assert_eq!((g.segments.len(), g.cols), (1, 100));
        let rows = g.segments[0].rows;
        let hole: Vec<usize> = (0..rows).filter(|&r| (20..100).all(|c| g.level(0, r, c) == 0)).collect();
        assert!(hole.len().abs_diff(rows / 3) <= 1, "{} hole rows of {rows}", hole.len());
        let (_, first) = g.locate(base + MIB).unwrap();
        let (_, last) = g.locate(base + 2 * MIB - 1).unwrap();
        assert!(hole.contains(&(first + 1)) && hole.contains(&(last - 1)));
        // Before the free the hole's rows were live, and the other blocks stay live throughout.
        assert!((2..10).all(|c| g.level(0, first + 1, c) == LEVELS));
        assert!((2..100).all(|c| g.level(0, 0, c) == LEVELS && g.level(0, rows - 1, c) == LEVELS));
    }

    #[test]
    fn shades_are_the_most_bytes_live_at_once() {
        // 2000 operations on 1000 columns; 500 rows of 2097 or 2098 bytes.
        let g = Grid::new(&[block(0, 1000, 0, 9), block(0, MIB, 10, 11), block(4096, 4096, 12, 14)], 2000);
        assert_eq!((g.cols, g.segments.len(), g.segments[0].rows), (COLS, 1, ROWS));
        assert!((g.cell(0, 0, 0) - 1000.0 / 2097.0).abs() < 1e-12);
        assert_eq!(g.level(0, 0, 0), (LEVELS as f64 * 1000.0 / 2097.0).ceil() as usize);
        // Alive for one of the two operations of column 5, the MiB block fills it.
        assert!((0..ROWS).all(|r| g.level(0, r, 5) == LEVELS));
        // A block freed by a column's first operation was live at its start.
        assert!((0..ROWS).all(|r| g.level(0, r, 7) == g.level(0, r, 6)));
        assert!((0..ROWS).all(|r| g.level(0, r, 8) == 0));
        // Rows 1 and 2 are [2097, 4194) and [4194, 6291): the last block holds 98 bytes of one, all
        // of the other.
        assert!((g.cell(0, 1, 6) - 98.0 / 2097.0).abs() < 1e-12 && g.level(0, 1, 6) == 1);
        assert!((g.cell(0, 2, 6) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_picture_is_deterministic_and_small() {
        let blocks: Vec<Block> =
            (0..5000).map(|i| block((i % 97) * 4096, 1000 + i % 3000, i, i + 50 + i % 700)).collect();
        let caption = Caption { name: "a<b", resource: "pool_host", peak_live: 3 * MIB, peak_upstream: 5 * MIB };
        let svg = render(&Grid::new(&blocks, 6000), &caption);
        assert_eq!(svg, render(&Grid::new(&blocks, 6000), &caption));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a&lt;b: memory map") && svg.contains("peak live 3.0 MiB, peak upstream 5.0 MiB"));
        assert!(svg.matches("<rect").count() > 10);
        assert!(svg.len() < 2 << 20, "{} bytes", svg.len());
        let empty = render(&Grid::new(&[], 0), &caption);
        assert!(empty.contains("no blocks to draw") && empty.ends_with("</svg>\n"));
    }

    #[test]
    fn labels() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 * MIB / 2), "1.5 MiB");
        assert_eq!(human(64 << 30), "64.0 GiB");
    }
}
