//! Fuzz target `tool_arguments`: see `art::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    art::fuzzing::tool_arguments(data);
});
