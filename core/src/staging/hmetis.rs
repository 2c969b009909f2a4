//! hMETIS hypergraph format (the format of hMETIS, PaToH's converters, KaHyPar and
//! Mt-KaHyPar): reading from any `BufRead` with 1-based line numbers in every error, and
//! writing hypergraphs and partition files.
//!
//! Header: `num_nets num_vertices [fmt]`, fmt `1` = net weights, `10` = vertex weights,
//! `11` = both. Then one line per net (`[weight] pin pin ...`, pins 1-based), then, if
//! vertex weights are present, one weight per line. Lines starting with `%` are comments.

use std::io::BufRead;

use crate::staging::error::StagingError;
use crate::staging::hypergraph::{Hypergraph, VertexId};

fn err(line: usize, message: impl Into<String>) -> StagingError {
    StagingError::Hmetis {
        line,
        message: message.into(),
    }
}

/// Reads lines, skipping comments and blank lines, and remembering line numbers.
struct Lines<R> {
    inner: std::io::Lines<R>,
    line_no: usize,
}

impl<R: BufRead> Lines<R> {
    fn next_content(&mut self) -> Result<Option<(usize, String)>, StagingError> {
        for line in self.inner.by_ref() {
            self.line_no += 1;
            let line = line.map_err(|e| err(self.line_no, format!("cannot read: {e}")))?;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('%') {
                continue;
            }
            return Ok(Some((self.line_no, trimmed.to_string())));
        }
        Ok(None)
    }
}

/// The most vertices a file may declare: vertex ids are `u32`, and the weights of this
/// many vertices are allocated before the nets are read.
pub(crate) const MAX_VERTICES: i64 = 100_000_000;
/// Capacity reserved up front for nets; more grow as they are read, so a header cannot
/// make the reader allocate for nets the file does not hold.
const NETS_RESERVED: usize = 1 << 16;

fn parse_number(line: usize, token: &str, what: &str) -> Result<i64, StagingError> {
    token
        .parse::<i64>()
        .map_err(|_| err(line, format!("{what} `{token}` is not an integer")))
}

/// Parses an hMETIS hypergraph.
pub fn read_hmetis(reader: impl BufRead) -> Result<Hypergraph, StagingError> {
    let mut lines = Lines {
        inner: reader.lines(),
        line_no: 0,
    };
    let (header_line, header) = lines.next_content()?.ok_or_else(|| {
        err(
            1,
            "empty input: expected header `num_nets num_vertices [fmt]`",
        )
    })?;
    let fields: Vec<&str> = header.split_whitespace().collect();
    if fields.len() < 2 || fields.len() > 3 {
        return Err(err(
            header_line,
            format!("header must be `num_nets num_vertices [fmt]`, got `{header}`"),
        ));
    }
    let num_nets = parse_number(header_line, fields[0], "number of nets")?;
    let num_vertices = parse_number(header_line, fields[1], "number of vertices")?;
    if num_nets < 0 || num_vertices <= 0 {
        return Err(err(
            header_line,
            format!("need num_nets >= 0 and num_vertices >= 1, got {num_nets} and {num_vertices}"),
        ));
    }
    if num_vertices > MAX_VERTICES {
        return Err(err(
            header_line,
            format!("{num_vertices} vertices is more than this reader's limit of {MAX_VERTICES}"),
        ));
    }
    let fmt = match fields.get(2) {
        None => 0,
        Some(f) => parse_number(header_line, f, "fmt code")?,
    };
    let (net_weighted, vertex_weighted) = match fmt {
        0 => (false, false),
        1 => (true, false),
        10 => (false, true),
        11 => (true, true),
        other => {
            return Err(err(
                header_line,
                format!("unknown fmt code {other} (expected 0, 1, 10 or 11)"),
            ))
        }
    };
    let (num_nets, num_vertices) = (num_nets as usize, num_vertices as usize);
    // The pins go straight into CSR arrays (one Vec per net would cost ~70 bytes a net
    // more and, freed, leave the heap fragmented: 9 M nets at 2M tasks).
    let mut net_offsets = Vec::with_capacity(num_nets.min(NETS_RESERVED) + 1);
    net_offsets.push(0usize);
    let mut pins: Vec<VertexId> = Vec::new();
    // One net's pins as read (reused from net to net).
    let mut net: Vec<VertexId> = Vec::new();
    let mut net_weights = Vec::with_capacity(num_nets.min(NETS_RESERVED));
    let mut total_net_weight = 0i64;
    for e in 0..num_nets {
        let (line, text) = lines.next_content()?.ok_or_else(|| {
            err(
                lines.line_no + 1,
                format!(
                    "unexpected end of input: expected net {} of {num_nets}",
                    e + 1
                ),
            )
        })?;
        let mut tokens = text.split_whitespace();
        let weight = if net_weighted {
            let w = parse_number(line, tokens.next().unwrap_or(""), "net weight")?;
            if w <= 0 {
                return Err(err(line, format!("net weight {w} must be positive")));
            }
            total_net_weight = total_net_weight
                .checked_add(w)
                .ok_or_else(|| err(line, "the net weights add up to more than 2^63 - 1"))?;
            w
        } else {
            1
        };
        net.clear();
        for token in tokens {
            let pin = parse_number(line, token, "pin")?;
            if pin < 1 || pin as usize > num_vertices {
                return Err(err(
                    line,
                    format!("pin {pin} out of range 1..={num_vertices}"),
                ));
            }
            net.push((pin - 1) as VertexId);
        }
        if net.is_empty() {
            return Err(err(line, format!("net {} is empty", e + 1)));
        }
        // Sorted and duplicate-free within the net, as Hypergraph::new makes them.
        net.sort_unstable();
        net.dedup();
        pins.extend_from_slice(&net);
        net_offsets.push(pins.len());
        net_weights.push(weight);
    }
    let mut vertex_weights = vec![1i64; num_vertices];
    let mut total_vertex_weight = 0i64;
    if vertex_weighted {
        for (v, weight) in vertex_weights.iter_mut().enumerate() {
            let (line, text) = lines.next_content()?.ok_or_else(|| {
                err(
                    lines.line_no + 1,
                    format!(
                        "unexpected end of input: expected weight of vertex {}",
                        v + 1
                    ),
                )
            })?;
            let w = parse_number(line, &text, "vertex weight")?;
            if w <= 0 {
                return Err(err(line, format!("vertex weight {w} must be positive")));
            }
            total_vertex_weight = total_vertex_weight
                .checked_add(w)
                .ok_or_else(|| err(line, "the vertex weights add up to more than 2^63 - 1"))?;
            *weight = w;
        }
    }
    if let Some((line, text)) = lines.next_content()? {
        return Err(err(
            line,
            format!("unexpected trailing content `{text}` after {num_nets} nets"),
        ));
    }
    pins.shrink_to_fit();
    Ok(Hypergraph::from_csr(
        vertex_weights,
        net_weights,
        net_offsets,
        pins,
    ))
}

/// Writes `hg` in hMETIS format with net and vertex weights (fmt 11).
pub fn write_hmetis(hg: &Hypergraph) -> String {
    let mut out = String::with_capacity(hg.num_pins() * 7);
    out.push_str(&format!("{} {} 11\n", hg.num_nets(), hg.num_vertices()));
    for e in 0..hg.num_nets() as u32 {
        out.push_str(&hg.net_weight(e).to_string());
        for &p in hg.pins(e) {
            out.push(' ');
            out.push_str(&(p + 1).to_string());
        }
        out.push('\n');
    }
    for &w in hg.vertex_weights() {
        out.push_str(&w.to_string());
        out.push('\n');
    }
    out
}

/// Writes a partition file: one block id per line, vertex order.
pub fn write_partition(parts: &[u32]) -> String {
    let mut out = String::with_capacity(parts.len() * 3);
    for p in parts {
        out.push_str(&p.to_string());
        out.push('\n');
    }
    out
}

/// Reads a partition file for a hypergraph with `num_vertices` vertices and `k` blocks.
#[cfg(test)]
pub(crate) fn read_partition(
    reader: impl BufRead,
    num_vertices: usize,
    k: usize,
) -> Result<Vec<u32>, StagingError> {
    let mut parts = Vec::with_capacity(num_vertices);
    for (i, line) in reader.lines().enumerate() {
        let perr = |message: String| StagingError::PartitionFile {
            line: i + 1,
            message,
        };
        let line = line.map_err(|e| perr(format!("cannot read: {e}")))?;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let b: usize = t
            .parse()
            .map_err(|_| perr(format!("block id `{t}` is not a non-negative integer")))?;
        if b >= k {
            return Err(perr(format!("block id {b} >= k = {k}")));
        }
        parts.push(b as u32);
    }
    if parts.len() != num_vertices {
        return Err(StagingError::PartitionFile {
            line: parts.len(),
            message: format!("{} block ids for {num_vertices} vertices", parts.len()),
        });
    }
    Ok(parts)
}

#[cfg(test)]
#[path = "hmetis_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> Result<Hypergraph, StagingError> {
        read_hmetis(s.as_bytes())
    }

    #[test]
    fn reads_all_fmt_codes() {
        let plain = read("% comment\n2 3\n1 2\n2 3\n").unwrap();
        assert_eq!(plain.num_nets(), 2);
        assert_eq!(plain.pins(1), &[1, 2]);
        let nets = read("2 3 1\n5 1 2\n7 2 3\n").unwrap();
        assert_eq!(nets.net_weights(), &[5, 7]);
        let verts = read("1 3 10\n1 2 3\n4\n5\n6\n").unwrap();
        assert_eq!(verts.vertex_weights(), &[4, 5, 6]);
        let both = read("1 2 11\n9 1 2\n\n3\n4\n").unwrap();
        assert_eq!(both.net_weights(), &[9]);
        assert_eq!(both.total_weight(), 7);
    }

    #[test]
    fn pins_are_sorted_and_deduplicated_per_net_as_hypergraph_new_does() {
        let hg = read("3 4\n3 1 3 1\n2\n4 4 2 4 1\n").unwrap();
        let same = Hypergraph::new(
            vec![1; 4],
            vec![1; 3],
            vec![vec![2, 0, 2, 0], vec![1], vec![3, 3, 1, 3, 0]],
        )
        .unwrap();
        assert_eq!(hg, same);
        assert_eq!(hg.pins(0), &[0, 2]);
        assert_eq!(hg.pins(2), &[0, 1, 3]);
    }

    #[test]
    fn round_trips() {
        let hg = read("2 3 11\n5 1 2\n7 2 3\n1\n2\n3\n").unwrap();
        assert_eq!(read(&write_hmetis(&hg)).unwrap(), hg);
    }

    fn line_of(e: StagingError) -> usize {
        match e {
            StagingError::Hmetis { line, .. } => line,
            other => panic!("unexpected error {other}"),
        }
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(line_of(read("x 3\n").unwrap_err()), 1);
        assert_eq!(line_of(read("1 3 7\n1 2\n").unwrap_err()), 1);
        assert_eq!(line_of(read("% c\n2 3\n1 2\n1 4\n").unwrap_err()), 4);
        assert_eq!(line_of(read("2 3 1\n5 1 2\n7\n").unwrap_err()), 3);
        assert_eq!(line_of(read("2 3\n1 2\n").unwrap_err()), 3);
        assert_eq!(line_of(read("1 2 10\n1 2\n1\n-3\n").unwrap_err()), 4);
        assert_eq!(line_of(read("1 2\n1 2\n1 2\n").unwrap_err()), 3);
        assert_eq!(line_of(read("1 2\n0 2\n").unwrap_err()), 2);
        assert_eq!(line_of(read("").unwrap_err()), 1);
    }

    #[test]
    fn huge_declared_sizes_are_refused_before_allocating() {
        // 2^60 vertices: refused at the header instead of `vec![1; 2^60]`.
        let e = read("1 1152921504606846976\n1 2\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("line 1: 1152921504606846976 vertices is more than"),
            "{e}"
        );
        // 2^62 nets with one net present: an error for the missing second net, no
        // `Vec::with_capacity(2^62)` (which would abort with a capacity overflow).
        assert_eq!(
            line_of(read("4611686018427387904 2\n1 2\n").unwrap_err()),
            3
        );
    }

    #[test]
    fn weights_whose_sum_overflows_are_refused() {
        // The total vertex weight overflowed an i64 in `Hypergraph::new` (a panic).
        let max = i64::MAX;
        let e = read(&format!("1 2 10\n1 2\n{max}\n{max}\n")).unwrap_err();
        assert_eq!(line_of(e), 4);
        let e = read(&format!("2 2 1\n{max} 1 2\n{max} 1\n")).unwrap_err();
        assert_eq!(line_of(e), 3);
    }

    #[test]
    fn partition_files_are_checked() {
        assert_eq!(
            read_partition("0\n1\n1\n".as_bytes(), 3, 2).unwrap(),
            vec![0, 1, 1]
        );
        assert!(read_partition("0\n2\n".as_bytes(), 2, 2).is_err());
        assert!(read_partition("0\n".as_bytes(), 2, 2).is_err());
    }
}
