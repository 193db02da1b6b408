//! Outgoing e-mail through the configured SMTP relay (lettre).

use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::Smtp;

/// Sends one plain-text message to each address.
///
/// # Errors
/// A malformed address or a relay that refuses or cannot be reached (the URL is never part
/// of the error).
pub async fn send(smtp: &Smtp, to: &[String], subject: &str, body: &str) -> anyhow::Result<()> {
    let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp.url.expose())
        .map_err(|_| anyhow::anyhow!("the SMTP URL is not valid"))?
        .build();
    let from: Mailbox = smtp.from.parse()?;
    for address in to {
        let message = Message::builder()
            .from(from.clone())
            .to(address.parse()?)
            .subject(subject)
            .body(body.to_string())?;
        transport
            .send(message)
            .await
            .map_err(|e| anyhow::anyhow!("sending to {address} failed: {e}"))?;
    }
    Ok(())
}
