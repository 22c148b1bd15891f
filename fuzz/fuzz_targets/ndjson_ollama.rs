//! Fuzz target `ndjson_ollama`: see `art::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = art::fuzzing::ndjson(data);
});
