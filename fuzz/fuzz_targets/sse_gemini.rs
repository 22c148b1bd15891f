//! Fuzz target `sse_gemini`: see `art::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = art::fuzzing::sse(art::fuzzing::Sse::Gemini, data);
});
