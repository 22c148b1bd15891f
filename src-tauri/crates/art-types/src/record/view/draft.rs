//! The plan as it streams in: from the planning call's text so far (the plan's JSON, cut
//! anywhere), the title once its string is closed and every step whose object is
//! closed, so the plan card fills while the model writes instead of after it. What is
//! not closed yet is not shown (a half-written step would change under the reader).

use serde_json::Value;

use super::PlanCard;
use crate::record::{PlanStep, StepStatus};

/// The draft of the plan in `text`, the planning output so far; `None` until a title or
/// a step can be read.
pub fn draft(text: &str) -> Option<PlanCard> {
    let title = string_after(text, "\"title\"");
    let intent = string_after(text, "\"intent\"");
    let steps = steps_after(text);
    if title.is_none() && steps.is_empty() {
        return None;
    }
    Some(PlanCard {
        title,
        intent,
        steps,
        ..PlanCard::default()
    })
}

/// The closed JSON string after `key` and its colon, decoded.
fn string_after(text: &str, key: &str) -> Option<String> {
    let at = text.find(key)? + key.len();
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    if !rest.starts_with('"') {
        return None;
    }
    let end = closing_quote(rest)?;
    serde_json::from_str::<String>(&rest[..=end])
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The index of the quote closing the string that opens `text` (escapes respected).
fn closing_quote(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The closed step objects of the `"steps"` array so far.
fn steps_after(text: &str) -> Vec<PlanStep> {
    let Some(at) = text.find("\"steps\"") else {
        return Vec::new();
    };
    let Some(open) = text[at..].find('[') else {
        return Vec::new();
    };
    let mut rest = &text[at + open + 1..];
    let mut steps = Vec::new();
    loop {
        rest = rest.trim_start().trim_start_matches(',').trim_start();
        if !rest.starts_with('{') {
            break;
        }
        let Some(object) = balanced_object(rest) else {
            break;
        };
        let len = object.len();
        if let Ok(Value::Object(step)) = serde_json::from_str::<Value>(object)
            && let Some(description) = step.get("description").and_then(Value::as_str)
        {
            steps.push(PlanStep {
                id: step
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| (steps.len() + 1).to_string(), str::to_owned),
                description: description.to_owned(),
                status: StepStatus::Pending,
                tools: step
                    .get("tools")
                    .and_then(Value::as_array)
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                tools_optional: false,
            });
        }
        rest = &rest[len..];
    }
    steps
}

/// The balanced `{…}` at the start of `text` (strings and escapes respected); `None`
/// while it is not closed. The planning output's reader finds a plan in prose with it
/// too (`art::reasoning::output_parser`).
pub fn balanced_object(text: &str) -> Option<&str> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(&text[..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::draft;

    #[test]
    fn the_plan_fills_as_its_json_streams_in() {
        let whole = r#"{"title": "Add \"two\" numbers", "intent": "Add them", "steps": [{"id": "1", "description": "Add with the calculator", "tools": ["calculator"]}, {"id": "2", "description": "Check {it}", "tools": []}], "toolCalls": []}"#;
        let mut seen = Vec::new();
        for end in (0..=whole.len()).filter(|i| whole.is_char_boundary(*i)) {
            let card = draft(&whole[..end]);
            seen.push(card.as_ref().map_or(0, |c| c.steps.len()));
            if let Some(card) = card {
                // Never a half-written title or step.
                if let Some(title) = &card.title {
                    assert_eq!(title, "Add \"two\" numbers");
                }
                for (i, step) in card.steps.iter().enumerate() {
                    assert_eq!(step.id, (i + 1).to_string());
                }
            }
        }
        // Steps appear one at a time, in order, and stay.
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(seen.last(), Some(&2));
        let whole = draft(whole).unwrap();
        assert_eq!(whole.intent.as_deref(), Some("Add them"));
        assert_eq!(whole.steps[0].tools, ["calculator"]);
        assert_eq!(whole.steps[1].description, "Check {it}");
        assert_eq!(draft("{\"tit"), None);
        assert_eq!(draft("I will just answer."), None);
    }
}
