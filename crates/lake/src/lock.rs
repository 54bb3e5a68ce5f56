//! The lake's table lock: the shared lock logic
//! ([`delta_operator_backend::lock`]: entries created only if absent, renewal,
//! takeover after expiry or of a dead holder here, fencing, heartbeats) with
//! its entries under the lake root, `.locks/<catalog>/<schema>/<table>/<n>.json`:
//! an exclusive create on disk, a conditional put on an object store, as the
//! Delta log itself is written.

use super::storage::Root;
use delta_operator_backend::BackendError;
pub use delta_operator_backend::lock::*;

/// A held lock on a table of the lake.
pub type TableLock = delta_operator_backend::lock::TableLock<Root>;

impl LockStore for Root {
    async fn create(&self, rel: &str, bytes: &[u8]) -> Result<bool, BackendError> {
        self.create_file(rel, bytes).await
    }

    async fn put(&self, rel: &str, bytes: &[u8]) -> Result<(), BackendError> {
        self.put_file(rel, bytes).await
    }

    async fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, BackendError> {
        self.read_file(rel).await
    }

    async fn list(&self, rel: &str) -> Result<Vec<String>, BackendError> {
        Ok(self
            .list_files(rel)
            .await?
            .into_iter()
            .map(|(name, _)| name)
            .collect())
    }

    async fn delete(&self, rel: &str) -> Result<(), BackendError> {
        self.delete_file(rel).await
    }

    async fn remove_folder_if_empty(&self, rel: &str) {
        self.remove_if_empty(rel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::TableRef;
    use std::time::Duration;

    fn table() -> TableRef {
        TableRef::new("main", "sales", "t")
    }

    async fn write_beat(root: &Root, run: &str, host: &str, pid: u32, age_ms: u64) {
        let written = now_ms() - age_ms;
        let hb = Heartbeat {
            run: run.into(),
            host: host.into(),
            pid,
            pid_start: None,
            written_ms: written,
            stale_after_ms: written + 2 * DEFAULT_TTL.as_millis() as u64,
        };
        root.put_file(
            &heartbeat_rel(&table(), run),
            &serde_json::to_vec(&hb).unwrap(),
        )
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn a_run_elsewhere_is_alive_until_its_heartbeat_is_two_lifetimes_old() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::parse(dir.path().to_str().unwrap()).unwrap();
        let t = table();
        let ttl_ms = DEFAULT_TTL.as_millis() as u64;
        write_beat(&root, "a-1", "another-host", 1, ttl_ms).await;
        assert!(run_may_be_alive(&root, &t, "a-1", None).await.unwrap());
        write_beat(&root, "a-2", "another-host", 1, 2 * ttl_ms + 1000).await;
        assert!(!run_may_be_alive(&root, &t, "a-2", None).await.unwrap());
        // Spark Connect's staging copies carry the run's last digits
        assert!(run_may_be_alive(&root, &t, "1", None).await.unwrap());
    }

    #[tokio::test]
    async fn a_run_here_is_alive_while_its_process_runs_whatever_its_heartbeats_age() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::parse(dir.path().to_str().unwrap()).unwrap();
        let t = table();
        let old = 10 * DEFAULT_TTL.as_millis() as u64;
        // this very process (a stopped process is still alive: it may wake up and commit)
        write_beat(&root, "b-1", &this_host(), std::process::id(), old).await;
        assert!(run_may_be_alive(&root, &t, "b-1", None).await.unwrap());
        // a pid that runs nothing
        write_beat(&root, "b-2", &this_host(), u32::MAX - 1, 0).await;
        assert!(!run_may_be_alive(&root, &t, "b-2", None).await.unwrap());
    }

    #[tokio::test]
    async fn a_run_without_a_heartbeat_is_alive_for_two_lifetimes_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::parse(dir.path().to_str().unwrap()).unwrap();
        let t = table();
        let now = now_ms() as i64;
        assert!(run_may_be_alive(&root, &t, "c-1", Some(now)).await.unwrap());
        let long_ago = now - 3 * DEFAULT_TTL.as_millis() as i64;
        assert!(
            !run_may_be_alive(&root, &t, "c-2", Some(long_ago))
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn the_fence_fails_when_others_wrote_past_it_and_pruned_its_next_number() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::parse(dir.path().to_str().unwrap()).unwrap();
        let t = table();
        let held = acquire(&root, &t, "me", "r-1", DEFAULT_TTL, Duration::from_secs(1))
            .await
            .unwrap()
            .unwrap();
        let mine = held.seq().await;
        // while it stalled, another apply took the table over, renewed and released,
        // and its pruning removed the entries below its newest two
        let other = Entry {
            run: "r-2".into(),
            holder: "other".into(),
            ..held.me().clone()
        };
        for n in mine + 1..=mine + 4 {
            root.create_file(&entry_rel(&t, n), &serde_json::to_vec(&other).unwrap())
                .await
                .unwrap();
        }
        prune(&root, &t, mine + 4).await;
        assert!(
            root.read_file(&entry_rel(&t, mine + 1))
                .await
                .unwrap()
                .is_none(),
            "its next number is free again"
        );
        let err = held.fence().await.expect_err("another wrote past it");
        assert!(err.contains("lost its lock"), "{err}");
    }

    #[tokio::test]
    async fn the_fence_fails_once_anyone_else_wrote_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::parse(dir.path().to_str().unwrap()).unwrap();
        let t = table();
        let wait = Duration::from_secs(1);
        let held = acquire(&root, &t, "me", "r-1", DEFAULT_TTL, wait)
            .await
            .unwrap()
            .unwrap();
        held.fence().await.expect("held: the fence renews it");
        held.fence().await.expect("and again");
        // a live holder here is not broken without force
        assert!(matches!(
            unlock(&root, &t, "someone", false).await.unwrap(),
            Unlocked::HolderMayBeAlive(_)
        ));
        assert!(matches!(
            unlock(&root, &t, "someone", true).await.unwrap(),
            Unlocked::Broken(_)
        ));
        let err = held.fence().await.expect_err("lost");
        assert!(err.contains("lost its lock"), "{err}");
        assert!(!held.is_held());
        // the heartbeat outlives the loss until the run ends
        assert!(run_may_be_alive(&root, &t, "r-1", None).await.unwrap());
        held.release().await;
        assert!(
            root.read_file(&heartbeat_rel(&t, "r-1"))
                .await
                .unwrap()
                .is_none()
        );
    }
}
