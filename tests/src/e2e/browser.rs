//! A web page as a person sees it, for screenshots of what other tools show (Phoenix's
//! view of a pushed trace): WebKitGTK's MiniBrowser (installed with WebKitGTK, which the
//! app needs anyway) under its own WebKitWebDriver, on the test session's display.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{ClientBuilder, Locator};

/// Where WebKitGTK keeps its MiniBrowser (Debian and Ubuntu).
const MINI_BROWSER: &str = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";

/// Open `url`, wait until the page's text contains `needle` (up to `patience`), and save
/// a screenshot as `name.png` among the test's artifacts; returns its path.
pub async fn screenshot_page(url: &str, needle: &str, name: &str, patience: Duration) -> PathBuf {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut driver = tokio::process::Command::new("WebKitWebDriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("WebKitWebDriver starts (webkit2gtk-driver; `cargo xtask test` installs it)");
    let caps = serde_json::json!({
        "webkitgtk:browserOptions": { "binary": MINI_BROWSER, "args": ["--automation"] },
    });
    let serde_json::Value::Object(caps) = caps else {
        unreachable!("capabilities literal is an object")
    };
    let address = format!("http://127.0.0.1:{port}");
    let mut client = None;
    for _ in 0..50 {
        match ClientBuilder::native()
            .capabilities(caps.clone())
            .connect(&address)
            .await
        {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let client = client.expect("a MiniBrowser session");
    let _ = client.set_window_rect(0, 0, 1400, 900).await;
    client.goto(url).await.expect("the page opens");
    let deadline = tokio::time::Instant::now() + patience;
    let mut text = String::new();
    while tokio::time::Instant::now() < deadline {
        if let Ok(body) = client.find(Locator::Css("body")).await {
            text = body.text().await.unwrap_or_default();
            if text.contains(needle) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Fonts and icons settle after the text.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let png = client.screenshot().await.expect("screenshot");
    let _ = client.close().await;
    let _ = driver.kill().await;
    let dir = PathBuf::from(super::env("ART_E2E_ARTIFACTS"));
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    assert!(
        text.contains(needle),
        "{url} never showed {needle:?}; it showed: {text:?}; screenshot: {}",
        path.display()
    );
    path
}
