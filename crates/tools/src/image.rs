//! Images for the model: PNG, JPEG, GIF and WebP files read from the workspace (`@path`,
//! `read_file`), checked and made small enough for every provider before anything is
//! sent.
//!
//! - A file over [`MAX_FILE_BYTES`] is not read at all; one over [`MAX_PIXELS`] (its
//!   header says how large it is) is not decoded: a small file can claim huge dimensions
//!   (a decompression bomb), and decoding it would take gigabytes. The decoder's own
//!   limits ([`MAX_DECODE_ALLOC`]) stand behind that check.
//! - The format is read from the bytes, never from the name: a `.png` that is not an
//!   image is refused with a message saying so.
//! - An image whose longer edge is over [`MAX_EDGE`] pixels, or whose file is over
//!   [`MAX_SENT_BYTES`], is scaled down and encoded again (PNG when it has transparency,
//!   else JPEG). [`MAX_EDGE`] is Anthropic's recommended size, past which it scales down
//!   itself (OpenAI and Gemini tile larger images into more tokens for little gain on
//!   screenshots and diagrams); [`MAX_SENT_BYTES`] keeps the base64 under Anthropic's
//!   5 MB per image, the smallest provider limit. Smaller images are sent byte for byte.
//! - An image that comes as base64 text (an MCP tool's result, [`prepare_base64`]) is held
//!   to the same limits, [`MAX_FILE_BYTES`] checked before it is decoded.

use crate::common::sha256_hex;
use base64::Engine as _;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use saki_llm_client::Base64;
use saki_llm_worker::ImageRef;
use std::io::Cursor;
use std::path::Path;

/// Files larger than this are refused before reading.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;
/// Width × height above which an image is not decoded.
pub const MAX_PIXELS: u64 = 40_000_000;
/// What the decoder may allocate for one image.
pub const MAX_DECODE_ALLOC: u64 = 256 * 1024 * 1024;
/// The longer edge of an image as sent.
pub const MAX_EDGE: u32 = 1568;
/// The size of an image as sent.
pub const MAX_SENT_BYTES: usize = 3_750_000;
/// JPEG quality when an image is encoded again.
const JPEG_QUALITY: u8 = 85;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("{0} is not a PNG, JPEG, GIF or WebP image (its content is something else)")]
    NotAnImage(String),
    #[error("{path} is {bytes} bytes; images over {} MiB are not read", MAX_FILE_BYTES >> 20)]
    FileTooLarge { path: String, bytes: u64 },
    #[error(
        "{path} is {width}×{height} pixels; images over {} megapixels are not opened",
        MAX_PIXELS / 1_000_000
    )]
    TooManyPixels {
        path: String,
        width: u32,
        height: u32,
    },
    #[error("{path} cannot be read as {format}: {message}")]
    Corrupt {
        path: String,
        format: &'static str,
        message: String,
    },
    #[error("{path} stays over {} bytes even scaled down", MAX_SENT_BYTES)]
    StillTooLarge { path: String },
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
    #[error("{0} is not valid base64")]
    NotBase64(String),
}

/// Whether the name says image (`.png`, `.jpg`, `.jpeg`, `.gif`, `.webp`, any case):
/// such a file is read as an image or refused, never shown as text.
pub fn is_image_name(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["png", "jpg", "jpeg", "gif", "webp"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

/// The format the bytes are in, by their signature.
pub fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageFormat::Jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(ImageFormat::Gif)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(ImageFormat::WebP)
    } else {
        None
    }
}

fn name_of(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "PNG",
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::Gif => "GIF",
        _ => "WebP",
    }
}

/// An image as it will be sent.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub image: ImageRef,
    /// The file's own size in pixels, when it was scaled down.
    pub scaled_from: Option<(u32, u32)>,
}

impl Prepared {
    /// `PNG 800×600` or `JPEG 1568×1176, scaled down from 4032×3024`.
    pub fn describe(&self) -> String {
        match self.scaled_from {
            Some((w, h)) => format!("{}, scaled down from {w}×{h}", self.image.describe()),
            None => self.image.describe(),
        }
    }
}

/// Reads a workspace file (already resolved and in scope) as an image for the model,
/// through `fs` (a speculation's overlay, an editor's buffers). `shown` is the path as
/// the person or the model wrote it, for messages.
pub async fn load_from(
    fs: &dyn crate::fs::Fs,
    real: &Path,
    shown: &str,
) -> Result<Prepared, ImageError> {
    let bytes = match fs.read(real, MAX_FILE_BYTES).await {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            let bytes = fs.stat(real).await.ok().flatten().map_or(0, |s| s.len);
            return Err(ImageError::FileTooLarge {
                path: shown.to_owned(),
                bytes,
            });
        }
        Err(e) => {
            return Err(ImageError::Io {
                path: shown.to_owned(),
                message: e.to_string(),
            })
        }
    };
    prepare(&bytes, shown)
}

/// Checks an image's bytes and makes them fit ([`MAX_EDGE`], [`MAX_SENT_BYTES`]).
pub fn prepare(bytes: &[u8], shown: &str) -> Result<Prepared, ImageError> {
    let format = sniff(bytes).ok_or_else(|| ImageError::NotAnImage(shown.to_owned()))?;
    let corrupt = |e: image::ImageError| ImageError::Corrupt {
        path: shown.to_owned(),
        format: name_of(format),
        message: e.to_string(),
    };
    let (width, height) = reader(bytes, format).into_dimensions().map_err(corrupt)?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageError::TooManyPixels {
            path: shown.to_owned(),
            width,
            height,
        });
    }
    // Decoded also when it is sent as is: a file whose header is fine and whose body is
    // not would otherwise be refused by the provider, in every later request.
    let mut decoder = reader(bytes, format).into_decoder().map_err(corrupt)?;
    let orientation = decoder.orientation().map_err(corrupt)?;
    let mut decoded = DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    // GIF is re-encoded whatever its size: Gemini does not take GIF, and OpenAI takes
    // no animated one (the first frame is what is sent).
    let fits = width.max(height) <= MAX_EDGE && bytes.len() <= MAX_SENT_BYTES;
    if fits && format != ImageFormat::Gif {
        return Ok(Prepared {
            image: image_ref(bytes.to_vec(), format, width, height),
            scaled_from: None,
        });
    }
    decoded.apply_orientation(orientation);
    let (w, h) = (decoded.width(), decoded.height());
    if w.max(h) > MAX_EDGE {
        // Area averaging: fast, and sharp enough for text in screenshots.
        decoded = decoded.thumbnail(MAX_EDGE, MAX_EDGE);
    }
    let (bytes, format) = encode(&decoded, format == ImageFormat::Gif, shown)?;
    let scaled = (decoded.width(), decoded.height()) != (width, height);
    Ok(Prepared {
        image: image_ref(bytes, format, decoded.width(), decoded.height()),
        scaled_from: scaled.then_some((width, height)),
    })
}

/// An image given as base64 text (an MCP tool's result): decoded, then as [`prepare`].
/// Whitespace in the text and missing padding are forgiven.
pub fn prepare_base64(data: &str, shown: &str) -> Result<Prepared, ImageError> {
    // Checked before decoding: the text is in memory already, its bytes need not be.
    let decoded = data.len() as u64 / 4 * 3;
    if decoded > MAX_FILE_BYTES {
        return Err(ImageError::FileTooLarge {
            path: shown.to_owned(),
            bytes: decoded,
        });
    }
    let compact: std::borrow::Cow<'_, [u8]> = if data.bytes().any(|b| b.is_ascii_whitespace()) {
        data.bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .collect::<Vec<u8>>()
            .into()
    } else {
        data.as_bytes().into()
    };
    let bytes = LENIENT_BASE64
        .decode(compact.as_ref())
        .map_err(|_| ImageError::NotBase64(shown.to_owned()))?;
    prepare(&bytes, shown)
}

/// Standard base64, padded or not.
const LENIENT_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    reader
}

/// PNG keeps transparency, and a GIF's sharp edges (its palette fits PNG losslessly);
/// anything else is a photo or a screenshot, smaller as JPEG.
fn encode(
    image: &DynamicImage,
    keep_lossless: bool,
    shown: &str,
) -> Result<(Vec<u8>, ImageFormat), ImageError> {
    let failed = |e: image::ImageError| ImageError::Io {
        path: shown.to_owned(),
        message: format!("cannot encode the scaled image: {e}"),
    };
    if image.color().has_alpha() || keep_lossless {
        let mut png = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
            .map_err(failed)?;
        if png.len() <= MAX_SENT_BYTES {
            return Ok((png, ImageFormat::Png));
        }
    }
    let mut jpeg = Vec::new();
    let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, JPEG_QUALITY)
        .encode_image(&rgb)
        .map_err(failed)?;
    if jpeg.len() > MAX_SENT_BYTES {
        return Err(ImageError::StillTooLarge {
            path: shown.to_owned(),
        });
    }
    Ok((jpeg, ImageFormat::Jpeg))
}

fn image_ref(bytes: Vec<u8>, format: ImageFormat, width: u32, height: u32) -> ImageRef {
    ImageRef {
        media_type: format.to_mime_type().to_owned(),
        sha256: sha256_hex(&bytes),
        width,
        height,
        bytes: bytes.len() as u64,
        data: Some(encode_base64(&bytes)),
    }
}

pub fn encode_base64(bytes: &[u8]) -> Base64 {
    Base64::from_encoded(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The bytes of base64 text; `None` when it is not base64.
pub fn decode_base64(data: &Base64) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(data.as_str())
        .ok()
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
