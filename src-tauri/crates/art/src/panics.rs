//! Panics a third-party reader raises on hostile input, caught where they happen.
//!
//! A parser we did not write (pdf_oxide, meval) can panic on a damaged file or an odd
//! expression; [`catch`] turns that into an error the caller reports as a refusal. Such a
//! panic is expected, not a crash: [`quiet_caught`] keeps it off the terminal (it goes
//! to the log at `info`, for a bug report upstream) and hands every other panic to the
//! hook there was — the default message, or a fuzzer's abort, so fuzzing stops on real
//! crashes only.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

thread_local! {
    /// How many [`catch`] calls this thread is inside.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

/// Run `f`, returning `Err` with the payload when it panics. `f`'s state is not looked
/// at after a panic (callers only report the failure), so unwind safety is asserted.
pub fn catch<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    result
}

/// Whether a panic on this thread now would be caught by [`catch`].
pub fn catching() -> bool {
    CATCHING.with(Cell::get) > 0
}

/// Install (once per process) a panic hook that logs a panic [`catch`] will catch (at
/// `info`) and hands every other to the hook installed before it.
pub fn quiet_caught() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if catching() {
                tracing::info!("a reader failed on its input (refused, not a crash): {info}");
            } else {
                before(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_is_an_error_and_the_count_comes_back_to_zero() {
        quiet_caught();
        assert!(!catching());
        let failed = catch(|| {
            assert!(catching());
            let inner = catch(|| panic!("inner"));
            assert!(inner.is_err() && catching(), "still inside the outer catch");
            panic!("outer")
        });
        let payload = failed.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"outer"));
        assert!(!catching());
        assert_eq!(catch(|| 7).unwrap(), 7);
    }
}
