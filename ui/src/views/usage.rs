//! The Usage page: what runs used and cost — totals, a chart of tokens per day stacked by
//! model, a table grouped by model, provider, thread or day — and the prices per model
//! that cost the runs whose provider does not report a cost.

use art_types::commands as cmd;
use art_types::usage::{
    self, DailyUsage, ModelPrice, UsageBy, UsageReport, UsageTotals, split_model_key,
};
use art_types::{ErrorCode, IpcError};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::ipc;

/// A count for people: 950, 12.3k, 4.56M.
pub fn compact(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// One thread's totals in a line (its header).
pub fn summary(t: &UsageTotals) -> String {
    let runs = if t.runs == 1 {
        "1 run".to_owned()
    } else {
        format!("{} runs", t.runs)
    };
    let mut parts = vec![
        runs,
        format!("{} in", compact(t.input_tokens)),
        format!("{} out", compact(t.output_tokens + t.thinking_tokens)),
    ];
    if t.cost_nanos.is_some() {
        parts.push(t.cost_label());
    }
    parts.join(" · ")
}

/// `model (provider)` from a model's key.
fn model_label(key: &str) -> String {
    match split_model_key(key) {
        Some((provider, model)) => usage::model_label(provider, model),
        None => key.to_owned(),
    }
}

/// Colours of the chart's models, in order.
const PALETTE: [&str; 8] = [
    "#5b5bd6", "#2a9d8f", "#e76f51", "#e9c46a", "#8d6cab", "#3a86ff", "#f4a261", "#6c757d",
];

/// One bar of the chart: a day, its segments bottom up (model, tokens, colour).
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Tokens that day.
    pub total: u64,
    /// Bottom up.
    pub segments: Vec<(String, u64, &'static str)>,
}

/// The chart's bars (days in order) and legend (models by tokens, each its colour;
/// models past the palette share its last colour).
pub fn bars(daily: &[DailyUsage]) -> (Vec<Bar>, Vec<(String, &'static str)>) {
    let mut models: Vec<(String, u64)> = Vec::new();
    for d in daily {
        match models.iter_mut().find(|(m, _)| *m == d.model) {
            Some((_, n)) => *n += d.tokens,
            None => models.push((d.model.clone(), d.tokens)),
        }
    }
    models.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let colour = |model: &str| {
        let i = models.iter().position(|(m, _)| m == model).unwrap_or(0);
        PALETTE[i.min(PALETTE.len() - 1)]
    };
    let mut bars: Vec<Bar> = Vec::new();
    for d in daily {
        if bars.last().is_none_or(|b| b.day != d.day) {
            bars.push(Bar {
                day: d.day.clone(),
                total: 0,
                segments: Vec::new(),
            });
        }
        let bar = bars.last_mut().expect("pushed above");
        bar.total += d.tokens;
        bar.segments
            .push((d.model.clone(), d.tokens, colour(&d.model)));
    }
    for bar in &mut bars {
        bar.segments
            .sort_by_key(|(m, _, _)| models.iter().position(|(x, _)| x == m));
    }
    let legend = models.iter().map(|(m, _)| (m.clone(), colour(m))).collect();
    (bars, legend)
}

/// Chart size (SVG units; it scales to the page).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 180.0;

#[component]
fn Chart(daily: Vec<DailyUsage>) -> impl IntoView {
    let (bars, legend) = bars(&daily);
    let peak = bars.iter().map(|b| b.total).max().unwrap_or(1).max(1) as f64;
    let slot = WIDTH / bars.len().max(1) as f64;
    let width = (slot * 0.7).min(28.0);
    let label_every = (bars.len() / 8).max(1);
    let rects = bars
        .iter()
        .enumerate()
        .flat_map(|(i, bar)| {
            let x = i as f64 * slot + (slot - width) / 2.0;
            let mut y = HEIGHT;
            bar.segments
                .iter()
                .map(|(model, tokens, colour)| {
                    let h = *tokens as f64 / peak * (HEIGHT - 8.0);
                    y -= h;
                    let title = format!("{} · {model}: {} tokens", bar.day, compact(*tokens));
                    view! {
                        <rect x=x y=y width=width height=h fill=*colour data-day=bar.day.clone() data-model=model.clone()>
                            <title>{title}</title>
                        </rect>
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect_view();
    let labels = bars
        .iter()
        .enumerate()
        .filter(|(i, _)| i % label_every == 0)
        .map(|(i, bar)| {
            let x = i as f64 * slot + slot / 2.0;
            view! { <text x=x y=HEIGHT + 14.0 text-anchor="middle">{bar.day[5..].to_owned()}</text> }
        })
        .collect_view();
    view! {
        <figure class="usage-chart" id="usage-chart">
            <svg viewBox=format!("0 0 {WIDTH} {}", HEIGHT + 20.0) role="img" aria-label="Tokens per day, by model">
                <line x1="0" x2=WIDTH y1=HEIGHT y2=HEIGHT class="axis" />
                {rects}
                {labels}
            </svg>
            <figcaption class="legend">
                {legend.into_iter().map(|(model, colour)| view! {
                    <span class="legend-item" data-model=model.clone()>
                        <svg class="swatch" viewBox="0 0 10 10"><rect width="10" height="10" rx="2" fill=colour /></svg>
                        {model_label(&model)}
                    </span>
                }).collect_view()}
            </figcaption>
        </figure>
    }
}

/// The prices, and a form to enter one; `changed` runs after a save or a removal; a
/// model put in `fill` (a table row's "Set price") fills the form's names.
#[component]
fn Prices(changed: Callback<()>, fill: RwSignal<Option<(String, String)>>) -> impl IntoView {
    let prices = RwSignal::new(Vec::<ModelPrice>::new());
    let (provider, model) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    Effect::new(move |_| {
        if let Some((p, m)) = fill.get() {
            provider.set(p);
            model.set(m);
            if let Some(input) = document().get_element_by_id("price-input") {
                use wasm_bindgen::JsCast;
                if let Ok(input) = input.dyn_into::<leptos::web_sys::HtmlElement>() {
                    let _ = input.focus();
                }
            }
        }
    });
    let (input, output) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let problem = RwSignal::new(None::<IpcError>);
    let reload = move || {
        spawn_local(async move {
            match ipc::call(&cmd::ListPrices {}).await {
                Ok(list) => prices.set(list),
                Err(e) => problem.set(Some(e)),
            }
        });
    };
    reload();
    let save = move |_| {
        let parse = |s: String| s.trim().parse::<f64>().ok();
        let (Some(i), Some(o)) = (parse(input.get_untracked()), parse(output.get_untracked()))
        else {
            problem.set(Some(IpcError::new(
                ErrorCode::InvalidInput,
                "prices are numbers: dollars per million tokens",
            )));
            return;
        };
        let price = ModelPrice {
            provider: provider.get_untracked(),
            model: model.get_untracked(),
            input_per_million: i,
            output_per_million: o,
        };
        spawn_local(async move {
            match ipc::call(&cmd::SavePrice { price }).await {
                Ok(_) => {
                    problem.set(None);
                    reload();
                    changed.run(());
                }
                Err(e) => problem.set(Some(e)),
            }
        });
    };
    let remove = move |p: ModelPrice| {
        spawn_local(async move {
            let args = cmd::DeletePrice {
                provider: p.provider,
                model: p.model,
            };
            match ipc::call(&args).await {
                Ok(()) => {
                    reload();
                    changed.run(());
                }
                Err(e) => problem.set(Some(e)),
            }
        });
    };
    let field =
        |id: &'static str, label: &'static str, value: RwSignal<String>, hint: &'static str| {
            view! {
                <label class="price-field">
                    <span class="muted small">{label}</span>
                    <input id=id placeholder=hint prop:value=move || value.get()
                        on:input=move |ev| value.set(event_target_value(&ev)) />
                </label>
            }
        };
    view! {
        <section class="card prices" id="prices">
            <h2>"Prices"</h2>
            <p class="muted small">"Dollars per million tokens, for models whose provider does not report a cost (OpenRouter does). Thinking counts as output."</p>
            <table class="usage-table" id="price-table">
                <tbody>
                    <For each=move || prices.get() key=|p| format!("{}/{}/{}/{}", p.provider, p.model, p.input_per_million, p.output_per_million)
                        children=move |p| {
                            let gone = p.clone();
                            view! {
                                <tr data-model=format!("{}/{}", p.provider, p.model)>
                                    <td>{format!("{} ({})", p.model, p.provider)}</td>
                                    <td class="num">{format!("in ${}/M", p.input_per_million)}</td>
                                    <td class="num">{format!("out ${}/M", p.output_per_million)}</td>
                                    <td><button class="ghost small remove-price" on:click=move |_| remove(gone.clone())>"Remove"</button></td>
                                </tr>
                            }
                        } />
                </tbody>
            </table>
            <div class="price-form">
                {field("price-provider", "Provider", provider, "openai")}
                {field("price-model", "Model", model, "gpt-4o-mini")}
                {field("price-input", "Input $/M", input, "0.15")}
                {field("price-output", "Output $/M", output, "0.60")}
                <button id="save-price" class="primary" on:click=save>"Save price"</button>
            </div>
            {move || problem.get().map(|error| view! { <ErrorCard error id="price-problem" /> })}
        </section>
    }
}

/// The Usage page.
#[component]
pub fn Usage() -> impl IntoView {
    let by = RwSignal::new(UsageBy::Model);
    let since = RwSignal::new(String::new());
    let report = RwSignal::new(None::<Result<UsageReport, IpcError>>);
    // Bumped when a price changes: costs change with it.
    let priced = RwSignal::new(0_u64);
    // A model whose runs lack a cost, chosen to be priced.
    let fill = RwSignal::new(None::<(String, String)>);
    Effect::new(move |_| {
        priced.track();
        let args = cmd::GetUsage {
            by: by.get(),
            since: Some(since.get()).filter(|s| !s.is_empty()),
        };
        spawn_local(async move {
            let answer = ipc::call(&args).await;
            report.try_set(Some(answer));
        });
    });
    let heading = move || match by.get() {
        UsageBy::Model => "Model",
        UsageBy::Provider => "Provider",
        UsageBy::Thread => "Thread",
        UsageBy::Day => "Day",
    };
    let body = move || {
        match report.get() {
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
        Some(Err(error)) => view! { <ErrorCard error id="usage-problem" /> }.into_any(),
        Some(Ok(r)) if r.total.runs == 0 => view! {
            <p class="muted" id="usage-empty">"No runs yet in this period: every answered question adds its tokens, time and cost here."</p>
        }.into_any(),
        Some(Ok(r)) => {
            let t = r.total;
            view! {
                <div class="usage-totals" id="usage-totals">
                    <div><strong>{t.runs}</strong><span class="muted small">"runs"</span></div>
                    <div><strong>{compact(t.input_tokens)}</strong><span class="muted small">"tokens in"</span></div>
                    <div><strong>{compact(t.output_tokens)}</strong><span class="muted small">"tokens out"</span></div>
                    <div><strong>{compact(t.thinking_tokens)}</strong><span class="muted small">"thinking"</span></div>
                    <div><strong>{format!("{:.1} s", t.duration_ms as f64 / 1000.0)}</strong><span class="muted small">"time"</span></div>
                    <div><strong id="usage-cost">{t.cost_label()}</strong><span class="muted small">"cost"</span></div>
                </div>
                <Chart daily=r.daily.clone() />
                <table class="usage-table" id="usage-table">
                    <thead><tr>
                        <th>{heading}</th><th class="num">"Runs"</th><th class="num">"In"</th>
                        <th class="num">"Out"</th><th class="num">"Thinking"</th><th class="num">"Time"</th><th class="num">"Cost"</th>
                    </tr></thead>
                    <tbody>
                        {r.rows.into_iter().map(|row| {
                            let t = row.totals;
                            view! {
                                <tr data-key=row.key.clone()>
                                    <td>{row.label}</td>
                                    <td class="num">{t.runs}</td>
                                    <td class="num">{compact(t.input_tokens)}</td>
                                    <td class="num">{compact(t.output_tokens)}</td>
                                    <td class="num">{compact(t.thinking_tokens)}</td>
                                    <td class="num">{format!("{:.1} s", t.duration_ms as f64 / 1000.0)}</td>
                                    <td class="num usage-row-cost">
                                        {t.cost_label()}
                                        {(by.get_untracked() == UsageBy::Model && t.costed_runs < t.runs)
                                            .then(|| split_model_key(&row.key).map(|(p, m)| (p.to_owned(), m.to_owned())))
                                            .flatten()
                                            .filter(|(p, m)| !p.is_empty() && !m.is_empty())
                                            .map(|named| view! {
                                                <button class="link small set-price" title="Enter this model's price, to cost its runs"
                                                    on:click=move |_| fill.set(Some(named.clone()))>" Set price"</button>
                                            })}
                                    </td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }
    }
    };
    view! {
        <section class="pane usage" id="usage">
            <h1>"Usage"</h1>
            <p class="muted">"Tokens, time and cost of every run, entered in the ledger when the run ends. A cost is what the provider reported or your price for the model — never a guess."</p>
            <div class="usage-controls">
                <label>"Group by "
                    <select id="usage-by" on:change=move |ev| by.set(UsageBy::parse(&event_target_value(&ev)).unwrap_or_default())>
                        {UsageBy::ALL.into_iter().map(|b| view! { <option value=b.as_str() selected=move || by.get() == b>{b.as_str()}</option> }).collect_view()}
                    </select>
                </label>
                <label>"From "
                    <input id="usage-since" type="date" prop:value=move || since.get()
                        on:change=move |ev| since.set(event_target_value(&ev)) />
                </label>
            </div>
            {body}
            <Prices changed=Callback::new(move |()| priced.update(|n| *n += 1)) fill=fill />
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(day: &str, model: &str, tokens: u64) -> DailyUsage {
        DailyUsage {
            day: day.into(),
            model: model.into(),
            tokens,
        }
    }

    #[test]
    fn bars_stack_models_in_one_order_with_one_colour_each() {
        let daily = [
            day("2026-11-23", "p/small", 10),
            day("2026-11-23", "p/big", 100),
            day("2026-11-24", "p/big", 50),
        ];
        let (bars, legend) = bars(&daily);
        assert_eq!(legend[0], ("p/big".to_owned(), PALETTE[0]));
        assert_eq!(legend[1], ("p/small".to_owned(), PALETTE[1]));
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[0].total, 110);
        let first: Vec<&str> = bars[0]
            .segments
            .iter()
            .map(|(m, _, _)| m.as_str())
            .collect();
        assert_eq!(
            first,
            ["p/big", "p/small"],
            "the biggest model at the bottom"
        );
        assert_eq!(bars[1].segments, [("p/big".to_owned(), 50, PALETTE[0])]);
    }

    #[test]
    fn numbers_and_costs_read_well() {
        assert_eq!(compact(950), "950");
        assert_eq!(compact(12_345), "12.3k");
        assert_eq!(compact(4_560_000), "4.56M");
        let mut t = UsageTotals {
            runs: 3,
            input_tokens: 1_200,
            output_tokens: 300,
            ..Default::default()
        };
        assert_eq!(t.cost_label(), "—");
        assert_eq!(summary(&t), "3 runs · 1.2k in · 300 out");
        t.cost_nanos = Some(2_100_000);
        t.costed_runs = 2;
        assert_eq!(t.cost_label(), "$0.0021 (2 of 3 runs)");
        t.costed_runs = 3;
        assert_eq!(summary(&t), "3 runs · 1.2k in · 300 out · $0.0021");
    }
}
