//! A browser signed in to the dashboard over plain HTTP, as one without
//! scripting is: the one-time link traded for the session cookie, the
//! session's CSRF token read from a page's form, pages fetched and forms
//! posted with both (or, to test a refusal, with another token or from
//! another origin). Redirects are not followed, so a test sees each answer.

use reqwest::header;
use reqwest::{Response, StatusCode};

/// A signed-in session against one dashboard.
pub struct WebSession {
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT`, the dashboard's own origin.
    pub base: String,
    /// `passepartout_session=…`, as a `Cookie` header sends it.
    pub cookie: String,
    /// The session's CSRF token.
    pub csrf: String,
}

impl WebSession {
    /// Trades the one-time `link` for a session, and reads its CSRF token
    /// from the page at `form_page`, which holds a form.
    pub async fn sign_in(link: &str, form_page: &str) -> WebSession {
        let (base, cookie) = trade_link(link).await;
        let mut session = WebSession {
            http: no_redirects(),
            base,
            cookie,
            csrf: String::new(),
        };
        let page = session.get(form_page).await;
        session.csrf = field(&page, "csrf");
        session
    }

    /// The page at `path`, which must answer 200.
    pub async fn get(&self, path: &str) -> String {
        let (status, page) = self.get_status(path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {page}");
        page
    }

    /// The page at `path`, whatever it answers.
    pub async fn get_status(&self, path: &str) -> (StatusCode, String) {
        let page = self.fetch(path).await;
        (page.status(), page.text().await.unwrap())
    }

    /// The answer to `GET path`, signed in.
    pub async fn fetch(&self, path: &str) -> Response {
        self.http
            .get(format!("{}{path}", self.base))
            .header(header::COOKIE, &self.cookie)
            .send()
            .await
            .unwrap()
    }

    /// Posts `fields`, with `csrf` as the token if given, from `origin`.
    pub async fn post_from(&self, path: &str, fields: &[(&str, &str)], csrf: Option<&str>, origin: &str) -> Response {
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        if let Some(csrf) = csrf {
            form.push(("csrf", csrf));
        }
        self.http
            .post(format!("{}{path}", self.base))
            .header(header::COOKIE, &self.cookie)
            .header(header::ORIGIN, origin)
            .form(&form)
            .send()
            .await
            .unwrap()
    }
}

/// A client that follows no redirect, so a test sees each answer; cookies
/// are sent by hand.
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Trades the one-time `link` for a session: the dashboard's origin
/// (`http://127.0.0.1:PORT`) and the cookie, as a `Cookie` header sends it.
pub async fn trade_link(link: &str) -> (String, String) {
    let base = link.split("/sign-in/").next().expect("a sign-in link").to_owned();
    let signed = no_redirects().get(link).send().await.unwrap();
    assert_eq!(signed.status(), StatusCode::SEE_OTHER, "the link signs in");
    let cookie = signed.headers()[header::SET_COOKIE].to_str().unwrap();
    (base, cookie.split(';').next().unwrap().to_owned())
}

/// The value of the first field called `name` on `page`.
pub fn field(page: &str, name: &str) -> String {
    let marker = format!(r#"name="{name}" value=""#);
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("no field {name} in {page}"))
        + marker.len();
    html_unescape(page[at..].split('"').next().unwrap())
}

/// `text` with the page's HTML escapes undone.
pub fn html_unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}
