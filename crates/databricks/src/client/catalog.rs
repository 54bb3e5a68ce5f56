//! Unity Catalog reads: tables (views among them), functions, volumes,
//! schemas, permissions and tags.

use super::{ClientError, DatabricksClient};
use serde_json::{Value, json};

impl DatabricksClient {
    // ------------------------------------------------------------ Unity Catalog

    /// Every table of a schema with columns and properties, page by page.
    pub async fn list_tables(
        &self,
        catalog: &str,
        schema: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let q = [("catalog_name", catalog), ("schema_name", schema)];
        self.pages(&["api", "2.1", "unity-catalog", "tables"], &q, "tables")
            .await
    }

    /// One table, `None` when it does not exist.
    pub async fn get_table(&self, full_name: &str) -> Result<Option<Value>, ClientError> {
        match self
            .get(&["api", "2.1", "unity-catalog", "tables", full_name], &[])
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Workspace(w)) if w.http_status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One schema, `None` when it does not exist.
    pub async fn get_schema(&self, full_name: &str) -> Result<Option<Value>, ClientError> {
        match self
            .get(&["api", "2.1", "unity-catalog", "schemas", full_name], &[])
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Workspace(w)) if w.http_status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One catalog, `None` when it does not exist.
    pub async fn get_catalog(&self, name: &str) -> Result<Option<Value>, ClientError> {
        match self
            .get(&["api", "2.1", "unity-catalog", "catalogs", name], &[])
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Workspace(w)) if w.http_status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The direct privilege assignments on a securable (`schema`, `table`,
    /// `catalog`), every page as one `{privilege_assignments}`.
    pub async fn get_permissions(&self, kind: &str, full_name: &str) -> Result<Value, ClientError> {
        let path = [
            "api",
            "2.1",
            "unity-catalog",
            "permissions",
            kind,
            full_name,
        ];
        let all = self.pages(&path, &[], "privilege_assignments").await?;
        Ok(json!({ "privilege_assignments": all }))
    }

    /// The tag assignments of one entity (`tables`: `cat.sch.tbl`,
    /// `columns`: `cat.sch.tbl.col`): the entity tag assignments API, every page.
    pub async fn list_entity_tags(
        &self,
        entity_type: &str,
        entity_name: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let path = [
            "api",
            "2.1",
            "unity-catalog",
            "entity-tag-assignments",
            entity_type,
            entity_name,
            "tags",
        ];
        self.pages(&path, &[], "tag_assignments").await
    }

    /// Every SQL function of a schema, page by page (`GET …/functions?catalog_name&schema_name`).
    pub async fn list_functions(
        &self,
        catalog: &str,
        schema: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let q = [("catalog_name", catalog), ("schema_name", schema)];
        self.pages(
            &["api", "2.1", "unity-catalog", "functions"],
            &q,
            "functions",
        )
        .await
    }

    /// One function, `None` when it does not exist (`GET …/functions/{full_name}`).
    pub async fn get_function(&self, full_name: &str) -> Result<Option<Value>, ClientError> {
        match self
            .get(
                &["api", "2.1", "unity-catalog", "functions", full_name],
                &[],
            )
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Workspace(w)) if w.http_status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every volume of a schema, page by page (`GET …/volumes?catalog_name&schema_name`).
    pub async fn list_volumes(
        &self,
        catalog: &str,
        schema: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let q = [("catalog_name", catalog), ("schema_name", schema)];
        self.pages(&["api", "2.1", "unity-catalog", "volumes"], &q, "volumes")
            .await
    }
}
