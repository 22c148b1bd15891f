//! Attachments: files and images a user gives a message. [`store`] keeps their bytes
//! once by content (SHA-256) in the data directory, apart from the database: messages
//! refer to them by [`BlobId`](store::BlobId).

pub mod store;

pub use store::{BlobError, BlobId, BlobStore};
