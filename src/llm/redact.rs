//! Secrets out of what the server sends back: servers echo headers and keys
//! in errors, in bodies and in streams alike. One call point,
//! [`redact_all`], taking the text and the secrets.
use super::LlmError;

/// [`redact_secrets`] for every secret (the key, header values).
pub fn redact_all(text: &str, secrets: &[String]) -> String {
    let mut out = redact_secrets(text, None);
    for s in secrets {
        out = redact_secrets(&out, Some(s));
    }
    out
}

/// An error whose server-supplied text went through [`redact_all`].
pub(super) fn redact_error(e: LlmError, secrets: &[String]) -> LlmError {
    let r = |t: String| redact_all(&t, secrets);
    match e {
        LlmError::Status {
            status,
            url,
            message,
            retry_after,
        } => LlmError::Status {
            status,
            url,
            message: r(message),
            retry_after,
        },
        LlmError::Connect { url, reason } => LlmError::Connect {
            url,
            reason: r(reason),
        },
        LlmError::Interrupted { url, reason } => LlmError::Interrupted {
            url,
            reason: r(reason),
        },
        LlmError::Decode { url, reason } => LlmError::Decode {
            url,
            reason: r(reason),
        },
        LlmError::Api { url, message } => LlmError::Api {
            url,
            message: r(message),
        },
        e @ (LlmError::Timeout { .. } | LlmError::Limit { .. }) => e,
    }
}

/// Removes the key itself and anything shaped like an API key (`sk-…`), which
/// some servers echo back partially in their 401 messages.
pub fn redact_secrets(text: &str, key: Option<&str>) -> String {
    let mut out = match key {
        Some(k) if k.len() >= 4 => text.replace(k, "[redacted]"),
        _ => text.to_owned(),
    };
    let mut i = 0;
    while let Some(pos) = out[i..].find("sk-") {
        let start = i + pos + 3;
        let at_word_start = i + pos == 0
            || !out[..i + pos]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        if !at_word_start {
            i = start;
            continue;
        }
        let end = out[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_*.".contains(c)))
            .map_or(out.len(), |e| start + e);
        if end - start >= 4 {
            out.replace_range(start..end, "[redacted]");
        }
        i = start.min(out.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        let r = redact_secrets(
            "Incorrect API key provided: sk-abc1***********wxyz. Key my-secret-key",
            Some("my-secret-key"),
        );
        assert!(!r.contains("abc1"), "{r}");
        assert!(!r.contains("my-secret-key"), "{r}");
        assert_eq!(redact_secrets("risk-free sk-", None), "risk-free sk-");
        assert_eq!(
            redact_all("a hdr-value-1 b", &["hdr-value-1".into()]),
            "a [redacted] b"
        );
    }
}
