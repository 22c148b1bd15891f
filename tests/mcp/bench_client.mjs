// The MCP benchmark's peer: the official TypeScript SDK client (@modelcontextprotocol/sdk)
// over stdio to server-everything, the same server and calls as our client. Prints one
// JSON line: the time from spawn to a listed tool set (`readyMs`), and the round trip
// of each `tools/call` of `echo` after a warm-up (`callsUs`).
//
//   node bench_client.mjs CALLS WARMUP
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const calls = Number(process.argv[2] ?? 2000);
const warmup = Number(process.argv[3] ?? 200);
const server = new URL("./node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url).pathname;

const started = performance.now();
const client = new Client({ name: "art-bench-peer", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: "node", args: [server, "stdio"], stderr: "ignore" }));
await client.listTools();
const readyMs = performance.now() - started;

const call = () => client.callTool({ name: "echo", arguments: { message: "ping" } });
for (let i = 0; i < warmup; i++) await call();
const callsUs = [];
for (let i = 0; i < calls; i++) {
  const t = performance.now();
  const result = await call();
  callsUs.push((performance.now() - t) * 1000);
  if (result.content?.[0]?.text !== "Echo: ping") throw new Error("unexpected result " + JSON.stringify(result));
}
await client.close();
console.log(JSON.stringify({ readyMs, callsUs }));
