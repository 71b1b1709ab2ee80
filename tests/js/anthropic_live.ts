// Live checks with the official TypeScript SDK: streaming, tools and thinking.
// Run by tests/test_live_typescript.py with B3OS_BASE_URL, B3OS_API_KEY and B3OS_MODEL set.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({
  authToken: process.env.B3OS_API_KEY,
  baseURL: process.env.B3OS_BASE_URL,
  maxRetries: 0,
});
const model = process.env.B3OS_MODEL!;
const ask = [{ role: "user" as const, content: "What is the weather in Paris?" }];
const weather = {
  name: "get_weather",
  description: "Get the weather in a city",
  input_schema: {
    type: "object" as const,
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["c", "f"] } },
    required: ["city", "unit"],
  },
};

// streaming text: the deltas join to the final message's text
const pieces: string[] = [];
const stream = client.messages.stream({ model, max_tokens: 48, messages: ask });
stream.on("text", (text) => pieces.push(text));
const streamed = await stream.finalMessage();
const first = streamed.content[0];
assert.equal(first.type, "text");
assert.equal(pieces.join(""), first.type === "text" ? first.text : "");
assert.ok(streamed.usage.output_tokens > 0);

// tools: a forced call, streamed, folds into a valid input
const toolStream = client.messages.stream({
  model, max_tokens: 120, messages: ask, tools: [weather],
  tool_choice: { type: "any", disable_parallel_tool_use: true }, top_k: 1,
});
const jsonPieces: string[] = [];
toolStream.on("inputJson", (partial) => jsonPieces.push(partial));
const called = await toolStream.finalMessage();
assert.equal(called.stop_reason, "tool_use");
const call = called.content.find((b) => b.type === "tool_use");
assert.ok(call && call.type === "tool_use");
assert.deepEqual(JSON.parse(jsonPieces.join("")), call.input);
const input = call.input as { city: unknown; unit: unknown };
assert.equal(typeof input.city, "string");
assert.ok(input.unit === "c" || input.unit === "f");

// thinking: a signed thinking block first, streamed as thinking then signature
const thinkingStream = client.messages.stream({
  model, max_tokens: 160, messages: ask,
  thinking: { type: "adaptive" }, output_config: { effort: "low" },
});
let signatures = 0;
thinkingStream.on("streamEvent", (event) => {
  if (event.type === "content_block_delta" && event.delta.type === "signature_delta") signatures++;
});
const thought = await thinkingStream.finalMessage();
assert.equal(thought.content[0].type, "thinking");
assert.ok(thought.content[0].type === "thinking" && thought.content[0].signature.length > 0);
assert.equal(signatures, 1);

console.log(JSON.stringify({ ok: true, text: first.type === "text" ? first.text : "" }));
