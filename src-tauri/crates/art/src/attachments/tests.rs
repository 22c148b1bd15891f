use std::fs;
use std::io::Cursor;

use ::image::{DynamicImage, ImageFormat, RgbImage};

use super::*;

fn attachments(limit: u64) -> (tempfile::TempDir, Attachments) {
    let dir = tempfile::tempdir().unwrap();
    let attachments = Attachments::open(dir.path().join("store"), limit).unwrap();
    (dir, attachments)
}

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    encoded(width, height, ImageFormat::Jpeg)
}

fn encoded(width: u32, height: u32, format: ImageFormat) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        ::image::Rgb([
            (x * 7 % 256) as u8,
            (y * 3 % 256) as u8,
            ((x + y) % 256) as u8,
        ])
    });
    let mut out = Vec::new();
    DynamicImage::ImageRgb8(image)
        .write_to(Cursor::new(&mut out), format)
        .unwrap();
    out
}

#[test]
fn an_image_is_kept_whole_with_the_copy_sent_and_read_back_by_its_facts() {
    let (dir, attachments) = attachments(BlobStore::DEFAULT_LIMIT);
    let path = dir.path().join("holiday photo.jpg");
    let original = jpeg(3000, 2000);
    fs::write(&path, &original).unwrap();
    let attached = attachments.add_file(&path).unwrap();
    assert_eq!(attached.name, "holiday photo.jpg");
    assert_eq!(attached.mime, "image/jpeg");
    assert_eq!(attached.size, original.len() as u64);
    assert_eq!(attached.id, BlobId::of(&original).to_string());
    let AttachmentKind::Image {
        width,
        height,
        sent,
    } = &attached.kind
    else {
        panic!("{attached:?}")
    };
    assert_eq!((*width, *height), (3000, 2000));
    assert!(sent.is_some(), "a 3000 px image is sent scaled");
    assert_eq!(
        attachments.original(&attached).unwrap(),
        original,
        "kept byte for byte"
    );
    let (bytes, mime) = attachments.image_to_send(&attached).unwrap().unwrap();
    assert_eq!(mime, "image/jpeg");
    let sent = ::image::load_from_memory(&bytes).unwrap();
    assert_eq!((sent.width(), sent.height()), (1568, 1045));
    assert_eq!(Attachments::blob_ids(&attached).count(), 2);
    // The same photo again: the same facts, nothing stored twice.
    let again = attachments.add_bytes("copy.jpg", &original).unwrap();
    assert_eq!(again.id, attached.id);
    assert_eq!(attachments.store().ids().unwrap().len(), 2);
}

#[test]
fn a_document_keeps_its_text_pages_and_tokens() {
    let (_dir, attachments) = attachments(BlobStore::DEFAULT_LIMIT);
    let notes = "# Orchard\n\nThe pears were late this year.\n".repeat(30);
    let attached = attachments.add_bytes("notes.md", notes.as_bytes()).unwrap();
    assert_eq!(attached.mime, "text/plain");
    let AttachmentKind::Document { pages, tokens, .. } = attached.kind else {
        panic!()
    };
    assert_eq!(pages, None);
    let framed = prompt::framed("notes.md", &notes);
    assert_eq!(tokens, estimated_tokens(&framed));
    assert_eq!(attachments.text(&attached).unwrap().unwrap(), notes);
    assert_eq!(attachments.image_to_send(&attached).unwrap(), None);
}

#[test]
fn bad_files_are_refused_clearly_and_nothing_is_stored() {
    let (dir, attachments) = attachments(1 << 20);
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        path
    };
    let empty = attachments.add_file(&write("empty.txt", b"")).unwrap_err();
    assert_eq!(empty.to_string(), "empty.txt is empty");
    // Refused by its size before it is read: a sparse "2 GB" file is never read.
    let huge = dir.path().join("huge.pdf");
    fs::File::create(&huge).unwrap().set_len(2 << 30).unwrap();
    assert_eq!(
        attachments.add_file(&huge).unwrap_err(),
        AttachmentProblem::TooLarge {
            name: "huge.pdf".into(),
            size: 2 << 30,
            limit: 1 << 20
        }
    );
    let binary = attachments
        .add_file(&write("notes.txt", &[0, 159, 146, 150]))
        .unwrap_err();
    assert!(
        matches!(binary, AttachmentProblem::Mismatch { .. }),
        "{binary}"
    );
    let html = attachments
        .add_file(&write("paper.pdf", b"<!DOCTYPE html><p>not a pdf</p>"))
        .unwrap_err();
    assert_eq!(
        html.to_string(),
        "paper.pdf is named like a PDF but holds HTML"
    );
    let missing = attachments
        .add_file(&dir.path().join("nowhere.png"))
        .unwrap_err();
    assert!(
        matches!(missing, AttachmentProblem::Unreadable { .. }),
        "{missing}"
    );
    let folder = attachments.add_file(dir.path()).unwrap_err();
    assert!(folder.to_string().ends_with("it is a folder"), "{folder}");
    let mut cut = encoded(200, 200, ImageFormat::Png);
    cut.truncate(cut.len() / 3);
    let damaged = attachments.add_file(&write("cut.png", &cut)).unwrap_err();
    assert!(
        matches!(damaged, AttachmentProblem::Malformed { .. }),
        "{damaged}"
    );
    assert!(
        attachments.store().ids().unwrap().is_empty(),
        "nothing stored"
    );
    // Not even the copy written while the damaged image was decoded.
    let left: Vec<_> = fs::read_dir(dir.path().join("store"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_file_that_changes_while_it_is_read_is_refused() {
    let grew = read_sized(&mut &b"twelve bytes"[..], 5, "log.txt").unwrap_err();
    assert_eq!(
        grew.to_string(),
        "log.txt changed while it was read; attach it again once it is written"
    );
    let shrank = read_sized(&mut &b"four"[..], 10, "log.txt");
    assert!(matches!(shrank, Err(AttachmentProblem::Changed { .. })));
    assert_eq!(read_sized(&mut &b"four"[..], 4, "f").unwrap(), b"four");
}

#[test]
fn names_lose_folders_and_control_characters() {
    assert_eq!(clean_name("/home/me/a.png"), "a.png");
    assert_eq!(clean_name("C:\\Users\\me\\b.pdf"), "b.pdf");
    assert_eq!(clean_name("bad\u{7}\nname.txt"), "badname.txt");
    assert_eq!(clean_name("  "), "attachment");
}
