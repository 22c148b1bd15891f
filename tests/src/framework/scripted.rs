//! A scripted provider for agent tests: each call plays the next script, records the
//! prompt it was given, and counts leases so tests can check they are released.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use art::reasoning::provider::{
    AdapterLease, CallOptions, EventStream, ProviderAdapter, ProviderError, ProviderSource,
};
use art_types::{
    ErrorClass, FailureCode, LlmMetadata, Prompt, ProviderConfig, StreamEventKind, ThreadConfig,
    TokenType,
};
use serde_json::{Value, json};

/// What one call does.
pub enum Script {
    /// Refuse to start.
    FailStart(ProviderError),
    /// Stream these events, waiting `delay` before each.
    Events {
        /// What the stream yields, in order (END or an error last, or it just stops).
        events: Vec<StreamEventKind>,
        /// The pause before each event (a slow model).
        delay: Duration,
    },
}

impl Script {
    /// The model a scripted text answer says answered (a dated version of the one asked
    /// for, as providers name it).
    pub const ANSWERED_BY: &'static str = "test-model-2026-11";

    /// A complete answer in three chunks, with usage and the model that answered, then
    /// END.
    pub fn text(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let third = chars.len().div_ceil(3).max(1);
        let mut events: Vec<StreamEventKind> = chars
            .chunks(third)
            .map(|c| StreamEventKind::Token {
                text: c.iter().collect(),
                token_type: TokenType::LlmResponse,
            })
            .collect();
        events.push(StreamEventKind::Metadata(LlmMetadata {
            input_tokens: Some(10),
            output_tokens: Some(5),
            response_model: Some(Self::ANSWERED_BY.into()),
            ..Default::default()
        }));
        events.push(StreamEventKind::End);
        Self::Events {
            events,
            delay: Duration::ZERO,
        }
    }

    /// `count` copies of `word`, one every `delay`, then END.
    pub fn slow_text(word: &str, count: usize, delay: Duration) -> Self {
        let mut events: Vec<_> = (0..count)
            .map(|_| StreamEventKind::Token {
                text: word.into(),
                token_type: TokenType::LlmResponse,
            })
            .collect();
        events.push(StreamEventKind::End);
        Self::Events { events, delay }
    }

    /// Native tool calls `(id, tool, arguments)`, with usage, then END.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Self {
        let mut events: Vec<StreamEventKind> = calls
            .iter()
            .map(|(id, tool, args)| {
                StreamEventKind::ToolCall(art_types::ParsedToolCall {
                    call_id: (*id).into(),
                    tool_name: (*tool).into(),
                    arguments: args.clone(),
                    signature: None,
                })
            })
            .collect();
        events.push(StreamEventKind::Metadata(LlmMetadata {
            input_tokens: Some(10),
            output_tokens: Some(5),
            ..Default::default()
        }));
        events.push(StreamEventKind::End);
        Self::Events {
            events,
            delay: Duration::ZERO,
        }
    }

    /// Exactly these events.
    pub fn events(events: Vec<StreamEventKind>) -> Self {
        Self::Events {
            events,
            delay: Duration::ZERO,
        }
    }

    /// A call that fails before the first byte.
    pub fn fail_start(class: ErrorClass, message: &str) -> Self {
        Self::FailStart(ProviderError::new(
            class,
            FailureCode::LlmProviderError,
            message,
        ))
    }
}

/// A thread configuration on the scripted provider with `model` and the `tools` enabled.
pub fn thread_config(model: &str, tools: &[&str]) -> ThreadConfig {
    ThreadConfig {
        provider_config: ProviderConfig {
            provider_name: "scripted".into(),
            model_id: model.into(),
            ..Default::default()
        },
        enabled_tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        ..Default::default()
    }
}

/// A todo list as the planning prompt asks for it: steps `(id, description, tools)`
/// and the first step's calls `(id, tool, arguments)`.
pub fn steps_json(
    title: &str,
    steps: &[(&str, &str, &[&str])],
    calls: &[(&str, &str, Value)],
) -> String {
    let steps: Vec<Value> = steps
        .iter()
        .map(|(id, description, tools)| json!({"id": id, "description": description, "tools": tools}))
        .collect();
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, tool, args)| json!({"callId": id, "toolName": tool, "arguments": args}))
        .collect();
    json!({"title": title, "intent": format!("intent of {title}"), "steps": steps, "toolCalls": calls}).to_string()
}

/// Planning output of the single-pass format (a `plan` of lines, the calls of its first
/// step), which the planner still reads.
pub fn plan_json(title: &str, calls: &[(&str, &str, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, tool, args)| json!({"callId": id, "toolName": tool, "arguments": args}))
        .collect();
    json!({"title": title, "intent": format!("intent of {title}"), "plan": ["step one", "step two"], "toolCalls": calls}).to_string()
}

struct Adapter {
    scripts: Arc<Mutex<VecDeque<Script>>>,
    prompts: Arc<Mutex<Vec<Prompt>>>,
}

#[async_trait::async_trait]
impl ProviderAdapter for Adapter {
    fn provider_name(&self) -> &str {
        "scripted"
    }

    async fn call(&self, prompt: &Prompt, _: &CallOptions) -> Result<EventStream, ProviderError> {
        self.prompts.lock().unwrap().push(prompt.clone());
        let script = self
            .scripts
            .lock()
            .unwrap()
            .pop_front()
            .expect("no script left for this call");
        match script {
            Script::FailStart(e) => Err(e),
            Script::Events { events, delay } => Ok(Box::pin(futures::stream::unfold(
                events.into_iter(),
                move |mut it| async move {
                    let next = it.next()?;
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((next, it))
                },
            ))),
        }
    }
}

struct LeaseGuard(Arc<AtomicUsize>);

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The provider source handing out the scripted adapter.
pub struct ScriptedSource {
    adapter: Arc<Adapter>,
    active: Arc<AtomicUsize>,
}

impl ScriptedSource {
    /// Calls play `scripts` in order.
    pub fn new(scripts: Vec<Script>) -> Self {
        Self {
            adapter: Arc::new(Adapter {
                scripts: Arc::new(Mutex::new(scripts.into())),
                prompts: Arc::new(Mutex::new(Vec::new())),
            }),
            active: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Prompts received so far, in call order.
    pub fn prompts(&self) -> Vec<Prompt> {
        self.adapter.prompts.lock().unwrap().clone()
    }

    /// Leases not yet released.
    pub fn active_leases(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl ProviderSource for ScriptedSource {
    async fn acquire(&self, config: &ProviderConfig) -> Result<AdapterLease, ProviderError> {
        if config.provider_name != "scripted" {
            return Err(ProviderError::new(
                ErrorClass::Permanent,
                FailureCode::UnknownProvider,
                format!("no provider {}", config.provider_name),
            ));
        }
        self.active.fetch_add(1, Ordering::SeqCst);
        Ok(AdapterLease {
            adapter: Arc::clone(&self.adapter) as Arc<dyn ProviderAdapter>,
            release: Box::new(LeaseGuard(Arc::clone(&self.active))),
        })
    }
}
