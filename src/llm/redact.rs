//! Secrets out of what the server sends back: servers echo headers and keys
//! in errors, in bodies and in streams alike. One call point,
//! [`redact_all`], taking the text and the secrets.
use super::LlmError;

/// Endpoint text through the one redactor ([`crate::secrets`]): every known
/// secret, this client's key and header values (`secrets`), and `sk-…`-shaped
/// strings, which servers echo back partially in 401 messages.
pub fn redact_all(text: &str, secrets: &[String]) -> String {
    crate::secrets::redact_endpoint_text(text, secrets)
}

/// An error whose server-supplied text went through [`redact_all`].
pub(super) fn redact_error(mut e: LlmError, secrets: &[String]) -> LlmError {
    match &mut e {
        LlmError::Status { message: text, .. }
        | LlmError::Api { message: text, .. }
        | LlmError::Connect { reason: text, .. }
        | LlmError::Interrupted { reason: text, .. }
        | LlmError::Decode { reason: text, .. } => *text = redact_all(text, secrets),
        LlmError::Timeout { .. } | LlmError::Limit { .. } => {}
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        let r = redact_all(
            "Incorrect API key provided: sk-abc1***********wxyz. Key my-secret-key",
            &["my-secret-key".into()],
        );
        assert!(!r.contains("abc1"), "{r}");
        assert!(!r.contains("my-secret-key"), "{r}");
        assert_eq!(redact_all("risk-free sk-", &[]), "risk-free sk-");
        assert_eq!(
            redact_all("a hdr-value-1 b", &["hdr-value-1".into()]),
            "a [redacted] b"
        );
    }
}
