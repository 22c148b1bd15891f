//! Observation ids on disk. A canonical UUID (lowercase, hyphenated: what
//! [`crate::clock::new_id`] makes) is stored as its 16 bytes, which halves the id index
//! that every insert updates; any other id is stored as the text it is. Reading turns
//! the bytes back into the same text, so callers never see the difference.

use rusqlite::ToSql;
use rusqlite::types::{FromSqlResult, ToSqlOutput, Value, ValueRef};
use uuid::Uuid;

/// An observation id in its stored form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StoredId<'a> {
    /// A canonical UUID, as bytes.
    Uuid([u8; 16]),
    /// Anything else, verbatim.
    Text(&'a str),
}

/// How `id` is stored: bytes only when they turn back into exactly `id`.
pub(super) fn stored(id: &str) -> StoredId<'_> {
    match Uuid::try_parse(id) {
        Ok(uuid) if uuid.hyphenated().encode_lower(&mut Uuid::encode_buffer()) == id => {
            StoredId::Uuid(*uuid.as_bytes())
        }
        _ => StoredId::Text(id),
    }
}

impl StoredId<'_> {
    /// As an owned SQL value (for dynamically built queries).
    pub(super) fn to_value(self) -> Value {
        match self {
            Self::Uuid(bytes) => Value::Blob(bytes.to_vec()),
            Self::Text(text) => Value::Text(text.to_owned()),
        }
    }
}

impl ToSql for StoredId<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Self::Uuid(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            Self::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
        })
    }
}

/// The id text of a stored id (text as is; 16 bytes as a hyphenated UUID).
pub(super) fn read(value: ValueRef<'_>) -> FromSqlResult<String> {
    match value {
        ValueRef::Blob(bytes) => Uuid::from_slice(bytes)
            .map(|uuid| uuid.hyphenated().to_string())
            .map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e))),
        other => other.as_str().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_uuids_become_bytes_and_read_back_identically() {
        let id = crate::clock::new_id();
        let StoredId::Uuid(bytes) = stored(&id) else {
            panic!("{id} should be stored as bytes")
        };
        assert_eq!(read(ValueRef::Blob(&bytes)).unwrap(), id);
        for other in [
            id.to_uppercase(),
            id.replace('-', ""),
            format!("{{{id}}}"),
            "obs-1".into(),
            String::new(),
        ] {
            assert_eq!(stored(&other), StoredId::Text(&other), "{other}");
            assert_eq!(read(ValueRef::Text(other.as_bytes())).unwrap(), other);
        }
    }
}
