//! The summary tables: columns sized to their widest cell, text left-aligned and numbers
//! right-aligned, so that a benchmark lists its cells and never writes a format string
//! twice (once for the header, once for the rows).

/// A table being filled, printed with [`Table::print`].
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells print empty, extra ones are kept).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The table as text, a line each for the header and every row, then an empty line.
    pub fn render(&self) -> String {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let cell = |row: &[String], i: usize| row.get(i).map_or("", String::as_str).to_owned();
        let width = |i: usize| {
            std::iter::once(&self.header)
                .chain(&self.rows)
                .map(|r| cell(r, i).chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        // A column is numeric, and right-aligned, when each of its cells is a number or `-`.
        let numeric: Vec<bool> = (0..columns)
            .map(|i| self.rows.iter().all(|r| is_number(&cell(r, i))) && !self.rows.is_empty())
            .collect();
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let line: Vec<String> = (0..columns)
                .map(|i| {
                    let (c, w) = (cell(row, i), widths[i]);
                    if numeric[i] {
                        format!("{c:>w$}")
                    } else {
                        format!("{c:<w$}")
                    }
                })
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out.push('\n');
        out
    }

    /// Prints [`Table::render`] to stdout.
    pub fn print(&self) {
        print!("{}", self.render());
    }
}

/// Whether a cell reads as a number: digits with an optional sign, separators, decimal point,
/// unit suffix (`12.5`, `-3`, `1,024`, `4.2x`, `17%`), or `-` for a missing one.
fn is_number(cell: &str) -> bool {
    let t = cell.trim();
    if t.is_empty() || t == "-" {
        return true;
    }
    let t = t.trim_end_matches(['x', '%']);
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    t.starts_with(|c: char| c.is_ascii_digit())
        && t.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_left_numbers_right_widths_from_the_widest_cell() {
        let mut t = Table::new(["system", "calls/s", "ratio"]);
        t.row(["ferry", "1,234", "1.5x"]);
        t.row(["prost-longer", "-", "0.75x"]);
        assert_eq!(
            t.render(),
            "system        calls/s  ratio\n\
             ferry           1,234   1.5x\n\
             prost-longer        -  0.75x\n\n"
        );
    }

    #[test]
    fn ragged_rows_and_an_empty_table() {
        let mut t = Table::new(["a", "b"]);
        t.row(["x"]);
        t.row(["y", "z", "extra"]);
        assert_eq!(t.render(), "a  b\nx\ny  z  extra\n\n");
        assert_eq!(Table::new(["only"]).render(), "only\n\n");
    }

    #[test]
    fn numbers() {
        for n in ["0", "-3", "+4.5", "1,024", "2.0x", "17%", "-", ""] {
            assert!(is_number(n), "{n}");
        }
        for t in ["tcp", "4 KiB", "x", "1.2.3a", "p50"] {
            assert!(!is_number(t), "{t}");
        }
    }
}
