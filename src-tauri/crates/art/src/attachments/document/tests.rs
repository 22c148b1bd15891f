use std::io::Write;
use std::path::PathBuf;

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/documents")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A Word document whose body is `body` (WordprocessingML inside `<w:body>`).
pub(crate) fn docx(body: &str) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let parts = [
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_owned(),
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#.to_owned(),
        ),
        (
            "word/document.xml",
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
            ),
        ),
    ];
    for (name, content) in parts {
        zip.start_file(name, deflated).unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    out.into_inner()
}

fn paragraph(text: &str) -> String {
    format!("<w:p><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
}

#[test]
fn pdfs_from_two_producers_give_their_text_in_order_with_page_markers() {
    let ghostscript = extract(
        "report.pdf",
        Format::Pdf,
        &fixture("ghostscript-three-pages.pdf"),
    )
    .unwrap();
    assert_eq!(ghostscript.pages, Some(3));
    let text = &ghostscript.text;
    for (page, words) in [
        (1, "1,240 kilograms of apples"),
        (2, "Irrigation cost 310 euros"),
        (3, "The flagship cider ships in spring"),
    ] {
        let marker = text.find(&page_marker(page)).expect("page marker");
        let at = text
            .find(words)
            .unwrap_or_else(|| panic!("{words:?} in {text}"));
        assert!(marker < at, "page {page}'s words follow its marker");
        if page < 3 {
            assert!(at < text.find(&page_marker(page + 1)).unwrap());
        }
    }

    let pdftex = extract(
        "spec.pdf",
        Format::Pdf,
        &fixture("pdftex-shared-mime-info.pdf"),
    )
    .unwrap();
    let pages = pdftex.pages.unwrap();
    assert!(pages > 5, "{pages} pages");
    assert!(
        pdftex.text.contains("Shared MIME-info Database"),
        "{}",
        &pdftex.text[..400]
    );
    assert!(pdftex.text.contains(&page_marker(pages as usize)));
}

#[test]
fn a_scanned_pdf_says_it_has_no_text_and_an_encrypted_one_asks_for_its_password_off() {
    assert_eq!(
        extract("scan.pdf", Format::Pdf, &fixture("scanned-two-pages.pdf")),
        Err(AttachmentProblem::NoText {
            name: "scan.pdf".into(),
            pages: 2
        })
    );
    let locked = extract("locked.pdf", Format::Pdf, &fixture("encrypted.pdf")).unwrap_err();
    assert_eq!(
        locked,
        AttachmentProblem::Encrypted {
            name: "locked.pdf".into()
        },
        "{locked}"
    );
}

#[test]
fn a_damaged_pdf_is_refused_not_a_crash() {
    let whole = fixture("ghostscript-three-pages.pdf");
    for cut in [10, whole.len() / 3, whole.len() / 2] {
        match extract("cut.pdf", Format::Pdf, &whole[..cut]) {
            Err(AttachmentProblem::Malformed { .. } | AttachmentProblem::NoText { .. }) => {}
            // A reader that recovers what it can (the first page) is fine too.
            Ok(partial) => assert!(partial.text.contains(&page_marker(1))),
            Err(other) => panic!("cut at {cut}: {other:?}"),
        }
    }
    assert!(extract("x.pdf", Format::Pdf, b"%PDF-1.7\ngarbage").is_err());
}

#[test]
fn a_pdf_the_reader_panics_on_is_refused_as_damaged() {
    // Found by `cargo xtask fuzz attach_pdf`: pdf_oxide 0.3.78 slices an object header
    // inside a UTF-8 character (`has_standalone_obj_keyword`) and panics.
    crate::panics::quiet_caught();
    let refused = extract("odd.pdf", Format::Pdf, &fixture("fuzzed-cut-utf8.pdf")).unwrap_err();
    assert!(
        matches!(&refused, AttachmentProblem::Malformed { name, .. } if name == "odd.pdf"),
        "{refused:?}"
    );
    assert!(!crate::panics::catching());
}

#[test]
fn a_word_document_keeps_headings_paragraphs_and_spaces_between_runs() {
    let body = format!(
        "<w:p><w:pPr><w:pStyle w:val=\"Heading1\"/></w:pPr><w:r><w:t>Harvest</w:t></w:r></w:p>\
         {}<w:p><w:r><w:t xml:space=\"preserve\">Pears were </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>late</w:t></w:r></w:p>",
        paragraph("The orchard produced 1,240 kilograms.")
    );
    let doc = extract("r.docx", Format::Docx, &docx(&body)).unwrap();
    assert_eq!(doc.pages, None);
    assert!(doc.text.contains("Harvest"), "{}", doc.text);
    assert!(doc.text.contains("The orchard produced 1,240 kilograms."));
    assert!(
        doc.text.contains("Pears were **late**") || doc.text.contains("Pears were late"),
        "{}",
        doc.text
    );
}

#[test]
fn a_word_zip_bomb_and_a_damaged_document_are_refused() {
    // 200 MB of one paragraph's text deflates to a few hundred KB.
    let huge = "a".repeat(200 << 20);
    let bomb = docx(&paragraph(&huge));
    drop(huge);
    assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
    assert!(matches!(
        extract("bomb.docx", Format::Docx, &bomb),
        Err(AttachmentProblem::Malformed { .. })
    ));
    let good = docx(&paragraph("fine"));
    assert!(extract("cut.docx", Format::Docx, &good[..good.len() / 2]).is_err());
}

#[test]
fn html_is_read_as_its_text_and_text_as_it_is() {
    let page = b"<!doctype html><html><head><title>T</title><style>p{}</style></head>\
        <body><h1>Cider</h1><p>Ships in <b>spring</b>.</p><script>var x=1;</script></body></html>";
    let html = extract("p.html", Format::Html, page).unwrap();
    assert!(html.text.contains("Cider"), "{}", html.text);
    assert!(html.text.contains("Ships in"));
    assert!(!html.text.contains("var x"), "no script: {}", html.text);
    let text = extract("n.md", Format::Text, "# Notes\n\n- one\n".as_bytes()).unwrap();
    assert_eq!(text.text, "# Notes\n\n- one\n");
}
