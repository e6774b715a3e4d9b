use super::*;
use image::{Rgb, RgbImage, Rgba, RgbaImage};

fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Vec::new();
    image.write_to(&mut Cursor::new(&mut out), format).unwrap();
    out
}

fn gradient(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        Rgb([(x % 256) as u8, (y % 256) as u8, 128])
    }))
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
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

/// A PNG whose header claims `width`×`height` and whose data is a few bytes: what a
/// decompression bomb looks like to the header reader.
fn claimed_png(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        let mut body = kind.to_vec();
        body.extend(data);
        png.extend((data.len() as u32).to_be_bytes());
        png.extend(&body);
        png.extend(crc32(&body).to_be_bytes());
    };
    let mut header = width.to_be_bytes().to_vec();
    header.extend(height.to_be_bytes());
    header.extend([8, 6, 0, 0, 0]);
    chunk(b"IHDR", &header);
    // An empty zlib stream: nowhere near the rows the header promises.
    chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
    chunk(b"IEND", &[]);
    png
}

#[test]
fn formats_are_known_by_their_bytes_not_their_names() {
    assert_eq!(
        sniff(&encoded(gradient(2, 2), ImageFormat::Png)),
        Some(ImageFormat::Png)
    );
    assert_eq!(
        sniff(&encoded(gradient(2, 2), ImageFormat::Jpeg)),
        Some(ImageFormat::Jpeg)
    );
    assert_eq!(
        sniff(&encoded(gradient(2, 2), ImageFormat::Gif)),
        Some(ImageFormat::Gif)
    );
    assert_eq!(
        sniff(&encoded(gradient(2, 2), ImageFormat::WebP)),
        Some(ImageFormat::WebP)
    );
    assert_eq!(sniff(b"hello, I am text"), None);
    assert!(is_image_name(Path::new("a/B.PNG")));
    assert!(is_image_name(Path::new("x.jpeg")));
    assert!(!is_image_name(Path::new("x.svg")));
    assert!(!is_image_name(Path::new("png")));
}

#[test]
fn a_small_image_is_sent_byte_for_byte() {
    let bytes = encoded(gradient(40, 30), ImageFormat::Png);
    let prepared = prepare(&bytes, "a.png").unwrap();
    assert_eq!(prepared.scaled_from, None);
    let image = &prepared.image;
    assert_eq!(
        (image.media_type.as_str(), image.width, image.height),
        ("image/png", 40, 30)
    );
    assert_eq!(image.bytes, bytes.len() as u64);
    assert_eq!(image.sha256, sha256_hex(&bytes));
    assert_eq!(image.data, Some(encode_base64(&bytes)));
    assert_eq!(prepared.describe(), "PNG 40×30");
}

#[test]
fn a_large_image_is_scaled_to_the_max_edge_keeping_its_shape() {
    let photo = prepare(&encoded(gradient(3000, 1500), ImageFormat::Png), "p.png").unwrap();
    assert_eq!(
        (photo.image.width, photo.image.height),
        (MAX_EDGE, MAX_EDGE / 2)
    );
    assert_eq!(photo.scaled_from, Some((3000, 1500)));
    // No transparency: sent as JPEG, and it decodes.
    assert_eq!(photo.image.media_type, "image/jpeg");
    assert!(photo.describe().ends_with("scaled down from 3000×1500"));

    let clear = DynamicImage::ImageRgba8(RgbaImage::from_pixel(2000, 100, Rgba([1, 2, 3, 0])));
    let clear = prepare(&encoded(clear, ImageFormat::Png), "c.png").unwrap();
    assert_eq!(clear.image.media_type, "image/png");
    assert_eq!(clear.image.width, MAX_EDGE);
}

#[test]
fn a_gif_is_sent_as_png() {
    let gif = prepare(&encoded(gradient(20, 10), ImageFormat::Gif), "g.gif").unwrap();
    assert_eq!(gif.image.media_type, "image/png");
    assert_eq!((gif.image.width, gif.image.height), (20, 10));
    assert_eq!(gif.scaled_from, None);
}

#[test]
fn a_webp_and_a_jpeg_are_kept_as_they_are() {
    for format in [ImageFormat::WebP, ImageFormat::Jpeg] {
        let bytes = encoded(gradient(16, 16), format);
        let prepared = prepare(&bytes, "x").unwrap();
        assert_eq!(prepared.image.media_type, format.to_mime_type());
        assert_eq!(prepared.image.bytes, bytes.len() as u64);
    }
}

#[test]
fn a_text_file_named_png_is_refused_by_name() {
    let e = prepare(b"just some text\n", "fake.png").unwrap_err();
    assert_eq!(e, ImageError::NotAnImage("fake.png".into()));
    assert!(e.to_string().contains("not a PNG, JPEG, GIF or WebP image"));
}

#[test]
fn a_decompression_bomb_is_refused_from_its_header() {
    let e = prepare(&claimed_png(100_000, 100_000), "bomb.png").unwrap_err();
    assert!(
        matches!(
            e,
            ImageError::TooManyPixels {
                width: 100_000,
                height: 100_000,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("100000×100000"), "{e}");
}

#[test]
fn a_broken_body_is_refused_with_the_format_named() {
    let e = prepare(&claimed_png(64, 64), "broken.png").unwrap_err();
    assert!(
        matches!(e, ImageError::Corrupt { format: "PNG", .. }),
        "{e:?}"
    );
    let mut truncated = encoded(gradient(64, 64), ImageFormat::Jpeg);
    truncated.truncate(40);
    assert!(prepare(&truncated, "t.jpg").is_err());
}

#[tokio::test]
async fn a_huge_file_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.png");
    // Sparse: 200 MB on paper, nothing on disk.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(200 * 1024 * 1024)
        .unwrap();
    let e = load_from(&crate::fs::DiskFs, &path, "huge.png")
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ImageError::FileTooLarge {
            path: "huge.png".into(),
            bytes: 200 * 1024 * 1024
        }
    );
    assert!(e.to_string().contains("over 20 MiB"), "{e}");
}

#[test]
fn base64_text_is_decoded_and_checked_like_a_file() {
    let png = encoded(gradient(4, 3), ImageFormat::Png);
    let text = base64::engine::general_purpose::STANDARD.encode(&png);
    let prepared = prepare_base64(&text, "x").unwrap();
    assert_eq!(prepared.image.media_type, "image/png");
    assert_eq!((prepared.image.width, prepared.image.height), (4, 3));
    assert_eq!(prepared.image.sha256, sha256_hex(&png));
    // Wrapped lines and missing padding are forgiven.
    let wrapped = format!("{}\n{}", &text[..10], text[10..].trim_end_matches('='));
    assert_eq!(prepare_base64(&wrapped, "x").unwrap().image, prepared.image);
    assert_eq!(
        prepare_base64("not base64!", "shot").unwrap_err(),
        ImageError::NotBase64("shot".into())
    );
    assert_eq!(
        prepare_base64("aGVsbG8h", "shot").unwrap_err(),
        ImageError::NotAnImage("shot".into())
    );
    let huge = "A".repeat(28 * 1024 * 1024);
    assert!(matches!(
        prepare_base64(&huge, "shot").unwrap_err(),
        ImageError::FileTooLarge { .. }
    ));
}
