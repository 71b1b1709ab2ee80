// The Vercel AI SDK (`ai` with `@ai-sdk/openai` and `@ai-sdk/anthropic`) with its default
// settings against the live server: one flow of the client matrix per run.
// Usage: tsx clients/vercel_ai.ts <api> <flow>, api: openai (the provider's default, the
// Responses API), openai-chat (`openai.chat`, Chat Completions) or anthropic; flow: text,
// stream or tool. B3OS_BASE_URL, B3OS_API_KEY and B3OS_MODEL name the server; the prompts
// and the answers the scripted engine gives come in B3OS_MATRIX (JSON).
import assert from "node:assert/strict";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, isStepCount, streamText, tool } from "ai";
import { z } from "zod";

const [api, flow] = process.argv.slice(2);
const base = process.env.B3OS_BASE_URL!;
const apiKey = process.env.B3OS_API_KEY!;
const id = process.env.B3OS_MODEL!;
const matrix = JSON.parse(process.env.B3OS_MATRIX!);

function model() {
  if (api === "anthropic") return createAnthropic({ baseURL: `${base}/v1`, apiKey })(id);
  const openai = createOpenAI({ baseURL: base, apiKey });
  if (api === "openai-chat") return openai.chat(id);
  if (api === "openai") return openai(id);
  throw new Error(`unknown api ${api}`);
}

const weather = tool({
  description: "The current weather in a city",
  inputSchema: z.object({ city: z.string().describe("The city") }),
  execute: async ({ city }) => `${matrix.tool_result} in ${city}`,
});

async function text() {
  const result = await generateText({ model: model(), prompt: matrix.text_prompt });
  assert.equal(result.text, matrix.text_answer);
  return { text: result.text };
}

async function stream() {
  const result = streamText({ model: model(), prompt: matrix.stream_prompt });
  const pieces: string[] = [];
  for await (const piece of result.textStream) pieces.push(piece);
  assert.equal(pieces.join(""), matrix.stream_answer);
  assert.ok(pieces.length > 1, `one piece only: ${JSON.stringify(pieces)}`);
  return { pieces: pieces.length };
}

async function toolRoundTrip() {
  const result = await generateText({
    model: model(), prompt: matrix.tool_prompt, tools: { get_weather: weather },
    stopWhen: isStepCount(2),
  });
  const calls = result.steps[0].toolCalls;
  assert.deepEqual(calls.map((c) => [c.toolName, c.input]), [["get_weather", { city: "Paris" }]]);
  assert.equal(result.steps.length, 2);
  assert.equal(result.text, matrix.tool_answer);
  return { steps: result.steps.length, text: result.text };
}

const flows: Record<string, () => Promise<object>> = { text, stream, tool: toolRoundTrip };
console.log(JSON.stringify({ ok: true, ...(await flows[flow]()) }));
