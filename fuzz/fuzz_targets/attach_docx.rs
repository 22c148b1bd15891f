//! Fuzz target `attach_docx`: see `art::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    art::fuzzing::docx(data);
});
