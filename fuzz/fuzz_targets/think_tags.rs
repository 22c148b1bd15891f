//! Fuzz target `think_tags`: see `art::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    art::fuzzing::think_tags(data);
});
