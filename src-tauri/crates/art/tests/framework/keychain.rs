//! The real OS keychain (Secret Service in a D-Bus session under `cargo xtask test`).

use art::secrets::{KeychainStore, Secret, SecretStore};

/// A service name of its own per test, so runs never see each other's entries.
fn store(test: &str) -> KeychainStore {
    KeychainStore::new(format!(
        "org.artworkbench.tests.{test}.{}",
        std::process::id()
    ))
}

#[test]
fn keychain_is_reachable_in_the_test_session() {
    let status = store("probe").probe();
    assert!(status.is_available(), "keychain not reachable: {status:?}");
}

#[test]
fn set_get_replace_delete_round_trip() {
    let store = store("roundtrip");
    assert_eq!(store.get("openai").unwrap(), None);
    store
        .set("openai", &Secret::new("sk-SENTINEL-one"))
        .unwrap();
    assert_eq!(
        store.get("openai").unwrap().unwrap().expose(),
        "sk-SENTINEL-one"
    );
    store
        .set("openai", &Secret::new("sk-SENTINEL-two"))
        .unwrap();
    assert_eq!(
        store.get("openai").unwrap().unwrap().expose(),
        "sk-SENTINEL-two"
    );
    store.delete("openai").unwrap();
    assert_eq!(store.get("openai").unwrap(), None);
    // Deleting what is not there is fine.
    store.delete("openai").unwrap();
}

#[test]
fn entries_are_separate_per_account() {
    let store = store("accounts");
    store.set("anthropic", &Secret::new("a")).unwrap();
    store.set("gemini", &Secret::new("g")).unwrap();
    assert_eq!(store.get("anthropic").unwrap().unwrap().expose(), "a");
    assert_eq!(store.get("gemini").unwrap().unwrap().expose(), "g");
    store.delete("anthropic").unwrap();
    assert_eq!(store.get("gemini").unwrap().unwrap().expose(), "g");
    store.delete("gemini").unwrap();
}
