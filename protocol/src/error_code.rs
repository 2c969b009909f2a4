//! The machine-readable code of every error answer, beside its message: clients branch on
//! the code, people read the message. The list is fixed and documented
//! (`docs/guide/api.md`, "Error answers"); a new code is a change of the API.

crate::named_enum! {
    /// Why a request was refused, in a word a program can match on; each code and its
    /// status are listed in `docs/guide/api.md` ("Error answers").
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum ErrorCode("error code") {
        /// 400: a field, parameter or value was refused; the message names it.
        InvalidField = "invalid_field",
        /// 400, 415 or 422: the body is not the JSON the route takes.
        InvalidBody = "invalid_body",
        /// 401: the token is missing, wrong, revoked or re-issued.
        Unauthorized = "unauthorized",
        /// 403: the token may not do this.
        Forbidden = "forbidden",
        /// 403: a per-user quota would be exceeded.
        QuotaExceeded = "quota_exceeded",
        /// 404: no such object (another user's looks the same).
        NotFound = "not_found",
        /// 408: the request body did not arrive in time.
        RequestTimeout = "request_timeout",
        /// 409: the object is not in a state that allows this.
        Conflict = "conflict",
        /// 410: the agent has left.
        Gone = "gone",
        /// 413: the body or upload is larger than allowed.
        TooLarge = "too_large",
        /// 414: a name is longer than the filesystem allows.
        NameTooLong = "name_too_long",
        /// 416: the range asked for is not within the file.
        BadRange = "bad_range",
        /// 429: the caller holds as many event streams open as it may.
        TooManyStreams = "too_many_streams",
        /// 429: too many requests; `Retry-After` says when to try again.
        RateLimited = "rate_limited",
        /// 500: the server failed; its log has the details.
        Internal = "internal",
        /// 507: the server's disk (or the owner's quota there) is full.
        StorageFull = "storage_full",
    }
}

impl ErrorCode {
    /// The HTTP status the code is answered with (`invalid_body` also comes as 415 or 422,
    /// as the server's JSON reader says).
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidField | ErrorCode::InvalidBody => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden | ErrorCode::QuotaExceeded => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::Conflict => 409,
            ErrorCode::Gone => 410,
            ErrorCode::TooLarge => 413,
            ErrorCode::NameTooLong => 414,
            ErrorCode::BadRange => 416,
            ErrorCode::TooManyStreams | ErrorCode::RateLimited => 429,
            ErrorCode::Internal => 500,
            ErrorCode::StorageFull => 507,
        }
    }

    /// The code of a refusal known only by its HTTP status (one from a lower layer, such
    /// as file I/O): where codes share a status, the more general one.
    pub const fn of_http_status(status: u16) -> ErrorCode {
        match status {
            401 => ErrorCode::Unauthorized,
            403 => ErrorCode::Forbidden,
            404 => ErrorCode::NotFound,
            408 => ErrorCode::RequestTimeout,
            409 => ErrorCode::Conflict,
            410 => ErrorCode::Gone,
            413 => ErrorCode::TooLarge,
            414 => ErrorCode::NameTooLong,
            416 => ErrorCode::BadRange,
            429 => ErrorCode::RateLimited,
            507 => ErrorCode::StorageFull,
            500..=599 => ErrorCode::Internal,
            _ => ErrorCode::InvalidField,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_maps_back_to_its_code_but_where_codes_share_one() {
        let narrower = [
            ErrorCode::InvalidBody,
            ErrorCode::QuotaExceeded,
            ErrorCode::TooManyStreams,
        ];
        for &code in ErrorCode::ALL {
            let status = code.http_status();
            let back = ErrorCode::of_http_status(status);
            if narrower.contains(&code) {
                assert_eq!(back.http_status(), status, "{code}");
            } else {
                assert_eq!(back, code, "{code} answers {status}");
            }
        }
    }

    #[test]
    fn codes_travel_by_their_snake_case_names() {
        for &code in ErrorCode::ALL {
            let text = serde_json::to_string(&code).unwrap();
            assert_eq!(text, format!("\"{code}\""));
            assert_eq!(serde_json::from_str::<ErrorCode>(&text).unwrap(), code);
            assert!(code
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
    }

    /// The API page lists every code, so a client author finds each one there, and the
    /// Python client knows each one.
    #[test]
    fn every_code_is_documented_in_the_api_guide_and_known_to_python() {
        let guide = include_str!("../../docs/guide/api.md");
        let python = include_str!("../../python/src/hetpilot/errors.py");
        for code in ErrorCode::ALL {
            assert!(
                guide.contains(&format!("| `{code}` | {}", code.http_status())),
                "docs/guide/api.md lacks the row of `{code}` with its status"
            );
            assert!(
                python.contains(&format!("\"{code}\",")),
                "python/src/hetpilot/errors.py's CODES lacks `{code}`"
            );
        }
    }
}
