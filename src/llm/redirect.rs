//! Redirects of the model endpoint. reqwest follows those within one origin
//! itself ([`policy`]); one to another origin stops there and the layer
//! follows it with [`next_hop`], without the credentials: reqwest strips
//! `Authorization` and cookies on such a hop but keeps every other header,
//! and the config's `[headers]` (`api-key: …`) are credentials as much as
//! the key is. They go to the origin the user configured, never further.
use reqwest::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HeaderName, LOCATION, PROXY_AUTHORIZATION,
};
use reqwest::{Method, Request, Response, StatusCode, Url};

/// The most redirects one request follows, as reqwest's default policy.
pub(super) const MAX_REDIRECTS: usize = 10;

/// Same scheme, host and port.
pub(super) fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// reqwest's policy for the model client: follow within the origin (at most
/// [`MAX_REDIRECTS`]), stop at another one (handed back as the 3xx).
pub(super) fn policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error("too many redirects");
        }
        match attempt.previous().last() {
            Some(prev) if same_origin(prev, attempt.url()) => attempt.follow(),
            _ => attempt.stop(),
        }
    })
}

/// The request to send after `resp`, when it is a redirect (to another
/// origin: [`policy`] followed the others) that can be followed: `retry` is
/// a copy of the request that got `resp` (`None` when its body could not be
/// copied). Going to another origin drops `Authorization`, cookies and
/// every header named in `credentials`; 303, and 301/302 of a POST, turn
/// into a GET without a body, as reqwest does.
pub(super) fn next_hop(
    resp: &Response,
    retry: Option<Request>,
    credentials: &[HeaderName],
) -> Option<Request> {
    let status = resp.status();
    if !matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    ) {
        return None;
    }
    let location = resp.headers().get(LOCATION)?.to_str().ok()?;
    let next = resp.url().join(location).ok()?;
    if !matches!(next.scheme(), "http" | "https") {
        return None;
    }
    let mut req = retry?;
    if !same_origin(resp.url(), &next) {
        let headers = req.headers_mut();
        for name in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION]
            .iter()
            .chain(credentials)
        {
            headers.remove(name);
        }
    }
    let to_get = status == StatusCode::SEE_OTHER
        || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
            && req.method() == Method::POST);
    if to_get {
        *req.method_mut() = Method::GET;
        *req.body_mut() = None;
        req.headers_mut().remove(CONTENT_TYPE);
        req.headers_mut().remove(CONTENT_LENGTH);
    }
    *req.url_mut() = next;
    Some(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_differ_by_scheme_host_or_port() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_origin(
            &u("http://127.0.0.1:80/a"),
            &u("http://127.0.0.1/b")
        ));
        assert!(!same_origin(
            &u("http://127.0.0.1:8080/a"),
            &u("http://127.0.0.1:8081/a")
        ));
        assert!(!same_origin(
            &u("http://example.com/a"),
            &u("https://example.com/a")
        ));
        assert!(!same_origin(
            &u("http://example.com/a"),
            &u("http://api.example.com/a")
        ));
    }
}
