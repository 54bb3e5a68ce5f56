//! The `delta-operator` binary: the CLI and (later) the controller.

use std::process::ExitCode;

use clap::Parser;

/// glibc's malloc gives each thread that contends for it an arena of its own (up to
/// eight per core) and keeps what is freed in them: a lake rewrite, whose batches are
/// made on one thread and freed on another, then holds more memory the longer it runs
/// (measured: 381 MiB for a 463 MB table against 189 MiB with two arenas,
/// `docs/performance.md`). Two arenas keep its memory fixed; the operator's work is
/// async on a few threads, so little contends.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc() {
    // SAFETY: mallopt only sets a tunable of glibc's allocator; called first thing in
    // main, before any other thread exists. An explicit MALLOC_ARENA_MAX wins.
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

fn main() -> ExitCode {
    tune_malloc();
    // installed as `kubectl-delta`, the binary is the kubectl plugin
    let plugin = std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().starts_with("kubectl-delta"))
        })
        .unwrap_or(false);
    let cli = if plugin {
        let p = delta_operator::cli::kubectl::KubectlCli::parse();
        delta_operator::cli::Cli {
            config: None,
            command: delta_operator::cli::Command::Kubectl(p.args),
        }
    } else {
        delta_operator::cli::Cli::parse()
    };
    // kube (ring) and reqwest (aws-lc-rs) both bring a rustls provider: pick one for the process
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    delta_operator::cli::init_tracing();
    let code = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(delta_operator::cli::run(cli)),
        Err(e) => delta_operator::cli::finish(Err(delta_operator::cli::CliError::Runtime(e))),
    };
    ExitCode::from(code)
}
