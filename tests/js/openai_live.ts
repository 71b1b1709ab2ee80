// Live checks with the official `openai` npm package: streaming, tools, structured output,
// logprobs and legacy completions. Run by tests/test_live_typescript.py with
// B3OS_BASE_URL, B3OS_API_KEY and B3OS_MODEL set.
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({
  apiKey: process.env.B3OS_API_KEY,
  baseURL: process.env.B3OS_BASE_URL,
  maxRetries: 0,
});
const model = process.env.B3OS_MODEL!;
const ask = [{ role: "user" as const, content: "What is the weather in Paris, in celsius?" }];
const weather = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 40 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
};

// streaming text: the helper's content deltas join to its final completion
const runner = client.chat.completions.stream({ model, messages: ask, max_tokens: 40, temperature: 0 });
const pieces: string[] = [];
runner.on("content", (delta) => pieces.push(delta));
const final = await runner.finalChatCompletion();
assert.equal(pieces.join(""), final.choices[0].message.content);
assert.equal(final.choices[0].message.role, "assistant");

// include_usage: usage only on the last chunk, which has no choices
const chunks = [];
for await (const chunk of await client.chat.completions.create({
  model, messages: ask, max_tokens: 8, stream: true, stream_options: { include_usage: true },
})) chunks.push(chunk);
assert.equal(chunks.at(-1)!.choices.length, 0);
assert.ok(chunks.at(-1)!.usage!.completion_tokens > 0);
assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));

// tools: a forced call streamed; the helper accumulates its arguments into valid JSON
const toolRunner = client.chat.completions.stream({
  model, messages: ask, tools: [weather], max_tokens: 80, temperature: 0,
  tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false,
});
const called = await toolRunner.finalChatCompletion();
assert.equal(called.choices[0].finish_reason, "tool_calls");
const call = called.choices[0].message.tool_calls![0];
assert.equal(call.type, "function");
const args = JSON.parse(call.type === "function" ? call.function.arguments : "{}");
assert.equal(typeof args.city, "string");
assert.ok(["celsius", "fahrenheit"].includes(args.unit));

// structured output by JSON Schema
const structured = await client.chat.completions.create({
  model, max_tokens: 60, temperature: 0,
  messages: [{ role: "user", content: "A city as JSON." }],
  response_format: {
    type: "json_schema",
    json_schema: {
      name: "city", strict: true,
      schema: {
        type: "object", additionalProperties: false, required: ["name", "country"],
        properties: { name: { type: "string", maxLength: 30 }, country: { type: "string", maxLength: 30 } },
      },
    },
  },
});
const city = JSON.parse(structured.choices[0].message.content!);
assert.equal(typeof city.name, "string");
assert.equal(typeof city.country, "string");

// logprobs: one entry per reply token, joining to the text
const scored = await client.chat.completions.create({
  model, messages: ask, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 1,
});
const entries = scored.choices[0].logprobs!.content!;
assert.equal(entries.map((e) => e.token).join(""), scored.choices[0].message.content);

// legacy completions
const legacy = await client.completions.create({ model, prompt: "One, two,", max_tokens: 4, temperature: 0 });
assert.equal(legacy.object, "text_completion");
assert.ok(legacy.choices[0].text.length > 0);

// a refused field comes back as a BadRequestError naming it
await assert.rejects(
  client.chat.completions.create({ model, messages: ask, max_tokens: 4, audio: { voice: "alloy", format: "wav" } } as never),
  (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "audio",
);

console.log(JSON.stringify({ ok: true }));
