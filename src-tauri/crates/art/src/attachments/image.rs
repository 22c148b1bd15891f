//! Images: checked before they are decoded (a decompression bomb is refused by its
//! header's dimensions), decoded once when attached (a damaged image is refused then,
//! not by the provider later), and, when a provider would not take them as they are,
//! a copy made that every provider takes.
//!
//! The providers' limits (from their documentation, 2026-11):
//! - Anthropic: JPEG, PNG, GIF, WebP; at most 5 MB an image (as sent) and 8000 px a
//!   side; anything over 1568 px on the long edge is scaled down by the API (slower).
//! - OpenAI (and the OpenAI-style DeepSeek, OpenRouter): PNG, JPEG, WebP, non-animated
//!   GIF; at most 20 MB an image; scaled by the API to fit 2048 px, then 768 px on the
//!   short side.
//! - Gemini: PNG, JPEG, WebP, HEIC, HEIF (no GIF); a request with inline data at most
//!   20 MB in all.
//! - Ollama: base64 images in `images`; the model's projector scales them (e.g. 1120 px
//!   for Llama 3.2 Vision, 896 px for Gemma 3); PNG and JPEG are what every build decodes.
//!
//! So one copy fits all: PNG or JPEG, at most [`SEND_EDGE`] px on the long edge and
//! [`SEND_BYTES`] bytes. An image already within that is sent as it is; the original is
//! always kept.
//!
//! A camera stores a photo as its sensor saw it and says in the Exif how to turn it
//! upright. Viewers (the app's window among them) turn it; a model's decoder does not
//! (llama.cpp's, for one, reads pixels only), so the copy sent is turned, and the size
//! shown is the upright one.

use std::io::Cursor;

use art_types::AttachmentProblem;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};

use super::sniff::Format;

/// The longest edge sent to a model (Anthropic's; the others scale to less).
pub const SEND_EDGE: u32 = 1568;
/// The most bytes an image is sent as (Anthropic's 5 MB, as base64 grows it by a third).
pub const SEND_BYTES: usize = 3_750_000;
/// The most pixels an attached image may have (a 100-megapixel photo; a decompression
/// bomb declares far more).
pub const MAX_PIXELS: u64 = 100_000_000;
/// What decoding one image may allocate.
const MAX_ALLOC: u64 = 1 << 30;

/// An image as attached.
#[derive(Debug)]
pub struct Inspected {
    /// Pixels across, upright.
    pub width: u32,
    /// Pixels down, upright.
    pub height: u32,
    /// What to send instead of the original (scaled, or re-encoded as PNG or JPEG), with
    /// its media type; `None` when the original goes as it is.
    pub to_send: Option<(Vec<u8>, &'static str)>,
}

fn image_format(format: Format) -> ImageFormat {
    match format {
        Format::Jpeg => ImageFormat::Jpeg,
        Format::Webp => ImageFormat::WebP,
        Format::Gif => ImageFormat::Gif,
        _ => ImageFormat::Png,
    }
}

fn reader(bytes: &[u8], format: Format) -> ImageReader<Cursor<&[u8]>> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), image_format(format));
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_ALLOC);
    reader.limits(limits);
    reader
}

/// Check and decode the image `name` (its `format` sniffed), and make the copy to send
/// when the original is too large, stored on its side (Exif orientation), or in a format
/// not every provider takes (WebP; a GIF's first frame).
pub fn inspect(name: &str, format: Format, bytes: &[u8]) -> Result<Inspected, AttachmentProblem> {
    let malformed = |e: image::ImageError| AttachmentProblem::Malformed {
        name: name.to_owned(),
        detail: e.to_string(),
    };
    let (width, height) = reader(bytes, format).into_dimensions().map_err(malformed)?;
    let too_large = || AttachmentProblem::ImageTooLarge {
        name: name.to_owned(),
        width,
        height,
        limit: MAX_PIXELS,
    };
    if u64::from(width) * u64::from(height) > MAX_PIXELS || width == 0 || height == 0 {
        return Err(too_large());
    }
    let mut decoder = reader(bytes, format).into_decoder().map_err(malformed)?;
    if decoder.total_bytes() > MAX_ALLOC {
        return Err(too_large());
    }
    // Unreadable Exif is no reason to refuse a photo: it is then taken as it is stored.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let image = DynamicImage::from_decoder(decoder).map_err(malformed)?;
    let upright = orientation == Orientation::NoTransforms;
    let fits = upright && width.max(height) <= SEND_EDGE && bytes.len() <= SEND_BYTES;
    let to_send = match format {
        Format::Png | Format::Jpeg if fits => None,
        _ => {
            let unsendable = |detail: String| AttachmentProblem::Malformed {
                name: name.to_owned(),
                detail: format!("the copy to send could not be made: {detail}"),
            };
            // Scaled first, turned after: turning the smaller image costs less.
            let mut copy = scaled(image).map_err(unsendable)?;
            copy.apply_orientation(orientation);
            Some(encode(&copy).map_err(unsendable)?)
        }
    };
    let (width, height) = if turns_sideways(orientation) {
        (height, width)
    } else {
        (width, height)
    };
    Ok(Inspected {
        width,
        height,
        to_send,
    })
}

/// Whether turning an image upright by `orientation` swaps its width and height.
fn turns_sideways(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    )
}

/// The size of an image `width` × `height` within [`SEND_EDGE`], its proportions kept.
fn within_edge(width: u32, height: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= SEND_EDGE {
        return (width, height);
    }
    let short = u64::from(width.min(height));
    let scaled = ((short * u64::from(SEND_EDGE) + u64::from(long) / 2) / u64::from(long)) as u32;
    let scaled = scaled.max(1);
    if width >= height {
        (SEND_EDGE, scaled)
    } else {
        (scaled, SEND_EDGE)
    }
}

/// `image` within [`SEND_EDGE`], its proportions kept (as it is when it fits; else as
/// 8-bit RGB, or RGBA when it has transparency).
fn scaled(image: DynamicImage) -> Result<DynamicImage, String> {
    use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer, images};

    let (width, height) = (image.width(), image.height());
    let (to_width, to_height) = within_edge(width, height);
    if (to_width, to_height) == (width, height) {
        return Ok(image);
    }
    let alpha = image.color().has_alpha();
    let (pixels, kind) = if alpha {
        (image.into_rgba8().into_raw(), PixelType::U8x4)
    } else {
        (image.into_rgb8().into_raw(), PixelType::U8x3)
    };
    let from =
        images::Image::from_vec_u8(width, height, pixels, kind).map_err(|e| e.to_string())?;
    let mut to = images::Image::new(to_width, to_height, kind);
    // Bilinear over the whole source area (the kernel widens with the ratio, as
    // Pillow's does): smooth for photos, and transparency is weighted (premultiplied).
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    Resizer::new()
        .resize(&from, &mut to, &options)
        .map_err(|e| e.to_string())?;
    let pixels = to.into_vec();
    let image = if alpha {
        image::RgbaImage::from_raw(to_width, to_height, pixels).map(DynamicImage::ImageRgba8)
    } else {
        image::RgbImage::from_raw(to_width, to_height, pixels).map(DynamicImage::ImageRgb8)
    };
    image.ok_or_else(|| "a scaled image's buffer did not match its size".to_owned())
}

/// PNG when the image has transparency and stays small enough, else JPEG (quality 85).
fn encode(image: &DynamicImage) -> Result<(Vec<u8>, &'static str), String> {
    if image.color().has_alpha() {
        let mut png = Vec::new();
        image
            .write_to(Cursor::new(&mut png), ImageFormat::Png)
            .map_err(|e| e.to_string())?;
        if png.len() <= SEND_BYTES {
            return Ok((png, "image/png"));
        }
    }
    let rgb = image.to_rgb8();
    let (width, height) = (
        u16::try_from(rgb.width()).map_err(|e| e.to_string())?,
        u16::try_from(rgb.height()).map_err(|e| e.to_string())?,
    );
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 85)
        .encode(rgb.as_raw(), width, height, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| e.to_string())?;
    Ok((jpeg, "image/jpeg"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage, Rgba, RgbaImage};

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = RgbImage::from_fn(width, height, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 90])
        });
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(image)
            .write_to(Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn a_small_png_goes_as_it_is_and_a_large_one_is_scaled_keeping_its_shape() {
        let small = inspect("s.png", Format::Png, &png(640, 480)).unwrap();
        assert_eq!((small.width, small.height), (640, 480));
        assert!(small.to_send.is_none());

        let large = inspect("l.png", Format::Png, &png(4000, 2000)).unwrap();
        assert_eq!(
            (large.width, large.height),
            (4000, 2000),
            "the original's size"
        );
        let (bytes, mime) = large.to_send.unwrap();
        assert_eq!(mime, "image/jpeg");
        let sent = image::load_from_memory(&bytes).unwrap();
        assert_eq!((sent.width(), sent.height()), (1568, 784));
    }

    /// A JPEG `width` × `height`, red on its left half and blue on its right, whose Exif
    /// orientation is `exif` (as a camera held upright or on its side writes it).
    fn jpeg_turned(width: u32, height: u32, exif: u16) -> Vec<u8> {
        use image::ImageEncoder;
        let image = RgbImage::from_fn(width, height, |x, _| {
            if x < width / 2 {
                Rgb([255, 0, 0])
            } else {
                Rgb([0, 0, 255])
            }
        });
        // A big-endian TIFF header and one IFD entry: tag 0x0112 (Orientation), SHORT.
        let mut chunk = b"MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01".to_vec();
        chunk.extend_from_slice(&exif.to_be_bytes());
        chunk.extend_from_slice(&[0; 6]);
        let mut out = Vec::new();
        let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95);
        encoder.set_exif_metadata(chunk).unwrap();
        encoder
            .write_image(
                image.as_raw(),
                width,
                height,
                image::ExtendedColorType::Rgb8,
            )
            .unwrap();
        out
    }

    /// Whether `pixel` is clearly red (a JPEG's red is not exactly 255, 0, 0).
    fn reddish(pixel: &Rgb<u8>) -> bool {
        pixel[0] > 200 && pixel[2] < 60
    }

    /// Whether `pixel` is clearly blue.
    fn bluish(pixel: &Rgb<u8>) -> bool {
        pixel[2] > 200 && pixel[0] < 60
    }

    #[test]
    fn a_photo_stored_on_its_side_is_sent_upright_and_shown_with_its_upright_size() {
        // Orientation 6: turn 90° clockwise to view; the stored left half becomes the top.
        let shown = inspect("side.jpg", Format::Jpeg, &jpeg_turned(300, 200, 6)).unwrap();
        assert_eq!((shown.width, shown.height), (200, 300));
        let (sent, mime) = shown.to_send.expect("a turned copy, though it is small");
        assert_eq!(mime, "image/jpeg");
        let sent = image::load_from_memory(&sent).unwrap().to_rgb8();
        assert_eq!(sent.dimensions(), (200, 300));
        assert!(
            reddish(sent.get_pixel(100, 30)),
            "{:?}",
            sent.get_pixel(100, 30)
        );
        assert!(
            bluish(sent.get_pixel(100, 270)),
            "{:?}",
            sent.get_pixel(100, 270)
        );

        // Orientation 8, and large: scaled and turned 90° counter-clockwise (left → bottom).
        let shown = inspect("big.jpg", Format::Jpeg, &jpeg_turned(3200, 1600, 8)).unwrap();
        assert_eq!((shown.width, shown.height), (1600, 3200));
        let sent = image::load_from_memory(&shown.to_send.unwrap().0)
            .unwrap()
            .to_rgb8();
        assert_eq!(sent.dimensions(), (784, 1568));
        assert!(
            bluish(sent.get_pixel(392, 100)),
            "{:?}",
            sent.get_pixel(392, 100)
        );
        assert!(
            reddish(sent.get_pixel(392, 1400)),
            "{:?}",
            sent.get_pixel(392, 1400)
        );

        // Orientation 1 (upright) and small: the original goes as it is.
        let upright = inspect("up.jpg", Format::Jpeg, &jpeg_turned(300, 200, 1)).unwrap();
        assert_eq!((upright.width, upright.height), (300, 200));
        assert!(upright.to_send.is_none());
    }

    #[test]
    fn a_scaled_size_keeps_the_proportions_and_at_least_one_pixel() {
        assert_eq!(within_edge(1000, 4000), (392, 1568));
        assert_eq!(within_edge(4000, 3000), (1568, 1176));
        assert_eq!(within_edge(20_000, 2), (1568, 1));
        assert_eq!(within_edge(1568, 10), (1568, 10), "within: as it is");
    }

    #[test]
    fn a_large_transparent_image_is_scaled_as_png_keeping_its_transparency() {
        // Left half clear, right half opaque red.
        let image = RgbaImage::from_fn(3200, 400, |x, _| {
            if x < 1600 {
                Rgba([0, 0, 255, 0])
            } else {
                Rgba([255, 0, 0, 255])
            }
        });
        let mut bytes = Vec::new();
        DynamicImage::ImageRgba8(image)
            .write_to(Cursor::new(&mut bytes), ImageFormat::Png)
            .unwrap();
        let (sent, mime) = inspect("t.png", Format::Png, &bytes)
            .unwrap()
            .to_send
            .unwrap();
        assert_eq!(mime, "image/png");
        let sent = image::load_from_memory(&sent).unwrap().to_rgba8();
        assert_eq!(sent.dimensions(), (1568, 196));
        assert_eq!(sent.get_pixel(10, 100)[3], 0, "clear stays clear");
        assert_eq!(*sent.get_pixel(1500, 100), Rgba([255, 0, 0, 255]));
        // Transparency weighted: the clear blue does not bleed into the red edge.
        let edge = sent.get_pixel(785, 100);
        assert!(edge[2] < 8, "no blue fringe: {edge:?}");
    }

    #[test]
    fn a_gif_and_a_webp_are_sent_in_a_format_every_provider_takes() {
        let image = RgbaImage::from_fn(30, 20, |x, _| Rgba([x as u8, 0, 0, 128]));
        for format in [ImageFormat::Gif, ImageFormat::WebP] {
            let mut bytes = Vec::new();
            DynamicImage::ImageRgba8(image.clone())
                .write_to(Cursor::new(&mut bytes), format)
                .unwrap();
            let sniffed = if format == ImageFormat::Gif {
                Format::Gif
            } else {
                Format::Webp
            };
            let shown = inspect("i", sniffed, &bytes).unwrap();
            let (sent, mime) = shown.to_send.unwrap();
            assert_eq!(mime, "image/png", "transparency kept");
            assert_eq!(image::guess_format(&sent).unwrap(), ImageFormat::Png);
        }
    }

    /// The CRC a PNG chunk ends with (of its type and data).
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn a_bomb_is_refused_by_its_header_and_a_damaged_image_by_its_decoder() {
        // A valid PNG header declaring 100,000 × 100,000 pixels, and nothing after it.
        let mut bomb = png(1, 1);
        bomb[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        let crc = crc32(&bomb[12..29]);
        bomb[29..33].copy_from_slice(&crc.to_be_bytes());
        match inspect("bomb.png", Format::Png, &bomb) {
            Err(AttachmentProblem::ImageTooLarge { width, height, .. }) => {
                assert_eq!((width, height), (100_000, 100_000));
            }
            other => panic!("expected ImageTooLarge, got {other:?}"),
        }
        let mut cut = png(300, 300);
        cut.truncate(cut.len() / 2);
        assert!(matches!(
            inspect("cut.png", Format::Png, &cut),
            Err(AttachmentProblem::Malformed { .. })
        ));
    }
}
