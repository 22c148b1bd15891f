//! The Reasoning System: the provider seam ([`provider`]), LLM calls with adapter
//! leases ([`engine`]), prompt fragments ([`prompts`]), parsing model output
//! ([`output_parser`]) and separating thinking from answers as they stream
//! ([`think_tags`]), and native tool calls rewritten as text for servers that refuse
//! them ([`text_form`]).

pub mod engine;
pub mod output_parser;
pub mod prompts;
pub mod provider;
pub mod text_form;
pub mod think_tags;
