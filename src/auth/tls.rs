//! TLS client configuration shared by the identity provider clients (LDAP, OpenID Connect):
//! rustls with the `ring` provider, trusting the certificate authorities of a PEM file the
//! operator names (without one, each client trusts the system's).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// A rustls client configuration trusting only the authorities in `ca_file` (PEM). `var`
/// names the setting in error messages.
///
/// # Errors
/// An unreadable or empty file, or a certificate rustls refuses.
pub fn client_config(ca_file: &Path, var: &str) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let path = ca_file;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path)
        .map_err(|e| anyhow::anyhow!("cannot read {var} {}: {e}", path.display()))?
    {
        let cert = cert.map_err(|e| anyhow::anyhow!("{var} {}: {e}", path.display()))?;
        roots
            .add(cert)
            .map_err(|e| anyhow::anyhow!("{var} {}: {e}", path.display()))?;
    }
    if roots.is_empty() {
        anyhow::bail!("{var} {} holds no certificate", path.display());
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}
