// The playground's two ways to the same model: Anthropic Messages and OpenAI Chat
// Completions. Each builds its request from the neutral conversation and folds its stream
// events into the reply's blocks (thinking, text, tool calls).

const THINKING_BUDGET = 1024;

function anthropicContent(turn) {
  if (turn.role === "user" && turn.results) {
    return turn.results.map((r) => ({ type: "tool_result", tool_use_id: r.id, content: r.text }));
  }
  if (turn.role === "user") return turn.text;
  return turn.blocks.flatMap((b) => {
    if (b.type === "thinking") return b.signature ? [{ type: "thinking", thinking: b.text, signature: b.signature }] : [];
    if (b.type === "tool_use") return [{ type: "tool_use", id: b.id, name: b.name, input: parseInput(b.text) }];
    return b.text ? [{ type: "text", text: b.text }] : [];
  });
}

function parseInput(text) {
  try {
    return JSON.parse(text || "{}");
  } catch {
    return {};
  }
}

function openaiMessages(turn) {
  if (turn.role === "user" && turn.results) {
    return turn.results.map((r) => ({ role: "tool", tool_call_id: r.id, content: r.text }));
  }
  if (turn.role === "user") return [{ role: "user", content: turn.text }];
  const text = turn.blocks.filter((b) => b.type === "text").map((b) => b.text).join("");
  const thinking = turn.blocks.filter((b) => b.type === "thinking").map((b) => b.text).join("");
  const calls = turn.blocks.filter((b) => b.type === "tool_use")
    .map((b) => ({ id: b.id, type: "function", function: { name: b.name, arguments: b.text || "{}" } }));
  const message = { role: "assistant", content: text || null };
  if (thinking) message.reasoning_content = thinking;
  if (calls.length) message.tool_calls = calls;
  return [message];
}

export const anthropic = {
  label: "Anthropic Messages",
  path: "/v1/messages",
  body({ model, maxTokens, system, thinking, tools, turns }) {
    const body = { model, max_tokens: maxTokens, stream: true,
      messages: turns.map((t) => ({ role: t.role, content: anthropicContent(t) })) };
    if (system) body.system = system;
    if (tools.length) body.tools = tools;
    if (thinking) {
      body.thinking = { type: "enabled", budget_tokens: THINKING_BUDGET };
      body.max_tokens = maxTokens + THINKING_BUDGET;
    }
    return body;
  },
  fold(reply, { event, data }) {
    const e = JSON.parse(data);
    if (event === "message_start") reply.usage(e.message.usage.input_tokens, 0);
    else if (event === "content_block_start") startBlock(reply, e.index, e.content_block);
    else if (event === "content_block_delta") deltaBlock(reply, e.index, e.delta);
    else if (event === "message_delta") {
      reply.stop(e.delta.stop_reason);
      reply.usage(null, e.usage.output_tokens);
    } else if (event === "error") reply.fail(e.error.message);
  },
};

function startBlock(reply, index, block) {
  if (block.type === "tool_use") reply.open(index, "tool_use", { id: block.id, name: block.name });
  else reply.open(index, block.type === "thinking" ? "thinking" : "text");
}

function deltaBlock(reply, index, delta) {
  if (delta.type === "text_delta") reply.add(index, delta.text);
  else if (delta.type === "thinking_delta") reply.add(index, delta.thinking);
  else if (delta.type === "input_json_delta") reply.add(index, delta.partial_json);
  else if (delta.type === "signature_delta") reply.sign(index, delta.signature);
}

export const openai = {
  label: "OpenAI Chat Completions",
  path: "/chat/completions",
  body({ model, maxTokens, system, thinking, tools, turns }) {
    const messages = system ? [{ role: "system", content: system }] : [];
    const body = { model, max_tokens: maxTokens, stream: true, stream_options: { include_usage: true },
      messages: messages.concat(turns.flatMap(openaiMessages)) };
    if (tools.length) {
      body.tools = tools.map((t) => ({ type: "function",
        function: { name: t.name, description: t.description, parameters: t.input_schema } }));
    }
    if (thinking) body.reasoning_effort = "low";
    return body;
  },
  fold(reply, { data }) {
    if (data === "[DONE]") return;
    const chunk = JSON.parse(data);
    if (chunk.error) return reply.fail(chunk.error.message);
    if (chunk.usage) reply.usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens);
    const choice = (chunk.choices || [])[0];
    if (!choice) return;
    const delta = choice.delta || {};
    if (delta.reasoning_content) {
      reply.open("thinking", "thinking");
      reply.add("thinking", delta.reasoning_content);
    }
    if (delta.content) {
      reply.open("text", "text");
      reply.add("text", delta.content);
    }
    for (const call of delta.tool_calls || []) {
      const key = `tool${call.index}`;
      reply.open(key, "tool_use", { id: call.id, name: call.function && call.function.name });
      if (call.function && call.function.arguments) reply.add(key, call.function.arguments);
    }
    if (choice.finish_reason) reply.stop(choice.finish_reason);
  },
};

export const WIRES = { anthropic, openai };
