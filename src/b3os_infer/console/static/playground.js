// The playground: a chat with a served model through the real API, streamed, in either
// wire format; thinking and tool calls appear as blocks of their own.

import { call, getJSON } from "./api.js";
import { h, number, show } from "./dom.js";
import { events } from "./sse.js";
import { WIRES } from "./wires.js";

const SAMPLE_TOOLS = JSON.stringify([{
  name: "get_weather",
  description: "The current weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
}], null, 2);

const LABELS = { thinking: "Thinking", text: null, tool_use: "Tool call" };

/** One assistant turn on screen: its blocks, filled as the stream's events arrive. */
class Reply {
  constructor(into) {
    this.turn = { role: "assistant", blocks: [] };
    this.keys = new Map();
    this.bodyEl = h("div", { class: "blocks" });
    this.statusEl = h("div", { class: "reply-status muted small" }, "waiting for the first token…");
    this.inTokens = null;
    this.outTokens = null;
    this.stopReason = null;
    into.append(h("div", { class: "turn assistant" }, h("div", { class: "role" }, "assistant"), this.bodyEl, this.statusEl));
  }

  open(key, type, extra = {}) {
    if (this.keys.has(key)) return;
    const block = { type, text: "", ...extra };
    const label = LABELS[type] && h("div", { class: "label" }, LABELS[type],
      type === "tool_use" ? [" · ", h("span", { class: "mono" }, block.name || "")] : null);
    const body = h(type === "tool_use" ? "pre" : "div", { class: "body" });
    this.bodyEl.append(h("div", { class: `block ${type}`, "data-block": type }, label, body));
    this.keys.set(key, { block, body });
    this.turn.blocks.push(block);
  }

  add(key, text) {
    const entry = this.keys.get(key);
    entry.block.text += text;
    entry.body.textContent = entry.block.type === "tool_use" ? pretty(entry.block.text) : entry.block.text;
  }

  sign(key, signature) {
    this.keys.get(key).block.signature = signature;
  }

  usage(input, output) {
    if (input !== null && input !== undefined) this.inTokens = input;
    if (output !== null && output !== undefined) this.outTokens = output;
  }

  stop(reason) {
    this.stopReason = reason;
  }

  fail(message) {
    this.bodyEl.append(h("div", { class: "block error", "data-block": "error" }, message));
    this.failed = true;
  }

  done(requestId, note) {
    const parts = [note || (this.stopReason && `stop: ${this.stopReason}`)];
    if (this.inTokens !== null) parts.push(`${number(this.inTokens)} in / ${number(this.outTokens)} out`);
    if (requestId) parts.push(requestId);
    show(this.statusEl, parts.filter(Boolean).join(" · "));
    this.statusEl.dataset.done = "1";
  }

  calls() {
    return this.turn.blocks.filter((b) => b.type === "tool_use");
  }
}

function pretty(json) {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;   // still arriving
  }
}

export class PlaygroundView {
  constructor(root) {
    this.root = root;
    this.turns = [];
    this.controller = null;
  }

  async mount() {
    this.models = (await getJSON("/models")).data.filter((m) => (m.b3os || {}).kind !== "embedding");
    this.build();
  }

  unmount() {
    if (this.controller) this.controller.abort();
  }

  build() {
    const f = (this.form = {
      model: h("select", { id: "pg-model" }, this.models.map((m) => h("option", { value: m.id }, m.id))),
      wire: h("select", { id: "pg-wire" }, Object.entries(WIRES).map(([k, w]) => h("option", { value: k }, w.label))),
      maxTokens: h("input", { id: "pg-max-tokens", type: "number", min: 1, value: "512" }),
      thinking: h("input", { id: "pg-thinking", type: "checkbox" }),
      useTools: h("input", { id: "pg-tools-on", type: "checkbox" }),
      tools: h("textarea", { id: "pg-tools", rows: 9, class: "mono", spellcheck: "false" }, SAMPLE_TOOLS),
      system: h("textarea", { id: "pg-system", rows: 3, placeholder: "optional instructions" }),
      input: h("textarea", { id: "pg-input", rows: 3, placeholder: "Say something to the model (Ctrl+Enter sends)",
        onkeydown: (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) this.send(); } }),
    });
    this.transcript = h("div", { id: "transcript", class: "transcript" },
      h("p", { class: "muted empty" }, "Nothing yet. Each reply is streamed through the API you pick."));
    this.sendButton = h("button", { type: "button", id: "pg-send", onclick: () => this.send() }, "Send");
    this.stopButton = h("button", { type: "button", id: "pg-stop", class: "ghost", disabled: true, onclick: () => this.controller && this.controller.abort() }, "Stop");
    this.note = h("p", { class: "error", id: "pg-error" });
    show(this.root, h("div", { class: "playground" },
      h("aside", { class: "card settings" }, h("h2", {}, "Playground"),
        h("label", { class: "field" }, "Model", f.model),
        h("label", { class: "field" }, "API", f.wire),
        h("label", { class: "field" }, "Max tokens", f.maxTokens),
        h("label", { class: "check" }, f.thinking, " Thinking"),
        h("label", { class: "check" }, f.useTools, " Offer these tools"), f.tools,
        h("label", { class: "field" }, "System", f.system),
        h("button", { type: "button", class: "ghost", onclick: () => this.clear() }, "New chat")),
      h("section", { class: "card chat" }, this.transcript, this.note,
        h("div", { class: "composer" }, f.input, h("div", { class: "buttons" }, this.sendButton, this.stopButton)))));
  }

  clear() {
    this.turns = [];
    show(this.transcript);
  }

  tools() {
    if (!this.form.useTools.checked) return [];
    const tools = JSON.parse(this.form.tools.value);
    if (!Array.isArray(tools)) throw new Error("tools: give a JSON array of {name, description, input_schema}");
    return tools;
  }

  userTurn(text) {
    const last = this.turns[this.turns.length - 1];
    const calls = last && last.role === "assistant" ? last.blocks.filter((b) => b.type === "tool_use") : [];
    if (!calls.length) return { role: "user", text };
    return { role: "user", results: calls.map((c) => ({ id: c.id, name: c.name, text })) };
  }

  showUser(turn) {
    this.transcript.querySelector(".empty")?.remove();
    const blocks = turn.results
      ? turn.results.map((r) => h("div", { class: "block tool_result", "data-block": "tool_result" },
        h("div", { class: "label" }, "Tool result · ", h("span", { class: "mono" }, r.name)), h("pre", { class: "body" }, r.text)))
      : [h("div", { class: "block text" }, h("div", { class: "body" }, turn.text))];
    this.transcript.append(h("div", { class: "turn user" }, h("div", { class: "role" }, "you"), h("div", { class: "blocks" }, blocks)));
  }

  async send() {
    const text = this.form.input.value.trim();
    if (!text || this.controller) return;
    let tools;
    try {
      tools = this.tools();
    } catch (error) {
      this.note.textContent = `Tools are not valid JSON: ${error.message}`;
      return;
    }
    this.note.textContent = "";
    const turn = this.userTurn(text);
    this.turns.push(turn);
    this.showUser(turn);
    this.form.input.value = "";
    await this.stream(tools);
  }

  async stream(tools) {
    const wire = WIRES[this.form.wire.value];
    const body = wire.body({ model: this.form.model.value, maxTokens: Number(this.form.maxTokens.value) || 512,
      system: this.form.system.value.trim(), thinking: this.form.thinking.checked, tools, turns: this.turns });
    const reply = new Reply(this.transcript);
    this.controller = new AbortController();
    this.busy(true);
    let requestId = "";
    let note = null;
    try {
      const response = await call("POST", wire.path, body, this.controller.signal);
      requestId = response.headers.get("x-request-id") || "";
      for await (const event of events(response)) {
        wire.fold(reply, event);
        this.transcript.scrollTop = this.transcript.scrollHeight;
      }
    } catch (error) {
      if (error.name === "AbortError") note = "stopped";
      else reply.fail(error.message);
    }
    reply.done(requestId, note);
    if (!reply.failed && reply.turn.blocks.length) this.turns.push(reply.turn);
    else this.turns.pop();
    this.controller = null;
    this.busy(false);
    this.form.input.placeholder = reply.calls().length
      ? `Your next message is sent as the result of ${reply.calls().map((c) => c.name).join(", ")}`
      : "Say something to the model (Ctrl+Enter sends)";
  }

  busy(on) {
    this.sendButton.disabled = on;
    this.stopButton.disabled = !on;
  }
}
