//! The Workspace files API (import, export, list, delete, mkdirs) and the
//! base64 its contents travel in.

use super::http::Resend;
use super::{ClientError, DatabricksClient, does_not_exist};
use reqwest::Method;
use serde_json::{Value, json};

impl DatabricksClient {
    // ------------------------------------------------------------ Workspace

    /// `POST /api/2.0/workspace/import` of one small file (format `AUTO`: a
    /// `.json` name is imported as a workspace file, not a notebook). Without
    /// `overwrite`, an existing path is `RESOURCE_ALREADY_EXISTS`; a missing
    /// parent folder is `RESOURCE_DOES_NOT_EXIST`.
    /// <https://docs.databricks.com/api/workspace-files/v1/import.md>
    pub async fn workspace_import(
        &self,
        path: &str,
        bytes: &[u8],
        overwrite: bool,
    ) -> Result<(), ClientError> {
        let url = self.url(&["api", "2.0", "workspace", "import"])?;
        let body = json!({
            "path": path,
            "format": "AUTO",
            "content": base64_encode(bytes),
            "overwrite": overwrite,
        });
        // safe to resend: a lost answer to a create is sorted out by the caller
        // (RESOURCE_ALREADY_EXISTS with our own bytes there is our create)
        self.call(Method::POST, url, Some(&body), Resend::Safe)
            .await
            .map(|_| ())
    }

    /// `GET /api/2.0/workspace/export` of a file (`{content: base64, file_type}`),
    /// `None` when the path does not exist.
    /// <https://docs.databricks.com/api/workspace-objects/v1/export.md>
    pub async fn workspace_export(&self, path: &str) -> Result<Option<Vec<u8>>, ClientError> {
        match self
            .get(
                &["api", "2.0", "workspace", "export"],
                &[("path", path), ("format", "AUTO")],
            )
            .await
        {
            Ok(v) => {
                let content = v.get("content").and_then(Value::as_str).unwrap_or("");
                base64_decode(content).map(Some).ok_or_else(|| {
                    ClientError::Transient(format!(
                        "the workspace file {path} came back in a form that is not base64"
                    ))
                })
            }
            Err(e) if does_not_exist(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `GET /api/2.0/workspace/list` (`{objects: [{path, object_type, …}]}`),
    /// `None` when the folder does not exist.
    /// <https://docs.databricks.com/api/workspace-files/v1/list.md>
    pub async fn workspace_list(&self, path: &str) -> Result<Option<Vec<Value>>, ClientError> {
        match self
            .get(&["api", "2.0", "workspace", "list"], &[("path", path)])
            .await
        {
            Ok(v) => Ok(Some(
                v.get("objects")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            )),
            Err(e) if does_not_exist(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `POST /api/2.0/workspace/delete` (not recursive): false when nothing was
    /// there. A folder that is not empty is `DIRECTORY_NOT_EMPTY`.
    /// <https://docs.databricks.com/api/workspace-files/v1/delete.md>
    pub async fn workspace_delete(&self, path: &str) -> Result<bool, ClientError> {
        let url = self.url(&["api", "2.0", "workspace", "delete"])?;
        let body = json!({ "path": path, "recursive": false });
        match self
            .call(Method::POST, url, Some(&body), Resend::Safe)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if does_not_exist(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `POST /api/2.0/workspace/mkdirs`: the folder and its parents (one that exists is fine).
    /// <https://docs.databricks.com/api/workspace-files/v1/mkdirs.md>
    pub async fn workspace_mkdirs(&self, path: &str) -> Result<(), ClientError> {
        let url = self.url(&["api", "2.0", "workspace", "mkdirs"])?;
        self.call(
            Method::POST,
            url,
            Some(&json!({ "path": path })),
            Resend::Safe,
        )
        .await
        .map(|_| ())
    }
}

pub(super) const BASE64: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (the Workspace API's `content`).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 (padding optional, whitespace ignored); `None` when it is not base64.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        if c == b'=' {
            break;
        }
        let v = BASE64.iter().position(|x| *x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}
