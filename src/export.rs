//! CSV exports: every cell is either text (names, labels) or a number, and every export is
//! written by [`csv`], which neutralises text a spreadsheet would run as a formula.
//!
//! The rule is OWASP's ("CSV Injection"): a text cell that begins with `=`, `+`, `-`, `@`, a
//! tab or a carriage return gets a leading single quote, so `=HYPERLINK("http://evil","x")`
//! arrives as the text `'=HYPERLINK(...)`. Numbers are never touched: `-12.50` stays a
//! negative number.

use std::borrow::Cow;

/// One cell of an exported row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// Text that came from people or configuration: neutralised on output.
    Text(String),
    /// A number we formatted (`-12.50`, `3.5`, empty for none): written as it is.
    Number(String),
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Text(s.into())
    }

    /// A number cell from anything we format ourselves (integers, decimal amounts).
    pub fn number(n: impl ToString) -> Self {
        Self::Number(n.to_string())
    }

    /// The cell as written to the file.
    pub fn written(&self) -> Cow<'_, str> {
        match self {
            Self::Text(t) => neutralise(t),
            Self::Number(n) => Cow::Borrowed(n),
        }
    }
}

/// Prefixes a single quote to text that begins with `=`, `+`, `-`, `@`, tab or carriage
/// return (OWASP's rule against CSV formula injection); other text is returned as it is.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Writes a CSV document: the header, then one record per row, text cells neutralised.
///
/// # Errors
/// Writer failures (none in practice: it writes to memory).
pub fn csv(header: &[&str], rows: impl IntoIterator<Item = Vec<Cell>>) -> anyhow::Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(header)?;
    for row in rows {
        w.write_record(
            row.iter()
                .map(Cell::written)
                .collect::<Vec<_>>()
                .iter()
                .map(|c| c.as_bytes()),
        )?;
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_in_text_are_neutralised_and_numbers_kept() {
        for (text, written) in [
            ("=1+1", "'=1+1"),
            ("+cmd", "'+cmd"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("fm-pretrain", "fm-pretrain"),
            ("", ""),
        ] {
            assert_eq!(Cell::text(text).written(), written);
        }
        assert_eq!(Cell::number("-12.50").written(), "-12.50");
        let out = csv(
            &["name", "amount"],
            [vec![Cell::text("=HYPERLINK(\"x\")"), Cell::number(-5)]],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "name,amount\n\"'=HYPERLINK(\"\"x\"\")\",-5\n"
        );
    }
}
