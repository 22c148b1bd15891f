//! The Reasoning System: the provider seam ([`provider`]), LLM calls with adapter
//! leases ([`engine`]), prompt fragments ([`prompts`]), parsing model output
//! ([`output_parser`]) and separating thinking from answers as they stream
//! ([`think_tags`]).

pub mod engine;
pub mod output_parser;
pub mod prompts;
pub mod provider;
pub mod think_tags;
