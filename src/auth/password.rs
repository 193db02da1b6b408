//! Password hashing with argon2id (the `argon2` crate's defaults: 19 MiB, 2 passes), verified
//! off the async runtime. Unknown users are checked against a dummy hash so timing does not
//! reveal which names exist.

use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};

/// Hashes a password into a PHC string (`$argon2id$...`).
///
/// # Errors
/// Only on an internal failure of the hasher.
pub fn hash(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("password hashing failed: {e}"))
}

/// A fixed hash verified when the user is unknown, so both paths cost the same.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$HbPP8SOGHvKNaG7kxazIrK8aMO1JLsoeFRB+pT9FxTs";

/// Verifies `password` against `stored` (or the dummy hash when `None`) on a blocking thread.
/// Returns false for unknown users, wrong passwords and malformed hashes alike.
pub async fn verify(password: String, stored: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || {
        let known = stored.is_some();
        let hash_text = stored.unwrap_or_else(|| DUMMY_HASH.to_string());
        let Ok(parsed) = PasswordHash::new(&hash_text) else {
            return false;
        };
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        known && ok
    })
    .await
    .unwrap_or(false)
}

/// A random password of 20 characters from an unambiguous alphabet (for first-run and demo
/// accounts).
pub fn generate() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::thread_rng();
    (0..20)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Fewest different characters a new password has: NIST SP 800-63B (5.1.1.2) asks verifiers
/// to refuse repetitive passwords (`aaaaaaaaaa`, ten spaces, `ababababab`).
pub const MIN_DISTINCT: usize = 4;

/// Checks a new password's strength: 10 to 200 characters, at least [`MIN_DISTINCT`] of them
/// different.
///
/// # Errors
/// The message to show next to the field.
pub fn check_new(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < 10 {
        return Err(crate::i18n::t1("account-err-password-short", "count", n));
    }
    if n > 200 {
        return Err(crate::i18n::t("account-err-password-long"));
    }
    let distinct: std::collections::HashSet<char> = password.chars().collect();
    if distinct.len() < MIN_DISTINCT {
        return Err(crate::i18n::t1(
            "account-err-password-repetitive",
            "count",
            MIN_DISTINCT,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_passwords_need_length_and_several_different_characters() {
        assert!(check_new("short").is_err());
        for weak in ["          ", "aaaaaaaaaa", "ababababab", "abcabcabca"] {
            let e = check_new(weak).unwrap_err();
            assert!(e.contains("different characters"), "{weak:?}: {e}");
        }
        assert!(check_new("abcdabcdab").is_ok());
        assert!(check_new(&generate()).is_ok());
        assert!(check_new(&"ab".repeat(101)).is_err());
    }
}
