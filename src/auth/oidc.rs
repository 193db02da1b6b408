//! Signing in with OpenID Connect (docs/sso.md section 5): Tranche is a relying party using
//! the authorization code flow with PKCE (RFC 7636), through the `openidconnect` crate.
//!
//! The provider's discovery document and key set (JWKS) are fetched at the first sign-in and
//! kept; an ID token signed with a key the kept set does not have makes Tranche fetch the set
//! again once (key rotation). The `state`, `nonce` and PKCE verifier of a sign-in in progress
//! stay on the server, in the visitor's session, and are taken out at the callback, so each
//! works once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use openidconnect::core::{CoreClient, CoreIdToken, CoreResponseType};
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret,
    CsrfToken, IssuerUrl, JsonWebKeySet, LogoutRequest, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    PostLogoutRedirectUrl, ProviderMetadataWithLogout, RedirectUrl, RequestTokenError, Scope,
    SignatureVerificationError, TokenResponse,
};
use tokio::sync::RwLock;

use crate::auth::sso::ExternalIdentity;
use crate::config::Secret;

/// How to reach the provider and read its tokens (the `TRANCHE_OIDC_*` variables).
#[derive(Clone, Debug)]
pub struct OidcSettings {
    /// The issuer URL, exactly as the provider names itself in its discovery document
    /// (`TRANCHE_OIDC_ISSUER`), e.g. `https://login.example.org/realms/research`.
    pub issuer: String,
    /// The client id registered at the provider (`TRANCHE_OIDC_CLIENT_ID`).
    pub client_id: String,
    /// The client secret (`TRANCHE_OIDC_CLIENT_SECRET` or the file named by
    /// `TRANCHE_OIDC_CLIENT_SECRET_FILE`); `None` for a public client (PKCE only).
    pub client_secret: Option<Secret>,
    /// Tranche's callback as registered at the provider (`TRANCHE_OIDC_REDIRECT_URL`),
    /// `https://tranche.example.org/login/oidc/callback`.
    pub redirect_url: String,
    /// Where the provider sends the browser after signing out (`TRANCHE_OIDC_POST_LOGOUT_URL`,
    /// default the redirect URL's origin with `/login`).
    pub post_logout_url: String,
    /// Scopes asked for besides `openid` (`TRANCHE_OIDC_SCOPES`, space-separated, default
    /// `profile email`).
    pub scopes: Vec<String>,
    /// The ID token claim whose value becomes the Tranche user name of a new account
    /// (`TRANCHE_OIDC_NAME_CLAIM`, default `preferred_username`).
    pub name_claim: String,
    /// The ID token claim listing the person's groups, an array of strings or one string
    /// (`TRANCHE_OIDC_GROUPS_CLAIM`, default `groups`).
    pub groups_claim: String,
    /// The provider's name on the login page's "Sign in with NAME" (`TRANCHE_OIDC_NAME`,
    /// default `your organisation`).
    pub display_name: String,
    /// Longest wait for each call to the provider (`TRANCHE_OIDC_TIMEOUT_S`, default 10 s).
    pub timeout: Duration,
    /// PEM file of the certificate authorities to trust instead of the system's
    /// (`TRANCHE_OIDC_CA_FILE`).
    pub ca_file: Option<PathBuf>,
}

fn env_text(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl OidcSettings {
    /// Reads the settings; `None` when `TRANCHE_OIDC_ISSUER` is unset.
    ///
    /// # Errors
    /// A missing client id or redirect URL, a URL that does not parse, both or an unreadable
    /// secret source, a timeout outside 1 to 60 s, an unreadable CA file.
    pub fn from_env() -> anyhow::Result<Option<Self>> {
        let Some(issuer) = env_text("TRANCHE_OIDC_ISSUER") else {
            return Ok(None);
        };
        let client_id = env_text("TRANCHE_OIDC_CLIENT_ID").ok_or_else(|| {
            anyhow::anyhow!("TRANCHE_OIDC_CLIENT_ID is needed with TRANCHE_OIDC_ISSUER")
        })?;
        let redirect_url = env_text("TRANCHE_OIDC_REDIRECT_URL").ok_or_else(|| {
            anyhow::anyhow!(
                "TRANCHE_OIDC_REDIRECT_URL is needed with TRANCHE_OIDC_ISSUER (Tranche's address followed by /login/oidc/callback)"
            )
        })?;
        let client_secret = match (
            env_text("TRANCHE_OIDC_CLIENT_SECRET"),
            env_text("TRANCHE_OIDC_CLIENT_SECRET_FILE"),
        ) {
            (Some(s), None) => Some(Secret::new(s)),
            (None, Some(f)) => Some(Secret::new(
                std::fs::read_to_string(&f)
                    .map_err(|e| {
                        anyhow::anyhow!("cannot read TRANCHE_OIDC_CLIENT_SECRET_FILE {f:?}: {e}")
                    })?
                    .trim_end_matches(['\r', '\n'])
                    .to_string(),
            )),
            (None, None) => None,
            (Some(_), Some(_)) => anyhow::bail!(
                "set TRANCHE_OIDC_CLIENT_SECRET or TRANCHE_OIDC_CLIENT_SECRET_FILE, not both"
            ),
        };
        let timeout_s = match env_text("TRANCHE_OIDC_TIMEOUT_S") {
            None => 10,
            Some(v) => match v.parse::<u64>() {
                Ok(s) if (1..=60).contains(&s) => s,
                _ => anyhow::bail!(
                    "TRANCHE_OIDC_TIMEOUT_S must be a number of seconds from 1 to 60, got {v:?}"
                ),
            },
        };
        let post_logout_url = match env_text("TRANCHE_OIDC_POST_LOGOUT_URL") {
            Some(u) => u,
            None => default_post_logout(&redirect_url)?,
        };
        let settings = Self {
            issuer,
            client_id,
            client_secret,
            redirect_url,
            post_logout_url,
            scopes: env_text("TRANCHE_OIDC_SCOPES")
                .unwrap_or_else(|| "profile email".into())
                .split_whitespace()
                .filter(|s| *s != "openid")
                .map(str::to_string)
                .collect(),
            name_claim: env_text("TRANCHE_OIDC_NAME_CLAIM")
                .unwrap_or_else(|| "preferred_username".into()),
            groups_claim: env_text("TRANCHE_OIDC_GROUPS_CLAIM").unwrap_or_else(|| "groups".into()),
            display_name: env_text("TRANCHE_OIDC_NAME")
                .unwrap_or_else(|| "your organisation".into()),
            timeout: Duration::from_secs(timeout_s),
            ca_file: env_text("TRANCHE_OIDC_CA_FILE").map(Into::into),
        };
        settings.check()?;
        Ok(Some(settings))
    }

    /// Checks the URLs and the CA file, so a mistake stops the server at start-up.
    ///
    /// # Errors
    /// The first URL that does not parse, or the CA file's problem.
    pub fn check(&self) -> anyhow::Result<()> {
        IssuerUrl::new(self.issuer.clone())
            .map_err(|e| anyhow::anyhow!("TRANCHE_OIDC_ISSUER {:?}: {e}", self.issuer))?;
        RedirectUrl::new(self.redirect_url.clone()).map_err(|e| {
            anyhow::anyhow!("TRANCHE_OIDC_REDIRECT_URL {:?}: {e}", self.redirect_url)
        })?;
        PostLogoutRedirectUrl::new(self.post_logout_url.clone()).map_err(|e| {
            anyhow::anyhow!(
                "TRANCHE_OIDC_POST_LOGOUT_URL {:?}: {e}",
                self.post_logout_url
            )
        })?;
        if let Some(path) = &self.ca_file {
            crate::auth::tls::client_config(path, "TRANCHE_OIDC_CA_FILE")?;
        }
        Ok(())
    }
}

/// `https://host/login/oidc/callback` gives `https://host/login`.
fn default_post_logout(redirect_url: &str) -> anyhow::Result<String> {
    let url = reqwest::Url::parse(redirect_url)
        .map_err(|e| anyhow::anyhow!("TRANCHE_OIDC_REDIRECT_URL {redirect_url:?}: {e}"))?;
    Ok(format!("{}/login", url.origin().ascii_serialization()))
}

/// Why the provider did not sign someone in. The messages are for the person signing in;
/// none carries a token or secret.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The callback's `state` is missing or is not the one this session's sign-in sent, or no
    /// sign-in is in progress in this session (it already finished, or it expired).
    #[error(
        "this sign-in does not belong to this browser session or was already used; start again with the sign-in button"
    )]
    State,
    /// The provider answered the sign-in with an error (the person declined, or the provider
    /// refused the request or the code, e.g. one already used).
    #[error("the identity provider refused the sign-in: {0}")]
    Refused(String),
    /// The ID token is missing or fails a check: signature, issuer, audience, expiry, nonce.
    #[error("the identity provider's answer failed a check ({0}); nobody was signed in")]
    InvalidToken(String),
    /// The provider cannot be reached, timed out, or sent something unreadable.
    #[error("the identity provider cannot be reached: {0}")]
    Unavailable(String),
}

/// A sign-in in progress, kept in the visitor's session until the callback.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Pending {
    /// The `state` sent to the provider.
    pub state: String,
    /// The `nonce` the ID token must carry.
    pub nonce: String,
    /// The PKCE code verifier.
    pub verifier: String,
    /// Where to go after signing in (a same-site path).
    pub next: String,
    /// When the sign-in began, Unix seconds.
    pub started: i64,
}

/// How long a sign-in may stay at the provider before its callback is refused, seconds.
pub const PENDING_MAX_S: i64 = 15 * 60;

/// The session key of the sign-in in progress.
pub const SESSION_PENDING: &str = "oidc_pending";

/// The session key of the ID token of an OIDC session, for the sign-out's `id_token_hint`.
pub const SESSION_ID_TOKEN: &str = "oidc_id_token";

/// The provider as discovered: metadata with its key set.
type Metadata = ProviderMetadataWithLogout;

/// The `openidconnect` client as made from discovered metadata: authorization and token
/// endpoints known, user info maybe.
type Client = openidconnect::Client<
    openidconnect::EmptyAdditionalClaims,
    openidconnect::core::CoreAuthDisplay,
    openidconnect::core::CoreGenderClaim,
    openidconnect::core::CoreJweContentEncryptionAlgorithm,
    openidconnect::core::CoreJsonWebKey,
    openidconnect::core::CoreAuthPrompt,
    openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>,
    openidconnect::core::CoreTokenResponse,
    openidconnect::core::CoreTokenIntrospectionResponse,
    openidconnect::core::CoreRevocableToken,
    openidconnect::core::CoreRevocationErrorResponse,
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// The relying party: settings, an HTTP client and the discovered provider.
pub struct Oidc {
    /// The settings.
    pub settings: OidcSettings,
    http: openidconnect::reqwest::Client,
    provider: RwLock<Option<Arc<Metadata>>>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The error chain of `e` in one line (reqwest's top-level message alone is vague).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cause = c.source();
    }
    out
}

impl Oidc {
    /// A relying party for `settings`; nothing is fetched yet.
    ///
    /// # Errors
    /// An unreadable CA file, or an HTTP client that cannot be built (no system authorities).
    pub fn new(settings: OidcSettings) -> anyhow::Result<Self> {
        let mut http = openidconnect::reqwest::Client::builder()
            // Following redirects from the provider's endpoints would let it point Tranche
            // at any address (SSRF); the specification needs none.
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .connect_timeout(settings.timeout)
            .timeout(settings.timeout);
        // Without a CA file, reqwest trusts the system's authorities (rustls-native-certs).
        if let Some(path) = &settings.ca_file {
            let tls = crate::auth::tls::client_config(path, "TRANCHE_OIDC_CA_FILE")?;
            http = http.use_preconfigured_tls((*tls).clone());
        }
        let http = http.build()?;
        Ok(Self {
            settings,
            http,
            provider: RwLock::new(None),
        })
    }

    /// The discovered provider, fetching the discovery document and key set when not kept
    /// yet.
    async fn provider(&self) -> Result<Arc<Metadata>, OidcError> {
        if let Some(p) = self.provider.read().await.as_ref() {
            return Ok(p.clone());
        }
        let issuer = IssuerUrl::new(self.settings.issuer.clone())
            .map_err(|e| OidcError::Unavailable(e.to_string()))?;
        let metadata = Metadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| {
                let cause = chain(&e);
                tracing::warn!(error = %cause, "OpenID provider discovery failed");
                OidcError::Unavailable(cause)
            })?;
        let metadata = Arc::new(metadata);
        *self.provider.write().await = Some(metadata.clone());
        Ok(metadata)
    }

    /// Fetches the key set again (the provider rotated its keys) and keeps it.
    async fn refresh_keys(&self, old: &Metadata) -> Result<Arc<Metadata>, OidcError> {
        let keys = JsonWebKeySet::fetch_async(old.jwks_uri(), &self.http)
            .await
            .map_err(|e| OidcError::Unavailable(chain(&e)))?;
        let metadata = Arc::new(old.clone().set_jwks(keys));
        *self.provider.write().await = Some(metadata.clone());
        Ok(metadata)
    }

    fn client(&self, metadata: &Metadata) -> Result<Client, OidcError> {
        let redirect = RedirectUrl::new(self.settings.redirect_url.clone())
            .map_err(|e| OidcError::Unavailable(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata.clone(),
            ClientId::new(self.settings.client_id.clone()),
            self.settings
                .client_secret
                .as_ref()
                .map(|s| ClientSecret::new(s.expose().to_string())),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in: the provider's authorization URL to send the browser to, and the
    /// [`Pending`] sign-in to keep in the session (`now` in Unix seconds).
    ///
    /// # Errors
    /// [`OidcError::Unavailable`] when the provider cannot be discovered.
    pub async fn begin(&self, next: &str, now: i64) -> Result<(String, Pending), OidcError> {
        let metadata = self.provider().await?;
        let client = self.client(&metadata)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for scope in &self.settings.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.url();
        Ok((
            url.to_string(),
            Pending {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                verifier: verifier.secret().clone(),
                next: next.to_string(),
                started: now,
            },
        ))
    }

    /// Finishes a sign-in at the callback: exchanges `code` (with the PKCE verifier) for
    /// tokens and verifies the ID token (signature against the provider's keys, issuer,
    /// audience, expiry, nonce). Returns who signed in and the raw ID token (for the
    /// sign-out's hint). The caller has already checked `state` against `pending`.
    ///
    /// # Errors
    /// [`OidcError::Refused`] when the token endpoint refuses the code,
    /// [`OidcError::InvalidToken`] when the ID token fails a check or lacks the name claim,
    /// [`OidcError::Unavailable`] when the provider cannot be reached in time.
    pub async fn finish(
        &self,
        pending: &Pending,
        code: &str,
    ) -> Result<(ExternalIdentity, String), OidcError> {
        let metadata = self.provider().await?;
        let client = self.client(&metadata)?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| OidcError::Unavailable(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                RequestTokenError::ServerResponse(r) => {
                    OidcError::Refused(match r.error_description() {
                        Some(d) => format!("{} ({d})", r.error()),
                        None => r.error().to_string(),
                    })
                }
                RequestTokenError::Request(e) => OidcError::Unavailable(chain(&e)),
                e => OidcError::Unavailable(chain(&e)),
            })?;
        let id_token = token
            .id_token()
            .ok_or_else(|| OidcError::InvalidToken("no ID token in the answer".into()))?
            .clone();
        let nonce = Nonce::new(pending.nonce.clone());
        let verified = {
            let verifier = client.id_token_verifier();
            id_token
                .claims(&verifier, &nonce)
                .map(|c| c.subject().to_string())
        };
        let subject = match verified {
            Ok(s) => s,
            // A key the kept set does not have: the provider may have rotated its keys.
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => {
                let metadata = self.refresh_keys(&metadata).await?;
                let client = self.client(&metadata)?;
                let verifier = client.id_token_verifier();
                id_token
                    .claims(&verifier, &nonce)
                    .map(|c| c.subject().to_string())
                    .map_err(|e| invalid(&e))?
            }
            Err(e) => return Err(invalid(&e)),
        };
        let raw = id_token.to_string();
        let claims = raw_claims(&raw)?;
        let name = match claims.get(&self.settings.name_claim) {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            _ => {
                return Err(OidcError::InvalidToken(format!(
                    "the ID token has no {:?} claim to name the account",
                    self.settings.name_claim
                )));
            }
        };
        let groups = match claims.get(&self.settings.groups_claim) {
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .filter_map(|g| g.as_str().map(str::to_string))
                .collect(),
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        };
        Ok((
            ExternalIdentity {
                source: "oidc",
                subject,
                name,
                groups,
            },
            raw,
        ))
    }

    /// Where to send the browser to end the provider's session too (RP-initiated logout
    /// with `id_token_hint`, `client_id` and `post_logout_redirect_uri`), when the discovery
    /// document names an `end_session_endpoint`; `None` otherwise, or when the provider
    /// cannot be discovered now (then only Tranche's session ends).
    pub async fn logout_url(&self, id_token: &str) -> Option<String> {
        let metadata = self.provider().await.ok()?;
        let endpoint = metadata
            .additional_metadata()
            .end_session_endpoint
            .clone()?;
        let mut request = LogoutRequest::from(endpoint)
            .set_client_id(ClientId::new(self.settings.client_id.clone()));
        if let Ok(token) = id_token.parse::<CoreIdToken>() {
            request = request.set_id_token_hint(&token);
        }
        if let Ok(url) = PostLogoutRedirectUrl::new(self.settings.post_logout_url.clone()) {
            request = request.set_post_logout_redirect_uri(url);
        }
        Some(request.http_get_url().to_string())
    }
}

/// A verification failure in words (no token content).
fn invalid(e: &ClaimsVerificationError) -> OidcError {
    let what = match e {
        ClaimsVerificationError::Expired(_) => "the ID token has expired".to_string(),
        ClaimsVerificationError::InvalidAudience(_) => {
            "the ID token was issued to another client (audience)".to_string()
        }
        ClaimsVerificationError::InvalidIssuer(_) => {
            "the ID token was issued by another issuer".to_string()
        }
        ClaimsVerificationError::InvalidNonce(_) => {
            "the ID token's nonce is not this sign-in's".to_string()
        }
        ClaimsVerificationError::SignatureVerification(s) => {
            format!("the ID token's signature does not verify: {s}")
        }
        other => other.to_string(),
    };
    OidcError::InvalidToken(what)
}

/// The claims of an ID token whose signature was verified, as JSON (to read the configured
/// name and groups claims, which may be any claim).
fn raw_claims(jwt: &str) -> Result<serde_json::Map<String, serde_json::Value>, OidcError> {
    use base64::Engine;
    let payload = jwt
        .split('.')
        .nth(1)
        .ok_or_else(|| OidcError::InvalidToken("the ID token is not a JWT".into()))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| OidcError::InvalidToken("the ID token's payload is not base64url".into()))?;
    serde_json::from_slice(&bytes)
        .map_err(|_| OidcError::InvalidToken("the ID token's payload is not a JSON object".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_logout_defaults_to_the_login_page_of_the_callbacks_origin() {
        assert_eq!(
            default_post_logout("https://tranche.example.org:8443/login/oidc/callback").unwrap(),
            "https://tranche.example.org:8443/login"
        );
        assert!(default_post_logout("not a url").is_err());
    }

    #[test]
    fn settings_with_a_bad_url_or_ca_file_are_refused_naming_the_variable() {
        let good = OidcSettings {
            issuer: "https://login.example.org/realms/research".into(),
            client_id: "tranche".into(),
            client_secret: Some(Secret::new("hunter2-client-secret")),
            redirect_url: "https://tranche.example.org/login/oidc/callback".into(),
            post_logout_url: "https://tranche.example.org/login".into(),
            scopes: vec![],
            name_claim: "preferred_username".into(),
            groups_claim: "groups".into(),
            display_name: "Example".into(),
            timeout: Duration::from_secs(5),
            ca_file: None,
        };
        good.check().unwrap();
        let bad_issuer = OidcSettings {
            issuer: "login.example.org".into(),
            ..good.clone()
        };
        assert!(
            bad_issuer
                .check()
                .unwrap_err()
                .to_string()
                .starts_with("TRANCHE_OIDC_ISSUER")
        );
        let bad_redirect = OidcSettings {
            redirect_url: "/login/oidc/callback".into(),
            ..good.clone()
        };
        assert!(
            bad_redirect
                .check()
                .unwrap_err()
                .to_string()
                .starts_with("TRANCHE_OIDC_REDIRECT_URL")
        );
        let missing_ca = OidcSettings {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..good
        };
        assert!(
            missing_ca
                .check()
                .unwrap_err()
                .to_string()
                .contains("TRANCHE_OIDC_CA_FILE")
        );
        // The secret never shows in the settings' Debug.
        let shown = format!("{missing_ca:?}");
        assert!(
            shown.contains("[redacted]") && !shown.contains("hunter2"),
            "{shown}"
        );
    }

    #[test]
    fn reads_claims_of_a_compact_jwt() {
        use base64::Engine;
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let jwt = format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(r#"{"sub":"a","groups":["x","y"]}"#)
        );
        let claims = raw_claims(&jwt).unwrap();
        assert_eq!(claims["groups"], serde_json::json!(["x", "y"]));
        assert!(matches!(
            raw_claims("nodots"),
            Err(OidcError::InvalidToken(_))
        ));
    }
}
