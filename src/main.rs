//! The `delta-operator` binary: the CLI and (later) the controller.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
