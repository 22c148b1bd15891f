//! The usage ledger: sums per model, provider, thread or day, one thread's totals, and
//! the prices a user enters per model.

use art_types::commands::{DeletePrice, GetThreadUsage, GetUsage, ListPrices, SavePrice};
use art_types::usage::{ModelPrice, UsageReport, UsageTotals};
use art_types::{ErrorCode, IpcError};
use tauri::AppHandle;

use super::{Handler, workbench};
use crate::error::context_error;

impl Handler for GetUsage {
    async fn handle(self, app: AppHandle) -> Result<UsageReport, IpcError> {
        let wb = workbench(&app)?;
        wb.art
            .usage
            .report(self.by, self.since.as_deref())
            .await
            .map_err(context_error)
    }
}

impl Handler for GetThreadUsage {
    async fn handle(self, app: AppHandle) -> Result<UsageTotals, IpcError> {
        let wb = workbench(&app)?;
        // Unknown threads are an error, not zero usage.
        wb.art
            .conversation
            .thread(&self.thread_id)
            .await
            .map_err(context_error)?;
        wb.art
            .usage
            .thread(&self.thread_id)
            .await
            .map_err(context_error)
    }
}

impl Handler for ListPrices {
    async fn handle(self, app: AppHandle) -> Result<Vec<ModelPrice>, IpcError> {
        let wb = workbench(&app)?;
        wb.art.usage.prices().await.map_err(context_error)
    }
}

impl Handler for SavePrice {
    async fn handle(self, app: AppHandle) -> Result<ModelPrice, IpcError> {
        let wb = workbench(&app)?;
        wb.art
            .usage
            .save_price(self.price)
            .await
            .map_err(context_error)
    }
}

impl Handler for DeletePrice {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        let wb = workbench(&app)?;
        let deleted = wb
            .art
            .usage
            .delete_price(&self.provider, &self.model)
            .await
            .map_err(context_error)?;
        match deleted {
            true => Ok(()),
            false => Err(IpcError::new(
                ErrorCode::NotFound,
                "that model has no price (it may have been removed)",
            )),
        }
    }
}
