//! The failing tests of a run, gathered from `cargo test`'s output so the summary at the
//! very end names them with why they failed. A CI log is often read from its tail only:
//! "526 passed, 1 failed" without the name sends someone through megabytes of log.

/// Lines kept of each failure (the panic's place and message come first).
const LINES_PER_FAILURE: usize = 12;
/// Characters kept of a line (an assertion can print a whole server's output).
const LINE_WIDTH: usize = 300;

/// The failures seen so far, in the order `cargo test` reported them.
#[derive(Default)]
pub struct Failures {
    /// Each failing test's name and the first lines of what it printed.
    found: Vec<(String, Vec<String>)>,
    /// The failure whose output is being read, if any.
    open: Option<usize>,
    /// Where the current test binary's failures start (`tests::x` is a name in many).
    binary_from: usize,
}

impl Failures {
    /// Read one line of `cargo test`'s standard output.
    pub fn read(&mut self, line: &str) {
        let trimmed = line.trim_end();
        if trimmed
            .strip_prefix("running ")
            .is_some_and(|rest| rest.ends_with(" test") || rest.ends_with(" tests"))
        {
            self.binary_from = self.found.len();
            self.open = None;
            return;
        }
        if let Some(name) = trimmed
            .strip_prefix("---- ")
            .and_then(|rest| rest.strip_suffix(" stdout ----"))
        {
            self.open = Some(self.index_of(name));
            return;
        }
        if trimmed == "failures:" || trimmed.starts_with("test result: ") {
            self.open = None;
            return;
        }
        if let Some(name) = trimmed
            .strip_prefix("test ")
            .and_then(|rest| rest.strip_suffix(" ... FAILED"))
        {
            // Known by name before its output is printed (and even if it never is).
            self.index_of(name);
            return;
        }
        if trimmed.is_empty() || is_log_line(trimmed) {
            return;
        }
        if let Some((_, lines)) = self.open.and_then(|i| self.found.get_mut(i))
            && lines.len() < LINES_PER_FAILURE
        {
            lines.push(trimmed.chars().take(LINE_WIDTH).collect());
        }
    }

    /// Where the failure of this name in the current binary is kept (added if new).
    fn index_of(&mut self, name: &str) -> usize {
        let this_binary = &self.found[self.binary_from..];
        match this_binary.iter().position(|(n, _)| n == name) {
            Some(i) => self.binary_from + i,
            None => {
                self.found.push((name.to_owned(), Vec::new()));
                self.found.len() - 1
            }
        }
    }

    /// Whether any failure was seen.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Print them: each name, then its first lines, indented.
    pub fn print(&self) {
        println!("Failed tests:");
        for (name, lines) in &self.found {
            println!("  {name}");
            for line in lines {
                println!("      {line}");
            }
        }
    }
}

/// A tracing log line (`2026-11-28T04:42:33Z DEBUG …`, coloured or not): noise here.
fn is_log_line(line: &str) -> bool {
    let plain = without_colours(line);
    let bytes = plain.as_bytes();
    let dated = bytes.len() > 20
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[10] == b'T';
    dated && {
        let head: String = plain.chars().take(48).collect();
        ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]
            .iter()
            .any(|level| head.contains(level))
    }
}

/// The text without its terminal colour codes (`ESC [ … m`).
fn without_colours(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for end in chars.by_ref() {
                if end.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "\
running 3 tests
test a::passes ... ok
test b::fails ... FAILED
test c::also_fails ... FAILED

failures:

---- b::fails stdout ----

thread 'b::fails' panicked at tests/b.rs:10:5:
assertion `left == right` failed
\u{1b}[2m2026-11-28T04:42:33.398810Z\u{1b}[0m \u{1b}[34mDEBUG\u{1b}[0m keyring: get password
  left: 1
 right: 2

failures:
    b::fails
    c::also_fails

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out
";

    #[test]
    fn names_each_failing_test_with_its_panic_and_not_its_logs() {
        let mut failures = Failures::default();
        for line in RUN.lines() {
            failures.read(line);
        }
        assert_eq!(failures.found.len(), 2, "{:?}", failures.found);
        let (name, lines) = &failures.found[0];
        assert_eq!(name, "b::fails");
        assert_eq!(
            lines,
            &[
                "thread 'b::fails' panicked at tests/b.rs:10:5:",
                "assertion `left == right` failed",
                "  left: 1",
                " right: 2",
            ]
        );
        assert_eq!(failures.found[1], ("c::also_fails".to_owned(), Vec::new()));
    }

    #[test]
    fn a_name_failing_in_two_test_binaries_is_named_twice() {
        let mut failures = Failures::default();
        for _ in 0..2 {
            for line in RUN.lines() {
                failures.read(line);
            }
        }
        let names: Vec<&str> = failures.found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["b::fails", "c::also_fails", "b::fails", "c::also_fails"]
        );
        assert_eq!(
            failures.found[0].1, failures.found[2].1,
            "each with its own panic"
        );
    }

    #[test]
    fn keeps_a_long_failure_short() {
        let mut failures = Failures::default();
        failures.read("---- big stdout ----");
        for i in 0..100 {
            failures.read(&format!("{i}{}", "x".repeat(1000)));
        }
        let (_, lines) = &failures.found[0];
        assert_eq!(lines.len(), LINES_PER_FAILURE);
        assert!(lines.iter().all(|l| l.chars().count() == LINE_WIDTH));
        assert!(!failures.is_empty());
    }
}
