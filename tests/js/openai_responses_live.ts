// Live checks of the Responses API with the official `openai` npm package: create, stream
// (the helper's final response equal to the whole one, its text deltas joined to it), a
// function call, and the stored response (retrieve, input items, continue, delete). Run by
// tests/live/test_live_typescript.py with B3OS_BASE_URL, B3OS_API_KEY and B3OS_MODEL set.
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({
  apiKey: process.env.B3OS_API_KEY,
  baseURL: process.env.B3OS_BASE_URL,
  maxRetries: 0,
});
const model = process.env.B3OS_MODEL!;
const ask = {
  model, input: "Name one river in Oregon.", instructions: "Be brief.",
  max_output_tokens: 400, temperature: 0,
};

// whole and streamed: the same response but for ids and times
await client.responses.create(ask); // both compared calls then reuse the cached prompt
const whole = await client.responses.create(ask);
const stream = client.responses.stream(ask);
const deltas: string[] = [];
const kinds: string[] = [];
stream.on("event", (event) => kinds.push(event.type));
stream.on("response.output_text.delta", (event) => deltas.push(event.delta));
const streamed = await stream.finalResponse();
assert.ok(whole.output_text.length > 0);
assert.equal(streamed.output_text, whole.output_text);
assert.equal(deltas.join(""), whole.output_text);
assert.equal(streamed.status, whole.status);
assert.deepEqual(streamed.usage, whole.usage);
assert.equal(kinds[0], "response.created");
assert.equal(kinds.filter((k) => k === "response.completed" || k === "response.incomplete").length, 1);

// a forced function call, then its output through previous_response_id
const weather = {
  type: "function" as const, name: "get_weather", description: "Weather in a city", strict: true,
  parameters: {
    type: "object", additionalProperties: false,
    properties: { city: { type: "string", maxLength: 30 } }, required: ["city"],
  },
};
const first = await client.responses.create({
  model, input: "What is the weather in Paris?", tools: [weather], max_output_tokens: 60,
  temperature: 0, tool_choice: { type: "function", name: "get_weather" }, parallel_tool_calls: false,
});
assert.equal(first.output.length, 1); // parallel_tool_calls false: one call
const call = first.output.at(-1)!;
assert.equal(call.type, "function_call");
if (call.type !== "function_call") throw new Error("no call");
assert.equal(typeof JSON.parse(call.arguments).city, "string");
const second = await client.responses.create({
  model, previous_response_id: first.id, tools: [weather], tool_choice: "none",
  max_output_tokens: 30, temperature: 0,
  input: [{ type: "function_call_output", call_id: call.call_id, output: "18 C and sunny" }],
});
assert.equal(second.previous_response_id, first.id);
assert.ok(second.output_text.length > 0);

// the stored response: retrieved as answered, its items listed, deleted
const again = await client.responses.retrieve(second.id);
assert.deepEqual(again, second);
const items = [];
for await (const item of client.responses.inputItems.list(second.id, { order: "asc" })) items.push(item);
assert.deepEqual(items.map((i) => i.type), ["message", "function_call", "function_call_output"]);
await client.responses.delete(second.id);
await assert.rejects(client.responses.retrieve(second.id), OpenAI.NotFoundError);

console.log(JSON.stringify({ ok: true }));
