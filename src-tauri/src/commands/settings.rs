//! Per-thread settings and providers: thread config (validated), tools, providers with
//! their key state, model lists, the Ollama doctor, and API keys (set / delete; a key is
//! never sent back to the UI).

use art::providers::models::list_models as fetch_models;
use art::providers::ollama::doctor::ollama_doctor as run_doctor;
use art::providers::options::BASE_URL;
use art::secrets::{Secret, SecretStore};
use art::standard::SettingsError;
use art_types::commands::{
    DeleteApiKey, GetThreadConfig, ListModels, ListProviders, ListTools, OllamaDoctor, SetApiKey,
    SetThreadConfig,
};
use art_types::{
    DoctorReport, ErrorCode, IpcError, KeyState, ModelInfo, ProviderInfo, ThreadConfig, ToolSchema,
};
use tauri::AppHandle;

use super::{Handler, workbench};
use crate::error::{context_error, mcp_error, provider_error, secret_error};
use crate::workbench::Workbench;

/// Why settings were not saved: every problem in `details.problems[]` (the form shows
/// each at its field), or the error of reading what they are checked against.
pub(super) fn settings_error(error: SettingsError) -> IpcError {
    match error {
        SettingsError::Context(e) => context_error(e),
        SettingsError::Mcp(e) => mcp_error(e),
        SettingsError::Invalid(problems) => problems_error(&problems),
    }
}

/// Fields that cannot be used: the first in the message, every one in
/// `details.problems[]`.
pub(super) fn problems_error(problems: &[art::context::validate::ConfigProblem]) -> IpcError {
    IpcError::new(
        ErrorCode::InvalidInput,
        problems
            .first()
            .map(|p| format!("{}: {}", p.field, p.message))
            .unwrap_or_default(),
    )
    .with_details(serde_json::json!({ "problems": problems }))
}

/// Longest API key accepted.
const MAX_KEY: usize = 4096;

impl Handler for GetThreadConfig {
    async fn handle(self, app: AppHandle) -> Result<ThreadConfig, IpcError> {
        let Self { thread_id } = self;
        let wb = workbench(&app)?;
        wb.art
            .conversation
            .thread(&thread_id)
            .await
            .map_err(context_error)?;
        let context = wb
            .art
            .state
            .load_thread_context(&thread_id)
            .await
            .map_err(context_error)?;
        Ok(context.config)
    }
}

/// Every problem is listed in `details.problems[]`; nothing is saved unless none.
impl Handler for SetThreadConfig {
    async fn handle(self, app: AppHandle) -> Result<ThreadConfig, IpcError> {
        let Self { thread_id, config } = self;
        let wb = workbench(&app)?;
        art::standard::save_thread_config(&wb.art, &wb.providers, &thread_id, &config)
            .await
            .map_err(settings_error)?;
        Ok(config)
    }
}

impl Handler for ListTools {
    async fn handle(self, app: AppHandle) -> Result<Vec<ToolSchema>, IpcError> {
        Ok(workbench(&app)?.art.tools.list())
    }
}

async fn key_state(wb: &Workbench, name: &str, is_local: bool) -> KeyState {
    if is_local {
        return KeyState::NotNeeded;
    }
    let account = name.to_owned();
    wb.keychain(move |secrets| match secrets.get(&account) {
        Ok(Some(_)) if secrets.from_env(&account) => KeyState::FromEnvironment,
        Ok(Some(_)) => KeyState::Set,
        Ok(None) => KeyState::NotSet,
        Err(e) => KeyState::Unavailable {
            reason: e.to_string(),
        },
    })
    .await
    .unwrap_or_else(|e| KeyState::Unavailable { reason: e.message })
}

impl Handler for ListProviders {
    async fn handle(self, app: AppHandle) -> Result<Vec<ProviderInfo>, IpcError> {
        let wb = workbench(&app)?;
        let mut out = Vec::new();
        for entry in wb.providers.entries() {
            out.push(ProviderInfo {
                base_url: entry
                    .base_options
                    .get(BASE_URL)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned(),
                key: key_state(&wb, &entry.name, entry.is_local).await,
                key_variable: art::secrets::env_var_name(&entry.name),
                name: entry.name,
                kind: entry.kind,
                is_local: entry.is_local,
            });
        }
        Ok(out)
    }
}

/// A real call: Ollama's `/api/tags`, the `/models` of the APIs.
impl Handler for ListModels {
    async fn handle(self, app: AppHandle) -> Result<Vec<ModelInfo>, IpcError> {
        let Self { provider, base_url } = self;
        let wb = workbench(&app)?;
        let entry = wb.provider(&provider)?;
        let mut options = entry.base_options.clone();
        if let Some(base) = base_url.filter(|b| !b.trim().is_empty()) {
            options.insert(BASE_URL.into(), base.trim().into());
        }
        let secret = if entry.is_local {
            None
        } else {
            let account = provider.clone();
            wb.keychain(move |secrets| secrets.get(&account))
                .await?
                .map_err(secret_error)?
        };
        fetch_models(&entry, &options, secret.as_ref(), &wb.http)
            .await
            .map_err(provider_error)
    }
}

impl Handler for OllamaDoctor {
    async fn handle(self, app: AppHandle) -> Result<DoctorReport, IpcError> {
        let Self { base_url, model } = self;
        let wb = workbench(&app)?;
        let base = wb.checked_ollama_base(base_url)?;
        Ok(run_doctor(&base, model.as_deref(), &wb.http).await)
    }
}

fn check_key(key: &str) -> Result<(), IpcError> {
    let ok = !key.is_empty()
        && key.chars().count() <= MAX_KEY
        && !key.chars().any(|c| c.is_control() || c.is_whitespace());
    if ok {
        Ok(())
    } else {
        Err(IpcError::new(
            ErrorCode::InvalidInput,
            format!("an API key is 1 to {MAX_KEY} characters without spaces or line breaks"),
        )
        .with_details(serde_json::json!({ "field": "key" })))
    }
}

/// The key goes to the OS keychain and nowhere else.
impl Handler for SetApiKey {
    async fn handle(self, app: AppHandle) -> Result<KeyState, IpcError> {
        let Self { provider, key } = self;
        let wb = workbench(&app)?;
        let entry = wb.provider(&provider)?;
        if entry.is_local {
            return Err(IpcError::new(
                ErrorCode::InvalidInput,
                format!("{provider} runs locally and needs no key"),
            ));
        }
        let key = key.trim().to_owned();
        check_key(&key)?;
        let account = provider.clone();
        wb.keychain(move |secrets| secrets.set(&account, &Secret::new(key)))
            .await?
            .map_err(secret_error)?;
        tracing::info!(provider, "API key stored in the keychain");
        Ok(key_state(&wb, &provider, false).await)
    }
}

impl Handler for DeleteApiKey {
    async fn handle(self, app: AppHandle) -> Result<KeyState, IpcError> {
        let Self { provider } = self;
        let wb = workbench(&app)?;
        let entry = wb.provider(&provider)?;
        let account = provider.clone();
        wb.keychain(move |secrets| secrets.delete(&account))
            .await?
            .map_err(secret_error)?;
        tracing::info!(provider, "API key deleted from the keychain");
        Ok(key_state(&wb, &provider, entry.is_local).await)
    }
}
