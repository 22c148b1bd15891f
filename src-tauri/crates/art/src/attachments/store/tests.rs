use std::collections::HashSet;
use std::fs::{self, File};
use std::time::Duration;

use super::{BlobError, BlobId, BlobStore, PARTIAL};

fn store(limit: u64) -> (tempfile::TempDir, BlobStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path().join("attachments"), limit).unwrap();
    (dir, store)
}

#[test]
fn the_same_bytes_are_stored_once_and_read_back_checked() {
    let (_dir, store) = store(1 << 20);
    let a = store.put(b"a photo").unwrap();
    let again = store.put(b"a photo").unwrap();
    let other = store.put(b"a document").unwrap();
    assert_eq!(a, again);
    assert_ne!(a, other);
    assert_eq!(a, BlobId::of(b"a photo"));
    assert_eq!(store.ids().unwrap().len(), 2, "stored once");
    assert_eq!(store.get(&a).unwrap(), b"a photo");
    assert!(store.contains(&a));
    // Named by its hash, under a folder of its first two digits.
    let path = store.path(&a);
    assert!(path.ends_with(format!("{}/{}", &a.as_str()[..2], &a.as_str()[2..])));
}

#[test]
fn a_file_is_stored_in_pieces_and_matches_its_bytes() {
    let (dir, store) = store(8 << 20);
    let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let file = dir.path().join("photo.jpg");
    fs::write(&file, &bytes).unwrap();
    let (id, size) = store.put_file(&file).unwrap();
    assert_eq!(size, bytes.len() as u64);
    assert_eq!(id, BlobId::of(&bytes));
    assert_eq!(store.get(&id).unwrap(), bytes);
}

#[test]
fn empty_too_large_missing_and_changing_files_are_refused_and_nothing_is_kept() {
    let (dir, store) = store(1000);
    let empty = dir.path().join("empty.txt");
    fs::write(&empty, b"").unwrap();
    assert!(matches!(store.put_file(&empty), Err(BlobError::Empty)));
    // Refused by its size, before it is read: a sparse file of "2 GB" is never read.
    let huge = dir.path().join("huge.bin");
    fs::File::create(&huge).unwrap().set_len(2 << 30).unwrap();
    match store.put_file(&huge) {
        Err(BlobError::TooLarge { size, limit }) => assert_eq!((size, limit), (2 << 30, 1000)),
        other => panic!("{other:?}"),
    }
    let missing = dir.path().join("nowhere.pdf");
    assert!(matches!(store.put_file(&missing), Err(BlobError::Io(_))));
    // A file that grew, or shrank, while it was read.
    let grew = store.write(&mut &b"twelve bytes"[..], 5);
    assert!(matches!(grew, Err(BlobError::Changed)), "{grew:?}");
    let shrank = store.write(&mut &b"four"[..], 10);
    assert!(matches!(shrank, Err(BlobError::Changed)), "{shrank:?}");
    assert!(store.ids().unwrap().is_empty());
    let left: Vec<_> = fs::read_dir(&store.root).unwrap().collect();
    assert!(left.is_empty(), "no temporary file left: {left:?}");
}

#[test]
fn a_crash_mid_write_leaves_nothing_half_stored() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("attachments");
    let store = BlobStore::open(&root, 1 << 20).unwrap();
    let kept = store.put(b"kept").unwrap();
    // What a process killed while copying leaves: a temporary file, never a blob.
    let partial = root.join(format!("incoming-4242-0{PARTIAL}"));
    fs::write(&partial, b"half of a pho").unwrap();
    // What another process (the app, while `art` starts) is writing right now: it holds
    // the file locked.
    let writing = root.join(format!("incoming-4343-0{PARTIAL}"));
    fs::write(&writing, b"the first hal").unwrap();
    let writer = File::open(&writing).unwrap();
    writer.lock().unwrap();
    assert_eq!(store.ids().unwrap(), vec![kept.clone()]);
    let reopened = BlobStore::open(&root, 1 << 20).unwrap();
    assert!(!partial.exists(), "removed when the store opens");
    assert!(writing.exists(), "another writer's file is left to it");
    assert_eq!(reopened.get(&kept).unwrap(), b"kept");
    drop(writer);
    BlobStore::open(&root, 1 << 20).unwrap();
    assert!(!writing.exists(), "its writer gone, removed too");
}

#[test]
fn bytes_being_stored_survive_another_store_opening_on_the_same_folder() {
    let (dir, store) = store(1 << 20);
    // Written and hashed, still being checked (an image decoded) when `art` starts.
    let staged = store.stage(b"a photo").unwrap();
    let other = BlobStore::open(dir.path().join("attachments"), 1 << 20).unwrap();
    let id = staged.commit().unwrap();
    assert_eq!(other.get(&id).unwrap(), b"a photo");
}

#[test]
fn damaged_or_missing_bytes_are_reported_not_returned() {
    let (_dir, store) = store(1 << 20);
    let id = store.put(b"original").unwrap();
    fs::write(store.path(&id), b"0riginal").unwrap();
    assert!(matches!(store.get(&id), Err(BlobError::Damaged(d)) if d == id));
    let absent = BlobId::of(b"never stored");
    assert!(matches!(store.get(&absent), Err(BlobError::NotFound(_))));
}

#[test]
fn unused_blobs_go_once_old_enough_and_used_ones_stay() {
    let (_dir, store) = store(1 << 20);
    let used = store.put(b"on a message").unwrap();
    let orphan = store.put(b"its thread was deleted").unwrap();
    let keep: HashSet<BlobId> = [used.clone()].into();
    // Just stored: maybe about to be referenced by a message being committed.
    assert_eq!(
        store
            .remove_unused(&keep, Duration::from_secs(3600))
            .unwrap(),
        0
    );
    assert_eq!(store.remove_unused(&keep, Duration::ZERO).unwrap(), 1);
    assert_eq!(store.ids().unwrap(), vec![used]);
    assert!(!store.contains(&orphan));
}

#[test]
fn ids_are_read_back_only_in_their_one_form() {
    let id = BlobId::of(b"x");
    assert_eq!(BlobId::parse(id.as_str()), Some(id.clone()));
    assert_eq!(BlobId::parse(&id.as_str().to_uppercase()), None);
    assert_eq!(BlobId::parse(&id.as_str()[1..]), None);
    assert_eq!(BlobId::parse("../../etc/passwd"), None);
    assert_eq!(BlobId::of(b"abc").to_string(), id_of_abc());
}

/// SHA-256("abc"), from FIPS 180-2.
fn id_of_abc() -> String {
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into()
}
