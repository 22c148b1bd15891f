//! Fuzz target `output_parser`: see `art::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    art::fuzzing::output_parser(data);
});
