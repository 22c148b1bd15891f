//! Fuzz target `attach_image`: see `art::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    art::fuzzing::image(data);
});
