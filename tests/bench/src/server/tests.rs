use std::sync::{Arc, Mutex};

use super::*;

/// Start a server on a thread; returns its URL and the first-byte times it reports.
fn start(tokens: usize, framing: Framing) -> (String, Arc<Mutex<Vec<u128>>>) {
    let server = Server::bind(tokens, framing).unwrap();
    let url = server.url();
    let served = Arc::new(Mutex::new(Vec::new()));
    let sink = served.clone();
    std::thread::spawn(move || server.run(move |ns| sink.lock().unwrap().push(ns)));
    (url, served)
}

/// POST `body` to `path`; the response's head and its HTTP chunks, each with the time
/// (since the Unix epoch, ns) its last byte was read.
fn post(url: &str, path: &str, body: &str) -> (String, Vec<(String, u128)>) {
    let mut socket = TcpStream::connect(url.trim_start_matches("http://")).unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(socket);
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        reader.read_line(&mut head).unwrap();
    }
    let mut chunks = Vec::new();
    if !head.contains("chunked") {
        let mut rest = String::new();
        reader.read_to_string(&mut rest).unwrap();
        return (head, vec![(rest, 0)]);
    }
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        let mut data = vec![0; size + 2];
        reader.read_exact(&mut data).unwrap();
        if size == 0 {
            return (head, chunks);
        }
        data.truncate(size);
        let at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        chunks.push((String::from_utf8(data).unwrap(), at));
    }
}

const ASK: &str = r#"{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true}"#;

#[test]
fn each_event_is_its_own_http_chunk_after_a_pause_behind_the_first() {
    let tokens = 500;
    let (url, served) = start(tokens, Framing::Events);
    let (head, chunks) = post(&url, "/v1/chat/completions", ASK);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"));
    let events: Vec<&str> = chunks.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(events, openai_events(tokens));
    assert!(events.iter().all(|e| e.matches("data:").count() == 1));
    // The first text is OpenAI's second event (the first names the role); the time to
    // first token is taken as it is sent, and the next event leaves after the pause.
    assert!(!has_text(events[0].as_bytes()) && has_text(events[1].as_bytes()));
    let first_sent = served.lock().unwrap()[0];
    assert!(chunks[1].1 >= first_sent);
    assert!(chunks[2].1 - first_sent >= FIRST_TOKEN_GAP.as_nanos());

    let (head, lines) = post(&url, "/api/chat", ASK);
    assert!(head.contains("application/x-ndjson"));
    let lines: Vec<String> = lines.into_iter().map(|(l, _)| l).collect();
    assert_eq!(lines, ollama_events(tokens));
    assert_eq!(served.lock().unwrap().len(), 2);
}

#[test]
fn a_paced_answer_spaces_its_events_and_a_burst_packs_them() {
    let tokens = 200;
    let (url, served) = start(tokens, Framing::Paced);
    let (_, chunks) = post(&url, "/v1/chat/completions", ASK);
    assert_eq!(chunks.len(), openai_events(tokens).len());
    // Events after the pause follow a schedule PACE apart: the last cannot arrive sooner
    // than the pause and that schedule after the first was sent (late is allowed).
    // (The first text is the second event: the schedule runs from the third.)
    let took = chunks.last().unwrap().1 - served.lock().unwrap()[0];
    let least = FIRST_TOKEN_GAP.as_nanos() + (chunks.len() as u128 - 3) * PACE.as_nanos();
    assert!(took >= least, "{took} ns < {least} ns");

    let tokens = 5_000;
    let (url, _) = start(tokens, Framing::Burst);
    let (_, pieces) = post(&url, "/api/chat", ASK);
    assert!(pieces.len() > 1);
    assert!(
        pieces[..pieces.len() - 1]
            .iter()
            .all(|(p, _)| p.len() == PIECE)
    );
    let body: String = pieces.into_iter().map(|(p, _)| p).collect();
    assert_eq!(body, ollama_events(tokens).concat());
}

#[test]
fn the_planning_call_gets_a_plan_and_ollama_its_model_details() {
    let (url, served) = start(50, Framing::Events);
    let planning = r#"{"messages":[{"role":"system","content":"Decide how to answer"}]}"#;
    let (_, chunks) = post(&url, "/v1/chat/completions", planning);
    let body: String = chunks.into_iter().map(|(c, _)| c).collect();
    assert!(body.contains("toolCalls"), "{body}");
    assert!(
        served.lock().unwrap().is_empty(),
        "a plan is not a timed answer"
    );
    let (head, details) = post(&url, "/api/show", r#"{"model":"m"}"#);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(details[0].0.contains("context_length"), "{}", details[0].0);
}

#[test]
fn bodies_carry_every_token_once() {
    let events = openai_events(3);
    let body = events.concat();
    assert_eq!(body.matches("\"content\":\"tok \"").count(), 2);
    assert_eq!(body.matches("\"content\":\"end\"").count(), 1);
    assert!(body.ends_with("data: [DONE]\n\n"));
    assert_eq!(ollama_events(3).len(), 4);
    assert_eq!(answer(3), "tok tok end");
    assert!(Framing::parse("paced").is_ok() && Framing::parse("slow").is_err());
}
