// The official `openai` Node SDK's bare streaming loop: one chat completion streamed from
// the benchmark's fake server, the text accumulated. Prints one JSON line of figures.
// Usage: node openai_stream.mjs <base url> <model>
import OpenAI from "openai";
import { report } from "./report.mjs";

const [url, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "k", maxRetries: 0 });
await report(async (onText) => {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "Hi" }],
    stream: true,
  });
  for await (const chunk of stream) {
    const text = chunk.choices[0]?.delta?.content;
    if (text) onText(text);
  }
});
