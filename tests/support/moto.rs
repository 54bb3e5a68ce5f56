//! An S3 endpoint served on 127.0.0.1 by moto (a real S3 API implementation
//! from PyPI, installed by `make test`), with the bucket `lake`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The moto server: stopped when dropped.
pub struct Moto(Child);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The environment a client of `moto()` on `port` needs: its endpoint, the
/// credentials moto accepts, plain HTTP, and delta-rs's S3 commits without a
/// locking provider.
pub fn env(port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_S3_ALLOW_UNSAFE_RENAME", "true".into()),
    ]
}

/// Starts moto's S3 server and creates the bucket `lake`.
pub fn moto() -> (Moto, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(super::python())
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto (pip package moto[server], installed by make test)");
    let guard = Moto(child);
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "moto did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = Command::new(super::python())
        .arg("-c")
        .arg(format!("import boto3\nboto3.client('s3', endpoint_url='http://127.0.0.1:{port}', region_name='us-east-1', aws_access_key_id='test', aws_secret_access_key='test').create_bucket(Bucket='lake')"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "create bucket: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (guard, port)
}
