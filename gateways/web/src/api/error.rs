//! The OpenAI error object every failed API request is answered with:
//! `{"error":{"message","type","param","code"}}` under a 4xx (or 503 when
//! the daemon is going away), so an OpenAI client raises its usual
//! exception with a message that says what to change.

use axum::http::StatusCode;
use axum::http::header::{self, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A refused API request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status answered.
    pub status: StatusCode,
    /// Why, for people.
    pub message: String,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, …
    pub kind: &'static str,
    /// The request field at fault, if one is.
    pub param: Option<&'static str>,
    /// OpenAI's `code`, where one fits.
    pub code: Option<&'static str>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Object<'a>,
}

#[derive(Serialize)]
struct Object<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

impl ApiError {
    /// 400: the request is not one the API serves; `param` names the field.
    pub fn invalid(param: Option<&'static str>, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param,
            code: Some(code),
        }
    }

    /// 401: no key, or one that is not (or no longer) valid.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
            kind: "authentication_error",
            param: None,
            code: Some("invalid_api_key"),
        }
    }

    /// Another status, with OpenAI's type for it.
    pub fn status(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        let kind = match status {
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            StatusCode::FORBIDDEN => "permission_error",
            StatusCode::NOT_FOUND => "not_found_error",
            s if s.is_server_error() => "server_error",
            _ => "invalid_request_error",
        };
        Self {
            status,
            message: message.into(),
            kind,
            param: None,
            code: Some(code),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> String {
        let body = Body {
            error: Object {
                message: &self.message,
                kind: self.kind,
                param: self.param,
                code: self.code,
            },
        };
        serde_json::to_string(&body).unwrap_or_else(|_| {
            r#"{"error":{"message":"error","type":"server_error","param":null,"code":null}}"#.into()
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_object_has_openais_four_fields() {
        let error = ApiError::invalid(Some("n"), "unsupported_parameter", "n must be 1");
        let body: serde_json::Value = serde_json::from_str(&error.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"error": {"message": "n must be 1", "type": "invalid_request_error", "param": "n", "code": "unsupported_parameter"}})
        );
        let unauthorized: serde_json::Value = serde_json::from_str(&ApiError::unauthorized("no").body()).unwrap();
        assert_eq!(unauthorized["error"]["type"], "authentication_error");
        assert_eq!(unauthorized["error"]["param"], serde_json::Value::Null);
        assert_eq!(
            ApiError::status(StatusCode::TOO_MANY_REQUESTS, "busy", "later").kind,
            "rate_limit_error"
        );
    }

    #[test]
    fn a_refusal_is_json_and_a_401_asks_for_a_bearer() {
        let response = ApiError::unauthorized("no key").into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
    }
}
