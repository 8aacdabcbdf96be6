//! Opening an input: a file or `-` (stdin), plain or compressed with gzip, zstd or xz.
//!
//! The compression is taken from the file's extension (`.gz`, `.zst`, `.xz`) and, when the
//! extension says nothing, from the first bytes of the stream (its magic number), so a
//! compressed stream on stdin is read as well.
//!
//! A compressed stream that stops inside a frame (a truncated download or copy) yields every
//! byte that decompresses, then the error [`TRUNCATED`]; damaged compressed data yields the
//! error "the compressed data is damaged (...)".

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// The error message of a compressed input that ends inside a frame.
pub(crate) const TRUNCATED: &str = "input ends inside a compressed frame";

/// Buffer size for the raw and decompressed streams.
const BUF_BYTES: usize = 256 * 1024;

/// How an input stream is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    /// Not compressed.
    None,
    /// gzip (`.gz`), possibly several concatenated members.
    Gzip,
    /// Zstandard (`.zst`), possibly several concatenated frames.
    Zstd,
    /// xz (`.xz`), possibly several concatenated streams.
    Xz,
}

impl Compression {
    /// The compression a file name's extension announces, if any.
    pub(crate) fn from_extension(name: &str) -> Option<Compression> {
        let ext = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "gz" | "gzip" => Some(Compression::Gzip),
            "zst" | "zstd" => Some(Compression::Zstd),
            "xz" => Some(Compression::Xz),
            _ => None,
        }
    }

    /// The compression whose magic number starts `head`; [`Compression::None`] otherwise.
    pub(crate) fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else {
            Compression::None
        }
    }
}

/// The name of an input with its compression suffix removed, e.g. `a.csv` for `a.csv.gz`;
/// used to tell CSV from NDJSON by extension.
pub(crate) fn strip_compression_suffix(name: &str) -> &str {
    match Compression::from_extension(name) {
        Some(_) => name.rsplit_once('.').map_or(name, |(stem, _)| stem),
        None => name,
    }
}

/// An opened input: its display name (the path, or `<stdin>`) and a buffered reader of the
/// decompressed bytes.
pub(crate) struct Input {
    /// The name used in error messages (`FILE:LINE: reason`).
    pub(crate) name: String,
    /// The compression found.
    #[cfg_attr(not(test), expect(dead_code, reason = "checked by the tests"))]
    pub(crate) compression: Compression,
    /// The decompressed bytes.
    pub(crate) reader: Box<dyn BufRead + Send>,
    /// How far reading the file has come, when the input is a file.
    pub(crate) progress: Option<ReadProgress>,
}

/// Bytes of an input file read so far (as stored, before decompression) and its size in
/// bytes: what a progress bar shows as a percentage and an ETA.
#[derive(Clone, Debug)]
pub(crate) struct ReadProgress {
    /// Bytes read so far.
    pub(crate) read: Arc<AtomicU64>,
    /// The file's size (bytes).
    pub(crate) size: u64,
}

/// A file that counts the bytes read from it.
struct Counted {
    inner: File,
    read: Arc<AtomicU64>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens `path` (`-` = stdin) and decompresses it as its extension or magic bytes say.
///
/// # Errors
/// The file cannot be opened or read, or the decompressor cannot be set up; the message
/// names the file.
pub(crate) fn open_input(path: &str) -> io::Result<Input> {
    if path == "-" {
        return wrap("<stdin>".to_owned(), None, Box::new(io::stdin()));
    }
    let file = File::open(path).map_err(|e| open_error(path, &e))?;
    // A directory opens like a file on Unix; reading it would fail with a bare "Is a
    // directory (os error 21)".
    let metadata = file.metadata();
    if metadata.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
        return Err(open_error(path, &io::ErrorKind::IsADirectory.into()));
    }
    let read = Arc::new(AtomicU64::new(0));
    let counted = Counted {
        inner: file,
        read: Arc::clone(&read),
    };
    let mut input = wrap(
        path.to_owned(),
        Compression::from_extension(path),
        Box::new(counted),
    )?;
    input.progress = metadata.ok().map(|m| ReadProgress {
        read,
        size: m.len(),
    });
    Ok(input)
}

/// The error of opening input `path`: one sentence naming the file and what is wrong.
fn open_error(path: &str, e: &io::Error) -> io::Error {
    let message = match e.kind() {
        io::ErrorKind::NotFound => format!("{path}: no such file"),
        io::ErrorKind::IsADirectory => format!("{path}: is a directory, not an input file"),
        io::ErrorKind::PermissionDenied => {
            format!("{path}: permission denied: check the file's permissions")
        }
        _ => format!("{path}: cannot open: {e}"),
    };
    io::Error::new(e.kind(), message)
}

/// [`RawReader`] is still reading.
const RAW_READING: u8 = 0;
/// [`RawReader`] reached the end of its stream.
const RAW_ENDED: u8 = 1;
/// [`RawReader`] failed with an I/O error.
const RAW_FAILED: u8 = 2;

/// The compressed stream, recording whether it ended or failed, so that [`Decoded`] can tell a
/// truncated stream from damaged data.
struct RawReader {
    inner: Box<dyn Read + Send>,
    state: Arc<AtomicU8>,
}

impl Read for RawReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let result = self.inner.read(buf);
        match &result {
            Ok(0) if !buf.is_empty() => self.state.store(RAW_ENDED, Ordering::Relaxed),
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                self.state.store(RAW_FAILED, Ordering::Relaxed);
            }
            _ => {}
        }
        result
    }
}

/// A decompressor whose errors say what happened: [`TRUNCATED`] when the compressed stream
/// ended before the frame did, "the compressed data is damaged" when it did not end, and the
/// I/O error of the stream itself when reading it failed.
struct Decoded<D> {
    inner: D,
    raw: Arc<AtomicU8>,
}

impl<D: Read> Read for Decoded<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::Interrupted {
                return e;
            }
            match self.raw.load(Ordering::Relaxed) {
                RAW_ENDED => io::Error::new(io::ErrorKind::UnexpectedEof, TRUNCATED),
                RAW_FAILED => e,
                _ => io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the compressed data is damaged ({e})"),
                ),
            }
        })
    }
}

/// Wraps a raw stream: sniffs its compression when `declared` is `None`, then decompresses.
///
/// # Errors
/// Reading the first bytes fails, or the decompressor cannot be set up.
pub(crate) fn wrap(
    name: String,
    declared: Option<Compression>,
    mut raw: Box<dyn Read + Send>,
) -> io::Result<Input> {
    let compression = match declared {
        Some(c) => c,
        None => {
            // Read the magic number (a pipe may deliver it in pieces), then put it back in
            // front of the rest of the stream.
            let head = read_head(&mut raw, 6)?;
            let compression = Compression::sniff(&head);
            raw = Box::new(io::Cursor::new(head).chain(raw));
            compression
        }
    };
    let state = Arc::new(AtomicU8::new(RAW_READING));
    let tracked = |inner| {
        let state = Arc::clone(&state);
        BufReader::with_capacity(BUF_BYTES, RawReader { inner, state })
    };
    let reader: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(BufReader::with_capacity(BUF_BYTES, raw)),
        Compression::Gzip => decoded(flate2::bufread::MultiGzDecoder::new(tracked(raw)), &state),
        Compression::Zstd => decoded(
            zstd::stream::read::Decoder::with_buffer(tracked(raw))
                .map_err(|e| io::Error::new(e.kind(), format!("{name}: zstd: {e}")))?,
            &state,
        ),
        Compression::Xz => decoded(
            liblzma::bufread::XzDecoder::new_multi_decoder(tracked(raw)),
            &state,
        ),
    };
    Ok(Input {
        name,
        compression,
        reader,
        progress: None,
    })
}

/// A decompressor, buffered, whose errors say what happened ([`Decoded`]).
fn decoded<D: Read + Send + 'static>(inner: D, raw: &Arc<AtomicU8>) -> Box<dyn BufRead + Send> {
    Box::new(BufReader::with_capacity(
        BUF_BYTES,
        Decoded {
            inner,
            raw: Arc::clone(raw),
        },
    ))
}

/// Reads up to `n` bytes (fewer only at the end of the stream).
fn read_head(reader: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    reader.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const TEXT: &str = "{\"a\":1}\n{\"a\":2}\n";

    fn read_all(input: Input) -> String {
        let mut s = String::new();
        let mut r = input.reader;
        r.read_to_string(&mut s).expect("read");
        s
    }

    #[test]
    fn a_file_counts_the_bytes_read_from_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = TEXT.repeat(50_000);
        let packed = gzip(text.as_bytes());
        for (name, bytes) in [
            ("plain.ndjson", text.as_bytes()),
            ("packed.ndjson.gz", &packed),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).expect("write");
            let input = open_input(path.to_str().expect("utf-8")).expect("open");
            let progress = input.progress.clone().expect("a file has a size");
            assert_eq!(progress.size, bytes.len() as u64);
            assert_eq!(read_all(input), text);
            assert_eq!(progress.read.load(Ordering::Relaxed), bytes.len() as u64);
        }
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).expect("gzip");
        e.finish().expect("gzip")
    }

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
        e.write_all(data).expect("xz");
        e.finish().expect("xz")
    }

    fn zst(data: &[u8]) -> Vec<u8> {
        zstd::encode_all(data, 1).expect("zstd")
    }

    #[test]
    fn extension_and_suffix() {
        assert_eq!(
            Compression::from_extension("a.ndjson.xz"),
            Some(Compression::Xz)
        );
        assert_eq!(
            Compression::from_extension("a.csv.GZ"),
            Some(Compression::Gzip)
        );
        assert_eq!(
            Compression::from_extension("a.zst"),
            Some(Compression::Zstd)
        );
        assert_eq!(Compression::from_extension("a.ndjson"), None);
        assert_eq!(Compression::from_extension("-"), None);
        assert_eq!(strip_compression_suffix("dir/a.csv.zst"), "dir/a.csv");
        assert_eq!(strip_compression_suffix("a.csv"), "a.csv");
    }

    #[test]
    fn sniffs_every_format() {
        for (bytes, want) in [
            (gzip(TEXT.as_bytes()), Compression::Gzip),
            (zst(TEXT.as_bytes()), Compression::Zstd),
            (xz(TEXT.as_bytes()), Compression::Xz),
            (TEXT.as_bytes().to_vec(), Compression::None),
        ] {
            let input = wrap("t".into(), None, Box::new(io::Cursor::new(bytes))).expect("wrap");
            assert_eq!(input.compression, want);
            assert_eq!(read_all(input), TEXT);
        }
    }

    #[test]
    fn concatenated_members_are_all_read() {
        let mut gz = gzip(b"1\n");
        gz.extend(gzip(b"2\n"));
        let mut x = xz(b"1\n");
        x.extend(xz(b"2\n"));
        let mut z = zst(b"1\n");
        z.extend(zst(b"2\n"));
        for bytes in [gz, x, z] {
            let input = wrap("t".into(), None, Box::new(io::Cursor::new(bytes))).expect("wrap");
            assert_eq!(read_all(input), "1\n2\n");
        }
    }

    #[test]
    fn opens_files_by_extension_and_reports_missing_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.ndjson.gz");
        std::fs::write(&path, gzip(TEXT.as_bytes())).expect("write");
        let input = open_input(path.to_str().expect("utf-8")).expect("open");
        assert_eq!(input.compression, Compression::Gzip);
        assert_eq!(read_all(input), TEXT);

        let missing = dir.path().join("nope.ndjson");
        let err = open_input(missing.to_str().expect("utf-8"))
            .err()
            .expect("must fail");
        assert!(err.to_string().contains("nope.ndjson"), "{err}");
    }

    /// Reads to the first error; returns the bytes read and the error.
    fn read_to_error(input: Input) -> (Vec<u8>, io::Error) {
        let mut r = input.reader;
        let mut out = Vec::new();
        let mut buf = [0_u8; 4096];
        loop {
            match r.read(&mut buf) {
                Ok(0) => panic!("no error after {} bytes", out.len()),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, e),
            }
        }
    }

    #[test]
    fn truncated_streams_yield_what_decodes_then_say_so() {
        // Large enough for several zstd blocks (a zstd block decodes only when complete).
        let text: String = (0..200_000).map(|i| format!("{{\"a\":{i}}}\n")).collect();
        for bytes in [
            gzip(text.as_bytes()),
            xz(text.as_bytes()),
            zst(text.as_bytes()),
        ] {
            let cut = bytes[..bytes.len() / 2].to_vec();
            let input = wrap("t".into(), None, Box::new(io::Cursor::new(cut))).expect("wrap");
            let (got, e) = read_to_error(input);
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
            assert_eq!(e.to_string(), TRUNCATED);
            assert!(got.len() > text.len() / 4, "{}", got.len());
            assert!(text.as_bytes().starts_with(&got));
        }
    }

    #[test]
    fn damaged_streams_say_so() {
        let text: String = (0..20_000).map(|i| format!("{{\"a\":{i}}}\n")).collect();
        let mut bytes = gzip(text.as_bytes());
        let middle = bytes.len() / 2;
        for b in &mut bytes[middle..middle + 64] {
            *b = !*b;
        }
        let input = wrap("t".into(), None, Box::new(io::Cursor::new(bytes))).expect("wrap");
        let (_, e) = read_to_error(input);
        assert!(
            e.to_string().starts_with("the compressed data is damaged"),
            "{e}"
        );
    }

    #[test]
    fn directories_and_missing_files_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_str().expect("utf-8");
        let err = open_input(path).err().expect("a directory");
        assert_eq!(
            err.to_string(),
            format!("{path}: is a directory, not an input file")
        );
        let missing = format!("{path}/nope.ndjson");
        let err = open_input(&missing).err().expect("missing");
        assert_eq!(err.to_string(), format!("{missing}: no such file"));
    }

    #[test]
    fn empty_stream_is_plain_and_empty() {
        let input = wrap("t".into(), None, Box::new(io::empty())).expect("wrap");
        assert_eq!(input.compression, Compression::None);
        assert_eq!(read_all(input), "");
    }
}
