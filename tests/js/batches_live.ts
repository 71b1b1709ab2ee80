// Batches with the official npm SDKs: Anthropic's messages.batches, OpenAI's files and
// batches. Run by tests/live/test_live_batches_typescript.py against a scripted model.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI, { toFile } from "openai";

const baseURL = process.env.B3OS_BASE_URL!;
const apiKey = process.env.B3OS_API_KEY!;
const model = process.env.B3OS_MODEL!;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

async function until<T>(look: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let turn = 0; turn < 600; turn++) {
    const found = await look();
    if (found !== undefined) return found;
    await sleep(100);
  }
  throw new Error(`never happened: ${what}`);
}

const anthropic = new Anthropic({ apiKey, baseURL, maxRetries: 0 });
const params = (text: string) => ({
  model, max_tokens: 16, messages: [{ role: "user" as const, content: text }],
});
const created = await anthropic.messages.batches.create({
  requests: [{ custom_id: "a", params: params("one") }, { custom_id: "b", params: params("two") }],
});
assert.equal(created.processing_status, "in_progress");
const ended = await until(async () => {
  const batch = await anthropic.messages.batches.retrieve(created.id);
  return batch.processing_status === "ended" ? batch : undefined;
}, "the message batch ended");
assert.equal(ended.request_counts.succeeded, 2);
const listed = await anthropic.messages.batches.list({ limit: 5 });
assert.ok(listed.data.some((batch) => batch.id === created.id));
const results = new Map<string, string>();
for await (const line of await anthropic.messages.batches.results(created.id)) {
  assert.equal(line.result.type, "succeeded");
  if (line.result.type === "succeeded") {
    const block = line.result.message.content[0];
    results.set(line.custom_id, block.type === "text" ? block.text : "");
  }
}
assert.deepEqual([...results.keys()].sort(), ["a", "b"]);
assert.equal(results.get("a"), "Batched hello.");
assert.equal((await anthropic.messages.batches.delete(created.id)).type, "message_batch_deleted");

const openai = new OpenAI({ apiKey, baseURL, maxRetries: 0 });
const line = JSON.stringify({
  custom_id: "x", method: "POST", url: "/v1/chat/completions",
  body: { model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] },
});
const upload = await openai.files.create({
  file: await toFile(Buffer.from(line + "\n"), "input.jsonl"), purpose: "batch",
});
const batch = await openai.batches.create({
  input_file_id: upload.id, endpoint: "/v1/chat/completions", completion_window: "24h",
});
const done = await until(async () => {
  const found = await openai.batches.retrieve(batch.id);
  return found.status === "completed" ? found : undefined;
}, "the openai batch completed");
const output = JSON.parse((await (await openai.files.content(done.output_file_id!)).text()).trim());
assert.equal(output.custom_id, "x");
assert.equal(output.response.status_code, 200);
assert.equal(output.response.body.choices[0].message.content, "Batched hello.");
console.log(JSON.stringify({ ok: true }));
