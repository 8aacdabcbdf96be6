//! The optional zstd pass over a column body, with one compression and one decompression
//! context per thread (creating a context costs more than compressing a 1000-row column).

use std::cell::RefCell;
use std::io::Read;

use zstd::zstd_safe::{DCtx, DParameter};

use crate::{Error, Result};

/// zstd level of the column pass.
const LEVEL: i32 = 3;
/// Largest zstd window (log2 bytes) a decoder accepts; level 3 never writes more than 2^21.
const WINDOW_LOG_MAX: u32 = 24;

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

/// One zstd frame of `raw`, or `None` if zstd fails (then the body is stored raw).
pub(crate) fn compress(raw: &[u8]) -> Option<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = zstd::bulk::Compressor::new(LEVEL).ok();
        }
        slot.as_mut()?.compress(raw).ok()
    })
}

fn new_dctx() -> Result<DCtx<'static>> {
    let mut d = DCtx::try_create().ok_or_else(|| Error::Corruption("zstd: no context".into()))?;
    d.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))
        .map_err(|code| Error::Corruption(format!("zstd: parameter error {code}")))?;
    Ok(d)
}

/// Decompresses one zstd frame that must yield exactly `raw_len` bytes. Memory grows with the
/// output actually produced, never with a declared size.
pub(crate) fn decompress(frame: &[u8], raw_len: usize) -> Result<Vec<u8>> {
    DECOMPRESSOR.with(|cell| {
        // A re-entrant call (not possible today) would get a fresh context.
        let mut own;
        let mut borrowed = cell.try_borrow_mut().ok();
        let dctx = match borrowed.as_deref_mut() {
            Some(slot) => {
                if slot.is_none() {
                    *slot = Some(new_dctx()?);
                }
                match slot.as_mut() {
                    Some(d) => d,
                    None => return Err(Error::Corruption("zstd: no context".into())),
                }
            }
            None => {
                own = new_dctx()?;
                &mut own
            }
        };
        read_frame(frame, raw_len, dctx)
    })
}

fn read_frame(frame: &[u8], raw_len: usize, dctx: &mut DCtx<'static>) -> Result<Vec<u8>> {
    let bad = |e: std::io::Error| Error::Corruption(format!("zstd: {e}"));
    let mut dec = zstd::stream::read::Decoder::with_context(frame, dctx).single_frame();
    let mut raw = Vec::with_capacity(raw_len.min(frame.len().saturating_mul(16)));
    (&mut dec)
        .take(raw_len as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(bad)?;
    if raw.len() != raw_len {
        return Err(Error::Corruption(format!(
            "zstd frame yields {} bytes, expected {raw_len}",
            raw.len()
        )));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_wrong_length() {
        let raw: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        let z = compress(&raw).unwrap();
        assert!(z.len() < raw.len() / 10);
        assert_eq!(decompress(&z, raw.len()).unwrap(), raw);
        // The context is reused: a second frame decodes the same.
        assert_eq!(decompress(&z, raw.len()).unwrap(), raw);
        assert!(decompress(&z, raw.len() - 1).is_err());
        assert!(decompress(&z, raw.len() + 1).is_err());
        assert!(decompress(&z[..z.len() / 2], raw.len()).is_err());
        // After an error the context still works.
        assert_eq!(decompress(&z, raw.len()).unwrap(), raw);
    }
}
