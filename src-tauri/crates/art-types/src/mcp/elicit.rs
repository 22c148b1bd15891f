//! A question an MCP server asks the user in the middle of a call (elicitation, form
//! mode): its fields as the app and `art` ask them, and the answer checked against them
//! before it goes back. A server's words are untrusted text: shown, never run.
//!
//! Only a flat object of simple fields can be asked (the specification's restriction):
//! text (with an optional format and length bounds), number or integer (with bounds),
//! yes/no, one choice of a list, several choices of a list. Anything else is declined
//! with the reason ([`fields_of`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One server question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitQuestion {
    /// The server asking.
    pub server: String,
    /// What it says it needs (its words).
    pub message: String,
    /// The fields to fill: the required ones first, then the others, each by name.
    pub fields: Vec<ElicitField>,
    /// A page to open instead (URL mode: a sign-in, a payment — what a form must not
    /// carry). Accepting says the user agrees to open it; what happens there the server
    /// learns by itself. Always an `http(s)` address ([`page_address`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Most characters of a page address a server may ask to open.
pub const MAX_PAGE_ADDRESS: usize = 2048;

/// `url` if it can be offered to open: `https://` (or `http://`), a host, no
/// credentials in it, no spaces or control characters, at most
/// [`MAX_PAGE_ADDRESS`] characters; else why not.
pub fn page_address(url: &str) -> Result<&str, String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("the page is not a web address (http or https)")?;
    if url.chars().count() > MAX_PAGE_ADDRESS {
        return Err(format!(
            "the address is longer than {MAX_PAGE_ADDRESS} characters"
        ));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the address has spaces or control characters".into());
    }
    let host = page_host(url).unwrap_or_default();
    if host.is_empty() || rest.starts_with('/') {
        return Err("the address names no host".into());
    }
    if host.contains('@') {
        return Err("the address carries a user name or password".into());
    }
    Ok(url)
}

/// The host (with its port) of an `http(s)` address: what the user is told they will
/// open, the part that cannot be dressed up.
pub fn page_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// One field of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitField {
    /// Its key in the answer.
    pub name: String,
    /// Its label, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its help text, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether an answer must have it.
    pub required: bool,
    /// What it takes.
    pub kind: FieldKind,
    /// What it holds unless the user changes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum FieldKind {
    /// Text, with an optional format (`email`, `uri`, `date`, `date-time`) and bounds.
    #[serde(rename_all = "camelCase")]
    Text {
        /// Its format, when said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<String>,
        /// Fewest characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_length: Option<u64>,
        /// Most characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_length: Option<u64>,
    },
    /// A number (a whole one when `integer`), with bounds.
    Number {
        /// Whole numbers only.
        integer: bool,
        /// Smallest allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<f64>,
        /// Largest allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One (or, when `many`, several) of `options`: `(value, label)`.
    Choice {
        /// The values and their labels.
        options: Vec<(String, String)>,
        /// Several may be chosen.
        many: bool,
    },
}

/// The user's answer to a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "values", rename_all = "camelCase")]
pub enum ElicitAnswer {
    /// Sent with these values.
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

/// The fields of a `requestedSchema`, or why it cannot be asked (not a flat object of
/// simple fields).
pub fn fields_of(schema: &Value) -> Result<Vec<ElicitField>, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the question is not an object of fields".into());
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    // The order a server wrote its fields in is not kept by the JSON reader: the
    // required ones come first, then the others, each by name.
    let mut fields: Vec<(&String, &Value)> = properties.iter().collect();
    fields.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    fields
        .into_iter()
        .map(|(name, field)| {
            let text = |key: &str| field.get(key).and_then(Value::as_str).map(str::to_owned);
            Ok(ElicitField {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                required: required.contains(&name.as_str()),
                kind: kind_of(field).map_err(|why| format!("field `{name}`: {why}"))?,
                default: field.get("default").cloned(),
            })
        })
        .collect()
}

fn kind_of(field: &Value) -> Result<FieldKind, String> {
    let number = |key: &str| field.get(key).and_then(Value::as_f64);
    let count = |key: &str| field.get(key).and_then(Value::as_u64);
    let options = |list: &Value| -> Option<Vec<(String, String)>> {
        if let Some(values) = list.get("enum").and_then(Value::as_array) {
            let names = list.get("enumNames").and_then(Value::as_array);
            return values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let value = v.as_str()?.to_owned();
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_owned);
                    Some((value, label))
                })
                .collect();
        }
        let one_of = list
            .get("oneOf")
            .or_else(|| list.get("anyOf"))
            .and_then(Value::as_array)?;
        one_of
            .iter()
            .map(|o| {
                let value = o.get("const")?.as_str()?.to_owned();
                let label = o
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_owned);
                Some((value, label))
            })
            .collect()
    };
    match field.get("type").and_then(Value::as_str) {
        Some("string") => match options(field) {
            Some(options) => Ok(FieldKind::Choice {
                options,
                many: false,
            }),
            None if field.get("enum").is_some() || field.get("oneOf").is_some() => {
                Err("its choices are not text".into())
            }
            None => Ok(FieldKind::Text {
                format: field
                    .get("format")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                min_length: count("minLength"),
                max_length: count("maxLength"),
            }),
        },
        Some(kind @ ("number" | "integer")) => Ok(FieldKind::Number {
            integer: kind == "integer",
            minimum: number("minimum"),
            maximum: number("maximum"),
        }),
        Some("boolean") => Ok(FieldKind::Boolean),
        Some("array") => {
            let options = field
                .get("items")
                .and_then(options)
                .ok_or("a list that is not a list of choices")?;
            Ok(FieldKind::Choice {
                options,
                many: true,
            })
        }
        Some(other) => Err(format!("a field of type {other} cannot be asked")),
        None => Err("a field without a type".into()),
    }
}

/// `values` checked against `fields`, each field not given taking its default: the
/// answer to send, or what is wrong (the first problem, naming its field).
pub fn check_answer(
    fields: &[ElicitField],
    values: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    if let Some(unknown) = values
        .keys()
        .find(|k| !fields.iter().any(|f| &f.name == *k))
    {
        return Err(format!("`{unknown}` was not asked"));
    }
    let mut answer = Map::new();
    for field in fields {
        let label = field.title.as_deref().unwrap_or(&field.name);
        let Some(value) = values.get(&field.name).or(field.default.as_ref()) else {
            if field.required {
                return Err(format!("{label} is required"));
            }
            continue;
        };
        check_value(&field.kind, value).map_err(|why| format!("{label}: {why}"))?;
        answer.insert(field.name.clone(), value.clone());
    }
    Ok(answer)
}

fn check_value(kind: &FieldKind, value: &Value) -> Result<(), String> {
    match kind {
        FieldKind::Text {
            min_length,
            max_length,
            ..
        } => {
            let text = value.as_str().ok_or("text is expected")?;
            let length = text.chars().count() as u64;
            if min_length.is_some_and(|min| length < min) {
                return Err(format!("at least {} characters", min_length.unwrap_or(0)));
            }
            if max_length.is_some_and(|max| length > max) {
                return Err(format!("at most {} characters", max_length.unwrap_or(0)));
            }
            Ok(())
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let number = value.as_f64().ok_or("a number is expected")?;
            if *integer && number.fract() != 0.0 {
                return Err("a whole number is expected".into());
            }
            if minimum.is_some_and(|min| number < min) || maximum.is_some_and(|max| number > max) {
                return Err(format!(
                    "between {} and {}",
                    minimum.map_or("-∞".into(), |m| m.to_string()),
                    maximum.map_or("∞".into(), |m| m.to_string())
                ));
            }
            Ok(())
        }
        FieldKind::Boolean => value
            .as_bool()
            .map(|_| ())
            .ok_or_else(|| "yes or no".into()),
        FieldKind::Choice { options, many } => {
            let known = |v: &Value| {
                v.as_str()
                    .is_some_and(|v| options.iter().any(|(value, _)| value == v))
            };
            let ok = if *many {
                value.as_array().is_some_and(|list| list.iter().all(known))
            } else {
                known(value)
            };
            if ok {
                Ok(())
            } else {
                Err("not one of the choices".into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_plain_web_address_is_offered_to_open() {
        assert_eq!(
            page_address("https://example.com/verify?x=1"),
            Ok("https://example.com/verify?x=1")
        );
        assert_eq!(
            page_host("https://example.com:8443/a#b"),
            Some("example.com:8443")
        );
        for (bad, why) in [
            ("file:///etc/passwd", "not a web address"),
            ("javascript:alert(1)", "not a web address"),
            ("https://user:pw@bank.example/", "user name or password"),
            ("https:///path", "no host"),
            ("https://a.example/x y", "spaces"),
        ] {
            let said = page_address(bad).unwrap_err();
            assert!(said.contains(why), "{bad}: {said}");
        }
        let long = format!("https://a.example/{}", "x".repeat(MAX_PAGE_ADDRESS));
        assert!(page_address(&long).unwrap_err().contains("longer"));
    }

    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "default": "Ada", "maxLength": 20},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "subscribe": {"type": "boolean", "default": true},
                "colour": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b"}]}}
            },
            "required": ["name", "age"]
        })
    }

    #[test]
    fn a_flat_schema_becomes_fields_and_anything_else_is_refused_with_why() {
        let fields = fields_of(&schema()).unwrap();
        let by = |n: &str| fields.iter().find(|f| f.name == n).unwrap().clone();
        assert!(by("name").required && by("age").required && !by("subscribe").required);
        assert_eq!(
            by("colour").kind,
            FieldKind::Choice {
                options: vec![("r".into(), "Red".into()), ("g".into(), "Green".into())],
                many: false
            }
        );
        assert!(matches!(
            by("tags").kind,
            FieldKind::Choice { many: true, .. }
        ));
        let nested = json!({"type": "object", "properties": {"address": {"type": "object"}}});
        assert!(fields_of(&nested).unwrap_err().contains("address"));
        assert!(fields_of(&json!({"type": "array"})).is_err());
    }

    #[test]
    fn an_answer_is_checked_and_takes_the_defaults() {
        let fields = fields_of(&schema()).unwrap();
        let given = json!({"age": 36}).as_object().unwrap().clone();
        let answer = check_answer(&fields, &given).unwrap();
        assert_eq!(answer["name"], "Ada");
        assert_eq!(answer["subscribe"], true);
        assert!(!answer.contains_key("colour"));
        for (bad, why) in [
            (json!({}), "age is required"),
            (json!({"age": 1.5}), "whole number"),
            (json!({"age": 200}), "between"),
            (json!({"age": 3, "colour": "blue"}), "choices"),
            (json!({"age": 3, "name": "x".repeat(21)}), "at most 20"),
            (json!({"age": 3, "extra": 1}), "`extra` was not asked"),
        ] {
            let err = check_answer(&fields, bad.as_object().unwrap()).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
