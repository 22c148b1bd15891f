//! In-memory [`StorageAdapter`] for unit tests: same semantics as SQLite (upsert keeps
//! insertion order, cascade delete, prefix search), nothing on disk.

use std::collections::HashMap;
use std::sync::Mutex;

use super::ledger::{self, UsageQuery, UsageRecord, UsageSum};
use super::{
    Collection, Link, Order, Query, Record, RecordStream, SCAN_QUEUE, SearchHit, StorageAdapter,
    StorageError, check_swap,
};

#[derive(Default)]
struct Tables {
    next_seq: u64,
    rows: HashMap<(Collection, String), (u64, Record)>,
    usage: Vec<UsageRecord>,
}

impl Tables {
    /// Insert or replace a record; a replaced one keeps its place in insertion order.
    fn upsert(&mut self, collection: Collection, record: Record) {
        let key = (collection, record.id.clone());
        let seq = match self.rows.get(&key) {
            Some((seq, _)) => *seq,
            None => {
                self.next_seq += 1;
                self.next_seq
            }
        };
        self.rows.insert(key, (seq, record));
    }
}

/// Records in a map for the life of the value.
#[derive(Default)]
pub struct MemoryStorage {
    tables: Mutex<Tables>,
}

impl MemoryStorage {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn matching(&self, collection: Collection, query: &Query) -> Vec<Record> {
        let tables = self.tables();
        let mut found: Vec<&(u64, Record)> = tables
            .rows
            .iter()
            .filter(|((c, _), (_, r))| *c == collection && query.matches(r))
            .map(|(_, v)| v)
            .collect();
        found.sort_by_key(|(seq, r)| (r.timestamp, *seq));
        if query.order == Order::Descending {
            found.reverse();
        }
        let limit = query.limit.unwrap_or(usize::MAX);
        found
            .into_iter()
            .take(limit)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[async_trait::async_trait]
impl StorageAdapter for MemoryStorage {
    async fn get(&self, collection: Collection, id: &str) -> Result<Option<Record>, StorageError> {
        let tables = self.tables();
        Ok(tables
            .rows
            .get(&(collection, id.to_owned()))
            .map(|(_, r)| r.clone()))
    }

    async fn set(&self, collection: Collection, records: Vec<Record>) -> Result<(), StorageError> {
        let mut tables = self.tables();
        for record in records {
            tables.upsert(collection, record);
        }
        Ok(())
    }

    async fn delete(&self, collection: Collection, id: &str) -> Result<bool, StorageError> {
        Ok(self
            .tables()
            .rows
            .remove(&(collection, id.to_owned()))
            .is_some())
    }

    async fn swap(
        &self,
        collection: Collection,
        id: &str,
        expected: Option<&str>,
        new: Option<Record>,
    ) -> Result<bool, StorageError> {
        check_swap(collection, id, new.as_ref())?;
        let key = (collection, id.to_owned());
        let mut tables = self.tables();
        let current = tables.rows.get(&key).map(|(_, r)| r.body.as_str());
        if current != expected {
            return Ok(false);
        }
        match new {
            Some(record) => tables.upsert(collection, record),
            None => {
                tables.rows.remove(&key);
            }
        }
        Ok(true)
    }

    async fn query(
        &self,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Record>, StorageError> {
        Ok(self.matching(collection, query))
    }

    async fn links(
        &self,
        collection: Collection,
        thread_id: &str,
    ) -> Result<Vec<Link>, StorageError> {
        let records = self.matching(collection, &Query::thread(thread_id));
        Ok(records
            .into_iter()
            .map(|r| Link {
                id: r.id,
                parent: r.parent,
                kind: r.kind,
                timestamp: r.timestamp,
            })
            .collect())
    }

    async fn count(&self, collection: Collection, query: &Query) -> Result<u64, StorageError> {
        let all = Query {
            limit: None,
            ..query.clone()
        };
        Ok(self.matching(collection, &all).len() as u64)
    }

    fn scan(&self, collection: Collection, query: Query, batch: usize) -> RecordStream {
        let (sender, stream) = tokio::sync::mpsc::channel(SCAN_QUEUE);
        let found = self.matching(collection, &query);
        tokio::spawn(async move {
            for chunk in found.chunks(batch.max(1)) {
                if sender.send(Ok(chunk.to_vec())).await.is_err() {
                    break;
                }
            }
        });
        stream
    }

    async fn record_usage(&self, records: Vec<UsageRecord>) -> Result<(), StorageError> {
        let mut tables = self.tables();
        for r in records {
            if !tables.usage.iter().any(|u| u.trace_id == r.trace_id) {
                tables.usage.push(r);
            }
        }
        Ok(())
    }

    async fn usage(&self, query: &UsageQuery) -> Result<Vec<UsageSum>, StorageError> {
        Ok(ledger::sum(&self.tables().usage, query))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError> {
        self.tables()
            .rows
            .retain(|_, (_, r)| r.thread_id.as_deref() != Some(thread_id));
        Ok(())
    }

    async fn clear(&self, collection: Collection) -> Result<(), StorageError> {
        self.tables().rows.retain(|(c, _), _| *c != collection);
        Ok(())
    }

    async fn search(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError> {
        let wanted = words(text);
        if wanted.is_empty() {
            return Err(StorageError::InvalidSearch("type at least one word".into()));
        }
        let tables = self.tables();
        let mut hits: Vec<(u64, SearchHit)> = tables
            .rows
            .iter()
            .filter(|((collection, _), _)| *collection != Collection::Observations)
            .filter_map(|((collection, id), (seq, r))| {
                let text = r.search_text.as_deref()?;
                let have = words(text);
                wanted
                    .iter()
                    .all(|w| have.iter().any(|h| h.starts_with(w.as_str())))
                    .then(|| {
                        let hit = SearchHit {
                            collection: *collection,
                            id: id.clone(),
                            thread_id: r.thread_id.clone(),
                            kind: r.kind.clone(),
                            snippet: text.chars().take(80).collect(),
                        };
                        (*seq, hit)
                    })
            })
            .collect();
        hits.sort_by_key(|(seq, _)| *seq);
        Ok(hits.into_iter().take(limit).map(|(_, h)| h).collect())
    }
}
