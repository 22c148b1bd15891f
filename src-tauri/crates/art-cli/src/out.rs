//! Printing like a Unix tool. When whoever reads our output goes away (`art threads |
//! head -1`), writing fails with a broken pipe; Rust's `print!` would panic there. Here
//! the output is dropped quietly from then on and the work goes on: a run still finishes
//! and is recorded, and the exit status says how it ended.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Nobody reads standard output any more.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
/// Nobody reads standard error any more.
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// Write to `stream` unless its reader is gone; a broken pipe marks it gone, any other
/// error is ignored like a terminal's (there is nowhere left to report it).
fn write(gone: &AtomicBool, stream: &mut dyn Write, args: fmt::Arguments<'_>) {
    if gone.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = stream.write_fmt(args).and_then(|()| stream.flush())
        && e.kind() == io::ErrorKind::BrokenPipe
    {
        gone.store(true, Ordering::Relaxed);
    }
}

/// Standard output (flushed at once: answers stream token by token).
pub fn out(args: fmt::Arguments<'_>) {
    write(&STDOUT_GONE, &mut io::stdout().lock(), args);
}

/// Standard error.
pub fn err(args: fmt::Arguments<'_>) {
    write(&STDERR_GONE, &mut io::stderr().lock(), args);
}

/// `print!` that ends quietly on a closed pipe.
macro_rules! say {
    ($($arg:tt)*) => { $crate::out::out(format_args!($($arg)*)) };
}

/// `println!` that ends quietly on a closed pipe.
macro_rules! sayln {
    () => { $crate::out::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` that ends quietly on a closed pipe.
macro_rules! note {
    ($($arg:tt)*) => { $crate::out::err(format_args!($($arg)*)) };
}

/// `eprintln!` that ends quietly on a closed pipe.
macro_rules! noteln {
    () => { $crate::out::err(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::err(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {note, noteln, say, sayln};

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that has gone away.
    struct Closed(usize);

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            self.0 += 1;
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_written_once_then_left_alone() {
        let gone = AtomicBool::new(false);
        let mut closed = Closed(0);
        write(&gone, &mut closed, format_args!("first"));
        assert!(gone.load(Ordering::Relaxed));
        write(&gone, &mut closed, format_args!("second"));
        assert_eq!(closed.0, 1);
    }
}
