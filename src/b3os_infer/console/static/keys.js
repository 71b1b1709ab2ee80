// Keys: create (scopes, models, expiry; the secret is shown once), list, revoke.

import { call, getJSON, session } from "./api.js";
import { h, show, when } from "./dom.js";

const SCOPES = [
  ["infer", "inference routes"],
  ["models:read", "model listings"],
  ["metrics:read", "the Prometheus scrape, GET /metrics"],
  ["server_tools", "web search and web fetch, run by the node"],
  ["admin", "every route, this console included"],
];
const EXPIRIES = [["", "never"], ["1d", "1 day"], ["7d", "7 days"], ["30d", "30 days"], ["90d", "90 days"]];
const CONFIRM_MS = 4000;

function checkbox(name, value, label, checked) {
  return h("label", { class: "check" },
    h("input", { type: "checkbox", name, value, checked }), " ", label);
}

function checked(form, name) {
  return [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((box) => box.value);
}

export class KeysView {
  constructor(root) {
    this.root = root;
    this.secret = null;   // the one created key whose secret is on screen, until dismissed
    this.error = null;
  }

  async mount() {
    const [keys, models] = await Promise.all([getJSON("/admin/keys"), getJSON("/models")]);
    this.keys = keys.data;
    this.models = models.data.map((m) => m.id);
    this.render();
  }

  unmount() {
    this.secret = null;
  }

  async reload() {
    this.keys = (await getJSON("/admin/keys")).data;
    this.render();
  }

  render() {
    show(this.root, this.secretPanel(), this.createForm(), this.table());
  }

  createForm() {
    const form = h("form", { id: "create-key", class: "card", onsubmit: (e) => this.create(e) },
      h("h2", {}, "New key"),
      h("div", { class: "grid" },
        h("label", { class: "field" }, "Name", h("input", { name: "name", required: true, maxlength: 200, placeholder: "app, ci, alice…" })),
        h("label", { class: "field" }, "Expires",
          h("select", { name: "expires" }, EXPIRIES.map(([v, t]) => h("option", { value: v }, t)))),
        h("fieldset", {}, h("legend", {}, "Scopes"),
          SCOPES.map(([scope, note]) => checkbox("scopes", scope, h("span", {}, scope, h("span", { class: "muted small" }, ` ${note}`)), scope !== "admin"))),
        h("fieldset", {}, h("legend", {}, "Models ", h("span", { class: "muted small" }, "(none ticked: every model)")),
          this.models.map((id) => checkbox("models", id, id, false)))),
      this.error ? h("p", { class: "error", id: "key-error" }, this.error) : null,
      h("button", { type: "submit", id: "create-key-button" }, "Create key"));
    return form;
  }

  async create(event) {
    event.preventDefault();
    const form = event.target;
    const body = { name: form.elements.name.value.trim(), scopes: checked(form, "scopes") };
    const models = checked(form, "models");
    if (models.length) body.models = models;
    if (form.elements.expires.value) body.expires = form.elements.expires.value;
    try {
      this.secret = await (await call("POST", "/admin/keys", body)).json();
      this.error = null;
    } catch (error) {
      this.error = error.message;
    }
    await this.reload();
  }

  secretPanel() {
    if (!this.secret) return null;
    const key = this.secret;
    const copy = h("button", { type: "button", class: "ghost", onclick: async () => {
      try {
        await navigator.clipboard.writeText(key.secret);
        copy.textContent = "Copied";
      } catch {
        copy.textContent = "Select and copy it by hand";
      }
    } }, "Copy");
    return h("section", { class: "card notice", id: "new-secret" },
      h("h2", {}, `Key “${key.name}” created`),
      h("p", {}, "This is the only time its secret is shown. Copy it now; the server keeps only a hash."),
      h("div", { class: "secret-row" }, h("code", { id: "secret-value", class: "secret" }, key.secret), copy),
      h("button", { type: "button", id: "secret-done", onclick: () => { this.secret = null; this.render(); } }, "Done"));
  }

  table() {
    const mine = session.keyId();
    const rows = this.keys.map((key) => h("tr", { "data-key": key.id, class: key.status },
      h("td", { class: "mono" }, key.id, key.id === mine ? h("span", { class: "chip" }, "this console") : null),
      h("td", {}, key.name),
      h("td", {}, key.scopes.map((scope) => h("span", { class: "chip" }, scope))),
      h("td", {}, key.models ? key.models.join(", ") : h("span", { class: "muted" }, "all")),
      h("td", { class: "small" }, when(key.created_at)),
      h("td", { class: "small" }, key.expires_at ? when(key.expires_at) : h("span", { class: "muted" }, "never")),
      h("td", { class: "small" }, when(key.last_used_at)),
      h("td", {}, h("span", { class: `badge ${key.status === "active" ? "ok" : "bad"}` }, key.status)),
      h("td", {}, key.status === "revoked" ? null : this.revokeButton(key))));
    return h("section", { class: "card" }, h("h2", {}, "Keys"),
      h("table", { id: "keys-table" },
        h("thead", {}, h("tr", {}, ["ID", "Name", "Scopes", "Models", "Created (UTC)", "Expires", "Last used", "Status", ""]
          .map((name) => h("th", {}, name)))),
        h("tbody", {}, rows)));
  }

  revokeButton(key) {
    // two clicks: the first arms the button for a few seconds, the second revokes
    const button = h("button", { type: "button", class: "danger ghost revoke", onclick: async () => {
      if (!button.dataset.armed) {
        button.dataset.armed = "1";
        button.textContent = "Confirm revoke";
        setTimeout(() => { delete button.dataset.armed; button.textContent = "Revoke"; }, CONFIRM_MS);
        return;
      }
      await call("DELETE", `/admin/keys/${encodeURIComponent(key.id)}`);
      await this.reload();
    } }, "Revoke");
    return button;
  }
}
