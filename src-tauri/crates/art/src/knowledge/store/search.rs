//! Searching the passages: by their words (BM25 over the full-text index, any of the
//! question's telling words) and by meaning (the nearest vectors of each collection's
//! model, above the model's relatedness bar), the two rankings fused by reciprocal rank.

use std::collections::HashMap;
use std::sync::Arc;

use art_types::knowledge::{Collection, Hit, KnowledgeProblem, Matched, Searched};
use rusqlite::{OptionalExtension, Row, params};

use super::{KnowledgeStore, stored_place};
use crate::knowledge::embed::vectors::fuse;
use crate::knowledge::embed::{Embedder, EmbedderSource};

impl KnowledgeStore {
    /// The `k` passages that best match `query`, in `collection` (name or id) or in all
    /// of them, best first.
    pub fn search(
        &self,
        query: &str,
        collection: Option<&str>,
        k: usize,
    ) -> Result<Vec<Hit>, KnowledgeProblem> {
        self.search_in(query, &[], collection, k)
    }

    /// As [`Self::search`], within `scope` (collection ids; empty: every collection): a
    /// `collection` asked for outside it is refused, as if it did not exist.
    pub fn search_in(
        &self,
        query: &str,
        scope: &[String],
        collection: Option<&str>,
        k: usize,
    ) -> Result<Vec<Hit>, KnowledgeProblem> {
        self.search_scoped(query, scope, collection, k)
            .map(|searched| searched.hits)
    }

    /// As [`Self::search_in`], saying also how many passages were searched by their
    /// words only (not embedded yet, or no embedder loaded).
    pub fn search_scoped(
        &self,
        query: &str,
        scope: &[String],
        collection: Option<&str>,
        k: usize,
    ) -> Result<Searched, KnowledgeProblem> {
        // Said even where there is nothing to search.
        if telling_words(query).is_empty() {
            return Err(KnowledgeProblem::EmptyQuery);
        }
        let in_scope = |c: &Collection| scope.is_empty() || scope.contains(&c.id);
        let collections = match collection {
            Some(name) => {
                let c = self.find(name)?;
                if !in_scope(&c) {
                    return Err(KnowledgeProblem::NoCollection { name: name.into() });
                }
                vec![c]
            }
            None => {
                let chosen: Vec<Collection> =
                    self.collections()?.into_iter().filter(in_scope).collect();
                if chosen.is_empty() && !scope.is_empty() {
                    // Every collection the thread chose was deleted since.
                    return Err(KnowledgeProblem::NoCollection {
                        name: "chosen in the thread's settings (deleted since?)".into(),
                    });
                }
                chosen
            }
        };
        // Candidates from each half, fused: the passages both halves rank high first.
        let candidates = (k * 5).max(50);
        // Every collection searched: no need to tell the full-text index which.
        let within = (collection.is_some() || !scope.is_empty()).then(|| {
            collections
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
        });
        // Each collection's model, embedder and vectors.
        let mut halves = Vec::with_capacity(collections.len());
        for c in &collections {
            let model = self.answering_model(&c.id, c.chunks)?;
            let embedder = self.embedder_for(&model).or_else(|| self.connect(&model));
            let set = match &embedder {
                Some(embedder) => self.vector_set(&c.id, &model, embedder.dimension())?,
                None => Arc::default(),
            };
            halves.push((c, model, embedder, set));
        }
        // The question's vector per model (`None`: it could not be embedded — it is still
        // searched by its words), computed on another thread while the full-text index
        // ranks the words on this one: the two take about as long.
        let to_embed: HashMap<String, Arc<dyn Embedder>> = halves
            .iter()
            .filter(|(_, _, _, set)| !set.is_empty())
            .filter_map(|(_, model, embedder, _)| {
                Some((model.clone(), Arc::clone(embedder.as_ref()?)))
            })
            .collect();
        let embed_all = || {
            to_embed
                .iter()
                .map(|(model, embedder)| {
                    let vector = embedder.embed(&[query]).ok().and_then(|mut v| v.pop());
                    (model.clone(), vector)
                })
                .collect::<HashMap<String, Option<Vec<f32>>>>()
        };
        let rank_words = || self.rank_words(query, within.as_deref(), candidates);
        let (words, query_vectors) = if to_embed.is_empty() {
            // Words alone (no vectors yet): no thread to start.
            (rank_words(), HashMap::new())
        } else {
            std::thread::scope(|scope| {
                let embedding = scope.spawn(embed_all);
                let words = rank_words();
                (words, embedding.join().unwrap_or_default())
            })
        };
        let words = words?;
        // Nearest passages per model: cosines of two models are not comparable, so each
        // model's ranking is fused as a list of its own.
        let mut meaning: HashMap<String, Vec<(i64, f32)>> = HashMap::new();
        let mut words_only = 0;
        for (c, model, embedder, set) in halves {
            words_only += c.chunks.saturating_sub(set.len() as u64);
            let (Some(embedder), Some(Some(q))) = (embedder, query_vectors.get(&model)) else {
                continue;
            };
            let bar = embedder.relevant_from();
            meaning.entry(model).or_default().extend(
                set.nearest(q, candidates)
                    .into_iter()
                    .filter(|(_, cosine)| *cosine >= bar),
            );
        }
        // One ranking per half and model across collections (BM25 from one full-text
        // index over them all, the cosines of one model).
        let word_ids: Vec<i64> = words.iter().map(|(id, _)| *id).collect();
        let mut lists = vec![word_ids.clone()];
        for nearest in meaning.values_mut() {
            nearest.sort_by(|a, b| b.1.total_cmp(&a.1));
            nearest.truncate(candidates);
            lists.push(nearest.iter().map(|(id, _)| *id).collect());
        }
        let cosine = |id: i64| {
            meaning
                .values()
                .flatten()
                .find(|(m, _)| *m == id)
                .map(|(_, c)| *c)
        };
        let lists: Vec<&[i64]> = lists.iter().map(Vec::as_slice).collect();
        let mut hits = Vec::with_capacity(k);
        for (id, score) in fuse(&lists) {
            if hits.len() == k {
                break;
            }
            // Passed over if it was removed since the vectors were loaded.
            if let Some(mut hit) = self.hit(id)? {
                hit.score = score;
                hit.matched = Matched {
                    words: word_ids.iter().position(|&w| w == id).map(|i| i as u32 + 1),
                    meaning: cosine(id),
                };
                hits.push(hit);
            }
        }
        Ok(Searched { hits, words_only })
    }

    /// Search by meaning too from now on, with `embedder`'s vectors (in the collections
    /// embedded with its model).
    pub fn set_embedder(&self, embedder: Arc<dyn Embedder>) {
        self.embedders
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(embedder.model().to_owned(), embedder);
    }

    /// Where a search gets the embedder of a model not loaded yet (the built-in one from
    /// its weights, a provider's model): every caller of the store then searches by
    /// meaning alike.
    pub fn set_embedder_source(&self, source: Arc<dyn EmbedderSource>) {
        *self.source.write().unwrap_or_else(|p| p.into_inner()) = Some(source);
    }

    /// `model`'s embedder from the source, kept for later searches; `None` when there is
    /// no source, or it cannot be had (then not asked again for a minute: searched by
    /// words meanwhile).
    fn connect(&self, model: &str) -> Option<Arc<dyn Embedder>> {
        const ASK_AGAIN_AFTER: std::time::Duration = std::time::Duration::from_secs(60);
        let source = self
            .source
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        {
            let unavailable = self.unavailable.lock().unwrap_or_else(|p| p.into_inner());
            if unavailable
                .get(model)
                .is_some_and(|at| at.elapsed() < ASK_AGAIN_AFTER)
            {
                return None;
            }
        }
        match source.embedder(model) {
            Ok(embedder) => {
                self.set_embedder(Arc::clone(&embedder));
                Some(embedder)
            }
            Err(why) => {
                tracing::info!("{model} is unavailable, searched by words only: {why}");
                self.unavailable
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(model.to_owned(), std::time::Instant::now());
                None
            }
        }
    }

    /// Stop using `model`'s embedder (it failed: it is connected again on the next try).
    pub fn forget_embedder(&self, model: &str) {
        self.embedders
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(model);
    }

    /// The loaded embedder of `model`, if any.
    pub fn embedder_for(&self, model: &str) -> Option<Arc<dyn Embedder>> {
        self.embedders
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)
            .cloned()
    }

    /// Passage `chunk` as a search result (score 0), if it still exists.
    fn hit(&self, chunk: i64) -> Result<Option<Hit>, KnowledgeProblem> {
        self.with(|c| {
            c.prepare_cached(
                "SELECT ch.id, d.id, d.name, d.path, ch.text, ch.headings, ch.page_from,
                        ch.page_to, ch.line_from, ch.line_to
                 FROM chunks ch JOIN documents d ON d.id = ch.document
                 WHERE ch.id = ?1",
            )?
            .query_row([chunk], hit)
            .optional()
        })
    }

    /// The passages of `collection` that best match `query`'s words (BM25), best first.
    pub fn search_words(
        &self,
        collection: &str,
        query: &str,
        k: usize,
    ) -> Result<Vec<Hit>, KnowledgeProblem> {
        let mut hits = Vec::with_capacity(k);
        for (id, rank) in self.rank_words(query, Some(&[collection]), k)? {
            if let Some(mut hit) = self.hit(id)? {
                hit.score = rank;
                hit.matched.words = Some(hits.len() as u32 + 1);
                hits.push(hit);
            }
        }
        Ok(hits)
    }

    /// The ids of the `k` passages that best match `query`'s words (BM25, higher is
    /// better), best first, in `collections` (`None`: all of them). Only ids and scores
    /// are ranked: a passage's text is read for the few that are shown.
    fn rank_words(
        &self,
        query: &str,
        collections: Option<&[&str]>,
        k: usize,
    ) -> Result<Vec<(i64, f64)>, KnowledgeProblem> {
        let words = self.words_within(query, WORDS_RANKED)?;
        let expression = any_of(&words).ok_or(KnowledgeProblem::EmptyQuery)?;
        let k = i64::try_from(k).unwrap_or(i64::MAX);
        let ranked = |r: &Row<'_>| Ok((r.get(0)?, -r.get::<_, f64>(1)?));
        self.with(|c| match collections {
            None => c
                .prepare_cached(
                    "SELECT rowid, bm25(chunk_text) FROM chunk_text
                     WHERE chunk_text MATCH ?1 ORDER BY bm25(chunk_text) LIMIT ?2",
                )?
                .query_map(params![expression, k], ranked)?
                .collect(),
            Some(ids) => {
                let ids = serde_json::to_string(ids).unwrap_or_default();
                c.prepare_cached(
                    "SELECT chunk_text.rowid, bm25(chunk_text) FROM chunk_text
                     JOIN chunks ch ON ch.id = chunk_text.rowid
                     WHERE chunk_text MATCH ?1 AND ch.document IN
                         (SELECT d.id FROM documents d JOIN json_each(?2) j
                          ON d.collection = j.value)
                     ORDER BY bm25(chunk_text) LIMIT ?3",
                )?
                .query_map(params![expression, ids, k], ranked)?
                .collect()
            }
        })
    }

    /// The words of `query` passages are ranked by: its telling words ([`telling_words`]),
    /// then, while the passages holding them add up to more than `budget` and more than
    /// one word is left, the word in the most passages left out — it tells the fewest
    /// apart (BM25 weighs it least), and ranking every passage that holds it is what
    /// makes a search over a large collection slow.
    pub(super) fn words_within(
        &self,
        query: &str,
        budget: u64,
    ) -> Result<Vec<String>, KnowledgeProblem> {
        let words = telling_words(query);
        let mut counted: Vec<(String, u64)> = self.with(|c| {
            let mut holding =
                c.prepare_cached("SELECT doc FROM temp.chunk_terms WHERE term = ?1")?;
            words
                .into_iter()
                .map(|w| {
                    let passages: Option<i64> = holding.query_row([&w], |r| r.get(0)).optional()?;
                    Ok((w, passages.unwrap_or(0).max(0) as u64))
                })
                .collect()
        })?;
        counted.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let mut total: u64 = counted.iter().map(|(_, n)| n).sum();
        let mut from = 0;
        while total > budget && counted.len() - from > 1 {
            total -= counted[from].1;
            from += 1;
        }
        Ok(counted.drain(from..).map(|(w, _)| w).collect())
    }
}

/// Passages the words half of a search ranks at most, as the words' passage counts add
/// up (ranking costs ~1 µs a passage: this bounds it to ~10 ms).
const WORDS_RANKED: u64 = 10_000;

/// English words too common to tell passages apart ("the", "how", "did"): left out of a
/// search that has other words, so a question finds the passages about its subject
/// rather than every passage that says "the".
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its",
    "many", "me", "much", "my", "of", "on", "or", "our", "should", "so", "that", "the", "their",
    "them", "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
];

/// `query`'s words, lowercased, each once, common English words left out when it has
/// others.
fn telling_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
    }
    let telling: Vec<String> = words
        .iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    if telling.is_empty() { words } else { telling }
}

/// An FTS5 expression matching passages with any of `words` (each quoted, so nothing in
/// it is read as FTS5 syntax); `None` without a word.
fn any_of(words: &[String]) -> Option<String> {
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

fn hit(r: &Row<'_>) -> rusqlite::Result<Hit> {
    Ok(Hit {
        chunk: r.get(0)?,
        document: r.get(1)?,
        name: r.get(2)?,
        path: r.get(3)?,
        place: stored_place(r, 5)?,
        text: r.get(4)?,
        score: 0.0,
        matched: Matched::default(),
    })
}
