//! The Reasoning System: the provider seam ([`provider`]), LLM calls with adapter
//! leases ([`engine`]), prompt fragments ([`prompts`]), parsing model output
//! ([`output_parser`]) and separating thinking from answers as they stream
//! ([`think_tags`]), native tool calls rewritten as text for servers that refuse
//! them ([`text_form`]), and the plan's JSON Schema for structured output
//! ([`plan_schema`]).

pub mod engine;
pub mod output_parser;
pub mod plan_schema;
pub mod prompts;
pub mod provider;
pub mod text_form;
pub mod think_tags;
