//! The workspace's refusals: its error envelopes and failed statements read
//! into the engine's `Refusal` (whose text and advice the SQL crate owns).

use delta_operator_sql::Refusal;
use serde_json::Value;

/// A refusal of the workspace: a non-2xx response, or a statement that ended FAILED.
pub type WorkspaceError = Refusal;

/// Reads the workspace's refusals (`WorkspaceError::from_response(..)`).
pub trait FromWorkspace {
    /// Parses a non-2xx body: the JSON envelope `{error_code, message, details}`,
    /// the legacy `{error}` / SCIM `{detail}` / OAuth `{error_description}` forms,
    /// or plain text.
    fn from_response(status: u16, body: &str, header_request_id: Option<String>) -> Self;
    /// Parses `status` of a statement that ended FAILED.
    fn from_statement(statement_id: &str, status: &Value, request_id: Option<String>) -> Self;
}

impl FromWorkspace for Refusal {
    /// Parses a non-2xx body: the JSON envelope `{error_code, message, details}`,
    /// the legacy `{error}` / SCIM `{detail}` / OAuth `{error_description}` forms,
    /// or plain text.
    fn from_response(status: u16, body: &str, header_request_id: Option<String>) -> Self {
        let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        // some legacy endpoints put the HTTP status (a number) in error_code: treat it as absent
        let error_code =
            s("error_code").or_else(|| s("error").filter(|_| v.get("error_description").is_some()));
        let message = s("message")
            .or_else(|| s("error_description"))
            .or_else(|| s("detail"))
            .or_else(|| s("error"))
            .unwrap_or_else(|| {
                if body.trim().is_empty() {
                    format!("HTTP {status} with an empty body")
                } else {
                    body.trim().to_string()
                }
            });
        let detail_request_id = v
            .get("details")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|d| {
                d.get("request_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        Refusal {
            http_status: Some(status),
            error_code,
            sql_state: None,
            message,
            request_id: header_request_id.or(detail_request_id),
            statement_id: None,
        }
    }

    /// Parses `status` of a statement that ended FAILED.
    fn from_statement(statement_id: &str, status: &Value, request_id: Option<String>) -> Self {
        let err = status.get("error");
        let get = |v: Option<&Value>, k: &str| {
            v.and_then(|v| v.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Refusal {
            http_status: None,
            error_code: get(err, "error_code"),
            sql_state: get(Some(status), "sql_state").or_else(|| get(err, "sql_state")),
            message: get(err, "message")
                .unwrap_or_else(|| "the statement failed without a message".into()),
            request_id,
            statement_id: Some(statement_id.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelope_is_kept_verbatim() {
        let body = r#"{"error_code":"RESOURCE_DOES_NOT_EXIST","message":"Warehouse abc does not exist.","details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"r-1","serving_data":""}]}"#;
        let e = WorkspaceError::from_response(404, body, None);
        assert_eq!(e.error_code.as_deref(), Some("RESOURCE_DOES_NOT_EXIST"));
        assert_eq!(e.request_id.as_deref(), Some("r-1"));
        let text = e.to_string();
        assert!(text.starts_with("Warehouse abc does not exist.\n(error_code RESOURCE_DOES_NOT_EXIST · HTTP 404 · request id r-1)"), "{text}");
        assert!(text.contains("advice: "), "{text}");
        // the header wins over the detail
        assert_eq!(
            WorkspaceError::from_response(404, body, Some("h-2".into()))
                .request_id
                .as_deref(),
            Some("h-2")
        );
    }

    #[test]
    fn odd_bodies() {
        let e = WorkspaceError::from_response(502, "<html>Bad Gateway</html>", None);
        assert_eq!(e.message, "<html>Bad Gateway</html>");
        assert_eq!(e.advice(), None);
        let e =
            WorkspaceError::from_response(400, r#"{"error_code": 400, "message": "legacy"}"#, None);
        assert_eq!(e.error_code, None);
        let e = WorkspaceError::from_response(
            401,
            r#"{"error":"invalid_client","error_description":"Client authentication failed"}"#,
            None,
        );
        assert_eq!(e.message, "Client authentication failed");
        assert!(e.advice().is_some());
    }

    #[test]
    fn failed_statement() {
        let status = json!({"state": "FAILED", "sql_state": "42P01", "error": {"error_code": "BAD_REQUEST", "message": "[TABLE_OR_VIEW_NOT_FOUND] The table or view `main`.`x`.`y` cannot be found. SQLSTATE: 42P01"}});
        let e = WorkspaceError::from_statement("01ef", &status, Some("req".into()));
        assert_eq!(e.error_class(), Some("TABLE_OR_VIEW_NOT_FOUND"));
        let text = e.to_string();
        assert!(text.starts_with("[TABLE_OR_VIEW_NOT_FOUND] The table or view `main`.`x`.`y` cannot be found. SQLSTATE: 42P01\n(error_code BAD_REQUEST · SQLSTATE 42P01 · statement 01ef · request id req)\n\nadvice: Databricks reports"), "{text}");
    }
}
