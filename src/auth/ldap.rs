//! Signing in against an LDAP directory (docs/sso.md): over LDAPS or StartTLS only, find the
//! user's entry with a service account (or anonymously), bind as that entry with the password
//! given, then read the groups that list the entry as a member.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ldap3::{LdapConnAsync, LdapConnSettings, Scope, SearchEntry, ldap_escape};

use crate::auth::sso::ExternalIdentity;
use crate::config::Secret;

/// How to reach and search the directory (the `TRANCHE_LDAP_*` variables).
#[derive(Clone, Debug)]
pub struct LdapSettings {
    /// `ldaps://host:636` or `ldap://host:389` (then always upgraded with StartTLS).
    pub url: String,
    /// PEM file of the certificate authorities to trust instead of the system's.
    pub ca_file: Option<PathBuf>,
    /// DN of the service account that searches; `None` searches anonymously.
    pub bind_dn: Option<String>,
    /// The service account's password.
    pub bind_password: Option<Secret>,
    /// Where user entries are, e.g. `ou=people,dc=example,dc=org`.
    pub user_base: String,
    /// The filter that finds a user's entry, with `{name}` for the escaped user name
    /// (default `(uid={name})`; Active Directory: `(sAMAccountName={name})`).
    pub user_filter: String,
    /// The entry's attribute whose value becomes the Tranche user name (default `uid`).
    pub name_attribute: String,
    /// Where groups are, e.g. `ou=groups,dc=example,dc=org`.
    pub group_base: String,
    /// The filter that finds the user's groups, with `{dn}` for the escaped entry DN (default
    /// `(member={dn})`, for `groupOfNames`).
    pub group_filter: String,
    /// The group attribute that names it in the mapping file (default `cn`).
    pub group_attribute: String,
    /// Longest wait for the directory, per connection and per operation.
    pub timeout: Duration,
}

/// Why the directory did not sign someone in.
#[derive(Debug, thiserror::Error)]
pub enum LdapError {
    /// No such entry, several entries, an empty password, or a refused bind.
    #[error("wrong user name or password")]
    WrongCredentials,
    /// The directory cannot be reached, refused TLS, timed out or answered with an error.
    #[error("the directory cannot be reached: {0}")]
    Unavailable(String),
}

fn env_text(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl LdapSettings {
    /// Reads the settings; `None` when `TRANCHE_LDAP_URL` is unset. The service password comes
    /// from `TRANCHE_LDAP_BIND_PASSWORD` or the file named by `TRANCHE_LDAP_BIND_PASSWORD_FILE`.
    ///
    /// # Errors
    /// A URL that is neither `ldaps://` nor `ldap://`, a missing `TRANCHE_LDAP_USER_BASE`, a
    /// filter without its placeholder, an unreadable password or CA file, a bad timeout.
    pub fn from_env() -> anyhow::Result<Option<Self>> {
        let Some(url) = env_text("TRANCHE_LDAP_URL") else {
            return Ok(None);
        };
        if !(url.starts_with("ldaps://") || url.starts_with("ldap://")) {
            anyhow::bail!(
                "TRANCHE_LDAP_URL must start with ldaps:// or ldap:// (StartTLS), got {url:?}"
            );
        }
        let user_base = env_text("TRANCHE_LDAP_USER_BASE").ok_or_else(|| {
            anyhow::anyhow!("TRANCHE_LDAP_USER_BASE is needed with TRANCHE_LDAP_URL")
        })?;
        let user_filter =
            env_text("TRANCHE_LDAP_USER_FILTER").unwrap_or_else(|| "(uid={name})".into());
        if !user_filter.contains("{name}") {
            anyhow::bail!("TRANCHE_LDAP_USER_FILTER must contain {{name}}, got {user_filter:?}");
        }
        let group_filter =
            env_text("TRANCHE_LDAP_GROUP_FILTER").unwrap_or_else(|| "(member={dn})".into());
        if !group_filter.contains("{dn}") {
            anyhow::bail!("TRANCHE_LDAP_GROUP_FILTER must contain {{dn}}, got {group_filter:?}");
        }
        let bind_password = match (
            env_text("TRANCHE_LDAP_BIND_PASSWORD"),
            env_text("TRANCHE_LDAP_BIND_PASSWORD_FILE"),
        ) {
            (Some(p), None) => Some(Secret::new(p)),
            (None, Some(f)) => Some(Secret::new(
                std::fs::read_to_string(&f)
                    .map_err(|e| {
                        anyhow::anyhow!("cannot read TRANCHE_LDAP_BIND_PASSWORD_FILE {f:?}: {e}")
                    })?
                    .trim_end_matches(['\r', '\n'])
                    .to_string(),
            )),
            (None, None) => None,
            (Some(_), Some(_)) => anyhow::bail!(
                "set TRANCHE_LDAP_BIND_PASSWORD or TRANCHE_LDAP_BIND_PASSWORD_FILE, not both"
            ),
        };
        let timeout_s = match env_text("TRANCHE_LDAP_TIMEOUT_S") {
            None => 5,
            Some(v) => match v.parse::<u64>() {
                Ok(s) if (1..=60).contains(&s) => s,
                _ => anyhow::bail!(
                    "TRANCHE_LDAP_TIMEOUT_S must be a number of seconds from 1 to 60, got {v:?}"
                ),
            },
        };
        let settings = Self {
            url,
            ca_file: env_text("TRANCHE_LDAP_CA_FILE").map(Into::into),
            bind_dn: env_text("TRANCHE_LDAP_BIND_DN"),
            bind_password,
            group_base: env_text("TRANCHE_LDAP_GROUP_BASE").unwrap_or_else(|| user_base.clone()),
            user_base,
            user_filter,
            name_attribute: env_text("TRANCHE_LDAP_NAME_ATTRIBUTE").unwrap_or_else(|| "uid".into()),
            group_filter,
            group_attribute: env_text("TRANCHE_LDAP_GROUP_ATTRIBUTE")
                .unwrap_or_else(|| "cn".into()),
            timeout: Duration::from_secs(timeout_s),
        };
        // Fail at start-up, not at the first sign-in.
        settings.tls_config()?;
        Ok(Some(settings))
    }

    /// The rustls configuration trusting `ca_file`'s authorities; `None` for the system's.
    fn tls_config(&self) -> anyhow::Result<Option<Arc<rustls::ClientConfig>>> {
        self.ca_file
            .as_deref()
            .map(|p| crate::auth::tls::client_config(p, "TRANCHE_LDAP_CA_FILE"))
            .transpose()
    }

    /// Checks `name` and `password` against the directory and returns the person's identity
    /// with their groups' names. The name is escaped (RFC 4515) before it goes into the
    /// filter, so `*`, `(`, `)` and `\` match only themselves.
    ///
    /// # Errors
    /// [`LdapError::WrongCredentials`] for an unknown name, an ambiguous one, an empty
    /// password or a refused bind; [`LdapError::Unavailable`] otherwise.
    pub async fn authenticate(
        &self,
        name: &str,
        password: &str,
    ) -> Result<ExternalIdentity, LdapError> {
        // An empty password is an "unauthenticated bind" (RFC 4513 5.1.2), which many servers
        // accept as success: never try one.
        if password.is_empty() || name.is_empty() {
            return Err(LdapError::WrongCredentials);
        }
        let unavailable = |e: ldap3::LdapError| LdapError::Unavailable(e.to_string());
        let mut settings = LdapConnSettings::new()
            .set_conn_timeout(self.timeout)
            .set_starttls(self.url.starts_with("ldap://"));
        if let Some(config) = self
            .tls_config()
            .map_err(|e| LdapError::Unavailable(e.to_string()))?
        {
            settings = settings.set_config(config);
        }
        let (conn, mut ldap) = LdapConnAsync::with_settings(settings, &self.url)
            .await
            .map_err(unavailable)?;
        ldap3::drive!(conn);
        ldap.with_timeout(self.timeout);
        let result = self.look_up(&mut ldap, name, password).await;
        let _ = ldap.unbind().await;
        result
    }

    async fn service_bind(&self, ldap: &mut ldap3::Ldap) -> Result<(), LdapError> {
        if let Some(dn) = &self.bind_dn {
            let pw = self.bind_password.as_ref().map_or("", Secret::expose);
            ldap.with_timeout(self.timeout)
                .simple_bind(dn, pw)
                .await
                .and_then(ldap3::LdapResult::success)
                .map_err(|e| {
                    LdapError::Unavailable(format!("the service account's bind failed: {e}"))
                })?;
        }
        Ok(())
    }

    async fn look_up(
        &self,
        ldap: &mut ldap3::Ldap,
        name: &str,
        password: &str,
    ) -> Result<ExternalIdentity, LdapError> {
        let unavailable = |e: ldap3::LdapError| LdapError::Unavailable(e.to_string());
        self.service_bind(ldap).await?;
        let filter = self.user_filter.replace("{name}", &ldap_escape(name));
        let (entries, _) = ldap
            .with_timeout(self.timeout)
            .search(
                &self.user_base,
                Scope::Subtree,
                &filter,
                vec![self.name_attribute.as_str()],
            )
            .await
            .and_then(ldap3::SearchResult::success)
            .map_err(unavailable)?;
        let [entry] = <[_; 1]>::try_from(entries).map_err(|_| LdapError::WrongCredentials)?;
        let entry = SearchEntry::construct(entry);
        match ldap
            .with_timeout(self.timeout)
            .simple_bind(&entry.dn, password)
            .await
            .map_err(unavailable)?
        {
            r if r.rc == 0 => {}
            // invalidCredentials, or an account the directory refuses to bind.
            r if matches!(r.rc, 48 | 49 | 50 | 53) => return Err(LdapError::WrongCredentials),
            r => return Err(LdapError::Unavailable(r.to_string())),
        }
        // Groups are read as the service account where there is one (a user may not be allowed
        // to read group entries), else as the user.
        self.service_bind(ldap).await?;
        let filter = self.group_filter.replace("{dn}", &ldap_escape(&entry.dn));
        let (groups, _) = ldap
            .with_timeout(self.timeout)
            .search(
                &self.group_base,
                Scope::Subtree,
                &filter,
                vec![self.group_attribute.as_str()],
            )
            .await
            .and_then(ldap3::SearchResult::success)
            .map_err(unavailable)?;
        let groups = groups
            .into_iter()
            .flat_map(|g| {
                let mut g = SearchEntry::construct(g);
                g.attrs.remove(&self.group_attribute).unwrap_or_default()
            })
            .collect();
        let login = entry
            .attrs
            .get(&self.name_attribute)
            .and_then(|v| v.first())
            .cloned()
            .unwrap_or_else(|| name.to_string());
        Ok(ExternalIdentity {
            source: "ldap",
            subject: entry.dn.to_lowercase(),
            name: login,
            groups,
        })
    }
}
