use super::*;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn embeds_as_sentence_transformers_does_with_the_real_weights() {
    let model = MiniLm::load(&art_testkit::embedder::weights_dir()).unwrap();
    let texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The new movie is awesome.",
    ];
    let vectors = model.embed(&texts).unwrap();
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        assert_eq!(v.len(), DIMENSION);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
    }
    // sentence-transformers' own figures for this pair with these weights.
    let close = cosine(&vectors[0], &vectors[1]);
    assert!((close - 0.7553).abs() < 1e-3, "cosine {close}");
    assert!(cosine(&vectors[0], &vectors[2]) < 0.1);
}

#[test]
fn a_related_question_clears_the_bar_and_an_unrelated_one_does_not() {
    let model = MiniLm::load(&art_testkit::embedder::weights_dir()).unwrap();
    let passage = &model
        .embed(&["# Pruning\n\nPrune the apple trees in late winter, before the buds swell."])
        .unwrap()[0];
    let related = &model
        .embed(&["cutting back branches during the cold months"])
        .unwrap()[0];
    assert!(cosine(passage, related) > model.relevant_from() + 0.1);
    for unrelated in ["zeppelin", "quantum chromodynamics lecture", "the"] {
        let v = &model.embed(&[unrelated]).unwrap()[0];
        assert!(cosine(passage, v) < model.relevant_from(), "{unrelated}");
    }
}

#[test]
fn a_text_embeds_the_same_alone_or_in_a_batch_of_longer_ones() {
    let model = MiniLm::load(&art_testkit::embedder::weights_dir()).unwrap();
    let long = "The harvest of the north field was stored in the barn. ".repeat(40);
    let alone = model
        .embed(&["Pears keep for weeks in a cool cellar."])
        .unwrap();
    let batch = model
        .embed(&[&long, "Pears keep for weeks in a cool cellar.", "short"])
        .unwrap();
    // Padding is masked out: the shorter text's vector does not change.
    assert!(cosine(&alone[0], &batch[1]) > 0.9999);
    // A text longer than the model reads is cut, not refused.
    assert_eq!(batch[0].len(), DIMENSION);
    assert!(model.embed(&[]).unwrap().is_empty());
}

#[test]
fn missing_or_broken_files_are_said_plainly() {
    let dir = tempfile::tempdir().unwrap();
    match MiniLm::load(dir.path()) {
        Err(EmbedError::Missing { path }) => assert!(path.ends_with("config.json")),
        other => panic!("expected Missing, got {:?}", other.err()),
    }
    let weights = art_testkit::embedder::weights_dir();
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(weights.join(file), dir.path().join(file)).unwrap();
    }
    std::fs::write(dir.path().join("model.safetensors"), b"not a model").unwrap();
    let err = MiniLm::load(dir.path()).err().unwrap();
    assert!(
        matches!(&err, EmbedError::Unloadable { reason, .. } if reason.starts_with("model.safetensors")),
        "{err}"
    );
}
