use super::{Chunk, Layout, OVERLAP_TOKENS, TARGET_TOKENS, chunk};

/// A sentence of about 20 tokens, numbered so each is unique.
fn sentence(n: usize) -> String {
    format!("Sentence {n} says something about apples and the orchard.")
}

/// A line of about 20 tokens cut in the middle of a sentence (as a PDF's lines are).
fn wrapped(n: usize) -> String {
    format!("line {n} goes on about apples and the orchard and then")
}

/// Every line of `text` that is not a marker or blank is in some chunk, in order.
fn assert_covers(text: &str, chunks: &[Chunk]) {
    let all: Vec<&str> = chunks.iter().flat_map(|c| c.text.lines()).collect();
    let mut at = 0;
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with("--- page ") {
            continue;
        }
        let found = all[at..].iter().position(|l| *l == line);
        let found = found.unwrap_or_else(|| panic!("{line:?} is in no chunk after {at}"));
        at += found;
    }
}

#[test]
fn headings_open_passages_and_are_remembered() {
    let mut text = String::from("# Guide\n\nIntro line.\n\n## Install\n\n");
    for n in 0..30 {
        text.push_str(&sentence(n));
        text.push('\n');
    }
    text.push_str("\n### Debian\n\n");
    for n in 30..40 {
        text.push_str(&sentence(n));
        text.push('\n');
    }
    text.push_str("\n## Use\n\nRun it.\n");
    let chunks = chunk(&text, Layout::Headed);
    assert_covers(&text, &chunks);
    // "Intro line." is a scrap: it joins the Install section rather than standing alone.
    assert_eq!(chunks[0].headings, ["Guide", "Install"]);
    assert!(chunks[0].text.starts_with("# Guide\n\nIntro line."));
    let debian = chunks
        .iter()
        .find(|c| c.text.contains("### Debian"))
        .unwrap();
    assert!(
        debian.text.starts_with("### Debian"),
        "a section starts its own passage"
    );
    assert_eq!(debian.headings, ["Guide", "Install", "Debian"]);
    let last = chunks.last().unwrap();
    assert_eq!(last.headings, ["Guide", "Use"]);
    assert_eq!(
        last.place(),
        format!("lines {}–{}, §Use", last.lines.0, last.lines.1)
    );
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.ord as usize, i);
        assert!(c.tokens <= TARGET_TOKENS + 2, "{} tokens", c.tokens);
        assert_eq!(c.pages, None);
    }
}

#[test]
fn long_text_overlaps_within_a_page_and_a_passage_stays_on_its_page() {
    let mut text = String::new();
    for page in 1..=4 {
        text.push_str(&format!("--- page {page} ---\n"));
        for n in 0..25 {
            text.push_str(&wrapped(page * 100 + n));
            text.push('\n');
        }
    }
    let chunks = chunk(&text, Layout::Headed);
    assert_covers(&text, &chunks);
    assert!(chunks.len() >= 6, "{} chunks", chunks.len());
    assert!(chunks.iter().all(|c| !c.text.contains("--- page")));
    for page in 1..=4 {
        let on_page: Vec<_> = chunks
            .iter()
            .filter(|c| c.pages == Some((page, page)))
            .collect();
        assert!(
            on_page.len() >= 2,
            "page {page}: {} passages",
            on_page.len()
        );
        assert_eq!(on_page[0].place(), format!("p. {page}"));
    }
    assert!(
        chunks
            .iter()
            .all(|c| matches!(c.pages, Some((a, b)) if a == b)),
        "no passage spans two pages"
    );
    for pair in chunks.windows(2) {
        let last_line = pair[0].text.lines().last().unwrap();
        if pair[0].pages != pair[1].pages {
            assert!(
                !pair[1].text.contains(last_line),
                "a new page starts afresh"
            );
            continue;
        }
        assert!(
            pair[1].text.contains(last_line),
            "the next passage repeats the end of the one before"
        );
        let repeated: usize = pair[1]
            .text
            .lines()
            .take_while(|l| pair[0].text.contains(*l))
            .map(|l| l.len().div_ceil(3) + 1)
            .sum();
        assert!(repeated as u64 <= OVERLAP_TOKENS, "{repeated}");
    }
}

#[test]
fn a_passage_ends_where_a_sentence_or_paragraph_does_and_then_repeats_nothing() {
    let mut text = String::new();
    for n in 0..60 {
        // Paragraphs of three lines, the last ending a sentence.
        text.push_str(&wrapped(n));
        text.push('\n');
        if n % 3 == 2 {
            text.push_str("which ends here.\n\n");
        }
    }
    let chunks = chunk(&text, Layout::Plain);
    assert_covers(&text, &chunks);
    assert!(chunks.len() >= 4, "{} chunks", chunks.len());
    for pair in chunks.windows(2) {
        assert!(
            pair[0].text.ends_with("which ends here."),
            "{:?}",
            pair[0].text
        );
        // Near the target, not a scrap: the cut is made in its last quarter.
        assert!(pair[0].tokens > TARGET_TOKENS * 2 / 3, "{}", pair[0].tokens);
        assert!(pair[1].text.starts_with("line "), "{:?}", pair[1].text);
        assert!(
            pair[1].lines.0 > pair[0].lines.1,
            "nothing repeated: {:?} then {:?}",
            pair[0].lines,
            pair[1].lines
        );
    }
}

#[test]
fn a_hash_in_code_is_not_a_heading() {
    let code = "# comment\nx = 1\n# another\ny = 2\n";
    let chunks = chunk(code, Layout::Plain);
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0].headings.is_empty());
    assert_eq!(chunks[0].lines, (1, 4));
    assert_eq!(chunks[0].text, code.trim_end());
}

#[test]
fn a_giant_line_is_cut_on_character_boundaries() {
    let line = "é".repeat(5_000) + " end";
    let chunks = chunk(&line, Layout::Plain);
    assert!(chunks.len() > 5);
    let joined: String = chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .concat();
    assert!(joined.ends_with(" end"));
    assert!(chunks.iter().all(|c| c.lines == (1, 1)));
}

#[test]
fn nothing_to_cut_gives_no_passage() {
    assert!(chunk("", Layout::Headed).is_empty());
    assert!(chunk("\n\n--- page 1 ---\n   \n", Layout::Headed).is_empty());
    let one = chunk("--- page 7 ---\nOnly line.", Layout::Headed);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].place(), "p. 7");
}

proptest::proptest! {
    /// Any text of headings, page markers, blank, short and over-long lines (any
    /// script): nothing panics, no passage holds a marker or runs past the target, the
    /// passages come in order, and every short line is whole in one of them.
    #[test]
    fn any_document_is_cut_in_order_and_nothing_is_lost(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                "#{1,7} [a-zé ]{0,20}",
                "--- page [0-9]{1,3} ---",
                "[ ]{0,3}",
                "[a-zA-Z0-9éß漢 .,#]{1,80}",
                "[a-z漢 ]{300,900}",
            ],
            0..120,
        ),
        headed in proptest::bool::ANY,
    ) {
        let text = lines.join("\n");
        let layout = if headed { Layout::Headed } else { Layout::Plain };
        let chunks = chunk(&text, layout);
        let count = u32::try_from(lines.len()).unwrap();
        let mut last_start = 0;
        for (i, c) in chunks.iter().enumerate() {
            proptest::prop_assert_eq!(c.ord as usize, i);
            proptest::prop_assert!(c.tokens <= TARGET_TOKENS + 2, "{} tokens", c.tokens);
            proptest::prop_assert!(!c.text.trim().is_empty());
            proptest::prop_assert!(c.text.lines().all(|l| super::page_marker(l).is_none()));
            proptest::prop_assert!(c.pages.is_none_or(|(a, b)| a == b), "{:?}", c.pages);
            proptest::prop_assert!(c.lines.0 <= c.lines.1 && c.lines.1 <= count);
            proptest::prop_assert!(c.lines.0 >= last_start);
            last_start = c.lines.0;
        }
        for line in &lines {
            let short = line.len() <= (TARGET_TOKENS as usize * 3) / 2;
            if short && !line.trim().is_empty() && super::page_marker(line).is_none() {
                proptest::prop_assert!(
                    chunks.iter().any(|c| c.text.lines().any(|l| l == line)),
                    "{:?} is in no passage", line
                );
            }
        }
    }
}
