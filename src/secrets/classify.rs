//! Which named values are secrets (SECURITY.md §3): a value is one when its
//! name says so (a key, token, password, secret, credential, cookie or auth
//! header), or when it is shaped like a credential (a known key prefix, a
//! JWT, a URL with `user:pass@`, a long high-entropy string). Plain words,
//! paths and numbers are not: `DB_NAME=inventory_service_prod` or
//! `PATH=/usr/bin` reach the model as they are, or redaction would mangle
//! everything the agent says about them.
//!
//! Everything the agent itself holds as a secret (the API key, what
//! `authenticate` loads, OAuth tokens) is learned whatever its shape; this
//! module only decides for values that come with a name.

/// Words that make a variable or header name a secret's name, matched
/// against the name's words (split at `_`, `-`, `.` and case changes) and
/// as the end of a word (`APIKEY`, `GITHUBTOKEN`).
const SECRET_WORDS: [&str; 15] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "pass",
    "pwd",
    "pat",
    "dsn",
    "credential",
    "credentials",
    "cookie",
    "auth",
    "authorization",
];

/// Words that count only on their own, never as the end of a longer word
/// (`COMPASS`, `SPAT`).
const WHOLE_WORDS_ONLY: [&str; 4] = ["pass", "pwd", "pat", "dsn"];

/// Last words that name where a secret is, not the secret itself
/// (`SSH_KEY_PATH=/home/me/.ssh/id`, `TOKEN_FILE`).
const LOCATION_WORDS: [&str; 6] = ["path", "file", "dir", "directory", "url", "name"];

/// Whether a header or variable name says that its value is a secret.
pub fn is_secret_name(name: &str) -> bool {
    let words = words(name);
    // `PWD` alone is the working directory.
    if words.len() == 1 && words[0] == "pwd" {
        return false;
    }
    if words
        .last()
        .is_some_and(|w| LOCATION_WORDS.contains(&w.as_str()))
    {
        return false;
    }
    words.iter().any(|w| {
        SECRET_WORDS.iter().any(|s| {
            w == s
                || (w.len() >= s.len() + 2 && w.ends_with(s) && !WHOLE_WORDS_ONLY.contains(s))
                || (*s == "auth" && w.starts_with("auth") && !w.starts_with("author"))
        })
    })
}

/// A name's words, lower case: `X-Api-Key` → `x api key`,
/// `githubToken` → `github token`.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Prefixes of well-known credentials, and how many key characters must
/// follow for the value to count as one.
const PREFIXES: [(&str, usize); 22] = [
    ("sk-", 16),
    ("sk_live_", 8),
    ("sk_test_", 8),
    ("rk_live_", 8),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("ghr_", 20),
    ("github_pat_", 20),
    ("glpat-", 16),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("xapp-", 10),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
    ("hf_", 20),
    ("npm_", 30),
];

/// Whether `value` is shaped like a credential, whatever it is named.
pub fn looks_like_credential(value: &str) -> bool {
    let v = value.trim();
    // `Bearer <token>`, `Basic <b64>`, `token <t>`: the scheme is a word.
    let v = match v.split_once(' ') {
        Some((scheme, rest))
            if ["bearer", "basic", "token"].contains(&scheme.to_ascii_lowercase().as_str()) =>
        {
            rest.trim()
        }
        _ => v,
    };
    if v.is_empty() || v.contains(char::is_whitespace) {
        return false;
    }
    has_known_prefix(v) || is_jwt(v) || url_password(v).is_some() || is_high_entropy(v)
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn has_known_prefix(v: &str) -> bool {
    PREFIXES.iter().any(|(p, min)| {
        v.strip_prefix(p)
            .is_some_and(|rest| rest.len() >= *min && rest.chars().all(is_key_char))
    })
}

/// `header.payload.signature`, base64url, the header a JSON object.
fn is_jwt(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[1].len() >= 4
        && parts[2].len() >= 16
        && parts.iter().all(|p| p.chars().all(is_key_char))
}

/// The password of a `scheme://user:pass@host…` URL.
pub fn url_password(v: &str) -> Option<&str> {
    let (scheme, rest) = v.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _host) = authority.rsplit_once('@')?;
    let (_user, pass) = userinfo.split_once(':')?;
    (!pass.is_empty()).then_some(pass)
}

/// A long opaque string: letters and digits mixed (no plain word, path or
/// number), over 20 characters with the spread of a random key, or a long
/// hex digest.
fn is_high_entropy(v: &str) -> bool {
    if v.len() < 20 || !v.chars().all(|c| is_key_char(c) || "+/=.~".contains(c)) {
        return false;
    }
    // Paths and dotted names (`/usr/lib/x`, `./build`, `com.example.app`).
    if v.starts_with(['/', '.', '~']) || v.split('/').count() > 2 || v.split('.').count() > 2 {
        return false;
    }
    let digits = v.chars().filter(char::is_ascii_digit).count();
    let letters = v.chars().filter(char::is_ascii_alphabetic).count();
    if digits == 0 || letters == 0 {
        return false;
    }
    let hex = v.chars().all(|c| c.is_ascii_hexdigit());
    if hex {
        return v.len() >= 32;
    }
    let upper = v.chars().any(|c| c.is_ascii_uppercase());
    let lower = v.chars().any(|c| c.is_ascii_lowercase());
    // Separators cut words apart: a key has few, a name has many.
    let separators = v.chars().filter(|c| "-_.".contains(*c)).count();
    let runs = v.len() / (separators + 1);
    upper && lower && runs >= 12 && entropy(v) >= 3.5
}

/// Shannon entropy of `v`'s characters, in bits per character.
fn entropy(v: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in v.bytes() {
        counts[b as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether the value of the variable or header `name` is a secret.
pub fn is_secret_value(name: &str, value: &str) -> bool {
    if value.trim().is_empty() {
        return false;
    }
    is_secret_name(name) || looks_like_credential(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_by_name() {
        for name in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "apiKey",
            "X-Api-Key",
            "api-key",
            "Authorization",
            "Proxy-Authorization",
            "DB_PASSWORD",
            "PGPASSWORD",
            "MYSQL_PWD",
            "AWS_SECRET_ACCESS_KEY",
            "CLIENT_SECRET",
            "GOOGLE_CREDENTIALS",
            "Cookie",
            "X-Auth-Token",
            "AUTH",
            "SLACK_BOT_TOKEN",
            "ACCESSTOKEN",
            "SSH_PASSPHRASE",
            "GITHUB_PAT",
            "SENTRY_DSN",
        ] {
            assert!(is_secret_name(name), "{name} names a secret");
        }
        for name in [
            "DB_NAME",
            "PATH",
            "PWD",
            "HOME",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "AUTHOR",
            "KEYBOARD_LAYOUT",
            "PORT",
            "X-Title",
            "HTTP-Referer",
            "SSH_KEY_PATH",
            "TOKEN_FILE",
            "LOG_LEVEL",
            "PASSENGER_COUNT",
            "COMPASS_MODE",
            "SPAT_COUNT",
        ] {
            assert!(!is_secret_name(name), "{name} names no secret");
        }
    }

    #[test]
    fn secrets_by_shape() {
        for value in [
            "sk-proj-abcdefghijklmnop1234",
            "sk_live_51H8abcdEFGH",
            "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "glpat-xxxxxxxxxxxxxxxxxxxx",
            "xoxb-1234567890-abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
            "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
            "hf_abcdefghijklmnopqrstuvwxyz",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            "postgres://app:hunter2@db.internal:5432/prod",
            "https://user:pa55word@example.com/x",
            "Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6",
            "wJalrXUtnFEMI7K7MDENGbPxRfiCYEXAMPLEKEY",
            "3f7a9c1e55d2b8a4c6e0f1d3b5a7c9e1",
        ] {
            assert!(
                looks_like_credential(value),
                "{value} looks like a credential"
            );
        }
        for value in [
            "inventory_service_prod",
            "/usr/local/bin:/usr/bin:/bin",
            "/home/me/projects/inventory-service",
            "./build/output/release",
            "8080",
            "1234567890123456789012345",
            "production",
            "my app",
            "https://api.example.com/v1",
            "postgres://db.internal:5432/prod",
            "com.example.inventory.service",
            "550e8400-e29b-41d4-a716-446655440000",
            "en_US.UTF-8",
            "sk-learn",
            "the-quick-brown-fox-jumps-over",
            "release-2024-candidate-build",
            "InventoryServiceProduction",
        ] {
            assert!(!looks_like_credential(value), "{value} is no credential");
        }
    }

    #[test]
    fn named_values() {
        assert!(is_secret_value("GITHUB_TOKEN", "ghp1"));
        assert!(is_secret_value("X", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"));
        assert!(!is_secret_value("DB_NAME", "inventory_service_prod"));
        assert!(!is_secret_value("PATH", "/usr/bin:/bin"));
        assert!(!is_secret_value("X-Title", "my app"));
        assert!(!is_secret_value("API_KEY", "  "));
        assert_eq!(url_password("redis://:s3cret@cache:6379"), Some("s3cret"));
        assert_eq!(url_password("https://example.com/a@b"), None);
    }
}
