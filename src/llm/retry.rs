//! Exponential backoff with jitter, honouring `Retry-After`.
use std::time::Duration;

use super::LlmError;

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based), or `None` to give up.
    pub fn delay(&self, err: &LlmError, attempt: u32) -> Option<Duration> {
        if attempt > self.max_retries || !err.is_retryable() || refused_on_loopback(err) {
            return None;
        }
        let exp = self.base.saturating_mul(1u32 << (attempt - 1).min(16));
        // Full jitter in [50 %, 100 %] of the exponential step.
        let jittered = exp.mul_f64(0.5 + fastrand::f64() * 0.5).min(self.max_delay);
        Some(match err.retry_after() {
            // The server knows best, within reason.
            Some(after) => after.max(jittered).min(Duration::from_secs(120)),
            None => jittered,
        })
    }
}

/// A connection refused by a server on this machine: nothing listens there,
/// and waiting will not start it, so the call fails at once (issue 44: a
/// dead local endpoint took 11.6 s to fail).
pub fn refused_on_loopback(err: &LlmError) -> bool {
    let LlmError::Connect { url, reason } = err else {
        return false;
    };
    let host = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned));
    let loopback = host.is_some_and(|h| {
        h == "localhost"
            || h.ends_with(".localhost")
            || h.trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    // The OS's words: "Connection refused" (Linux, macOS), "actively
    // refused" (Windows).
    loopback && reason.to_ascii_lowercase().contains("refused")
}

/// Parses `Retry-After` as seconds (HTTP dates are rare from model servers).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let v = value.trim();
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, after: Option<u64>) -> LlmError {
        LlmError::Status {
            status: code,
            url: "u".into(),
            message: "m".into(),
            retry_after: after.map(Duration::from_secs),
        }
    }

    #[test]
    fn backs_off_and_gives_up() {
        let p = RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        };
        let d1 = p.delay(&status(500, None), 1).unwrap();
        assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
        let d3 = p.delay(&status(503, None), 3).unwrap();
        assert!(d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400));
        assert!(p.delay(&status(500, None), 4).is_none());
        assert!(p.delay(&status(401, None), 1).is_none());
        assert!(p.delay(&status(404, None), 1).is_none());
        assert_eq!(
            p.delay(&status(429, Some(2)), 1).unwrap(),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn a_refused_loopback_connection_is_not_retried() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        };
        let refused = |url: &str| LlmError::Connect {
            url: url.into(),
            reason: "tcp connect error: Connection refused (os error 111)".into(),
        };
        for url in [
            "http://127.0.0.1:9/v1/chat/completions",
            "http://localhost:11434/v1/models",
            "http://[::1]:8080/v1/chat/completions",
        ] {
            assert!(refused_on_loopback(&refused(url)), "{url}");
            assert!(p.delay(&refused(url), 1).is_none(), "{url}");
        }
        // Elsewhere a refusal may pass (a restarting proxy), and a loopback
        // timeout is not a refusal.
        assert!(p.delay(&refused("http://10.0.0.5:8000/v1/x"), 1).is_some());
        let timeout = LlmError::Connect {
            url: "http://127.0.0.1:9/v1".into(),
            reason: "operation timed out".into(),
        };
        assert!(p.delay(&timeout, 1).is_some());
        // The error names the server usually found on that port.
        use super::super::discover::expected_server;
        assert_eq!(expected_server("http://127.0.0.1:11434/v1"), "Ollama");
        assert_eq!(expected_server("http://localhost:1234/v1"), "LM Studio");
        assert_eq!(expected_server("http://127.0.0.1:9/v1"), "the model server");
    }

    #[test]
    fn retry_after_values() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
