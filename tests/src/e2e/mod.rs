//! WebDriver sessions on the real app. `cargo xtask test` starts tauri-driver and sets:
//! - `ART_E2E_WEBDRIVER`: the tauri-driver URL, e.g. `http://127.0.0.1:4444`;
//! - `ART_E2E_APP`: absolute path of the app binary under test;
//! - `ART_E2E_ARTIFACTS`: folder for screenshots.
//!
//! Every session is hermetic: [`sentinel`] holds the app's default addresses, and a
//! session during which the app connected to one fails when it closes.

pub mod browser;
pub mod sentinel;

use std::path::{Path, PathBuf};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use tokio::sync::{Mutex, MutexGuard};

/// A key-shaped variable `cargo xtask test` puts in the environment of the apps under
/// test (through tauri-driver), so tests can prove it goes nowhere it should not.
pub const SENTINEL_KEY_VAR: &str = "ART_E2E_SENTINEL_API_KEY";

/// The environments (`NAME=value` each) of the running processes of the app under test
/// (Linux: read from `/proc`).
pub fn app_environments() -> Vec<Vec<String>> {
    let app = std::fs::canonicalize(env("ART_E2E_APP")).unwrap_or_default();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|exe| exe == app))
        .filter_map(|e| std::fs::read(e.path().join("environ")).ok())
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter(|v| !v.is_empty())
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        })
        .collect()
}

/// How long to wait for the UI to show something before failing.
pub const UI_TIMEOUT: Duration = Duration::from_secs(20);

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the end-to-end tests through `cargo xtask test`")
    })
}

/// tauri-driver drives one app at a time: sessions in one test binary take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// One running app under WebDriver control, with its own data directory.
pub struct AppSession {
    client: Client,
    data_dir: Option<tempfile::TempDir>,
    /// Set until the session is closed: a test that panics still ends its session on
    /// drop, so the next test can start one (tauri-driver allows one at a time).
    open_session: Option<String>,
    /// Connections to default addresses before this session ([`sentinel::count`]).
    knocks_before: usize,
    _turn: MutexGuard<'static, ()>,
}

/// End a WebDriver session with a plain blocking `DELETE /session/{id}` (usable in Drop,
/// where the async client cannot be awaited).
fn delete_session(webdriver: &str, session: &str) {
    use std::io::{Read, Write};
    let Some(host) = webdriver.strip_prefix("http://") else {
        return;
    };
    let host = host.trim_end_matches('/');
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "DELETE /session/{session} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_ok() {
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
    }
}

impl Drop for AppSession {
    fn drop(&mut self) {
        if let Some(session) = self.open_session.take() {
            delete_session(&env("ART_E2E_WEBDRIVER"), &session);
        }
    }
}

/// Make the Ollama server at `url` the one the app in `data_dir` manages, unless the
/// data directory already names one (a relaunch keeps its own).
async fn seed_ollama(data_dir: &Path, url: &str) {
    use art::storage::sqlite::SqliteStorage;
    let path = data_dir.join(art::paths::DATABASE_FILE);
    let storage = match SqliteStorage::open(&path) {
        Ok(storage) => std::sync::Arc::new(storage),
        // A data directory made unusable on purpose: the app says so, and asks nothing.
        Err(e) => return eprintln!("note: no Ollama address seeded in {path:?}: {e}"),
    };
    let settings = art::settings::SettingsStore::new(storage);
    settings
        .update(|s| {
            s.ollama_base_url.get_or_insert_with(|| url.to_owned());
        })
        .await
        .expect("seed the app's Ollama address");
}

impl AppSession {
    /// Launch the app with a fresh, empty data directory.
    pub async fn launch() -> Self {
        let data_dir = tempfile::tempdir().expect("temp data dir");
        let arg = data_dir.path().to_path_buf();
        Self::launch_with(data_dir, &arg).await
    }

    /// Launch the app with `--data-dir <dir>` (which may be deliberately unusable).
    pub async fn launch_with(data_dir: tempfile::TempDir, dir_arg: &Path) -> Self {
        Self::launch_args(
            data_dir,
            vec!["--data-dir".into(), dir_arg.display().to_string()],
        )
        .await
    }

    /// Launch the app with a fresh data directory, saving exports into `export_dir`
    /// without the save dialog (`--export-dir`).
    pub async fn launch_exporting(export_dir: &Path) -> Self {
        let data_dir = tempfile::tempdir().expect("temp data dir");
        let args = vec![
            "--data-dir".into(),
            data_dir.path().display().to_string(),
            "--export-dir".into(),
            export_dir.display().to_string(),
        ];
        Self::launch_args(data_dir, args).await
    }

    /// Launch the app with a fresh data directory, its "Attach" taking the files of
    /// `pick_dir` without the file picker (`--pick-dir`) and exports saved into
    /// `export_dir` without the save dialog.
    pub async fn launch_picking(pick_dir: &Path, export_dir: &Path) -> Self {
        let data_dir = tempfile::tempdir().expect("temp data dir");
        let args = vec![
            "--data-dir".into(),
            data_dir.path().display().to_string(),
            "--pick-dir".into(),
            pick_dir.display().to_string(),
            "--export-dir".into(),
            export_dir.display().to_string(),
        ];
        Self::launch_args(data_dir, args).await
    }

    /// Launch the app with a fresh data directory whose Models page (and first run)
    /// manages the Ollama server at `url` — as if the user's machine ran it there.
    pub async fn launch_with_ollama(url: &str) -> Self {
        let data_dir = tempfile::tempdir().expect("temp data dir");
        seed_ollama(data_dir.path(), url).await;
        let arg = data_dir.path().to_path_buf();
        Self::launch_with(data_dir, &arg).await
    }

    async fn launch_args(data_dir: tempfile::TempDir, args: Vec<String>) -> Self {
        // The search model, as if downloaded before: the app embeds passages without
        // reaching a hub (the sentinel holds the one it would reach).
        crate::embedder::install_in(data_dir.path());
        // A fresh data directory's Ollama is one that is not running (unless the test
        // gave one): the welcome page looks for it at once.
        seed_ollama(data_dir.path(), &sentinel::absent_ollama()).await;
        let turn = ONE_AT_A_TIME.lock().await;
        if let Err(e) = sentinel::start() {
            panic!("{e}");
        }
        let knocks_before = sentinel::count();
        let caps = serde_json::json!({
            "browserName": "wry",
            "tauri:options": {
                "application": env("ART_E2E_APP"),
                "args": args,
            }
        });
        let serde_json::Value::Object(caps) = caps else {
            unreachable!("capabilities literal is an object")
        };
        let client = ClientBuilder::native()
            .capabilities(caps)
            .connect(&env("ART_E2E_WEBDRIVER"))
            .await
            .expect("WebDriver session on the app (is tauri-driver running?)");
        let open_session = client.session_id().await.ok().flatten();
        Self {
            client,
            data_dir: Some(data_dir),
            open_session,
            knocks_before,
            _turn: turn,
        }
    }

    /// The data directory the app was given.
    pub fn data_dir(&self) -> &Path {
        self.data_dir
            .as_ref()
            .map(tempfile::TempDir::path)
            .expect("data dir until closed")
    }

    /// Wait until an element matching `css` exists, then return it.
    pub async fn wait_for(&self, css: &str) -> Element {
        let found = self
            .client
            .wait()
            .at_most(UI_TIMEOUT)
            .for_element(Locator::Css(css))
            .await;
        match found {
            Ok(element) => element,
            Err(e) => {
                let shot = self.screenshot("failure").await;
                panic!(
                    "`{css}` did not appear within {UI_TIMEOUT:?}: {e}\npage text: {:?}\nscreenshot: {}",
                    self.page_text().await,
                    shot.display()
                )
            }
        }
    }

    /// Run `js` in the page (e.g. to scroll), ignoring its result.
    pub async fn run_script(&self, js: &str) {
        self.client
            .execute(js, Vec::new())
            .await
            .expect("script ran");
    }

    /// Run `js` as an asynchronous script (it ends by calling its last argument with a
    /// result) with `args` before that callback; returns the result.
    pub async fn eval_async(&self, js: &str, args: Vec<serde_json::Value>) -> serde_json::Value {
        match self.client.execute_async(js, args).await {
            Ok(value) => value,
            Err(e) => {
                let shot = self.screenshot("failure").await;
                panic!(
                    "script failed: {e}
screenshot: {}",
                    shot.display()
                )
            }
        }
    }

    /// Everything the window shows as text (for failure messages).
    pub async fn page_text(&self) -> String {
        match self.client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(e) => format!("<no body: {e}>"),
        }
    }

    /// Wait until the element matching `css` has text containing `needle`; return the text.
    pub async fn wait_for_text(&self, css: &str, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
        let mut last = String::new();
        while tokio::time::Instant::now() < deadline {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                last = el.text().await.unwrap_or_default();
                if last.contains(needle) {
                    return last;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let shot = self.screenshot("failure").await;
        panic!(
            "`{css}` never contained {needle:?}; last text: {last:?}\npage text: {:?}\nscreenshot: {}",
            self.page_text().await,
            shot.display()
        )
    }

    /// Click the element matching `css`. An element at the edge of a scrolled list
    /// (under the composer) is brought to the middle of its list first and clicked
    /// again, as a user would scroll to it.
    pub async fn click(&self, css: &str) {
        let element = self.wait_for(css).await;
        if element.click().await.is_ok() {
            return;
        }
        let centre = "arguments[0].scrollIntoView({block: 'center'});";
        let _ = self
            .client
            .execute(
                centre,
                vec![serde_json::to_value(&element).unwrap_or_default()],
            )
            .await;
        if let Err(e) = self.wait_for(css).await.click().await {
            let shot = self.screenshot("failure").await;
            panic!("cannot click `{css}`: {e}\nscreenshot: {}", shot.display());
        }
    }

    /// Click `css` until `gone` matches nothing (at most three clicks, 5 s apart): for a
    /// button whose card may be built again just as it is clicked (the run's page
    /// reloading under it), where a user would click again.
    pub async fn click_until_gone(&self, css: &str, gone: &str) {
        for _ in 0..3 {
            self.click(css).await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while tokio::time::Instant::now() < deadline {
                if self.count(gone).await == 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        self.wait_gone(gone).await;
    }

    /// Replace the text of the input or textarea matching `css` with `text`.
    pub async fn type_into(&self, css: &str, text: &str) {
        // The UI may re-render the field between finding and typing: find it again.
        let mut last_error = None;
        for _ in 0..3 {
            let element = self.wait_for(css).await;
            let typed = match element.clear().await {
                Ok(()) if text.is_empty() => Ok(()),
                Ok(()) => element.send_keys(text).await,
                Err(e) => Err(e),
            };
            match typed {
                Ok(()) => return,
                Err(e) => last_error = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let shot = self.screenshot("failure").await;
        panic!(
            "cannot type into `{css}`: {last_error:?}\nscreenshot: {}",
            shot.display()
        );
    }

    /// Send keys to the element matching `css` without clearing it (e.g. a shortcut).
    pub async fn press(&self, css: &str, keys: &str) {
        self.wait_for(css)
            .await
            .send_keys(keys)
            .await
            .expect("send keys");
    }

    /// Choose the option with `value` in the select matching `css`.
    pub async fn select(&self, css: &str, value: &str) {
        let element = self.wait_for(css).await;
        element.select_by_value(value).await.expect("select");
    }

    /// Choose the option shown as `label` in the select matching `css`.
    pub async fn select_label(&self, css: &str, label: &str) {
        let element = self.wait_for(css).await;
        element
            .select_by_label(label)
            .await
            .expect("select by label");
    }

    /// How many elements match `css` right now.
    pub async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .map_or(0, |found| found.len())
    }

    /// Wait until nothing matches `css`.
    pub async fn wait_gone(&self, css: &str) {
        self.wait_for_count(css, 0).await;
    }

    /// Wait until exactly `n` elements match `css` (what the view shows once the events
    /// and reloads in flight have arrived, in whatever order they do).
    pub async fn wait_for_count(&self, css: &str, n: usize) {
        let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
        loop {
            let found = self.count(css).await;
            if found == n {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "`{css}` matches {found}, not {n}, after {UI_TIMEOUT:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Save a PNG screenshot of the window into the artifacts folder; returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = PathBuf::from(env("ART_E2E_ARTIFACTS"));
        std::fs::create_dir_all(&dir).expect("artifacts dir");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        path
    }

    /// End the session (closes the app).
    pub async fn close(self) {
        self.close_keeping_data().await;
    }

    /// Close the app but keep its data directory, to launch it again on the same data.
    pub async fn close_keeping_data(mut self) -> tempfile::TempDir {
        self.client
            .clone()
            .close()
            .await
            .expect("close WebDriver session");
        self.open_session = None;
        let knocks = sentinel::since(self.knocks_before);
        assert!(
            knocks.is_empty(),
            "the app reached servers no test started (use a fake server's URL): {knocks:?}"
        );
        self.data_dir.take().expect("data dir until closed")
    }
}
