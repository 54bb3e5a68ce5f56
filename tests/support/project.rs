//! A project as the CLI tests make one: a folder `m` of manifests holding the
//! DeltaSchema `sales` (catalog `main`), and a config whose one target,
//! `local`, is a lake.

use std::path::{Path, PathBuf};

pub struct Project {
    pub dir: tempfile::TempDir,
    /// The manifests folder (`m`, which the commands are given as `-f m`).
    pub manifests: PathBuf,
    /// The config file's path (`--config`).
    pub config: String,
}

impl Project {
    /// The lake at `root` (`./lake`: inside the project); `target_extra` is more
    /// YAML of the target `local`, each line indented by four spaces.
    pub fn lake(root: &str, target_extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("m");
        std::fs::create_dir(&manifests).unwrap();
        std::fs::write(
            manifests.join("sales.yaml"),
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: sales}\nspec: {catalog: main}\n",
        )
        .unwrap();
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            format!("targets:\n  local:\n    lake: {{root: {root}}}\n{target_extra}defaultTarget: local\n"),
        )
        .unwrap();
        Project {
            config: config.to_str().unwrap().to_string(),
            dir,
            manifests,
        }
    }

    /// The project's folder (where the commands run).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the manifest `file` of the manifests folder.
    pub fn manifest(&self, file: &str, yaml: &str) {
        std::fs::write(self.manifests.join(file), yaml).unwrap();
    }
}
