//! CalculatorTool: arithmetic and functions on `meval` (a parser, not a code runner:
//! `import("fs")` is just a syntax error). `ans` is the thread's previous result; it is
//! kept in the thread's agent state, so it survives restarts.

use std::str::FromStr;

use art_types::{ToolExample, ToolSchema};
use serde_json::{Value, json};

use super::{ExecutionContext, ToolError, ToolExecutor};

/// Name the model calls it by.
pub const NAME: &str = "calculator";
/// Agent-state key holding the thread's last result.
pub const ANS_KEY: &str = "ans";
/// Longest accepted expression.
pub const MAX_EXPRESSION_CHARS: usize = 1_000;

/// The calculator.
pub struct CalculatorTool {
    schema: ToolSchema,
}

impl Default for CalculatorTool {
    fn default() -> Self {
        Self {
            schema: ToolSchema {
                name: NAME.into(),
                description: "Evaluate a mathematical expression exactly as written. Supports + - * / % ^, \
                    parentheses, sqrt, abs, exp, ln, sin, cos, tan, asin, acos, atan, floor, ceil, round, \
                    min, max, the constants pi and e, and `ans`: the previous result in this conversation."
                    .into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "expression": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_EXPRESSION_CHARS,
                            "description": "The expression, e.g. `2 * (3 + 4)` or `ans / 2`."
                        }
                    },
                    "required": ["expression"],
                    "additionalProperties": false
                }),
                output_schema: Some(json!({
                    "type": "object",
                    "properties": { "result": { "type": "number" }, "expression": { "type": "string" } },
                    "required": ["result", "expression"]
                })),
                examples: vec![ToolExample {
                    input: json!({ "expression": "sqrt(16) + 2^3" }),
                    output: Some(json!({ "result": 12.0, "expression": "sqrt(16) + 2^3" })),
                    description: Some("functions and powers".into()),
                }],
            },
        }
    }
}

/// Evaluate `expression` with `ans` bound when there is a previous result.
pub fn evaluate(expression: &str, ans: Option<f64>) -> Result<f64, ToolError> {
    let unreadable = |why: String| {
        ToolError::new(
            "INVALID_EXPRESSION",
            format!("cannot read `{expression}` as an expression: {why}"),
        )
    };
    let trimmed = expression.trim();
    if trimmed.is_empty() {
        return Err(unreadable("it is empty".into()));
    }
    // meval's tokenizer (on nom 1) panics where its input ends too soon (whitespace
    // only, a number cut short); the parse is pure, so a panic is only a refusal.
    let parsed = crate::panics::catch(|| meval::Expr::from_str(trimmed))
        .map_err(|_| unreadable("it ends too soon".into()))?;
    let expr = parsed.map_err(|e| unreadable(e.to_string()))?;
    let mut context = meval::Context::new();
    if let Some(ans) = ans {
        context.var(ANS_KEY, ans);
    }
    let value = expr.eval_with_context(context).map_err(|e| match e {
        meval::Error::UnknownVariable(name) if name == ANS_KEY => ToolError::new(
            "ANS_UNDEFINED",
            "`ans` has no value yet: there is no previous result in this conversation",
        ),
        meval::Error::UnknownVariable(name) => ToolError::new(
            "UNDEFINED_NAME",
            format!("unknown name `{name}`: use numbers, pi, e, ans and the listed functions"),
        ),
        meval::Error::Function(name, why) => ToolError::new(
            "INVALID_FUNCTION_CALL",
            format!("cannot call `{name}`: {why}"),
        ),
        other => ToolError::new(
            "INVALID_EXPRESSION",
            format!("cannot evaluate `{expression}`: {other}"),
        ),
    })?;
    if value.is_finite() {
        Ok(value)
    } else if expression.contains('/') || expression.contains('%') {
        Err(ToolError::new(
            "DIVISION_BY_ZERO",
            format!("`{expression}` divides by zero"),
        ))
    } else {
        Err(ToolError::new(
            "NON_FINITE_RESULT",
            format!("`{expression}` has no finite result (it overflows or is undefined)"),
        ))
    }
}

#[async_trait::async_trait]
impl ToolExecutor for CalculatorTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn execute(
        &self,
        arguments: &Value,
        context: &ExecutionContext,
    ) -> Result<Value, ToolError> {
        let expression = arguments
            .get("expression")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::new("INVALID_TOOL_ARGUMENTS", "`expression` must be a string")
            })?;
        let mut state = context.state.lock().await;
        let ans = state.data.get(ANS_KEY).and_then(Value::as_f64);
        let result = evaluate(expression, ans)?;
        state.data.insert(ANS_KEY.into(), json!(result));
        Ok(json!({ "result": result, "expression": expression }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_functions_and_constants() {
        assert_eq!(evaluate("2 * (3 + 4)", None).unwrap(), 14.0);
        assert_eq!(evaluate("sqrt(16) + 2^3", None).unwrap(), 12.0);
        assert!((evaluate("cos(pi)", None).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(evaluate("ans / 2", Some(10.0)).unwrap(), 5.0);
    }

    #[test]
    fn clear_errors_for_bad_input() {
        assert_eq!(evaluate("1/0", None).unwrap_err().code, "DIVISION_BY_ZERO");
        assert_eq!(
            evaluate("2 +", None).unwrap_err().code,
            "INVALID_EXPRESSION"
        );
        let undefined = evaluate("x + 1", None).unwrap_err();
        assert_eq!(undefined.code, "UNDEFINED_NAME");
        assert!(undefined.message.contains("`x`"));
        assert_eq!(evaluate("ans + 1", None).unwrap_err().code, "ANS_UNDEFINED");
        // Input meval's own tokenizer would panic on is refused.
        for cut_short in [" ", "", "1 + ", "2e", "2e+"] {
            let error = evaluate(cut_short, None).unwrap_err();
            assert_eq!(error.code, "INVALID_EXPRESSION", "{cut_short:?}");
        }
        assert_eq!(
            evaluate("10^400", None).unwrap_err().code,
            "NON_FINITE_RESULT"
        );
    }

    #[test]
    fn code_is_not_executed() {
        assert!(evaluate("import(\"fs\")", None).is_err());
        assert!(evaluate("process.exit(1)", None).is_err());
        assert!(evaluate("require('child_process')", None).is_err());
    }
}
