//! Bad input at every door: the page calls the app's IPC commands with missing,
//! wrong-typed, unexpected and oversized payloads (a 50 MB message, 10,000 enabled tools, a
//! 5,000-character key). Every call is refused with our `{code, message}` saying what is
//! wrong (a missing, mistyped or unknown argument is named in `details.field` or the
//! message), the app keeps answering, and nothing was written: threads, messages,
//! settings, prompts, prices, MCP servers and keys are as before. Every command of
//! `art_types::commands::NAMES` has at least one case: a new command fails this test
//! until it gets its own.

use art_testkit::e2e::AppSession;
use serde_json::{Value, json};

/// Invoke each `[command, args]` of the list in order; resolve to one outcome each.
const CALL_ALL: &str = r#"
    const [cases, done] = arguments;
    const invoke = window.__TAURI__.core.invoke;
    const big = (n) => "x".repeat(n);
    const expand = (v) => {
        if (typeof v === "string" && v.startsWith("@big:")) return big(Number(v.slice(5)));
        if (typeof v === "string" && v === "@tools") return Array.from({ length: 10000 }, (_, i) => "tool_" + i);
        if (Array.isArray(v)) return v.map(expand);
        if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x)]));
        return v;
    };
    (async () => {
        const out = [];
        for (const [command, args] of cases) {
            try {
                const value = await invoke(command, expand(args));
                out.push({ ok: true, value: JSON.stringify(value).slice(0, 200) });
            } catch (error) {
                out.push({ ok: false, error });
            }
        }
        done(out);
    })();
"#;

/// What the app holds, to compare before and after.
const SNAPSHOT: &str = r#"
    const [thread, done] = arguments;
    const invoke = window.__TAURI__.core.invoke;
    (async () => {
        const threads = await invoke("list_threads");
        const messages = await invoke("list_messages", { threadId: thread });
        const config = await invoke("get_thread_config", { threadId: thread });
        const prompts = await invoke("list_prompts");
        const providers = await invoke("list_providers");
        const prices = await invoke("list_prices");
        const servers = (await invoke("list_mcp_servers")).map((s) => s.config);
        const settings = await invoke("get_app_settings");
        done(JSON.stringify({ threads, messages, config, prompts, providers, prices, servers, settings }));
    })().catch((e) => done("snapshot failed: " + JSON.stringify(e)));
"#;

#[tokio::test(flavor = "current_thread")]
async fn every_command_refuses_bad_input_and_writes_nothing() {
    let app = AppSession::launch().await;
    app.wait_for("#new-thread").await;
    let created = app
        .eval_async(
            r#"const [done] = arguments;
               window.__TAURI__.core.invoke("create_thread", { title: "Doors" }).then((t) => done(t.threadId));"#,
            Vec::new(),
        )
        .await;
    let thread = created.as_str().expect("a thread id").to_owned();
    let t = thread.as_str();
    let before = app.eval_async(SNAPSHOT, vec![json!(t)]).await;
    let many_runs: Vec<String> = (0..501).map(|i| format!("run-{i}")).collect();

    let cases = json!([
        ["rename_thread", {}],
        ["rename_thread", { "threadId": 42, "title": "x" }],
        ["rename_thread", { "threadId": t, "title": "" }],
        ["rename_thread", { "threadId": "no-such-thread", "title": "x" }],
        ["rename_thread", { "threadId": t, "title": "@big:100000" }],
        ["rename_thread", { "threadId": t, "title": "Renamed", "extra": true }],
        ["list_threads", { "bogus": 1 }],
        ["set_thread_config", { "threadId": t, "config": {}, "apply": "now" }],
        ["delete_thread", { "threadId": ["x"] }],
        ["list_messages", { "threadId": t, "limit": -1 }],
        ["list_messages", { "threadId": t, "limit": 100000 }],
        ["list_messages", { "threadId": t, "limit": "ten" }],
        ["list_messages", { "threadId": "no-such-thread" }],
        ["search", { "query": 5 }],
        ["search", { "query": "@big:10000" }],
        ["send_message", { "threadId": t }],
        ["send_message", { "threadId": t, "text": "" }],
        ["send_message", { "threadId": t, "text": "@big:50000000" }],
        ["send_message", { "threadId": 7, "text": "hi" }],
        ["send_message", { "threadId": "no-such-thread", "text": "hi" }],
        ["regenerate", { "threadId": t }],
        ["edit_and_resend", { "threadId": t, "messageId": "no-such-message", "text": "x" }],
        ["cancel_run", {}],
        ["list_observations", { "threadId": t, "traceIds": many_runs }],
        ["list_observations", { "threadId": t, "types": ["NOT_A_TYPE"] }],
        ["get_thread_config", { "threadId": 1 }],
        ["get_thread_config", { "threadId": "no-such-thread" }],
        ["set_thread_config", { "threadId": t, "config": 5 }],
        ["set_thread_config", { "threadId": t, "config": { "providerConfig": "ollama" } }],
        ["set_thread_config", { "threadId": t, "config": { "providerConfig": { "providerName": "ollama", "modelId": "m" }, "enabledTools": "@tools" } }],
        ["set_thread_config", { "threadId": t, "config": { "providerConfig": { "providerName": "ollama", "modelId": "@big:5000" } } }],
        ["set_thread_config", { "threadId": t, "config": { "providerConfig": { "providerName": "no-such-provider", "modelId": "m" } } }],
        ["list_models", { "provider": "no-such-provider" }],
        ["list_models", { "provider": 1 }],
        ["set_api_key", { "provider": "openai" }],
        ["set_api_key", { "provider": "openai", "key": "" }],
        ["set_api_key", { "provider": "openai", "key": "@big:5000" }],
        ["set_api_key", { "provider": "openai", "key": "two words" }],
        ["set_api_key", { "provider": "no-such-provider", "key": "sk-abcdefgh12345678" }],
        ["delete_api_key", { "provider": "no-such-provider" }],
        ["save_prompt", { "name": "", "content": "x" }],
        ["save_prompt", { "name": 5, "content": "x" }],
        ["save_prompt", { "name": "big", "content": "@big:50000000" }],
        ["delete_prompt", { "promptId": 3 }],
        ["export_traces", { "request": {} }],
        ["export_traces", { "request": { "format": "pdf", "scope": { "kind": "all" } } }],
        ["export_traces", { "request": { "format": "jsonl", "scope": { "kind": "thread", "threadId": "no-such-thread" } } }],
        ["export_traces", { "request": { "format": "jsonl", "scope": { "kind": "all" }, "path": "/etc/passwd" } }],
    ]);
    // (A second list: one `json!` of every case passes the macro's recursion limit.)
    let approvals = json!([
        ["decide_approval", { "threadId": t, "decision": { "decision": "maybe" } }],
        ["decide_approval", { "threadId": t, "decision": { "decision": "approve" } }],
        ["decide_approval", { "threadId": t, "decision": { "decision": "approve" }, "traceId": "no-such-column" }],
        ["decide_approval", { "threadId": t, "decision": { "decision": "approve" }, "traceId": 5 }],
        ["decide_approval", { "threadId": t, "decision": { "decision": "approve", "arguments": "@big:5000" } }],
        ["decide_approval", { "threadId": "no-such-thread", "decision": { "decision": "deny" } }],
        ["stop_waiting", { "threadId": t }],
        ["stop_waiting", { "threadId": 5 }],
    ]);
    let branches_and_usage = json!([
        ["list_branches", { "threadId": "no-such-thread" }],
        ["switch_branch", { "threadId": t, "messageId": "no-such-message" }],
        ["switch_branch", { "threadId": "no-such-thread", "messageId": "m" }],
        ["switch_branch", { "threadId": t }],
        ["fork_thread", { "threadId": t, "messageId": "no-such-message" }],
        ["fork_thread", { "threadId": "no-such-thread", "messageId": "m" }],
        ["get_usage", { "by": "week" }],
        ["get_usage", { "by": "day", "since": "last tuesday" }],
        ["get_usage", { "since": "2026-02-30" }],
        ["get_thread_usage", { "threadId": "no-such-thread" }],
        ["save_price", { "price": { "provider": "openai", "model": "m", "inputPerMillion": -1, "outputPerMillion": 1 } }],
        ["save_price", { "price": { "provider": "", "model": "m", "inputPerMillion": 1, "outputPerMillion": 1 } }],
        ["save_price", { "price": { "provider": "openai", "model": "m", "inputPerMillion": 1e12, "outputPerMillion": 1 } }],
        ["save_price", { "price": { "provider": "openai", "model": "m" } }],
        ["delete_price", { "provider": "openai", "model": "never-priced" }],
    ]);
    let the_rest = json!([
        ["app_info", { "bogus": 1 }],
        ["ui_ready", { "bogus": 1 }],
        ["create_thread", { "title": 5 }],
        ["list_providers", { "bogus": 1 }],
        ["list_prompts", { "bogus": 1 }],
        ["list_prices", { "bogus": 1 }],
        ["list_tools", { "bogus": 1 }],
        ["highlight_code", { "blocks": 5 }],
        ["highlight_code", { "blocks": [{ "language": "rust" }] }],
        ["highlight_code", { "blocks": [{ "language": "rust", "code": "x", "theme": "dark" }] }],
        ["ollama_doctor", { "baseUrl": 5 }],
        ["ollama_doctor", { "baseUrl": "ftp://127.0.0.1:11434" }],
        ["list_mcp_servers", { "bogus": 1 }],
        ["save_mcp_server", { "config": {} }],
        ["save_mcp_server", { "config": { "name": "", "transport": { "type": "stdio", "command": "x" } } }],
        ["save_mcp_server", { "config": { "name": "x", "transport": { "type": "carrier-pigeon" } } }],
        ["save_mcp_server", { "config": { "name": "web", "transport": { "type": "http", "url": "not a url" } } }],
        ["remove_mcp_server", { "name": "no-such-server" }],
        ["restart_mcp_server", { "name": "no-such-server" }],
        ["list_mcp_tools", { "name": 5 }],
        ["import_mcp_servers", { "json": "not json" }],
        ["import_mcp_servers", { "json": "{\"mcpServers\": 5}" }],
        ["save_mcp_server", { "config": { "name": "web", "transport": { "type": "http", "url": "http://127.0.0.1:9/mcp" }, "oauth": { "clientSecret": true } } }],
        ["save_mcp_server", { "config": { "name": "web", "transport": { "type": "http", "url": "http://127.0.0.1:9/mcp" }, "oauth": { "clientMetadataUrl": "http://x/doc.json" } } }],
        ["sign_in_mcp_server", { "name": "no-such-server" }],
        ["sign_in_mcp_server", {}],
        ["cancel_mcp_sign_in", { "name": 5 }],
        ["sign_out_mcp_server", { "name": "no-such-server" }],
        ["answer_question", { "questionId": "no-such-question", "answer": { "action": "decline" } }],
        ["answer_question", { "questionId": "q", "answer": { "action": "maybe" } }],
        ["answer_question", {}],
        ["list_mcp_prompts", { "bogus": 1 }],
        ["use_mcp_prompt", { "server": "no-such-server", "name": "p" }],
        ["use_mcp_prompt", { "server": "s" }],
        ["use_mcp_prompt", { "server": "s", "name": "p", "arguments": { "city": 5 } }],
        ["list_mcp_resources", { "server": "no-such-server" }],
        ["list_mcp_resources", {}],
        ["list_mcp_resource_templates", { "server": "no-such-server" }],
        ["attach_mcp_resource", { "server": "no-such-server", "uri": "demo://x" }],
        ["attach_mcp_resource", { "server": "s", "uri": 5 }],
    ]);
    let ghost = json!({ "id": "e".repeat(64), "name": "ghost.png", "mime": "image/png", "size": 3,
        "kind": { "type": "image", "width": 1, "height": 1 } });
    let attachments = json!([
        ["attach_bytes", { "name": "x.png", "data": "not base64!!" }],
        ["attach_bytes", { "name": "empty.txt", "data": "" }],
        ["attach_bytes", { "name": "binary.txt", "data": "AAEC/w==" }],
        ["attach_bytes", { "name": "page.pdf", "data": "PCFkb2N0eXBlIGh0bWw+PHA+aGk8L3A+" }],
        ["attach_bytes", { "name": "x", "data": 5 }],
        ["read_attachment", { "attachment": ghost }],
        ["read_attachment", { "attachment": {} }],
        ["pick_attachments", { "bogus": 1 }],
        ["send_message", { "threadId": t, "text": "", "attachments": [ghost] }],
        ["send_message", { "threadId": t, "text": "hi", "attachments": "none" }],
    ]);
    let knowledge = json!([
        ["list_collections", { "bogus": 1 }],
        ["create_collection", { "name": "" }],
        ["create_collection", { "name": "@big:81" }],
        ["create_collection", {}],
        ["rename_collection", { "id": "no-such-collection", "name": "X" }],
        ["rename_collection", { "id": "no-such-collection" }],
        ["set_collection_embedder", { "id": "no-such-collection", "model": "builtin:all-MiniLM-L6-v2" }],
        ["set_collection_embedder", { "id": "no-such-collection" }],
        ["delete_collection", { "id": "no-such-collection" }],
        ["list_documents", { "collection": "no-such-collection" }],
        ["add_to_collection", { "collection": "no-such-collection" }],
        ["add_to_collection", { "collection": "no-such-collection", "folder": "yes" }],
        ["remove_document", { "id": 424242 }],
        ["remove_document", { "id": "one" }],
        ["reindex_collection", { "id": "no-such-collection" }],
        ["indexing_status", { "bogus": 1 }],
        ["cancel_indexing", { "bogus": 1 }],
        ["search_knowledge", { "query": "" }],
        ["search_knowledge", { "query": "x", "k": -1 }],
        ["search_knowledge", { "query": "x", "collection": "no-such-collection" }],
        ["stop_syncing", { "collection": "no-such-collection", "folder": "/tmp" }],
        ["sync_folders", { "bogus": 1 }],
        ["read_passages", { "chunk": 424242 }],
        ["read_passages", { "chunk": "first" }],
        ["add_attached_to_knowledge", { "threadId": "no-such-thread", "attachments": [] }],
        ["add_attached_to_knowledge", { "threadId": t, "attachments": [{ "id": "not-a-hash", "name": "a.md", "mime": "text/markdown", "size": 3, "kind": { "type": "document", "text": "x", "tokens": 1 } }] }],
        ["add_attached_to_knowledge", { "threadId": t }],
        ["set_thread_config", { "threadId": t, "config": { "providerConfig": { "providerName": "ollama", "modelId": "m" }, "knowledge": "Farm" } }],
    ]);
    // Local models: refused before anything reaches a server (names are checked first;
    // the suite holds the default Ollama address, so a call that went out would fail the
    // session too).
    let models = json!([
        ["list_local_models", { "bogus": 1 }],
        ["pull_model", {}],
        ["pull_model", { "name": "llama3; rm -rf ~" }],
        ["pull_model", { "name": "a".repeat(400) }],
        ["model_pulls", { "bogus": 1 }],
        ["cancel_pull", {}],
        ["dismiss_pulls", { "bogus": 1 }],
        ["delete_model", { "name": "$(reboot)" }],
        ["delete_model", { "name": 7 }],
        ["unload_model", { "name": "" }],
        ["ollama_address", { "baseUrl": "ftp://nowhere" }],
        ["ollama_address", { "baseUrl": 11434 }],
    ]);
    // The app's settings and the model picker: checked as a thread's settings are.
    let defaults = json!([
        ["get_app_settings", { "bogus": 1 }],
        ["set_new_thread_defaults", {}],
        ["set_new_thread_defaults", { "config": { "providerConfig": { "providerName": "nope", "modelId": "m" } } }],
        ["set_new_thread_defaults", { "config": { "providerConfig": { "providerName": "ollama", "modelId": "m" }, "enabledTools": ["no_such_tool"] } }],
        ["choose_model", { "threadId": "no-such-thread", "provider": "ollama", "model": "m" }],
        ["choose_model", { "threadId": t, "provider": "nope", "model": "m" }],
        ["choose_model", { "threadId": t, "provider": "ollama" }],
        ["choose_model", { "threadId": t, "provider": "ollama", "model": "m", "makeDefault": "yes" }],
        ["set_trace_push", {}],
        ["set_trace_push", { "settings": { "enabled": "yes", "endpoint": "" } }],
        ["set_trace_push", { "settings": { "enabled": true, "endpoint": "localhost:4318" } }],
        ["set_trace_push", { "settings": { "enabled": true, "endpoint": "" } }],
        ["set_trace_push", { "settings": { "enabled": true, "endpoint": "http://127.0.0.1:9", "queueLimit": 5 } }],
        ["set_trace_push", { "settings": { "enabled": true, "endpoint": "http://127.0.0.1:9" }, "headers": [["bad header", "x"]] }],
        ["set_trace_push", { "settings": { "enabled": true, "endpoint": "http://127.0.0.1:9", "scope": { "kind": "threads", "ids": [] } } }],
        ["trace_push_status", { "bogus": 1 }],
        ["compare_models", { "threadId": t, "text": "Which?", "models": [{ "providerName": "openai", "modelId": "a" }] }],
        ["compare_models", { "threadId": t, "text": "   ", "models": [{ "providerName": "openai", "modelId": "a" }, { "providerName": "openai", "modelId": "b" }] }],
        ["compare_models", { "threadId": t, "text": "Which?", "models": [{ "providerName": "no-such-provider", "modelId": "a" }, { "providerName": "openai", "modelId": "b" }] }],
        ["compare_models", { "threadId": t, "text": "Which?", "models": [{ "providerName": "openai", "modelId": " " }, { "providerName": "openai", "modelId": "b" }] }],
        ["compare_models", { "threadId": "no-such-thread", "text": "Which?", "models": [{ "providerName": "openai", "modelId": "a" }, { "providerName": "openai", "modelId": "b" }] }],
        ["compare_models", { "threadId": t, "text": "Which?", "models": "openai:a" }],
        ["show_run", { "threadId": t, "traceId": "no-such-run" }],
        ["show_run", { "threadId": "no-such-thread", "traceId": "x" }],
        ["show_run", { "threadId": t }],
        ["replay_run", { "threadId": t, "traceId": "no-such-run" }],
        ["replay_run", { "threadId": t, "traceId": 5 }],
        ["replay_run", { "threadId": t, "traceId": "x", "mode": "sometimes" }],
        ["replay_run", { "threadId": "no-such-thread", "traceId": "x" }],
        ["diff_runs", { "a": "no-such-run", "b": "no-such-run-either" }],
        ["diff_runs", { "a": 1, "b": "x" }],
    ]);
    let mut cases = cases;
    if let Some(all) = cases.as_array_mut() {
        for more in [
            &approvals,
            &branches_and_usage,
            &the_rest,
            &attachments,
            &knowledge,
            &models,
            &defaults,
        ] {
            all.extend(more.as_array().into_iter().flatten().cloned());
        }
    }
    // Every command is tried: a new one fails here until it has its bad-input cases.
    let tried: std::collections::BTreeSet<&str> = cases
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c[0].as_str())
        .collect();
    let untried: Vec<&str> = art_types::commands::NAMES
        .iter()
        .copied()
        .filter(|name| !tried.contains(name))
        .collect();
    assert!(
        untried.is_empty(),
        "commands without a bad-input case: {untried:?}"
    );
    let count = cases.as_array().unwrap().len();
    let outcomes = app.eval_async(CALL_ALL, vec![cases.clone()]).await;
    let outcomes = outcomes.as_array().expect("one outcome per case");
    assert_eq!(outcomes.len(), count);
    let mut wrong = Vec::new();
    for (case, outcome) in cases.as_array().unwrap().iter().zip(outcomes) {
        let name = format!("{} {}", case[0], short(&case[1]));
        if outcome["ok"] == true {
            wrong.push(format!("{name}: accepted ({})", outcome["value"]));
            continue;
        }
        let error = &outcome["error"];
        // Ours, for every door (arguments are decoded by the app, not Tauri): a stable
        // code and a sentence.
        let clear = match error {
            Value::Object(e) => {
                e.get("code")
                    .and_then(Value::as_str)
                    .is_some_and(|c| !c.is_empty())
                    && e.get("message")
                        .and_then(Value::as_str)
                        .is_some_and(|m| m.len() > 10)
            }
            _ => false,
        };
        if !clear {
            wrong.push(format!("{name}: unclear error {error}"));
        }
    }
    // Arguments are named: the mistyped one in `details.field`, the unknown one in the
    // message.
    let outcome_of = |command: &str, args: &Value| {
        let cases = cases.as_array().unwrap();
        let at = cases.iter().position(|c| c[0] == command && &c[1] == args);
        at.map(|i| outcomes[i]["error"].clone())
            .unwrap_or(Value::Null)
    };
    let mistyped = outcome_of("rename_thread", &json!({ "threadId": 42, "title": "x" }));
    if mistyped["details"]["field"] != "threadId" {
        wrong.push(format!("a mistyped threadId is not named: {mistyped}"));
    }
    let extra = outcome_of(
        "rename_thread",
        &json!({ "threadId": t, "title": "Renamed", "extra": true }),
    );
    if !extra["message"]
        .as_str()
        .is_some_and(|m| m.contains("extra"))
    {
        wrong.push(format!("an unknown key is not named: {extra}"));
    }
    let after = app.eval_async(SNAPSHOT, vec![json!(t)]).await;
    // Refused files leave nothing in the attachment store either.
    let stored: Vec<_> = art_testkit::fixtures::files_under(&app.data_dir().join("attachments"));
    if !stored.is_empty() {
        wrong.push(format!("refused attachments were stored: {stored:?}"));
    }
    let still = app
        .eval_async(
            r#"const [done] = arguments;
               window.__TAURI__.core.invoke("app_info").then((i) => done(i.version), (e) => done("failed"));"#,
            Vec::new(),
        )
        .await;
    app.close().await;
    assert!(
        wrong.is_empty(),
        "{} of {count} cases wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(after, before, "nothing was written");
    assert_ne!(still, json!("failed"), "the app still answers");
}

/// A payload, short enough for a failure message.
fn short(args: &Value) -> String {
    let text = args.to_string();
    if text.len() > 120 {
        format!("{}…", &text[..120])
    } else {
        text
    }
}
