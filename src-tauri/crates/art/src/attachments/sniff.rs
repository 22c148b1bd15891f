//! What a file is, read from its bytes and checked against its name: an image, a
//! document, or a refusal that says why (a binary named `.txt`, HTML named `.pdf`).

use art_types::AttachmentProblem;

/// The kinds of file an attachment can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PNG image.
    Png,
    /// JPEG image.
    Jpeg,
    /// WebP image.
    Webp,
    /// GIF image (its first frame is sent).
    Gif,
    /// PDF document.
    Pdf,
    /// Word document (Office Open XML).
    Docx,
    /// A web page.
    Html,
    /// Plain text, Markdown, source code: any UTF-8 text.
    Text,
}

impl Format {
    /// The media type.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
            Self::Gif => "image/gif",
            Self::Pdf => "application/pdf",
            Self::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Self::Html => "text/html",
            Self::Text => "text/plain",
        }
    }

    /// Whether it goes to the model as an image.
    pub fn is_image(self) -> bool {
        matches!(self, Self::Png | Self::Jpeg | Self::Webp | Self::Gif)
    }

    /// How it is named to people.
    fn label(self) -> &'static str {
        match self {
            Self::Png => "a PNG image",
            Self::Jpeg => "a JPEG image",
            Self::Webp => "a WebP image",
            Self::Gif => "a GIF image",
            Self::Pdf => "a PDF",
            Self::Docx => "a Word document",
            Self::Html => "HTML",
            Self::Text => "text",
        }
    }
}

/// What the bytes are, as far as their first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Known(Format),
    Zip,
    /// An OLE compound file: old Office formats, and password-protected new ones.
    Compound,
    Binary,
}

impl Found {
    fn label(self) -> &'static str {
        match self {
            Self::Known(format) => format.label(),
            Self::Zip => "a zip archive",
            Self::Compound => "an old-style Office file",
            Self::Binary => "binary data",
        }
    }
}

/// What the extension of `name` says the file is; `None` for an extension that says
/// nothing (or none): then the bytes decide.
fn claimed(name: &str) -> Option<Format> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => Format::Png,
        "jpg" | "jpeg" | "jpe" | "jfif" => Format::Jpeg,
        "webp" => Format::Webp,
        "gif" => Format::Gif,
        "pdf" => Format::Pdf,
        "docx" => Format::Docx,
        "html" | "htm" | "xhtml" => Format::Html,
        "txt" | "text" | "md" | "markdown" | "rst" | "csv" | "tsv" | "json" | "jsonl" | "yaml"
        | "yml" | "toml" | "xml" | "ini" | "cfg" | "conf" | "log" | "rs" | "py" | "js" | "mjs"
        | "ts" | "tsx" | "jsx" | "go" | "c" | "h" | "cc" | "cpp" | "hpp" | "java" | "kt"
        | "swift" | "rb" | "php" | "cs" | "sh" | "bash" | "zsh" | "fish" | "sql" | "css"
        | "scss" | "lua" | "r" | "jl" | "hs" | "ml" | "ex" | "exs" | "erl" | "clj" | "scala"
        | "dart" | "vue" | "svelte" | "tex" | "bib" | "org" | "adoc" | "diff" | "patch"
        | "proto" | "graphql" | "tf" | "nix" | "zig" => Format::Text,
        _ => return None,
    })
}

/// The kind of `bytes`, from their signature; text when they are UTF-8 without NULs.
fn found(bytes: &[u8]) -> Found {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Found::Known(Format::Png)
    } else if starts(&[0xFF, 0xD8, 0xFF]) {
        Found::Known(Format::Jpeg)
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Found::Known(Format::Gif)
    } else if bytes.len() >= 12 && starts(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Found::Known(Format::Webp)
    } else if memchr::memmem::find(&bytes[..bytes.len().min(1024)], b"%PDF-").is_some() {
        // The header may follow up to 1 KB of junk (the specification allows it).
        Found::Known(Format::Pdf)
    } else if starts(b"PK\x03\x04") {
        Found::Zip
    } else if starts(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        Found::Compound
    } else if let Some(text) = as_text(bytes) {
        if looks_like_html(text) {
            Found::Known(Format::Html)
        } else {
            Found::Known(Format::Text)
        }
    } else {
        Found::Binary
    }
}

/// `bytes` as text: UTF-8 (a byte-order mark dropped) with no NUL in it.
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if memchr::memchr(0, bytes).is_some() {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

fn looks_like_html(text: &str) -> bool {
    let head: String = text
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// What the file `name` with these bytes is, or why it cannot be attached.
pub fn sniff(name: &str, bytes: &[u8]) -> Result<Format, AttachmentProblem> {
    let found = found(bytes);
    let mismatch = |claimed: Format| AttachmentProblem::Mismatch {
        name: name.to_owned(),
        claimed: claimed.label().to_owned(),
        found: found.label().to_owned(),
    };
    match (claimed(name), found) {
        // A Word document is a zip; an encrypted one is wrapped in a compound file.
        (Some(Format::Docx), Found::Zip) => Ok(Format::Docx),
        (Some(Format::Docx), Found::Compound) => Err(AttachmentProblem::Encrypted {
            name: name.to_owned(),
        }),
        // Web pages without a doctype read as text; their name says HTML.
        (Some(Format::Html), Found::Known(Format::Text | Format::Html)) => Ok(Format::Html),
        // Markup in a text-named file (an `.xml`, a `.md` starting with `<html>`) stays text.
        (Some(Format::Text), Found::Known(Format::Text | Format::Html)) => Ok(Format::Text),
        (Some(claimed), Found::Known(format)) if claimed == format => Ok(format),
        // A JPEG named `.png` and the like: the bytes decide between images.
        (Some(claimed), Found::Known(format)) if claimed.is_image() && format.is_image() => {
            Ok(format)
        }
        (Some(claimed), _) => Err(mismatch(claimed)),
        (None, Found::Known(format)) => Ok(format),
        (None, other) => Err(AttachmentProblem::Unsupported {
            name: name.to_owned(),
            found: other.label().to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_decide_and_the_name_must_agree() {
        assert_eq!(sniff("a.png", b"\x89PNG\r\n\x1a\n...."), Ok(Format::Png));
        assert_eq!(sniff("photo", &[0xFF, 0xD8, 0xFF, 0xE0]), Ok(Format::Jpeg));
        assert_eq!(sniff("x.jpg", b"\x89PNG\r\n\x1a\n"), Ok(Format::Png));
        assert_eq!(sniff("w.webp", b"RIFF\0\0\0\0WEBPVP8 "), Ok(Format::Webp));
        assert_eq!(sniff("doc.pdf", b"junk\n%PDF-1.7\n"), Ok(Format::Pdf));
        assert_eq!(
            sniff("notes.md", "# Title\n\nbody".as_bytes()),
            Ok(Format::Text)
        );
        assert_eq!(
            sniff("main.rs", b"\xEF\xBB\xBFfn main() {}"),
            Ok(Format::Text)
        );
        assert_eq!(sniff("README", b"plain words"), Ok(Format::Text));
        assert_eq!(sniff("page.htm", b"<p>hi</p>"), Ok(Format::Html));
        assert_eq!(sniff("page", b"  <!DOCTYPE html><html>"), Ok(Format::Html));
        assert_eq!(sniff("r.docx", b"PK\x03\x04rest"), Ok(Format::Docx));
    }

    #[test]
    fn a_file_that_is_not_what_its_name_says_is_refused_with_both() {
        let binary_txt = sniff("notes.txt", &[0x00, 0x01, 0xFE, 0x42]).unwrap_err();
        assert_eq!(
            binary_txt.to_string(),
            "notes.txt is named like text but holds binary data"
        );
        let html_pdf = sniff("paper.pdf", b"<!doctype html><title>x</title>").unwrap_err();
        assert_eq!(
            html_pdf.to_string(),
            "paper.pdf is named like a PDF but holds HTML"
        );
        assert!(matches!(
            sniff(
                "locked.docx",
                &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0]
            ),
            Err(AttachmentProblem::Encrypted { .. })
        ));
        assert!(matches!(
            sniff("archive.zip", b"PK\x03\x04"),
            Err(AttachmentProblem::Unsupported { .. })
        ));
        assert!(matches!(sniff("pic.png", b"GIF89a"), Ok(Format::Gif)));
        assert!(matches!(
            sniff("latin1.txt", &[b'c', b'a', b'f', 0xE9]),
            Err(AttachmentProblem::Mismatch { .. })
        ));
    }
}
