// The official `ollama` Node client's bare streaming loop: one chat streamed from the
// benchmark's fake server, the text accumulated. Prints one JSON line of figures.
// Usage: node ollama_stream.mjs <base url> <model>
import { Ollama } from "ollama";
import { report } from "./report.mjs";

const [url, model] = process.argv.slice(2);
const client = new Ollama({ host: url });
await report(async (onText) => {
  const stream = await client.chat({
    model,
    messages: [{ role: "user", content: "Hi" }],
    stream: true,
  });
  for await (const part of stream) {
    const text = part.message?.content;
    if (text) onText(text);
  }
});
