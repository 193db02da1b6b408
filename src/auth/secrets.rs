//! The server's secret key and sealed values: run environment values marked secret are
//! stored encrypted with ChaCha20-Poly1305 (RFC 8439, from `ring`), so a database reader
//! (a dump, a backup, a replica, `psql`) cannot read them in clear.
//!
//! The 32-byte key comes from `TRANCHE_SECRET_KEY` (64 hex digits) when set, else from the
//! file `DATA_DIR/secret.key`, created with mode 0600 on first start (docs/design.md section
//! 7). Losing the key loses the sealed values; changing it makes them unreadable.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

/// The name of the key file inside the data directory.
pub const KEY_FILE: &str = "secret.key";

/// First byte of every sealed value: the format (1 = ChaCha20-Poly1305, 96-bit random nonce).
const FORMAT: u8 = 1;

/// Additional data bound to every sealed value, so it cannot pass for another kind of value.
const AAD: &[u8] = b"tranche sealed value v1";

/// The server's 32-byte secret key. `Debug` never shows it.
pub struct SecretKey {
    /// Seals and opens values.
    aead: LessSafeKey,
    /// HMAC-SHA256 key for fingerprints, derived from the secret key (so the key itself is
    /// used by one algorithm only).
    mac: ring::hmac::Key,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey([redacted])")
    }
}

/// A sealed value that does not open: another key sealed it, or it was altered.
#[derive(Debug, thiserror::Error)]
#[error(
    "a sealed value does not open with this server's secret key (another key sealed it, or it was altered)"
)]
pub struct Unsealable;

impl SecretKey {
    fn from_bytes(bytes: &[u8; 32]) -> Self {
        // 32 bytes is the key length of ChaCha20-Poly1305, so this cannot fail.
        let key = UnboundKey::new(&CHACHA20_POLY1305, bytes).unwrap_or_else(|_| unreachable!());
        let derive = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, bytes);
        let mac_bytes = ring::hmac::sign(&derive, b"tranche fingerprint key v1");
        Self {
            aead: LessSafeKey::new(key),
            mac: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, mac_bytes.as_ref()),
        }
    }

    /// A fresh random key, kept only in memory (tests, benchmarks).
    #[must_use]
    pub fn random() -> Self {
        use rand::RngCore;
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self::from_bytes(&bytes)
    }

    /// Parses 64 hex digits (surrounding white space ignored).
    ///
    /// # Errors
    /// Anything but 64 hex digits.
    pub fn from_hex(text: &str) -> anyhow::Result<Self> {
        let bytes: [u8; 32] = hex::decode(text.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .context(
                "a secret key is 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`",
            )?;
        Ok(Self::from_bytes(&bytes))
    }

    /// The server's key: `TRANCHE_SECRET_KEY` when set and not empty, else the key file in
    /// `data_dir`, created (mode 0600, with the directory) on first start.
    ///
    /// # Errors
    /// A malformed `TRANCHE_SECRET_KEY` or key file; a key file that cannot be read or made.
    pub fn load(data_dir: &Path) -> anyhow::Result<Self> {
        if let Ok(text) = std::env::var("TRANCHE_SECRET_KEY")
            && !text.trim().is_empty()
        {
            return Self::from_hex(&text).context("TRANCHE_SECRET_KEY");
        }
        let path = data_dir.join(KEY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                use std::os::unix::fs::PermissionsExt;
                if let Ok(meta) = std::fs::metadata(&path)
                    && meta.permissions().mode() & 0o077 != 0
                {
                    tracing::warn!(path = %path.display(), "the secret key file is readable by other users; make it mode 0600");
                }
                Self::from_hex(&text).with_context(|| format!("the key file {}", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::create_dir_all(data_dir).with_context(|| {
                    format!("cannot create data directory {}", data_dir.display())
                })?;
                let mut bytes = [0u8; 32];
                rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
                // Written whole under a name of its own, then linked into place: a server
                // starting at the same moment either reads the complete file or, when its own
                // link finds one there, reads the one that won (never an empty or second key).
                let mut nonce = [0u8; 8];
                rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut nonce);
                let draft = data_dir.join(format!(".{KEY_FILE}.{}", hex::encode(nonce)));
                let written = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&draft)
                    .and_then(|mut file| {
                        file.write_all(format!("{}\n", hex::encode(bytes)).as_bytes())?;
                        file.sync_all()
                    })
                    .and_then(|()| std::fs::hard_link(&draft, &path));
                let _ = std::fs::remove_file(&draft);
                match written {
                    Ok(()) => {
                        tracing::info!(path = %path.display(), "created the secret key file (back it up with the database)");
                        Ok(Self::from_bytes(&bytes))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::load(data_dir),
                    Err(e) => Err(e)
                        .with_context(|| format!("cannot create the key file {}", path.display())),
                }
            }
            Err(e) => {
                Err(e).with_context(|| format!("cannot read the key file {}", path.display()))
            }
        }
    }

    /// Seals `plain`: the format byte, a random 96-bit nonce, the ciphertext and its 16-byte tag.
    #[must_use]
    pub fn seal(&self, plain: &[u8]) -> Vec<u8> {
        use rand::RngCore;
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut body = plain.to_vec();
        // Sealing fails only for inputs of about 256 GiB.
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(AAD),
                &mut body,
            )
            .unwrap_or_else(|_| unreachable!("sealed value too long"));
        let mut out = Vec::with_capacity(1 + NONCE_LEN + body.len());
        out.push(FORMAT);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        out
    }

    /// HMAC-SHA256 of `data` under a key derived from this one: a fingerprint of data that
    /// may hold secrets, which nobody without the key can compute to confirm a guess.
    #[must_use]
    pub fn fingerprint(&self, data: &[u8]) -> [u8; 32] {
        let tag = ring::hmac::sign(&self.mac, data);
        let mut out = [0u8; 32];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// Opens a value [`SecretKey::seal`] made with this key.
    ///
    /// # Errors
    /// [`Unsealable`] for another key's value, an altered or truncated one.
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, Unsealable> {
        let (&format, rest) = sealed.split_first().ok_or(Unsealable)?;
        if format != FORMAT || rest.len() < NONCE_LEN {
            return Err(Unsealable);
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Unsealable)?;
        let mut body = body.to_vec();
        let plain = self
            .aead
            .open_in_place(nonce, Aad::from(AAD), &mut body)
            .map_err(|_| Unsealable)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_unaltered() {
        let key = SecretKey::random();
        let sealed = key.seal(b"hf_secret");
        assert!(!sealed.windows(9).any(|w| w == b"hf_secret"));
        assert_eq!(key.open(&sealed).unwrap(), b"hf_secret");
        // Two seals of one value differ (random nonces).
        assert_ne!(key.seal(b"hf_secret"), sealed);
        assert!(SecretKey::random().open(&sealed).is_err());
        let mut altered = sealed.clone();
        *altered.last_mut().unwrap() ^= 1;
        assert!(key.open(&altered).is_err());
        assert!(key.open(&sealed[..10]).is_err());
        assert!(key.open(&[]).is_err());
    }

    #[test]
    fn keys_parse_from_64_hex_digits_only() {
        let hex = "00".repeat(32);
        let a = SecretKey::from_hex(&format!(" {hex}\n")).unwrap();
        let b = SecretKey::from_hex(&hex).unwrap();
        assert_eq!(b.open(&a.seal(b"x")).unwrap(), b"x");
        assert!(SecretKey::from_hex("abc").is_err());
        assert!(SecretKey::from_hex(&"zz".repeat(32)).is_err());
        assert!(format!("{a:?}").contains("redacted"));
        // Fingerprints depend on the key and the data.
        assert_eq!(a.fingerprint(b"run"), b.fingerprint(b"run"));
        assert_ne!(a.fingerprint(b"run"), a.fingerprint(b"run2"));
        assert_ne!(
            a.fingerprint(b"run"),
            SecretKey::random().fingerprint(b"run")
        );
    }

    #[test]
    fn the_key_file_is_made_once_with_mode_0600_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tranche-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = SecretKey::load(&dir).unwrap();
        let mode = std::fs::metadata(dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = SecretKey::load(&dir).unwrap();
        assert_eq!(again.open(&first.seal(b"v")).unwrap(), b"v");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn servers_starting_together_make_one_key() {
        let dir = std::env::temp_dir().join(format!("tranche-key-race-{}", std::process::id()));
        for _ in 0..20 {
            let _ = std::fs::remove_dir_all(&dir);
            let barrier = std::sync::Barrier::new(4);
            let keys: Vec<SecretKey> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            SecretKey::load(&dir).unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let sealed = keys[0].seal(b"v");
            for k in &keys {
                assert_eq!(k.open(&sealed).unwrap(), b"v", "one key for all");
            }
            let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
            assert_eq!(names.len(), 1, "no draft left behind: {names:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
