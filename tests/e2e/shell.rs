//! The shell: it renders, talks to its backend both ways, and shows typed errors.

use art_testkit::e2e::AppSession;

#[tokio::test(flavor = "current_thread")]
async fn shell_renders_and_round_trips_with_the_backend() {
    let app = AppSession::launch().await;
    app.wait_for("aside.sidebar").await;
    app.wait_for("#new-thread").await;
    app.wait_for("#thread-list").await;

    // The backend answered the UI's handshake through the event channel.
    let status = app
        .wait_for_text("#backend-status.ready", "connected")
        .await;
    assert!(status.contains(env!("CARGO_PKG_VERSION")), "{status}");

    // The About panel renders the `app_info` command.
    app.click("#about-button").await;
    let version = app.wait_for_text("#about-version", ".").await;
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let data_dir = app.data_dir().display().to_string();
    let shown_dir = app.wait_for_text("#about-data-dir", &data_dir).await;
    assert!(shown_dir.contains("overridden"), "{shown_dir}");
    let db = app.wait_for_text("#about-database", &data_dir).await;
    assert!(db.ends_with("art-workbench.sqlite3"), "{db}");
    // The test session has an unlocked gnome-keyring.
    app.wait_for_text("#about-keychain", "Available").await;

    // The app created its data directory and writes its log there.
    assert!(app.data_dir().join("logs").is_dir());

    let shot = app.screenshot("shell-about").await;
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000);
    app.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn unusable_data_dir_reaches_the_ui_as_a_typed_error() {
    let holder = tempfile::tempdir().unwrap();
    let file = holder.path().join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let app = AppSession::launch_with(holder, &file.join("data")).await;

    // The window still opens and the backend still answers.
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click("#about-button").await;
    let code = app
        .wait_for_text(".error-card .error-code", "DATA_DIR")
        .await;
    assert_eq!(code, "DATA_DIR_UNAVAILABLE");
    let message = app
        .wait_for_text(".error-card .error-message", "cannot create")
        .await;
    assert!(message.contains("not-a-directory"), "{message}");
    app.screenshot("shell-data-dir-error").await;
    app.close().await;
}
