//! `art-bench-ollama-rs <url> <model> <tokens> <ct|mt>`: one chat streamed with ollama-rs
//! from the streaming benchmark's server, on a current_thread or multi-thread Tokio
//! runtime (the loop a task on it), the text accumulated; prints the JSON line every
//! client of the benchmark prints (tokens, characters, wall and CPU time of the loop, the
//! wall-clock moment of the first token).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ollama_rs::Ollama;
use ollama_rs::generation::chat::ChatMessage;
use ollama_rs::generation::chat::request::ChatMessageRequest;
use tokio_stream::StreamExt;

/// CPU time (user + system) of this process so far, in seconds.
fn cpu_seconds() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}

async fn stream(url: String, model: String) -> Result<String, String> {
    let client = Ollama::try_new(url).map_err(|e| e.to_string())?;
    let request = ChatMessageRequest::new(model, vec![ChatMessage::user("Hi".into())]);
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let (mut tokens, mut chars, mut first) = (0u64, 0u64, None);
    let mut stream = client
        .send_chat_messages_stream(request)
        .await
        .map_err(|e| e.to_string())?;
    while let Some(response) = stream.next().await {
        let response = response.map_err(|()| "the stream broke".to_owned())?;
        let text = &response.message.content;
        if !text.is_empty() {
            first.get_or_insert_with(SystemTime::now);
            tokens += 1;
            chars += text.len() as u64;
        }
    }
    let first_ns = first
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_nanos() as f64);
    Ok(serde_json::json!({
        "tokens": tokens, "chars": chars, "wall_s": wall.elapsed().as_secs_f64(),
        "cpu_s": cpu_seconds() - cpu, "first_token_unix_ns": first_ns,
    })
    .to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, model, _tokens, runtime] = args.as_slice() else {
        eprintln!("usage: art-bench-ollama-rs <url> <model> <tokens> <ct|mt>");
        std::process::exit(2);
    };
    let runtime = match runtime.as_str() {
        "ct" => tokio::runtime::Builder::new_current_thread(),
        "mt" => tokio::runtime::Builder::new_multi_thread(),
        other => {
            eprintln!("unknown runtime {other:?}: ct or mt");
            std::process::exit(2);
        }
    }
    .enable_all()
    .build()
    .expect("a Tokio runtime");
    let task = runtime.spawn(stream(url.clone(), model.clone()));
    match runtime.block_on(task) {
        Ok(Ok(line)) => println!("{line}"),
        Ok(Err(e)) => {
            eprintln!("art-bench-ollama-rs: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("art-bench-ollama-rs: the task failed: {e}");
            std::process::exit(1);
        }
    }
}
