use super::*;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The largest difference between two vectors' components.
fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
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

/// candle's reference BERT, padded and masked as sentence-transformers runs it: the
/// vectors the packed encoder must reproduce.
fn reference_vectors(texts: &[&str]) -> Vec<Vec<f32>> {
    use candle_core::{DType, Device, Tensor};
    use candle_transformers::models::bert::{BertModel, Config};
    let dir = art_testkit::embedder::weights_dir();
    let config: Config =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    let vb = candle_nn::VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
        .unwrap();
    let bert = BertModel::load(vb, &config).unwrap();
    let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    tokenizer.with_padding(Some(tokenizers::PaddingParams::default()));
    tokenizer
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: 256,
            ..Default::default()
        }))
        .unwrap();
    let encodings = tokenizer.encode_batch(texts.to_vec(), true).unwrap();
    let (rows, width) = (encodings.len(), encodings[0].len());
    let flat = |part: fn(&tokenizers::Encoding) -> &[u32]| {
        let values: Vec<u32> = encodings.iter().flat_map(|e| part(e).to_vec()).collect();
        Tensor::from_vec(values, (rows, width), &Device::Cpu).unwrap()
    };
    let ids = flat(tokenizers::Encoding::get_ids);
    let mask = flat(tokenizers::Encoding::get_attention_mask);
    let tokens = bert
        .forward(&ids, &ids.zeros_like().unwrap(), Some(&mask))
        .unwrap();
    let mask = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
    let mean = tokens
        .broadcast_mul(&mask)
        .unwrap()
        .sum(1)
        .unwrap()
        .broadcast_div(&mask.sum(1).unwrap())
        .unwrap();
    let norm = mean.sqr().unwrap().sum_keepdim(1).unwrap().sqrt().unwrap();
    mean.broadcast_div(&norm).unwrap().to_vec2().unwrap()
}

#[test]
fn the_packed_encoder_gives_the_reference_berts_vectors() {
    let model = MiniLm::load(&art_testkit::embedder::weights_dir()).unwrap();
    let long = "Le château de Chambord, commencé en 1519, compte 426 pièces. ".repeat(30);
    let texts = [
        "A man is eating food.",
        long.as_str(),
        "apt-get install --no-install-recommends debian-reference-en",
        "x",
        "Über die Brücke: naïve café façades, 東京タワー, emoji 🚀 and tabs\tand\nlines",
    ];
    let ours = model.embed(&texts).unwrap();
    let reference = reference_vectors(&texts);
    for ((text, a), b) in texts.iter().zip(&ours).zip(&reference) {
        let largest = largest_difference(a, b);
        assert!(largest < 1e-4, "{text:.40}: differs by {largest}");
        // Alone, as a question is embedded: the same vector.
        if text.len() < 100 {
            let largest = largest_difference(&model.embed(&[text]).unwrap()[0], b);
            assert!(largest < 1e-4, "{text:.40} alone: differs by {largest}");
        }
    }
}

#[test]
fn texts_are_run_in_batches_of_at_most_the_token_budget_in_order() {
    assert_eq!(runs(&[100, 100, 100], 250), vec![0..2, 2..3]);
    assert_eq!(
        runs(&[300, 10, 10], 250),
        vec![0..1, 1..3],
        "a long text alone"
    );
    assert_eq!(runs(&[10, 300], 250), vec![0..1, 1..2]);
    assert_eq!(
        runs(&[250, 250], 250),
        vec![0..1, 1..2],
        "exactly the budget fits"
    );
    assert!(runs(&[], 250).is_empty());
    // 256-token passages: 8 a batch, the largest intermediate 2,048 × 1,536 floats.
    let passages = runs(&[256; 40], BATCH_TOKENS);
    assert_eq!(passages, vec![0..8, 8..16, 16..24, 24..32, 32..40]);
}

#[test]
fn the_short_path_gives_the_packed_encoders_vectors_up_to_its_limit() {
    let model = MiniLm::load(&art_testkit::embedder::weights_dir()).unwrap();
    assert!(model.encoder.has_short_path());
    let text = "Debian's package manager keeps a cache of downloaded archives. ".repeat(10);
    let ids = model
        .tokenizer
        .encode(text, true)
        .unwrap()
        .get_ids()
        .to_vec();
    assert!(ids.len() > SHORT_TOKENS);
    // Whole blocks of rows and partial ones, down to one token.
    for n in [1, 2, 5, 12, SHORT_TOKENS - 1, SHORT_TOKENS] {
        let ids = &ids[..n];
        let short = model.encoder.mean_pooled_short(ids).unwrap();
        let packed = model
            .encoder
            .mean_pooled(&[ids])
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        let largest = largest_difference(&short, &packed[0]);
        assert!(largest < 1e-5, "{n} tokens: differs by {largest}");
    }
    // Longer texts are the packed path's, and a token outside the vocabulary is refused.
    assert!(
        model
            .encoder
            .mean_pooled_short(&ids[..SHORT_TOKENS + 1])
            .is_err()
    );
    assert!(model.encoder.mean_pooled_short(&[]).is_err());
    assert!(model.encoder.mean_pooled_short(&[u32::MAX]).is_err());
}
