//! A lake rewrite in a fixed memory: the binary, as a user runs it, rewrites a
//! table larger than the memory it is allowed, inside a memory cgroup (the
//! kernel OOM-kills the process past the limit, as a pod's limit does), and
//! every row is kept, read back by a reader outside the project (Python
//! deltalake). Needs root, the cgroup memory controller (v1 or v2) and GNU time
//! (`/usr/bin/time`, for the process's own peak): it fails loudly without them.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::output_text as text;
use support::py;

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");
const MIB: u64 = 1024 * 1024;

/// A memory cgroup of its own, removed when dropped.
struct MemoryCgroup {
    dir: PathBuf,
    v2: bool,
}

impl MemoryCgroup {
    fn new(limit: u64) -> MemoryCgroup {
        let name = format!("delta-operator-test-{}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/memory");
        let v2 = Path::new("/sys/fs/cgroup");
        let (dir, is_v2) = if v1.join("memory.limit_in_bytes").exists() {
            (v1.join(&name), false)
        } else if std::fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
        {
            (v2.join(&name), true)
        } else {
            panic!(
                "this test needs the cgroup memory controller (v1 at /sys/fs/cgroup/memory, or v2 with `memory` in /sys/fs/cgroup/cgroup.controllers)"
            );
        };
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| {
            panic!(
                "cannot make the memory cgroup {} (run as root: CI does): {e}",
                dir.display()
            )
        });
        let cg = MemoryCgroup { dir, v2: is_v2 };
        let file = if is_v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        std::fs::write(cg.dir.join(file), limit.to_string()).unwrap();
        if is_v2 {
            // no swap to hide in
            let _ = std::fs::write(cg.dir.join("memory.swap.max"), "0");
        }
        cg
    }

    /// Runs `args` of the binary inside the cgroup.
    fn run(&self, dir: &Path, args: &[&str]) -> Output {
        let procs = self.dir.join("cgroup.procs");
        Command::new("sh")
            .arg("-c")
            .arg(r#"echo $$ > "$0" && exec /usr/bin/time -f 'peak RSS %M KB' "$@""#)
            .arg(&procs)
            .arg(BIN)
            .args(args)
            .current_dir(dir)
            .env_remove("DELTA_OPERATOR_CONFIG")
            .env_remove("DELTA_OPERATOR_LAKE_MEMORY_MB")
            .output()
            .expect("run the binary in the cgroup")
    }

    /// The most memory the cgroup's processes used, as the kernel counted it (the
    /// page cache of the files they wrote included: the kernel reclaims it at the limit).
    fn peak(&self) -> Option<u64> {
        let file = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The times the kernel refused memory or killed a process for it.
    fn ooms(&self) -> u64 {
        if self.v2 {
            std::fs::read_to_string(self.dir.join("memory.events"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.strip_prefix("oom_kill "))
                .filter_map(|n| n.trim().parse::<u64>().ok())
                .sum()
        } else {
            std::fs::read_to_string(self.dir.join("memory.failcnt"))
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        }
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

const TABLE: &str = "lake/main/bench/wide";

fn manifest(columns: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: bench}}\nspec: {{catalog: main}}\n---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: wide}}\nspec:\n  schemaRef: bench\n  columns:\n{columns}\n"
    )
}

/// Rows, the sum of ids and a checksum of the payloads, as a reader outside the project sees them.
const FINGERPRINT: &str = "import deltalake, pyarrow.compute as pc, hashlib\n\
t = deltalake.DeltaTable('lake/main/bench/wide').to_pyarrow_table()\n\
h = hashlib.sha256()\n\
for chunk in t.sort_by('id').column('payload').chunks:\n    h.update(b''.join(v.encode() for v in chunk.to_pylist()))\n\
print(t.num_rows, pc.sum(t.column('id')).as_py(), h.hexdigest(), t.schema.field('num').type)";

#[test]
fn a_lake_table_larger_than_the_memory_limit_is_rewritten_with_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("t.yaml"),
        manifest(
            "    - {name: id, type: bigint, nullable: false}\n    - {name: num, type: int}\n    - {name: payload, type: string}",
        ),
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["apply", "-f", "t.yaml"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // 480 MB of incompressible text in 24 appends (row groups of 20 MB, as a job appending
    // batches writes them: the reader holds one input row group, the one part of the memory
    // the input's writer chooses)
    let size: u64 = py(
        d,
        &format!(
            "import deltalake, pyarrow as pa, os\n\
for k in range(24):\n    n = 20000\n    ids = list(range(k * n, (k + 1) * n))\n    \
deltalake.write_deltalake('{TABLE}', pa.table({{'id': pa.array(ids, pa.int64()), 'num': pa.array([i % 1000 for i in ids], pa.int32()), 'payload': [os.urandom(500).hex() for _ in ids]}}), mode='append')\n\
print(sum(os.path.getsize(u.removeprefix('file://')) for u in deltalake.DeltaTable('{TABLE}').file_uris()))"
        ),
    )
    .parse()
    .unwrap();
    let before = py(d, FINGERPRINT);
    assert!(before.starts_with("480000 "), "{before}");
    let limit = 256 * MIB;
    assert!(
        size > limit,
        "the table ({size} bytes) is larger than the limit"
    );
    let cg = MemoryCgroup::new(limit);

    // widening (write-once) and then narrowing back (staged: a value could be lost),
    // each in the cgroup, with the default budget
    for (step, num) in [("write-once", "bigint"), ("staged", "int")] {
        std::fs::write(
            d.join("t.yaml"),
            manifest(&format!(
                "    - {{name: id, type: bigint, nullable: false}}\n    - {{name: num, type: {num}}}\n    - {{name: payload, type: string}}"
            )),
        )
        .unwrap();
        let o = cg.run(d, &["apply", "-f", "t.yaml"]);
        let peak = cg.peak().unwrap_or(0);
        let rss = String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter_map(|l| l.strip_prefix("peak RSS "))
            .next_back()
            .unwrap_or("unknown (killed)")
            .to_string();
        println!(
            "{step} rewrite of a {} MiB table under a {} MiB limit: peak RSS {rss}; the cgroup's peak {} MiB (page cache included), exit {:?}",
            size / MIB,
            limit / MIB,
            peak / MIB,
            o.status.code()
        );
        assert!(
            o.status.success(),
            "the {step} rewrite did not finish under the limit (killed by the OOM killer? {} OOM events): {}",
            cg.ooms(),
            text(&o)
        );
        let after = py(d, FINGERPRINT);
        assert_eq!(
            after.rsplit_once(' ').unwrap().0,
            before.rsplit_once(' ').unwrap().0,
            "rows changed in the {step} rewrite"
        );
        assert!(
            after.ends_with(if num == "int" { " int32" } else { " int64" }),
            "{after}"
        );
    }
}
