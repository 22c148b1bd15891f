//! Mapping of `art` errors to the IPC error contract `{code, message, details}`.

use art::paths::DataDirError;
use art_types::{ErrorCode, IpcError};

/// The data directory cannot be used.
pub fn data_dir_error(err: DataDirError) -> IpcError {
    let path = match &err {
        DataDirError::Create { path, .. } | DataDirError::NotAbsolute(path) => {
            Some(path.display().to_string())
        }
        DataDirError::NoOsDataDir => None,
    };
    IpcError::new(ErrorCode::DataDirUnavailable, err.to_string())
        .with_details(serde_json::json!({ "path": path, "env": art::paths::DATA_DIR_ENV }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dir_errors_carry_code_path_and_the_override_variable() {
        let err = data_dir_error(DataDirError::NotAbsolute("rel".into()));
        assert_eq!(err.code, ErrorCode::DataDirUnavailable);
        assert_eq!(err.details["path"], "rel");
        assert_eq!(err.details["env"], "ART_WORKBENCH_DATA_DIR");
        assert!(err.message.contains("absolute"));
    }
}
