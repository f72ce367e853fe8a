//! The faces drawn on the image: each box as a two-pixel outline and each landmark as a
//! filled dot, in the reference's colour.

use super::Face;
use image::{Rgb, RgbImage};

const COLOUR: Rgb<u8> = Rgb([0, 155, 255]);

pub fn faces(img: &mut RgbImage, faces: &[Face]) {
    for f in faces {
        let [x1, y1, x2, y2] = f.bbox.map(|v| v.round() as i64);
        for t in 0..2 {
            for x in x1..=x2 {
                put(img, x, y1 + t);
                put(img, x, y2 - t);
            }
            for y in y1..=y2 {
                put(img, x1 + t, y);
                put(img, x2 - t, y);
            }
        }
        for &(lx, ly) in &f.landmarks {
            let (cx, cy) = (lx.round() as i64, ly.round() as i64);
            for dy in -2..=2i64 {
                for dx in -2..=2i64 {
                    if dx * dx + dy * dy <= 5 {
                        put(img, cx + dx, cy + dy);
                    }
                }
            }
        }
    }
}

fn put(img: &mut RgbImage, x: i64, y: i64) {
    if x >= 0 && y >= 0 && (x as u64) < img.width() as u64 && (y as u64) < img.height() as u64 {
        img.put_pixel(x as u32, y as u32, COLOUR);
    }
}
